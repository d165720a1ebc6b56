"""The CUPTI range profiler's kernel counters on HTA's own test trace (in ../shared/real_exports/,
`kineto_gz_hta_cupti_range_profiler.json.gz`: 77 `cuda_profiler_range` events, no kernel events), each figure
checked against what is computed here from the trace's raw JSON events (the json module, not the reader)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from tests.helpers import HTA_CUPTI_TRACE, real_export_path
from tracekit.analysis.trace_features import trace_features
from tracekit.importers.kineto import read_host_events

REPO = Path(__file__).resolve().parents[3]
DDP = REPO / "sample_traces/steps/h200/ddp_rank0.pt.trace.json.gz"
SASS = "smsp__sass_thread_inst_executed_op_{}_pred_on.sum"


def raw_events(path: Path) -> list[dict]:
    with gzip.open(path, "rt") as handle:
        return [e for e in json.load(handle)["traceEvents"] if e.get("ph") == "X"]


def sass_flops(args: dict, prefix: str) -> float:
    return args[SASS.format(f"{prefix}add")] + args[SASS.format(f"{prefix}mul")] + 2 * args[SASS.format(f"{prefix}fma")]


def operators_open(events: list[dict], call: dict) -> list[str]:
    """The cpu_op ranges open on the call's thread at its start, outermost first (by start, then longest)."""
    ops = [
        e
        for e in events
        if e["cat"] == "cpu_op" and e["tid"] == call["tid"] and e["ts"] <= call["ts"] < e["ts"] + e["dur"]
    ]
    return [e["name"] for e in sorted(ops, key=lambda e: (e["ts"], -e["dur"]))]


@pytest.fixture(scope="module")
def cupti():
    return trace_features(read_host_events(real_export_path(HTA_CUPTI_TRACE))).counters, raw_events(
        real_export_path(HTA_CUPTI_TRACE)
    )


def test_every_profiled_kernel_has_its_counters_and_flops(cupti):
    counters, events = cupti
    ranges = sorted((e for e in events if e["cat"] == "cuda_profiler_range"), key=lambda e: e["ts"])
    assert counters.kernels.height == len(ranges) == 77
    assert set(counters.metrics) == {m for e in ranges for m in e["args"]}
    for event, row in zip(ranges, counters.kernels.sort("kernel_index").iter_rows(named=True), strict=True):
        assert row["name"] == event["name"]
        for metric, value in event["args"].items():
            assert row[metric] == value
        expected = {p: sass_flops(event["args"], x) for p, x in (("fp64", "d"), ("fp32", "f"), ("fp16", "h"))}
        assert [row[f"{p}_flops"] for p in expected] == list(expected.values())
        assert row["flops"] == sum(expected.values())


def test_the_fft_kernel_is_joined_to_the_convolution_that_launched_it(cupti):
    """HTA's own check: the 6th kernel run is fft2d_r2c, launched under aten::conv2d > ... > aten::cudnn_convolution;
    here with its FLOPs, fadd + fmul + 2 ffma from its args."""
    counters, events = cupti
    ranges = sorted((e for e in events if e["cat"] == "cuda_profiler_range"), key=lambda e: e["ts"])
    launches = sorted((e for e in events if e["name"] == "cudaLaunchKernel"), key=lambda e: e["ts"])
    assert counters.paired and counters.launch_calls == len(launches) == len(ranges)
    fft = counters.kernels.filter(kernel_index=5).row(0, named=True)
    args = ranges[5]["args"]
    assert "fft2d_r2c_32x32" in fft["name"] and args[SASS.format("fadd")] == 86114304
    assert fft["fp32_flops"] == args[SASS.format("fadd")] + args[SASS.format("fmul")] + 2 * args[SASS.format("ffma")]
    opened = operators_open(events, launches[5])
    assert (fft["top_operator"], fft["bottom_operator"]) == (opened[0], opened[-1])
    assert (opened[0], opened[-1]) == ("aten::conv2d", "aten::cudnn_convolution")


def test_per_operator_sums_are_its_kernels(cupti):
    counters, events = cupti
    ranges = sorted((e for e in events if e["cat"] == "cuda_profiler_range"), key=lambda e: e["ts"])
    launches = sorted((e for e in events if e["name"] == "cudaLaunchKernel"), key=lambda e: e["ts"])
    expected: dict[str, list[float]] = {}
    for event, call in zip(ranges, launches, strict=True):
        top = operators_open(events, call)[0]
        kernels, total = expected.get(top, [0, 0.0])
        expected[top] = [kernels + 1, total + sum(sass_flops(event["args"], x) for x in "dfh")]
    found = {r["operator"]: [r["kernels"], r["flops"]] for r in counters.operators.iter_rows(named=True)}
    assert found == expected
    assert counters.operators["operator"][0] == "aten::conv2d"  # the most FLOPs first


def test_the_range_profiler_trace_has_no_gpu_timeline():
    """The ranges' times are the profiler's (77 ranges of one length end to end), so none becomes GPU activity."""
    events = read_host_events(real_export_path(HTA_CUPTI_TRACE))
    assert events.gpu.height == 0 and events.counters["kernel_index"].n_unique() == 77


def test_a_trace_without_the_range_profiler_has_no_counters():
    counters = trace_features(read_host_events(DDP)).counters
    assert counters.kernels.height == 0 and counters.operators.height == 0 and counters.metrics == ()
