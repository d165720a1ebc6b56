"""The step analysis on real PyTorch profiler traces: busy time against an independent union, causes that sum to
the idle, categories and operators from the trace's own names."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import polars as pl
import pytest

from tests.analysis.steps.independent import gpu_intervals, load, ns, union_inside
from tracekit.analysis.steps import StepError, analyze_steps
from tracekit.analysis.steps.categories import category
from tracekit.analysis.steps.types import CAUSES, UNATTRIBUTED
from tracekit.importers.kineto import read_host_events

TORCH_STEP = Path(__file__).resolve().parents[3] / "sample_traces/torch_step/torch_step.pt.trace.json"
GH200 = "kineto_GH200_transformer.pt.trace.json"


def test_profiler_steps_busy_matches_an_independent_union(real_export):
    path = real_export(GH200)
    result = analyze_steps(read_host_events(path))
    events = load(path)
    marks = sorted(
        (ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]), e["name"])
        for e in events
        if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#")
    )
    assert result.detected_by == "ProfilerStep"
    assert [s.label for s in result.steps] == [name for _, _, name in marks] == [f"ProfilerStep#{i}" for i in (7, 8, 9)]
    intervals = gpu_intervals(events)
    ends_by_correlation = {
        e["args"]["correlation"]: ns(e["ts"]) + ns(e["dur"]) for e in events if e.get("cat") == "kernel"
    }
    previous_end = 0
    for step, (start, end, _) in zip(result.steps, marks, strict=True):
        # a CUDA-event timing's window: from the host's start (or the previous step's GPU end) to the end of the
        # GPU work launched inside the range (or the range's end)
        launched = [
            ends_by_correlation[e["args"]["correlation"]]
            for e in events
            if e.get("cat") == "cuda_runtime"
            and start <= ns(e["ts"]) < end
            and e["args"].get("correlation") in ends_by_correlation
        ]
        assert step.start_ns == max(start, previous_end)
        assert step.end_ns == max([end, *launched])
        previous_end = step.end_ns
        expected = union_inside(intervals, step.start_ns, step.end_ns)
        assert step.busy_ns == pytest.approx(expected, rel=0.01)
        assert step.idle_ns == step.span_ns - step.busy_ns
        assert step.kernels == 16  # 48 kernels in three identical steps


@pytest.mark.parametrize("step_name", [None, "step"])
def test_causes_sum_to_the_idle_and_are_attributed(step_name):
    result = analyze_steps(read_host_events(TORCH_STEP), step_name)
    for step in result.steps:
        assert {c.cause for c in step.causes} == set(CAUSES)
        assert sum(c.idle_ns for c in step.causes) == step.idle_ns
        unattributed = next(c for c in step.causes if c.cause == UNATTRIBUTED)
        assert unattributed.idle_ns <= 0.05 * step.idle_ns
        assert [c.idle_ns for c in step.causes] == sorted((c.idle_ns for c in step.causes), reverse=True)
        for cause in step.causes:
            assert sum(e.idle_ns for e in cause.evidence) <= cause.idle_ns
            assert all(step.start_ns <= e.start_ns < e.end_ns <= step.end_ns for e in cause.evidence)


def test_a_named_range_is_a_step_and_a_missing_one_is_refused():
    events = read_host_events(TORCH_STEP)
    found = analyze_steps(events, "step")
    marks = events.ranges.filter(pl.col("name") == "step")
    assert found.detected_by == "range step"
    assert len(found.steps) == 1 and found.steps[0].start_ns == marks["start_ns"][0]
    # the one step ends when the GPU work it launched ends (the final sums run after the range closes)
    assert found.steps[0].end_ns == max(int(marks["end_ns"][0]), int(events.gpu["end_ns"].max()))
    with pytest.raises(StepError, match="no range named 'forward'"):
        analyze_steps(events, "forward")


def test_a_range_name_is_matched_literally():
    """A step's name is text, not a pattern: brackets and dots in it match themselves (`\\<` would be a word
    boundary to polars' regex engine), and a name that only resembles it is not taken."""
    events = read_host_events(TORCH_STEP)
    renamed = dataclasses.replace(
        events, ranges=events.ranges.with_columns(pl.col("name").replace("step", "train<step>.v2 (bf16)"))
    )
    found = analyze_steps(renamed, "train<step>.v2 (bf16)")
    assert found.detected_by == "range train<step>.v2 (bf16)" and len(found.steps) == 1
    with pytest.raises(StepError, match="no range named"):
        analyze_steps(renamed, "train<step>xv2 (bf16)")


