"""The roofline's inputs on real counters (issue 26): tensor FLOPs per input type, TMA bulk copies that bypass the
LSU's sector counters, and the DRAM stream ceiling of the launch's read:write mix, on the H100 real-kernel set
(sample_traces/real_kernels/h100/library.raw.csv.gz) against the shipped H100 profile."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

import tracekit
from tracekit.analysis.achievable import access_pattern, dram_ceiling, ideal_sectors_per_request, stream_ceiling
from tracekit.analysis.roofline import LaunchWork, launch_work, roofline, work_pattern
from tracekit.analysis.types import LaunchAnalysis
from tracekit.ceilings import ceilings_for
from tracekit.ceilings.types import STREAM_MIXES
from tracekit.counters import metric
from tracekit.present.rules.ceilings import access_words, unit_sentences

REPO = Path(__file__).resolve().parents[2]
LIBRARY = REPO / "sample_traces" / "real_kernels" / "h100" / "library.raw.csv.gz"
H100 = ceilings_for("NVIDIA H100 80GB HBM3", "9.0", 132)


@pytest.fixture(scope="module")
def works(tmp_path_factory: pytest.TempPathFactory) -> dict[str, LaunchWork]:
    analysis = tracekit.open(f"sqlite:///{tmp_path_factory.mktemp('roof') / 's.sqlite'}")
    launches = analysis.launches(analysis.import_file(str(LIBRARY)))
    found = {}
    for row in launches.iter_rows(named=True):
        work = launch_work(functools.partial(metric, analysis.store.metrics([row["id"]])))
        assert work is not None
        found[row["kernel_name"]] = work
    return found


def _work(works: dict[str, LaunchWork], prefix: str) -> LaunchWork:
    return next(w for name, w in works.items() if name.startswith(prefix))


def test_tensor_flops_come_per_input_type_from_the_tensor_pipe_counters(works) -> None:
    """One FLOP per Nsight `ops` (an FMA is 2); each GEMM's FLOPs are of one type and match 2 M N K per second."""
    for prefix, kind in (
        ("nvjet_sm90_tst_320x128", "bf16"),
        ("nvjet_sm90_hsh_320x128", "fp16"),
        ("sm90_xmma_gemm_f32f32_tf32f32", "tf32"),
        ("nvjet_sm90_qqtst_144x128", "fp8"),
    ):
        work = _work(works, prefix)
        assert [k for k, _ in work.tensor_flop] == [kind], prefix
        # 8192^3 GEMMs (sample_traces/real_kernels/src/real_kernels.py): 2 n^3 FLOPs, and up to 2% more where a
        # tile does not divide n (320-row tiles pad 8192 rows to 8320: the MMAs issued are what the pipe counts)
        flop = dict(work.tensor_flop)[kind]
        assert 2 * 8192**3 <= flop <= 1.02 * 2 * 8192**3, (prefix, flop)
        assert max(work.flop_by_kind(), key=work.flop_by_kind().get) == f"tensor_{kind}"  # type: ignore[arg-type]
    assert _work(works, "void at::vectorized_elementwise_kernel").tensor_flop == ()


def test_tma_bulk_copies_are_no_scattered_access(works) -> None:
    """cuBLASLt's fp8 GEMM: its only LSU loads are a few scalars (4 of 32 bytes used per sector), its tiles come by
    TMA (254 M read sectors that never pass the LSU sector counters): a stream, not "scattered"."""
    work = _work(works, "nvjet_sm90_qqtst_144x128")
    assert work.data_bytes_per_sector == 4.0 and work.lsu_load_sectors == 58368
    assert work.tma_load_sectors is not None and work.tma_load_sectors > 2.5e8
    lsu_only = access_pattern(work.data_bytes_per_sector, work.sectors_per_request)
    assert lsu_only.kind == "scattered"  # what the LSU's counters alone say
    pattern = work_pattern(work)
    assert pattern.kind == "stream" and pattern.scattered_fraction < 1e-3 and pattern.tma_fraction > 0.99
    name, basis = access_words(pattern)
    assert (
        name == "stream" and "TMA bulk copies" in basis and "4 of 32 bytes used per sector of the LSU's loads" in basis
    )
    chosen = dram_ceiling(H100, pattern)
    assert chosen is not None and "dram_random_sector" not in chosen[0]
    # half the sectors by TMA, half scattered LSU loads: half as scattered
    assert access_pattern(4.0, None, None, None, 1e6, 1e6).scattered_fraction == pytest.approx(0.5)


def test_the_dram_stream_ceiling_follows_the_read_write_mix(works) -> None:
    """ATen's add reads two arrays and writes one: judged by the 2:1 stream; its sum reads only: the 1:0 stream;
    between two measured mixes DRAM time per byte is interpolated on the share written."""
    add, total = _work(works, "void at::vectorized_elementwise_kernel"), _work(works, "void at::reduce_kernel")
    add_roof, sum_roof = roofline(add, H100), roofline(total, H100)
    assert add_roof.dram_roof == "dram_stream 2:1" and sum_roof.dram_roof == "dram_stream 1:0"
    assert next(r for r in add_roof.roofs if r.name == "dram_stream 2:1").value == H100.dram_stream_by_mix["2:1"].value
    write, copy = H100.dram_stream_by_mix["0:1"].value, H100.dram_stream_by_mix["1:1"].value
    between = stream_ceiling(H100, access_pattern(32.0, None, 1.0, 3.0))  # 75% written: between 1:1 and 0:1
    assert between is not None and between[0] == "dram_stream_by_mix.1:1~0:1"
    assert between[1].value == pytest.approx(1 / (0.5 / copy + 0.5 / write))
    unknown = stream_ceiling(H100, access_pattern(32.0))
    assert unknown is not None and unknown[1].value == max(c.value for c in H100.dram_stream_by_mix.values())
    assert set(H100.dram_stream_by_mix) == set(STREAM_MIXES)


