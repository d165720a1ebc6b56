"""predict(): hand-made launches (knobs through the calculator, the regimes, ILP, launch rate, refusals) and the
recorded H100 sweep set (sample_traces/sweeps)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from tracekit.analysis.predict import (
    Change,
    PredictInputs,
    PredictionRefused,
    SweepSample,
    UnitUse,
    predict,
    what_to_try,
    with_sweep,
)

SWEEPS = Path(__file__).resolve().parents[2] / "sample_traces" / "sweeps" / "h100"


def _launch(utilization_pct: float, smem: int = 115_712, **kw: object) -> PredictInputs:
    """A 256-thread launch held to 2 blocks (16 warps) per SM by dynamic shared memory, many waves."""
    base: dict[str, object] = dict(
        compute_capability="9.0",
        sm_count=132,
        duration_ns=1_000_000.0,
        threads_per_block=256,
        grid_blocks=132 * 2 * 200,
        registers_per_thread=32,
        dynamic_shared_mem_bytes=smem,
        achieved_warps_per_sm=16.0,
        units=(UnitUse("dram (stream)", utilization_pct, 90.0, "nominal"),),
        block_launch_per_s_per_sm=1e12,  # launches free unless a test says otherwise
    )
    base.update(kw)
    return PredictInputs(**base)  # type: ignore[arg-type]


def test_at_the_ceiling_a_change_buys_nothing() -> None:
    p = predict(_launch(89.9), Change(dynamic_shared_mem_bytes=0))
    assert p.new.theoretical_warps_per_sm == 64
    assert p.predicted.speedup == pytest.approx(1.0, abs=0.01)
    assert p.regime == "throughput"
    assert p.predicted.low <= 1.0 <= p.predicted.high


def test_far_below_the_ceiling_n_over_l_holds() -> None:
    p = predict(_launch(2.0), Change(dynamic_shared_mem_bytes=0))  # 16 -> 64 warps at 2% of the bound
    assert p.predicted.speedup == pytest.approx(4.0, rel=0.03)
    assert p.regime == "latency"
    assert p.basis[0] == "this launch's counters"
    assert [f.step for f in p.findings][:4] == ["occupancy", "achieved", "concurrency", "regime"]


def test_ilp_multiplies_concurrency() -> None:
    by_ilp = predict(_launch(2.0), Change(ilp=4))
    by_warps = predict(_launch(2.0), Change(dynamic_shared_mem_bytes=0))
    assert by_ilp.new.theoretical_warps_per_sm == 16
    assert by_ilp.predicted.speedup == pytest.approx(by_warps.predicted.speedup, rel=0.01)


def test_launch_rate_binds_for_tiny_blocks() -> None:
    # 52,800 blocks of 256 threads take 32 us to start; as 211,200 blocks of 64 they take 128 us > the 100 us now.
    slow_starts = _launch(
        2.0, smem=0, achieved_warps_per_sm=60.0, block_launch_per_s_per_sm=1.25e7, duration_ns=100_000.0
    )
    to_64 = predict(slow_starts, Change(threads_per_block=64))
    assert to_64.new.grid_blocks == 132 * 2 * 200 * 4
    assert to_64.regime == "launch"
    assert to_64.predicted.duration_ns > 128_000
    assert to_64.predicted.speedup < 0.8
    free_starts = predict(
        _launch(2.0, smem=0, achieved_warps_per_sm=60.0, duration_ns=100_000.0), Change(threads_per_block=64)
    )
    assert free_starts.predicted.speedup == pytest.approx(1.0, abs=0.02)


@pytest.mark.parametrize(
    ("change", "limit"),
    [
        (Change(threads_per_block=2048), "1024"),
        (Change(dynamic_shared_mem_bytes=300_000), "shared memory"),
        (Change(registers_per_thread=300), "registers per thread"),
        (Change(threads_per_block=1024, registers_per_thread=128), "registers"),
        (Change(warps_per_sm=80), "64"),
    ],
)
def test_impossible_configurations_are_refused_naming_the_limit(change: Change, limit: str) -> None:
    with pytest.raises(PredictionRefused, match=limit) as raised:
        predict(_launch(50.0), change)
    assert "\n" not in str(raised.value)


def test_without_counters_or_sweep_it_says_what_is_missing() -> None:
    with pytest.raises(PredictionRefused, match="no Nsight Compute counters"):
        predict(_launch(50.0, units=()), Change(dynamic_shared_mem_bytes=0))


def test_a_sweep_is_fitted_and_named_as_the_basis() -> None:
    samples = [SweepSample(w, 1e6 * 16 / w, 1.0) for w in (8.0, 16.0, 32.0)]  # n / L all the way
    p = predict(with_sweep(_launch(50.0), samples), Change(dynamic_shared_mem_bytes=0))
    assert p.basis[0] == "a measured sweep"
    assert p.predicted.speedup == pytest.approx(4.0, rel=0.05)
    assert p.narrow is not None  # 64 warps lies beyond the measured 8-32


def test_what_to_try_ranks_changes_best_first() -> None:
    tries = what_to_try(_launch(2.0), top=3)
    assert tries and all(a.predicted.speedup >= b.predicted.speedup for a, b in zip(tries, tries[1:], strict=False))
    assert tries[0].predicted.speedup > 3


def test_sweep_set_labels_were_recorded() -> None:
    """The labels: 112 configurations, 9 timed runs each, the run-to-run spread far below the 10% target."""
    with (SWEEPS / "timings.csv").open(newline="") as handle:
        first = {r["config"]: float(r["median_ns"]) for r in csv.DictReader(handle)}
    with (SWEEPS / "timings_repeat.csv").open(newline="") as handle:
        again = {r["config"]: float(r["median_ns"]) for r in csv.DictReader(handle)}
    assert len(first) == 112 and first.keys() == again.keys()
    assert max(abs(again[k] / first[k] - 1) for k in first) < 0.02
