"""tensor-roof: a tensor launch right of the ridge is judged by the roof of its input type (issue 26), on the real
Nsight Compute counters of the H100 real-kernel set (cuBLAS/cuBLASLt GEMMs in bf16, fp16, tf32 and fp8, cuDNN's
flash-attention forward) and of the tensor_bound verdict case (wmma fp16), against the shipped H100 profile."""

from __future__ import annotations

import functools
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import tracekit
from tests.analysis.rules.ctx import H100, context, ids, texts, unit
from tracekit.analysis.launch_ceilings import LaunchCeilings, launch_ceilings
from tracekit.analysis.rules import tensor_roof, verdict
from tracekit.analysis.rules.base import VerdictState
from tracekit.ceilings import ceilings_for
from tracekit.counters import metric
from tracekit.present.rules.headline import headline
from tracekit.present.rules.sentences import sentence

REPO = Path(__file__).resolve().parents[3]
LIBRARY = REPO / "sample_traces" / "real_kernels" / "h100" / "library.raw.csv.gz"
CASES = REPO / "sample_traces" / "verdict_cases" / "h100" / "cases.raw.csv"
PROFILE = ceilings_for(H100, "9.0", 132)


def _sections(path: Path, tmp: Path) -> dict[str, tuple[LaunchCeilings, dict[str, Any]]]:
    """Kernel name -> (its ceilings section on the H100 profile, its launch row), through a real SQLite store."""
    analysis = tracekit.open(f"sqlite:///{tmp / 's.sqlite'}")
    launches = analysis.launches(analysis.import_file(str(path)))
    found = {}
    for row in launches.iter_rows(named=True):
        get = functools.partial(metric, analysis.store.metrics([row["id"]]))
        section = launch_ceilings(get, PROFILE, row["grid_x"], row["block_x"], 132)
        assert section is not None
        found[row["kernel_name"]] = (section, row)
    return found


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[LaunchCeilings, dict[str, Any]]]:
    return _sections(LIBRARY, tmp_path_factory.mktemp("library"))


def _one(found: dict[str, tuple[LaunchCeilings, dict[str, Any]]], prefix: str) -> LaunchCeilings:
    return next(section for name, (section, _) in found.items() if name.startswith(prefix))


@pytest.mark.parametrize(
    ("kernel", "kind", "tflop_per_s"),
    [
        ("nvjet_sm90_tst_320x128", "bf16", 792.6),  # torch.matmul bf16 8192^3 (cuBLAS)
        ("nvjet_sm90_hsh_320x128", "fp16", 762.6),
        ("sm90_xmma_gemm_f32f32_tf32f32", "tf32", 406.2),  # allow_tf32
        ("nvjet_sm90_qqtst_144x128", "fp8", 1441.0),  # cuBLASLt e4m3 -> bf16
    ],
)
def test_each_gemm_gets_a_point_on_the_tensor_roof_of_its_type(library, kernel: str, kind: str, tflop_per_s: float):
    section = _one(library, kernel)
    roof = section.roofline
    assert roof is not None and roof.flop_kind == f"tensor_{kind}" and roof.bound_side == "compute"
    tensor = section.unit("tensor")
    assert tensor is not None and tensor.unit == f"tensor_{kind}" and 0.8 < tensor.of_achievable <= 1.0
    assert tensor.achieved == pytest.approx(tflop_per_s * 1e12, rel=0.002)  # sm__ops_path_tensor_src_<type>
    assert tensor.achieved <= roof.achieved_flop_per_s < 1.01 * tensor.achieved  # the CUDA cores' few FLOPs beside
    drawn = next(r for r in roof.roofs if r.name == f"tensor_{kind}")
    assert drawn.value == PROFILE.tensor_flop_per_s[kind].value and drawn.source == PROFILE.source
    assert roof.fraction_of_attainable == pytest.approx(roof.achieved_flop_per_s / drawn.value)
    # the rule, on the real section: the point, and the tensor pipe as the bound
    ctx = context(units=(unit("Tensor pipe", "tensor", 95.0),), ceilings=section)
    found = tensor_roof.bound(ctx)
    assert ids(found) == ["tensor-roof.near-roof"] and found[0].limiter == "tensor"
    assert found[0].get("tensor_type") == kind and found[0].get("tensor_of_achievable") == tensor.of_achievable
    assert f"its {kind} tensor work, " in texts(found) and f"of the {kind} tensor roof (" in texts(found)