@pytest.fixture(scope="module")
def analysed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, LaunchAnalysis]:
    """Kernel name -> its analysis by the engine (what `tracekit analyze` shows), against the shipped H100 profile."""
    analysis = tracekit.open(f"sqlite:///{tmp_path_factory.mktemp('engine') / 's.sqlite'}")
    launches = analysis.launches(analysis.import_file(str(LIBRARY)))
    return {r.kernel.name or "": r for r in analysis.analyze(launches["id"].to_list()).results}


@pytest.mark.parametrize(
    ("prefix", "kind"),
    [
        ("nvjet_sm90_tst_320x128", "bf16"),
        ("nvjet_sm90_hsh_320x128", "fp16"),
        ("sm90_xmma_gemm_f32f32_tf32f32", "tf32"),
        ("nvjet_sm90_qqtst_144x128", "fp8"),
    ],
)
def test_each_gemms_verdict_names_its_tensor_roof(analysed, prefix: str, kind: str) -> None:
    """bf16, fp16, tf32 and fp8 GEMMs: throughput-bound by the tensor pipe, the headline and the judged-by line name
    the roof of their type; the fp8 GEMM is no longer "throughput-bound by l2" (its L2 at 84% of the 9.06 TB/s
    ceiling) nor scattered (its loads are TMA tiles)."""
    result = next(r for name, r in analysed.items() if name.startswith(prefix))
    verdict, section = result.classification, result.ceilings
    assert (verdict.mode, verdict.limiter) == ("throughput-bound", "tensor"), verdict.headline
    assert section is not None and section.roofline is not None and section.roofline.flop_kind == f"tensor_{kind}"
    assert section.judged_by is not None and section.judged_by.unit == f"tensor_{kind}"
    assert f"of the {kind} tensor roof" in verdict.headline
    assert verdict.evidence[-1] == unit_sentences(section)[section.judged_by.unit] + "."
    assert f"of the {kind} tensor roof on this GPU (measured: " in verdict.evidence[-1]
    assert section.access is not None and section.access.kind == "stream" and "uncoalesced-access" not in verdict.flags
    l2 = section.unit("l2")
    assert l2 is not None and l2.of_achievable <= 1.0


def test_flash_attention_is_judged_by_its_tensor_roof(analysed) -> None:
    result = next(r for name, r in analysed.items() if name.startswith("cudnn_generated_fort_native_sdpa_sm90"))
    verdict = result.classification
    assert (verdict.mode, verdict.limiter) == ("throughput-bound", "tensor") and "low-occupancy" not in verdict.flags
    assert verdict.headline.endswith("of the bf16 tensor roof - near its roof")
    assert any("at or above the 70% at which the tensor pipe bounds it" in line for line in verdict.evidence)


def test_speed_of_light_and_roofline_figures_name_the_tensor_roof(analysed) -> None:
    """The GEMM's speed-of-light chart has a row for its bf16 tensor FLOP/s (% of the nominal bf16 peak, binding)
    with a tick at the measured bf16 roof; its roofline draws the bf16 tensor roof beside FP32 and FP64."""
    from tracekit import figures

    gemm = next(r for name, r in analysed.items() if name.startswith("nvjet_sm90_tst_320x128"))
    assert gemm.classification.limiter == "tensor" and gemm.ceilings is not None
    sol = figures.speed_of_light_figure(gemm)
    assert sol is not None
    bars, ticks = sol.data[0], sol.data[1]
    row = list(bars.y).index("Tensor bf16 FLOP/s (binds)")
    bf16 = H100.tensor_flop_per_s["bf16"]
    assert bars.x[row] == pytest.approx(100 * 792.6e12 / bf16.nominal, rel=0.001)  # type: ignore[operator]
    tick = list(ticks.y).index("Tensor bf16 FLOP/s (binds)")
    assert ticks.x[tick] == pytest.approx(100 * bf16.value / bf16.nominal)  # type: ignore[operator]
    assert gemm.ceilings.roofline is not None
    drawn = [trace.name for trace in figures.roofline_figure(gemm.ceilings.roofline).data]  # type: ignore[union-attr]
    assert {"tensor_bf16 roof", "fp32 roof", "fp64 roof"} <= set(drawn) and "tensor_fp8 roof" not in drawn


def test_vector_loads_are_no_scattered_access() -> None:
    """Without the bytes-per-sector ratio, sectors per request are judged against what a coalesced request of the
    launch's access widths needs (Nsight's smsp__sass_inst_executed_op_memory_<bits>b counts): 16 sectors for a
    warp's 16-byte loads are a stream. Without width counters 4-byte loads are assumed (FlashAttention-2's raw
    page has none: its 16 sectors per request still read as 43% scattered)."""
    assert ideal_sectors_per_request({128: 10.0, 32: 0.0}) == 16.0
    assert ideal_sectors_per_request({128: 1.0, 32: 1.0}) == 10.0 and ideal_sectors_per_request({}) is None
    assert access_pattern(None, 16.0, ideal_sectors=16.0).kind == "stream"
    assert access_pattern(None, 16.0).scattered_fraction == pytest.approx(12 / 28)  # widths unknown: 4-byte loads
    assert access_pattern(None, 32.0, ideal_sectors=16.0).scattered_fraction == 1.0  # every lane its own sector
