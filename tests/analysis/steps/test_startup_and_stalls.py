"""Gaps that are neither the host's habits nor the GPU's launch latency: a process's one-time start-up, and queued
work held longer than launch latency explains. Checked on sample_traces/steps/h200_startup (a benchmark traced
without ProfilerStep, start-up and warm-up included; the same run beside another process's matmuls) against its
unprofiled CUDA-event timings, and on every recorded step and public Kineto trace for the kernel-wait bound."""

from __future__ import annotations

import csv
import statistics
from pathlib import Path

import polars as pl
import pytest

from tracekit.analysis.steps import analyze_steps, busy, causes
from tracekit.analysis.steps.analysis import device_events
from tracekit.analysis.steps.calls import SYNC, call_class
from tracekit.analysis.steps.causes import LAUNCH_LATENCY_NS
from tracekit.analysis.steps.types import KERNEL_WAIT, LAUNCH_BOUND, STALLED_QUEUE, START_UP
from tracekit.importers.kineto import read_host_events

STEPS = Path(__file__).resolve().parents[3] / "sample_traces/steps"
RECORDED = sorted(str(p.relative_to(STEPS)) for p in STEPS.rglob("*.pt.trace.json.gz"))
PUBLIC = ["kineto_2021_resnet50_nw0_train.pt.trace.json.gz", "kineto_GH200_transformer.pt.trace.json"]
STALL_EVIDENCE = {"graph replay", "dropped events", "outside the trace"}


def _timings(sample_trace) -> dict[str, list[float]]:
    found: dict[str, list[float]] = {}
    with open(sample_trace("steps/h200_startup/step_timings.csv")) as handle:
        for row in csv.DictReader(handle):
            found.setdefault(row["phase"], []).append(float(row["step_ms"]))
    return found


def test_a_benchmarks_warm_up_is_not_a_step(sample_trace):
    """1 warm-up step (1,037 ms unprofiled: module loading, handle creation) and 6 measured (8.1-14.8 ms): the
    loop is found after the warm-up, whose launches are in no step, and the median step is the measured one's."""
    path = sample_trace("steps/h200_startup/benchmark_startup.pt.trace.json.gz")
    events = read_host_events(path)
    result = analyze_steps(events)
    timings = _timings(sample_trace)
    assert result.detected_by == "repeating pattern"
    assert len(result.steps) == len(timings["measured"]) == 6
    # 7 x 132 kernels (the model's set-up runs none): one period of the loop in each measured step, the warm-up's
    # (other kernels: the optimizer's first step creates its momentum buffers) in none
    assert events.gpu.filter(pl.col("kind") == "kernel").height == 7 * 132
    assert [s.kernels for s in result.steps] == [132] * 6
    unprofiled = statistics.median(timings["measured"])
    assert unprofiled <= result.median_step_ns / 1e6 <= 1.25 * unprofiled
    assert result.median_step_ns / 1e6 < timings["warmup"][0] / 50


def test_one_time_start_up_is_its_own_cause_and_gets_no_advice(sample_trace):
    """Over the whole benchmark (the window a trace without any loop gets), the first copy to the GPU (its first
    CUDA call set up the context: 123 ms), the first linear layer and its backward (cuBLAS's handle and modules)
    and each kernel's module loaded on first use (slow cudaFuncGetAttributes and launch calls) are start-up, most
    of the idle (484 of 649 ms), and no fix is offered for it. Launch-bound keeps 134 ms, 93 of them the first
    convolution's cuDNN set-up: its later convolutions of other shapes pay part of it again (36 ms), and without
    recorded shapes the trace cannot tell them apart, so it is not judged one-time (causes.startup_work)."""
    events = read_host_events(sample_trace("steps/h200_startup/benchmark_startup.pt.trace.json.gz"))
    gpu, _ = device_events(events)
    calls = call_class(events.calls, gpu)
    start = min(int(gpu["start_ns"].min()), int(calls["start_ns"].min()))  # type: ignore[arg-type]
    end = max(int(gpu["end_ns"].max()), int(calls["end_ns"].max()))  # type: ignore[arg-type]
    windows = busy.window_frame((start,), (end,))
    attributed = causes.attribute(busy.idle_pieces(busy.gpu_union(gpu), windows), gpu, calls, events.ranges)
    (found,) = causes.summarize(attributed, 1, calls.filter(pl.col("call_class") == SYNC))
    by_cause = {c.cause: c for c in found}
    idle = sum(c.idle_ns for c in found)
    assert found[0].cause == START_UP and by_cause[START_UP].idle_ns > 0.7 * idle
    assert by_cause[LAUNCH_BOUND].idle_ns < 0.3 * by_cause[START_UP].idle_ns
    names = {e.name for e in by_cause[START_UP].evidence}
    assert {"first aten::_to_copy", "first aten::linear"} <= names
    first_step = analyze_steps(events).steps[0]  # the first measured step still pays for first-use loading
    assert first_step.causes[0].cause == START_UP
    assert START_UP not in {s.what for s in analyze_steps(events).what_to_try}


def test_queued_work_held_by_another_process_is_a_stalled_queue(sample_trace):
    """Beside another process's matmuls the GPU time-slices: queued kernels wait milliseconds on work the trace
    does not hold. Those gaps are a stalled queue (work outside the trace), not kernel wait; alone, the same run
    has none."""
    shared = analyze_steps(read_host_events(sample_trace("steps/h200_startup/benchmark_shared_gpu.pt.trace.json.gz")))
    stalls = [c for s in shared.steps for c in s.causes if c.cause == STALLED_QUEUE and c.idle_ns]
    assert stalls and max(c.idle_ns for c in stalls) > 1_000_000
    assert {e.kind for c in stalls for e in c.evidence} == {"outside the trace"}
    alone = analyze_steps(read_host_events(sample_trace("steps/h200_startup/benchmark_startup.pt.trace.json.gz")))
    assert all(c.idle_ns == 0 for s in alone.steps for c in s.causes if c.cause == STALLED_QUEUE)


def _kernel_wait_is_launch_latency(path: Path) -> None:
    """No kernel-wait gap longer than LAUNCH_LATENCY_NS (the evidence holds each cause's largest pieces); a
    stalled queue names what may have held it."""
    result = analyze_steps(read_host_events(path))
    for step in result.steps:
        by_cause = {c.cause: c for c in step.causes}
        waits = by_cause[KERNEL_WAIT].evidence
        assert all(e.idle_ns <= LAUNCH_LATENCY_NS < 100_000 for e in waits), (step.label, waits)
        assert {e.kind for e in by_cause[STALLED_QUEUE].evidence} <= STALL_EVIDENCE


@pytest.mark.parametrize("trace", RECORDED)
def test_no_long_kernel_wait_on_a_recorded_step(trace, sample_trace):
    _kernel_wait_is_launch_latency(sample_trace(f"steps/{trace}"))


@pytest.mark.parametrize("name", PUBLIC)
def test_no_long_kernel_wait_on_a_public_trace(name, real_export):
    _kernel_wait_is_launch_latency(real_export(name))