def test_a_gemm_is_bound_by_its_tensor_roof_not_the_shared_memory_that_feeds_it(library) -> None:
    """cuBLAS's bf16 GEMM: Nsight's L1/shared throughput (98.2%) is above the tensor pipe's (97%), but the launch
    is right of the ridge at 92% of the bf16 roof: the verdict names the tensor pipe and its roof."""
    section = _one(library, "nvjet_sm90_tst_320x128")
    units = (unit("L1/shared", "l1/shared", 98.2), unit("Tensor pipe", "tensor", 97.0))
    outcome = verdict.run(context(units=units, stalls={"long_scoreboard": 1.0, "selected": 1.0}, ceilings=section))
    assert (outcome.mode, outcome.limiter) == ("throughput-bound", "tensor")
    assert outcome.judged_by is not None and outcome.judged_by.unit == "tensor_bf16"
    line = headline(outcome, units)
    assert line.startswith("Throughput-bound: Tensor pipe at 97% of its peak, ") and "of the bf16 tensor roof" in line
    assert sentence(outcome.findings[-1]).startswith("Tensor bf16 792.6 TFLOP/s: 80.1% of nominal, ")


def test_flash_attention_near_its_roof_is_tensor_bound_not_low_occupancy(library) -> None:
    """cuDNN's flash-attention forward (warp-specialized wgmma, one 384-thread block per SM): no unit at 80% of its
    peak and latency stalls dominate, but its bf16 tensor work is ~79% of the bf16 roof, right of the ridge."""
    section = _one(library, "cudnn_generated_fort_native_sdpa_sm90_flash_fprop")
    tensor = section.unit("tensor")
    assert tensor is not None and tensor.unit == "tensor_bf16" and 0.7 <= tensor.of_achievable < 0.85
    units = (unit("Tensor pipe", "tensor", 76.1), unit("L2", "l2", 45.0))
    stalls = {"long_scoreboard": 3.0, "barrier": 4.0, "wait": 1.0, "selected": 1.0}
    outcome = verdict.run(context(units=units, stalls=stalls, ceilings=section))
    assert (outcome.mode, outcome.limiter) == ("throughput-bound", "tensor")
    assert "low-occupancy" not in outcome.flags
    near = next(f for f in outcome.findings if f.id == "tensor-roof.near-roof")
    assert "occupancy and memory latency are not what limits it" in sentence(near)
    assert headline(outcome, units).endswith("of the bf16 tensor roof - near its roof")
    # below 70% of the roof the rule does not decide: the same launch with a ceiling twice as high
    higher = replace(tensor, of_achievable=tensor.of_achievable / 2)
    halved = replace(section, units=tuple(higher if u is tensor else u for u in section.units))
    assert tensor_roof.bound(context(units=units, ceilings=halved)) == []
    assert ids(tensor_roof.apply(context(units=units, ceilings=halved))) == ["tensor-roof.point"]


def test_mma_sync_keeps_the_pipe_busy_far_below_the_wgmma_roof(tmp_path: Path) -> None:
    """The tensor_bound case: wmma (HMMA, mma.sync) with the pipe at ~99% of its peak reaches ~72% of the fp16
    roof, which cuBLASLt's wgmma kernels set; the point says so beside the saturated pipe."""
    section, _ = next(v for k, v in _sections(CASES, tmp_path).items() if k.startswith("tensor_bound"))
    tensor = section.unit("tensor")
    assert tensor is not None and tensor.unit == "tensor_fp16" and 0.65 < tensor.of_achievable < 0.78
    ctx = context(units=(unit("Tensor pipe", "tensor", 99.0),), ceilings=section, state=VerdictState(limiter="tensor"))
    found = tensor_roof.apply(ctx)
    assert ids(found) == ["tensor-roof.point"] and "of the fp16 tensor roof (" in texts(found)


def test_no_tensor_work_or_left_of_the_ridge_is_no_finding(library) -> None:
    add = _one(library, "void at::vectorized_elementwise_kernel")
    assert add.roofline is not None and add.roofline.flop_kind == "fp32"
    assert tensor_roof.apply(context(ceilings=add)) == [] and tensor_roof.bound(context(ceilings=add)) == []
    assert tensor_roof.apply(context()) == []