def test_the_sync_at_the_end_of_torch_step_is_synchronization():
    """torch_step.py ends its step with torch.cuda.synchronize(): the host blocks in cudaDeviceSynchronize while the
    GPU runs the last GEMMs; the idle after them, until the host's next call, is the sync's."""
    result = analyze_steps(read_host_events(TORCH_STEP))
    step = result.steps[0]
    sync = next(c for c in step.causes if c.cause == "synchronization")
    assert sync.idle_ns > 0
    assert {e.name for e in sync.evidence} == {"cudaDeviceSynchronize"}


def test_operators_and_categories_from_the_trace():
    result = analyze_steps(read_host_events(TORCH_STEP), "step")
    step = result.steps[0]
    by_category = {c.category: c for c in step.categories}
    assert by_category["GEMM"].count == 5  # five cuBLAS GEMMs in the block
    assert by_category["copies and sets"].count == 2  # the two memsets of the sums
    paths = {(o.annotation_path, o.operator) for o in step.operators}
    assert ("step > qkv_gemm", "aten::matmul") in paths
    assert ("step > layer_norm", "aten::layer_norm") in paths
    assert sum(c.gpu_ns for c in step.categories) >= step.busy_ns  # one stream: the sum is the union


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", "communication"),
        ("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "communication"),
        ("void ncclKernel<...>", "communication"),
        ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", "GEMM"),
        ("nvjet_hsh_128x256_64x4_2x1_v_bz_coopA_NTN", "GEMM"),
        ("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4>>", "attention"),
        ("sm80_xmma_fprop_implicit_gemm_indexed_tf32f32", "convolution"),
        ("triton_poi_fused_add_mul_0", "elementwise"),
        ("triton_red_fused__softmax_1", "reduction and normalization"),
        ("void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl>", "elementwise"),
    ],
)
def test_categories_by_name(name, expected):
    frame = pl.DataFrame({"name": [name], "kind": ["kernel"]})
    assert frame.select(category(pl.col("name"), pl.col("kind")))[0, 0] == expected


HTA_TRITON = Path(__file__).resolve().parents[3] / "sample_traces/hta/triton_example.json.gz"


def test_one_recorded_step_lists_only_what_could_save_a_share_of_it():
    """HTA's Triton example records one ProfilerStep (13.3 s of host work around one 1.8 us kernel): how the steps
    vary is unknown from one, so a saving under MIN_STEP_SHARE of the step (its 1.3 ms launch, its 500 ns sync) is
    noise, not something to try; the host work is."""
    from tracekit.analysis.steps.advice import MIN_STEP_SHARE
    from tracekit.analysis.steps.types import HOST_WORK

    result = analyze_steps(read_host_events(HTA_TRITON))
    assert len(result.steps) == 1
    step = result.steps[0]
    assert {c.cause for c in step.causes if 0 < c.idle_ns < MIN_STEP_SHARE * step.span_ns}  # small causes exist
    assert [s.what for s in result.what_to_try] == [HOST_WORK]
    assert all(s.saves_high_ns >= MIN_STEP_SHARE * step.span_ns for s in result.what_to_try)


def test_the_last_gaps_evidence_names_the_sync_made_inside_it():
    """The Triton example's one cudaDeviceSynchronize starts inside the trace's last gap (after its only kernel), not
    at the gap's start: the synchronization's evidence is named after it, and no piece of evidence goes unnamed."""
    from tracekit.analysis.steps.types import SYNCHRONIZATION

    step = analyze_steps(read_host_events(HTA_TRITON)).steps[0]
    synced = next(c for c in step.causes if c.cause == SYNCHRONIZATION)
    assert [e.name for e in synced.evidence] == ["cudaDeviceSynchronize"]
    assert all(e.name for c in step.causes for e in c.evidence)
