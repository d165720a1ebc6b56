"""The roofline's inputs on real counters (issue 26): tensor FLOPs per input type, TMA bulk copies that bypass the
LSU's sector counters, and the DRAM stream ceiling of the launch's read:write mix, on the H100 real-kernel set
(sample_traces/real_kernels/h100/library.raw.csv.gz) against the shipped H100 profile."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

import tracekit
from tracekit.analysis.achievable import access_pattern, dram_ceiling, stream_ceiling
from tracekit.analysis.roofline import LaunchWork, launch_work, roofline, work_pattern
from tracekit.ceilings import ceilings_for
from tracekit.ceilings.types import STREAM_MIXES
from tracekit.counters import metric

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
    assert lsu_only.name == "scattered"  # what the LSU's counters alone say
    pattern = work_pattern(work)
    assert pattern.name == "stream" and pattern.scattered_fraction < 1e-3
    assert "TMA bulk copies" in pattern.basis and "of the LSU's loads" in pattern.basis
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


def test_speed_of_light_and_roofline_figures_name_the_tensor_roof(tmp_path: Path) -> None:
    """The GEMM's speed-of-light chart has a row for its bf16 tensor FLOP/s (% of the nominal bf16 peak, binding)
    with a tick at the measured bf16 roof; its roofline draws the bf16 tensor roof beside FP32 and FP64."""
    from tracekit import figures

    analysis = tracekit.open(f"sqlite:///{tmp_path / 's.sqlite'}")
    launches = analysis.launches(analysis.import_file(str(LIBRARY)))
    results = analysis.analyze(launches["id"].to_list()).results
    gemm = next(r for r in results if (r.kernel.name or "").startswith("nvjet_sm90_tst_320x128"))
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
