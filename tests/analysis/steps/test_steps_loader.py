"""The step analysis on a ResNet-34 training step (batch 512, GPU-bound) that prepares each batch on its own host
thread before the copy, as a loop without loader workers does (sample_traces/steps/h100_loader_light and
h100_loader, recorded on an H100, CUDA-event timings of every variant committed before tracekit ran on them).

In the baseline the host prepares the next batch while the GPU runs this step; `.item()` every step makes the host
wait for the GPU first, so the preparation and the relaunch leave the GPU idle (+5.2 ms a step unprofiled with the
2 ms preparation); pageable buffers make the copy synchronous and slow (+14.7 ms). The first traced step follows a
step the profiler's schedule did not record (its warm-up), so the sync that drained the queue before it is not in
the trace: its leading gap is judged by what the host was doing then (preparing the batch, host work)."""

from __future__ import annotations

import csv
import statistics
from pathlib import Path

import pytest

from tests.analysis.steps.independent import gpu_intervals, load, union_inside
from tracekit.analysis.steps import analyze_steps
from tracekit.analysis.steps.compare import IDLE, compare_steps
from tracekit.analysis.steps.types import HOST_WORK, SYNCHRONIZATION, UNATTRIBUTED, StepsResult
from tracekit.importers.kineto import read_host_events

STEPS = Path(__file__).resolve().parents[3] / "sample_traces/steps"
LIGHT, HEAVY = "h100_loader_light", "h100_loader"
VARIANTS = ("resnet_loader_baseline", "resnet_loader_item_sync", "resnet_loader_pageable")
TRACES = [f"{folder}/{sub}{v}" for folder in (LIGHT, HEAVY) for sub in ("", "lean/") for v in VARIANTS]
_cache: dict[str, StepsResult] = {}


def analyzed(name: str, sample_trace) -> StepsResult:
    if name not in _cache:
        _cache[name] = analyze_steps(read_host_events(sample_trace(f"steps/{name}.pt.trace.json.gz")))
    return _cache[name]


def measured_ms(folder: str) -> dict[str, float]:
    with open(STEPS / folder / "step_summary.csv") as handle:
        return {r["variant"]: float(r["median_step_ms"]) for r in csv.DictReader(handle)}


@pytest.mark.parametrize("name", TRACES)
def test_busy_idle_and_causes_on_every_step(name, sample_trace):
    result = analyzed(name, sample_trace)
    intervals = gpu_intervals(load(sample_trace(f"steps/{name}.pt.trace.json.gz")))
    assert result.detected_by == "ProfilerStep" and len(result.steps) == 5
    for step in result.steps:
        assert step.busy_ns == pytest.approx(union_inside(intervals, step.start_ns, step.end_ns), rel=0.01)
        assert step.idle_ns == step.span_ns - step.busy_ns
        assert sum(c.idle_ns for c in step.causes) == step.idle_ns
        assert next(c for c in step.causes if c.cause == UNATTRIBUTED).idle_ns <= 0.05 * step.idle_ns


@pytest.mark.parametrize("sub", ["", "lean/"])
def test_item_sync_is_the_largest_cause_once_its_sync_is_in_the_trace(sub, sample_trace):
    """Every step after the first: synchronization, with the .item()'s cudaStreamSynchronize as evidence; the
    baseline (the same loop without it) has no synchronization and no host-work idle at all."""
    result = analyzed(f"{LIGHT}/{sub}resnet_loader_item_sync", sample_trace)
    for step in result.steps[1:]:
        assert step.causes[0].cause == SYNCHRONIZATION, (step.label, step.causes[:2])
        assert "cudaStreamSynchronize" in {e.name for e in step.causes[0].evidence}
    first = result.steps[0]
    assert {c.cause for c in first.causes[:2]} >= {HOST_WORK}  # the drained queue's sync fell before the trace
    # the steps after the first stand for the run (the first's span is the median one of all five here): the
    # median span is theirs, the step shown is the one nearest it, and what to try first is typical of them (each
    # cause's median over them)
    run = result.steps[1:]
    spans = sorted(s.span_ns for s in run)
    shown = result.steps[result.representative_step]
    assert result.median_step_ns == spans[len(spans) // 2]
    assert result.representative_step != 0 and shown.causes[0].cause == SYNCHRONIZATION
    assert abs(shown.span_ns - result.median_step_ns) == min(abs(s.span_ns - result.median_step_ns) for s in run)
    syncs = [next(c.idle_ns for c in s.causes if c.cause == SYNCHRONIZATION) for s in run]
    assert result.what_to_try[0].what == SYNCHRONIZATION
    assert result.what_to_try[0].saves_high_ns == int(statistics.median(syncs))
    baseline = analyzed(f"{LIGHT}/{sub}resnet_loader_baseline", sample_trace)
    for step in baseline.steps:
        causes = {c.cause: c.idle_ns for c in step.causes}
        assert causes[SYNCHRONIZATION] == 0 and causes[HOST_WORK] == 0


def test_the_pageable_copy_is_the_largest_idle_cause_and_what_to_try_first(sample_trace):
    """Lean trace: the synchronous pageable copy's wait is the largest idle cause of every step (it drains the
    queue, and the GPU waits for the host to relaunch), and the pageable copies, their slow staged transfer
    included, are what to try first, saving about what pinned buffers saved unprofiled."""
    result = analyzed(f"{LIGHT}/lean/resnet_loader_pageable", sample_trace)
    for step in result.steps:
        assert step.causes[0].cause == SYNCHRONIZATION, (step.label, step.causes[:2])
        assert "cudaMemcpyAsync" in {e.name for e in step.causes[0].evidence}
    first = result.what_to_try[0]
    assert first.what == "pageable copies"
    measured = (measured_ms(LIGHT)["resnet_loader_pageable"] - measured_ms(LIGHT)["resnet_loader_baseline"]) * 1e6
    assert first.saves_low_ns <= measured <= first.saves_high_ns


@pytest.mark.parametrize("sub", ["", "lean/"])
def test_the_sync_is_what_grew_most_against_the_loop_without_it(sub, sample_trace):
    """Compared with the baseline, synchronization grew most, by at least what the .item() cost unprofiled
    (profiled, the host's slower relaunch widens each drained gap)."""
    found = compare_steps(
        analyzed(f"{LIGHT}/{sub}resnet_loader_baseline", sample_trace),
        analyzed(f"{LIGHT}/{sub}resnet_loader_item_sync", sample_trace),
    )
    assert found.grew_most is not None and (found.grew_most.kind, found.grew_most.part) == (IDLE, SYNCHRONIZATION)
    measured = (measured_ms(LIGHT)["resnet_loader_item_sync"] - measured_ms(LIGHT)["resnet_loader_baseline"]) * 1e6
    assert found.grew_most.change_ns >= 0.9 * measured


def test_a_preparation_longer_than_the_host_can_hide_is_split_between_the_sync_and_host_work(sample_trace):
    """h100_loader: a 16-33 ms preparation. Under the profiler the host's launching of the step takes about 36 ms,
    so the .item() waits only the GPU's last 10-20 ms; without the sync the host would have started preparing
    that much sooner, and the rest of the gap would still be its preparation: host work. The two together are
    nearly all of the idle after the first step."""
    result = analyzed(f"{HEAVY}/lean/resnet_loader_item_sync", sample_trace)
    for step in result.steps[2:]:
        causes = {c.cause: c.idle_ns for c in step.causes}
        assert causes[SYNCHRONIZATION] > 5_000_000
        assert causes[SYNCHRONIZATION] + causes[HOST_WORK] >= 0.9 * step.idle_ns
