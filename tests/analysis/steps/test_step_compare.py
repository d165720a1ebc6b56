"""A step with a change set against the same step without it, on the recorded variants (sample_traces/steps/):
the part that grew is the cause built into the variant, by about what the unprofiled CUDA-event timings (recorded
before tracekit ran) say the change cost."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tracekit.analysis.steps import analyze_steps
from tracekit.analysis.steps.calibration import shipped
from tracekit.analysis.steps.compare import GPU, IDLE, compare_steps
from tracekit.analysis.steps.program import analyze_program
from tracekit.analysis.steps.types import HOST_WORK, KERNEL_WAIT, SYNCHRONIZATION
from tracekit.importers.kineto import read_host_events

REPO = Path(__file__).resolve().parents[3]
_results: dict[str, object] = {}


def unprofiled(name: str, sample_trace):
    """The steps as `--baseline` compares them: replayed without the profiler (the shipped calibration)."""
    events = read_host_events(sample_trace(f"steps/{name}.pt.trace.json.gz"))
    return analyze_program(events, shipped()).unprofiled


def steps(name: str, sample_trace):
    if name not in _results:
        _results[name] = analyze_steps(read_host_events(sample_trace(f"steps/{name}.pt.trace.json.gz")))
    return _results[name]


def measured_ms(folder: str) -> dict[str, float]:
    with open(REPO / "sample_traces/steps" / folder / "step_summary.csv") as handle:
        return {r["variant"]: float(r["median_step_ms"]) for r in csv.DictReader(handle)}


@pytest.mark.parametrize(
    ("folder", "before", "after", "grew"),
    [
        ("h200_b512", "resnet_baseline", "resnet_item_sync", (IDLE, SYNCHRONIZATION)),
        ("h200_b512", "resnet_baseline", "resnet_host_pause", (IDLE, HOST_WORK)),
        ("h200_b512", "resnet_baseline", "resnet_pageable", (GPU, "copies and sets")),
        ("h200_guard", "llama_large_eager", "llama_large_nan_guard", (IDLE, SYNCHRONIZATION)),
        ("h200_grad_norms", "resnet_baseline", "resnet_grad_norm_items", (IDLE, SYNCHRONIZATION)),
    ],
)
def test_the_built_in_cause_is_what_grew_most(folder, before, after, grew, sample_trace):
    found = compare_steps(steps(f"{folder}/{before}", sample_trace), steps(f"{folder}/{after}", sample_trace))
    assert found.grew_most is not None and (found.grew_most.kind, found.grew_most.part) == grew, found.changes[:3]
    idle = [c for c in found.changes if c.kind == IDLE]
    # each step's causes sum to its idle, so the means' changes do too (one ns of rounding per part)
    assert abs(sum(c.change_ns for c in idle) - (found.after_idle_ns - found.before_idle_ns)) <= len(idle)
    assert found.changes == tuple(sorted(found.changes, key=lambda c: -abs(c.change_ns)))
    if after == "resnet_host_pause":  # the pause's own length differs between the timing and the trace runs
        return
    measured = (measured_ms(folder)[after] - measured_ms(folder)[before]) * 1e6
    if grew[0] == IDLE:
        # what the profiled step gained in idle bounds it above; below, what the change cost unprofiled (the
        # profiler's own host time per call makes a drained queue slower to refill, never faster)
        assert 0.9 * measured <= found.grew_most.change_ns <= found.after_idle_ns - found.before_idle_ns
    else:
        assert found.grew_most.change_ns == pytest.approx(measured, rel=0.35)


def test_pageable_copies_show_beside_the_category(sample_trace):
    found = compare_steps(
        steps("h200_b512/resnet_baseline", sample_trace), steps("h200_b512/resnet_pageable", sample_trace)
    )
    assert found.before_pageable_copy_ns == 0 and found.after_pageable_copy_ns > 8_000_000


def test_a_cuda_graph_shortens_the_kernel_wait_and_nothing_grows_much(sample_trace):
    found = compare_steps(
        steps("h200_b512/resnet_baseline", sample_trace), steps("h200_b512/resnet_cudagraph", sample_trace)
    )
    wait = next(c for c in found.changes if (c.kind, c.part) == (IDLE, KERNEL_WAIT))
    assert wait.change_ns < -400_000  # 1.1 ms a step eager, 0.5 ms replayed
    assert found.after_step_ns < found.before_step_ns
    # the convolutions' few µs more are within how much the baseline's own steps vary: nothing grew
    assert found.grew_most is None and 0 < found.noise_ns < 200_000
    assert all(c.change_ns <= found.noise_ns for c in found.changes)


def test_the_cli_prints_the_comparison_and_its_json(sample_trace):
    """Both steps replayed without the profiler: the step grows by what the CUDA-event timings say (+0.32 ms) within
    0.1 ms, and synchronization is among the parts that grew (one .item() a step; in the replay the steps' window
    edges move GPU work between neighbouring steps, so no part clears the baseline's step-to-step spread)."""
    before = str(sample_trace("steps/h200_b512/resnet_baseline.pt.trace.json.gz"))
    after = str(sample_trace("steps/h200_b512/resnet_item_sync.pt.trace.json.gz"))
    run = [sys.executable, "-m", "tracekit.cli.main", "step", after, "--baseline", before]
    done = subprocess.run(run, capture_output=True, text=True, timeout=300, cwd=REPO)
    assert done.returncode == 0, done.stderr
    assert "idle: synchronization" in done.stdout and "GPU busy" in done.stdout
    done = subprocess.run([*run, "--json"], capture_output=True, text=True, timeout=300, cwd=REPO)
    data = json.loads(done.stdout)
    assert data["schema"] == "tracekit.step-compare/1"
    sync = next(c for c in data["changes"] if (c["kind"], c["part"]) == (IDLE, SYNCHRONIZATION))
    assert sync["change_ns"] > 0
    measured = measured_ms("h200_b512")
    grew_ms = (data["after_step_ns"] - data["before_step_ns"]) / 1e6
    assert grew_ms == pytest.approx(measured["resnet_item_sync"] - measured["resnet_baseline"], abs=0.1)
    expected = compare_steps(
        unprofiled("h200_b512/resnet_baseline", sample_trace), unprofiled("h200_b512/resnet_item_sync", sample_trace)
    )
    assert data["after_step_ns"] == expected.after_step_ns and data["before_step_ns"] == expected.before_step_ns
    missing = subprocess.run([*run[:-1], "/nonexistent/trace.json"], capture_output=True, text=True, cwd=REPO)
    assert missing.returncode == 2 and len(missing.stderr.strip().splitlines()) == 1
    assert "/nonexistent/trace.json" in missing.stderr


def test_the_python_api_gives_the_same_comparison(sample_trace, tmp_path):
    import tracekit

    before = str(sample_trace("steps/h200_guard/llama_large_eager.pt.trace.json.gz"))
    after = str(sample_trace("steps/h200_guard/llama_large_nan_guard.pt.trace.json.gz"))
    found = tracekit.open(str(tmp_path / "api.sqlite")).compare_steps(before, after)
    assert found == compare_steps(
        unprofiled("h200_guard/llama_large_eager", sample_trace),
        unprofiled("h200_guard/llama_large_nan_guard", sample_trace),
    )
