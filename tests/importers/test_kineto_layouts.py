"""Kineto traces beyond today's CUDA layout, read from real files: a ROCm 6.2 trace of an MI250 and a Meta MTIA
trace (HTA's test data, sample_traces/accelerators/README.md), the December 2020 top-level array and the 2021
tb_plugin layout (../shared/real_exports). Each count comes from the file's JSON here, never from the reader."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import pytest

from tests.helpers import run_cli
from tracekit.importers import detect_format, kineto, read_file
from tracekit.validate import check_values

ACCELERATORS = Path(__file__).resolve().parents[2] / "sample_traces" / "accelerators"
ROCM = ACCELERATORS / "mi250_minitoy_train_ROCm6_2_kineto.json.gz"
MTIA = ACCELERATORS / "mtia_inference_rank_0.json.gz"
SAMPLE_EVERY = 40  # kernels checked one in this many: the plain-Python search of enclosing ranges is slow


def _events(path: Path) -> list[dict]:
    data = path.read_bytes()
    document = json.loads(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data)
    return document["traceEvents"] if isinstance(document, dict) else document


def test_a_rocm_trace_imports_with_its_amd_device_and_no_cuda_capability():
    events = _events(ROCM)
    kernels = [e for e in events if e.get("cat") == "kernel"]
    assert any(isinstance(e.get("args", {}).get("stream"), str) for e in events)  # `"stream": "0x0"` on HIP calls
    parsed = read_file(ROCM)
    check_values(str(ROCM), parsed)
    assert parsed.launches.height == len(kernels) == 14
    assert parsed.memcpys.height == sum(e.get("cat") == "gpu_memcpy" for e in events)
    device = parsed.device
    assert device is not None and device.name == "AMD Radeon Graphics"
    assert device.compute_capability is None and device.sm_count is None  # gfx9.0 and CUs are not CUDA's
    assert device.extra["vendor"] == "AMD"
    assert device.extra["gcn_architecture"] == "9.0"
    assert device.extra["compute_units"] == 104 and device.extra["warp_size_threads"] == 64


def test_a_rocm_trace_gives_a_step_analysis_with_hip_calls_classed():
    events = _events(ROCM)
    hip = Counter(e["name"] for e in events if e.get("cat") == "cuda_runtime")
    host = kineto.read_host_events(ROCM)
    assert Counter(host.calls["name"].to_list()) == hip
    assert host.gpu.filter(host.gpu["kind"] == "kernel").height == 14
    result = run_cli("step", str(ROCM))
    assert result.returncode == 0, result.stderr
    assert "2 steps (ProfilerStep) on AMD Radeon Graphics" in result.stdout
    assert "call hipLaunchKernel" in result.stdout  # a launch call, as cudaLaunchKernel is
    assert "call hipMemcpyWithStream" in result.stdout  # a synchronous copy, as cudaMemcpy is


def test_an_mtia_trace_reads_its_kernels_and_dma_transfers():
    events = _events(MTIA)
    device_events = [e for e in events if e.get("cat") == "mtia_ccp_events"]
    work = [e for e in device_events if e["name"] not in ("event_record", "event_wait")]
    dma = [e for e in work if e["name"] == "dma_request"]
    parsed = read_file(MTIA)
    check_values(str(MTIA), parsed)
    assert parsed.launches.height == len(work) - len(dma) == 97
    assert parsed.memcpys.height == len(dma) == 877
    assert parsed.memcpys["size_bytes"].sum() == sum(e["args"]["size"] for e in dma)
    directions = Counter({"HOST_TO_DEVICE": "HtoD", "DEVICE_TO_HOST": "DtoH"}[e["args"]["direction"]] for e in dma)
    assert Counter(parsed.memcpys["kind"].to_list()) == directions
    assert set(parsed.launches["device_id"].to_list()) == {e["pid"] for e in work} == {17}
    assert parsed.device is not None and parsed.device.name == "ARTEMIS" and parsed.device.compute_capability is None


def test_an_mtia_trace_gives_a_step_analysis():
    """Its device's activities are its kernels and copies: the steps found (a repeating pattern of its 97 kernels)
    hold them, on the device the trace names, and no idle cause is left unnamed."""
    result = run_cli("step", "--traced", str(MTIA))
    assert result.returncode == 0, result.stderr
    assert "on ARTEMIS" in result.stdout.splitlines()[0]
    data = json.loads(run_cli("step", "--traced", "--json", str(MTIA)).stdout)
    assert data["device_name"] == "ARTEMIS" and 0 < sum(s["kernels"] for s in data["steps"]) <= 97
    assert "?" not in result.stdout.split("Idle time by cause")[1].split("GPU time by category")[0]


def test_the_2020_layout_is_a_kineto_trace_with_its_kernels_calls_and_operators(real_export):
    path = real_export("kineto_2020_plugin_resnet50_nw0_train.pt.trace.json.gz")
    events = _events(path)
    assert detect_format(path) == "kineto"
    cats = Counter(e.get("cat") for e in events)
    assert read_file(path).launches.height == cats["Kernel"] == 9538
    host = kineto.read_host_events(path)
    assert host.calls.height == cats["Runtime"]
    operators = host.ranges.filter(host.ranges["domain"] == "cpu_op")
    steps = [e for e in events if e.get("cat") == "Operator" and e["name"].startswith("ProfilerStep#")]
    assert operators.height == cats["Operator"] - len(steps)
    assert host.ranges.filter(host.ranges["name"].str.starts_with("ProfilerStep#"))["domain"].unique().to_list() == [
        "user_annotation"
    ]


@pytest.mark.parametrize(
    "name",
    ["kineto_2021_resnet50_nw0_train.pt.trace.json.gz", "kineto_2020_plugin_resnet50_nw0_train.pt.trace.json.gz"],
)
def test_kernels_of_the_old_layouts_have_their_operators(real_export, name):
    """Each kernel's operator is the outermost `Operator` range (a ProfilerStep aside) open on the thread of its
    launch call: computed here from the JSON for one kernel in SAMPLE_EVERY, and compared with the reader's."""
    path = real_export(name)
    events = _events(path)
    calls = {e["args"]["correlation"]: e for e in events if e.get("cat") == "Runtime"}
    ops: dict[str, list[dict]] = {}
    for e in events:
        if e.get("cat") == "Operator" and not e["name"].startswith("ProfilerStep#"):
            ops.setdefault(str(e["tid"]), []).append(e)
    kernels = [e for e in events if e.get("cat") == "Kernel"][::SAMPLE_EVERY]
    expected: dict[int, str | None] = {}
    for kernel in kernels:
        call = calls.get(kernel["args"]["correlation"])
        at = round(call["ts"] * 1000) if call else None
        open_ops = [
            o
            for o in (ops.get(str(call["tid"]), []) if call else [])
            if round(o["ts"] * 1000) <= at < round((o["ts"] + o["dur"]) * 1000)  # type: ignore[operator]
        ]
        outer = min(open_ops, key=lambda o: (o["ts"], -o["dur"]), default=None)
        expected[kernel["args"]["correlation"]] = outer["name"] if outer else None
    host = kineto.read_host_events(path)
    gpu = host.gpu.filter((host.gpu["kind"] == "kernel") & host.gpu["correlation_id"].is_in(list(expected)))
    found = dict(zip(gpu["correlation_id"].to_list(), gpu["operator"].to_list(), strict=True))
    assert found == expected
    assert sum(op is None for op in found.values()) < 0.1 * len(found)  # not "(no operator)" for every kernel
