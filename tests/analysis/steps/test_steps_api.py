"""`tracekit.open(...).steps()` and `.step_what_if()`: the same figures as the analysis, a kernel change replayed on
the step through the per-launch predictor of its paired Nsight Compute launches (sample_traces/torch_step)."""

from __future__ import annotations

from pathlib import Path

import tracekit.api as api
from tracekit.analysis.steps import analyze_steps
from tracekit.importers.kineto import read_host_events

TORCH_STEP = Path(__file__).resolve().parents[3] / "sample_traces/torch_step"


def test_steps_from_the_api_are_the_analysis(tmp_path):
    trace = str(TORCH_STEP / "torch_step.pt.trace.json")
    session = api.open(str(tmp_path / "store.sqlite"))
    found = session.steps(trace, "step")
    assert found == analyze_steps(read_host_events(trace), "step")


def test_step_what_if_replays_the_paired_prediction(tmp_path):
    trace = str(TORCH_STEP / "torch_step.pt.trace.json")
    session = api.open(str(tmp_path / "store.sqlite"))
    found = session.step_what_if(trace, "xmma_gemm", [str(TORCH_STEP / "torch_step.raw.csv")], regs=128)
    assert found.launches == 5  # the five cuBLAS GEMMs of the block
    assert found.low_ns <= found.predicted_ns <= found.high_ns
    # the GEMMs run back to back on one stream after the host has queued them: the step saves at most what the
    # kernels save, and something (they are on the critical path)
    saved = found.current_ns - found.predicted_ns
    assert 0 < saved <= found.kernel_ns - found.kernel_predicted_ns


def test_kernel_suggestions_rank_by_step_time_saved(tmp_path):
    """With torch_step's Nsight Compute results, each kernel's best predicted change is replayed on the step (as the
    program runs it, without the profiler): the layer norm, issued late by the host (its operator dispatch takes
    milliseconds), saves the step less than the GEMMs that run back to back at the end; suggestions come largest
    saving first."""
    from tracekit.api import steps_with_kernels

    session = api.open(str(tmp_path / "store.sqlite"))
    found = steps_with_kernels(
        session.store, str(TORCH_STEP / "torch_step.pt.trace.json"), [str(TORCH_STEP / "torch_step.raw.csv")], "step"
    )
    kernels = {s.what: s for s in found.what_to_try if s.kind == "kernel"}
    assert [s.saves_ns for s in found.what_to_try] == sorted((s.saves_ns for s in found.what_to_try), reverse=True)
    gemm = next(s for name, s in kernels.items() if "tilesize128x128x8" in name)
    assert gemm.saves_low_ns <= gemm.saves_ns <= gemm.saves_high_ns and gemm.saves_ns > 0
    # on the step replayed without the profiler (the host still issues the layer norm late): it saves less than
    # the GEMM, or too little to be among the five kernels shown
    layer_norm = next((s for name, s in kernels.items() if "layer_norm" in name), None)
    assert layer_norm is None or layer_norm.saves_ns < gemm.saves_ns
