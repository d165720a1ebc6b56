"""Steps found by the repeating pattern of launches, for traces without step ranges (an nsys trace without NVTX, a
PyTorch profiler trace with CUDA activity only). Checked against the recorded traces' own ProfilerStep#N marks:
with the marks taken away, the pattern finds the same steps."""

from __future__ import annotations

import csv
from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest

from tests.analysis.steps.independent import gpu_intervals, load, union_inside
from tracekit.analysis.steps import analyze_steps
from tracekit.analysis.steps.types import SYNCHRONIZATION, UNATTRIBUTED
from tracekit.importers.kineto import read_host_events

STEPS = Path(__file__).resolve().parents[3] / "sample_traces/steps"
MARKED = sorted(
    str(p.relative_to(STEPS))
    for p in STEPS.glob("h[12]00*/**/*.pt.trace.json.gz")
    if "cuda_only" not in str(p) and "h200_startup" not in str(p)  # traced without ProfilerStep
)
# Known misses on the issue-41 set (workloads written by others), strict: each fails the test today and must pass
# once fixed. Lightning's steps vary. (A DataLoader without workers loads each batch on the host between the steps'
# launches, making cheap CUDA queries all along: the pattern's edge is read between the calls that put work on the
# GPU, and those steps are found.)
PATTERN_MISSES = {
    "h200_programs/lightning_fabric_resnet18.cpu_cuda.pt.trace.json.gz": "Lightning's steps vary by 2x in one run",
    # the ten-step recording, added after the pattern rule was set
    "h200_programs_10/hf_gpt2_train_item.cpu_cuda.pt.trace.json.gz": "the steps are cut elsewhere around .item()'s "
    "sync: the marked step's largest cause is launch-bound (4.0 ms, its sync 2.1), the found one's the sync (5.2)",
    "h200_programs_10/tv_resnet18_loader4.shapes.pt.trace.json.gz": "the median step 3.8% off the marked one (27.86 "
    "against 26.84 ms): the 4-worker loader's steps range 10-85 ms in one run",
}
MARKED = [
    pytest.param(t, marks=pytest.mark.xfail(strict=True, reason=PATTERN_MISSES[t])) if t in PATTERN_MISSES else t
    for t in MARKED
]
CUDA_ONLY = ("h200_cuda_only", "h100_cuda_only")  # the same variants on an H200's host and an H100's
PROFILED_STEPS = 5  # steps.py's TRACE_ACTIVE


@pytest.mark.parametrize("trace", MARKED)
def test_the_pattern_finds_the_steps_the_profiler_marked(trace, sample_trace):
    """Every step the profiler marked, each one period of launches, the median step within 3% (the pattern's step
    starts at its first launch, the mark before the host's own work), and the same largest idle cause."""
    events = read_host_events(sample_trace(f"steps/{trace}"))
    marked = analyze_steps(events)
    unmarked = replace(events, ranges=events.ranges.filter(~pl.col("name").str.contains(r"^ProfilerStep#\d+$")))
    found = analyze_steps(unmarked)
    assert (marked.detected_by, found.detected_by) == ("ProfilerStep", "repeating pattern")
    assert len(found.steps) == len(marked.steps)
    assert found.median_step_ns == pytest.approx(marked.median_step_ns, rel=0.03)
    largest = [r.steps[r.representative_step].causes[0].cause for r in (marked, found)]
    assert largest[0] == largest[1]


def unprofiled_ms(folder: str) -> dict[str, float]:
    with open(STEPS / folder / "step_summary.csv") as handle:
        return {r["variant"]: float(r["median_step_ms"]) for r in csv.DictReader(handle)}


@pytest.mark.parametrize("folder", CUDA_ONLY)
@pytest.mark.parametrize("variant", ["resnet_baseline", "resnet_item_sync", "resnet_pageable", "resnet_host_pause"])
def test_cuda_only_traces_have_their_steps_found_and_their_idle_explained(folder, variant, sample_trace):
    """The batch-64 ResNet step traced with CUDA activity only: no ProfilerStep marks, five whole steps found by
    their launches; busy time as an independent union says, causes summing to the idle. Even without per-operator
    CPU events the profiler leaves the step host-bound on both hosts (longer than unprofiled, the GPU busy under
    65% of every step: 9.3 ms of GPU work in 15-20 ms on the H100's host, where the unprofiled steps take 11.6-16.8
    ms), so host work, not the variant's sync, is the largest cause; the sync is still named with its call."""
    path = sample_trace(f"steps/{folder}/{variant}.pt.trace.json.gz")
    result = analyze_steps(read_host_events(path))
    intervals = gpu_intervals(load(path))
    assert result.detected_by == "repeating pattern" and len(result.steps) == PROFILED_STEPS
    for step in result.steps:
        assert step.busy_ns == pytest.approx(union_inside(intervals, step.start_ns, step.end_ns), rel=0.01)
        assert sum(c.idle_ns for c in step.causes) == step.idle_ns
        assert next(c for c in step.causes if c.cause == UNATTRIBUTED).idle_ns <= 0.05 * step.idle_ns
        assert step.busy_ns < 0.65 * step.span_ns
    assert result.median_step_ns / 1e6 > unprofiled_ms(folder)[variant]
    assert all(step.causes[0].cause == "host work" for step in result.steps)
    if variant == "resnet_item_sync":
        step = result.steps[result.representative_step]
        sync = next(c for c in step.causes if c.cause == SYNCHRONIZATION)
        assert sync.idle_ns > 0 and "cudaStreamSynchronize" in {e.name for e in sync.evidence}


def test_a_step_found_by_its_launches_is_headed_by_its_number(sample_trace) -> None:
    """Steps found by their launches are numbered from 0 and headed "step 2", as a marked one is "step
    ProfilerStep#12" (the label is not "step 2", which the heading would repeat)."""
    from tracekit.present.steps import step_heading

    result = analyze_steps(read_host_events(sample_trace("steps/h200_cuda_only/resnet_baseline.pt.trace.json.gz")))
    assert [s.label for s in result.steps] == ["0", "1", "2", "3", "4"]
    assert step_heading(result.steps[2]).startswith("step 2: span ")


@pytest.mark.parametrize("recording", ["h200_programs", "h200_programs_2", "h200_programs_3", "h200x2_programs"])
def test_a_host_loaded_batch_stays_inside_its_step(recording, sample_trace):
    """ResNet-18 fed by a DataLoader without workers, traced with CUDA activity only (no ProfilerStep marks): each
    step loads its batch on the host (about 90 ms of PIL work, with a cheap CUDA query for each tensor it makes)
    and then launches its 377 kernels. Every step found is one loading and one launch sequence, so the steps are
    even; the edge read between any two calls fell near the loading's end and cut 195, 112 and 27 ms steps."""
    found = analyze_steps(
        read_host_events(sample_trace(f"steps/{recording}/tv_resnet18_loader0.cuda_only.pt.trace.json.gz"))
    )
    assert found.detected_by == "repeating pattern"
    spans = [s.span_ns for s in found.steps]
    assert len(spans) >= 3 and max(spans) < 1.25 * min(spans), spans  # loading varies itself: 67-84 ms timed
    assert all(s.kernels == found.steps[0].kernels for s in found.steps)
    assert all(s.causes[0].cause == "host work" for s in found.steps)
