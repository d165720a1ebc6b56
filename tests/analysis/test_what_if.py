"""What-if occupancy and the sweep model's prediction, against values worked out by hand."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tracekit.analysis.sweep_rule import MeasuredPoint, fit_family
from tracekit.analysis.types import Sweep, SweepOutcome, SweepPoint
from tracekit.analysis.what_if import predict_throughput, what_if
from tracekit.errors import TracekitError
from tracekit.present.rules.notes import family_note

LATENCY_NS, BOUND = 400.0, 0.05  # the knee L x B is 20 warps per SM


def make_sweep(latency: float | None, bound: float | None, occupancies: tuple[float, ...]) -> Sweep:
    points = tuple(SweepPoint(None, n, 0.0, None, None) for n in occupancies)
    return Sweep(latency, bound, None, None, 0.0, points, (), ())


SWEEP = make_sweep(LATENCY_NS, BOUND, (8.0, 16.0, 32.0, 64.0))


def h100_result(sweep: Sweep | None, theoretical_warps_per_sm: int | None = 8, cc: str | None = "9.0"):
    """The parts of a `LaunchAnalysis` that `what_if` reads: an H100 launch held to 8 warps per SM."""
    return SimpleNamespace(
        kernel=SimpleNamespace(grid=(2048, 1, 1), device=SimpleNamespace(cc=cc, sm_count=132)),
        occupancy=SimpleNamespace(theoretical_warps_per_sm=theoretical_warps_per_sm),
        sweep=sweep,
    )


def test_prediction_is_n_over_l_below_the_knee_and_b_above():
    below = predict_throughput(SWEEP, 8)
    assert (below.throughput_warps_per_ns_per_sm, below.regime, below.within_measured_range) == (
        pytest.approx(8 / 400),
        "latency",
        True,
    )
    above = predict_throughput(SWEEP, 48)
    assert (above.throughput_warps_per_ns_per_sm, above.regime) == (BOUND, "throughput")
    assert predict_throughput(SWEEP, 20).throughput_warps_per_ns_per_sm == pytest.approx(BOUND)  # the knee
    assert predict_throughput(SWEEP, 4).within_measured_range is False  # below the lowest measured point
    assert predict_throughput(SWEEP, 65).within_measured_range is False


def test_prediction_with_one_branch_only():
    rising_only = make_sweep(500.0, None, (4.0, 8.0, 12.0))
    assert predict_throughput(rising_only, 64).throughput_warps_per_ns_per_sm == pytest.approx(64 / 500)
    assert predict_throughput(rising_only, 64).within_measured_range is False
    plateau_only = make_sweep(None, 0.03, ())
    assert predict_throughput(plateau_only, 2).throughput_warps_per_ns_per_sm == 0.03
    assert predict_throughput(make_sweep(None, None, ()), 8) is None


def test_what_if_without_the_shared_memory_limit_on_an_h100():
    """The sample vector_add: 256 threads, 22 registers, 232,448 B of dynamic shared memory per block.

    By hand, CC 9.0: with 0 B of shared memory only the 1 KB reserve is allocated (228 blocks fit); registers:
    22 x 32 = 704 -> 768 per warp, 16,384 / 768 = 21 warps per sub-partition, 84 per SM, 10 blocks of 8 warps;
    warps: 64 / 8 = 8 blocks. So 8 blocks, 64 warps, limited by warps.
    """
    change = what_if(h100_result(SWEEP), 256, 22, 0)
    occupancy = change.occupancy
    assert occupancy.limits_blocks_per_sm == {"registers": 10, "shared_memory": 228, "warps": 8, "blocks": 32}
    assert (occupancy.theoretical_warps_per_sm, occupancy.theoretical_pct, occupancy.limiter) == (64, 100.0, "warps")
    assert change.current_warps_per_sm == 8
    assert change.waves_per_sm == pytest.approx(2048 / (8 * 132))
    # From 256 threads, 22 registers, 0 B: 288 threads are 9 warps (7 blocks, 63 warps); 224 are 7 (9 blocks, 63);
    # 33 registers take 1,280 per warp (12 warps per sub-partition: 6 blocks); above 28,160 B a block allocates
    # more than 233,472 / 8 bytes (7 blocks).
    assert {cliff.text for cliff in change.cliffs} == {
        "above 256 threads per block occupancy drops from 100% to 98.4375%",
        "at 224 threads per block occupancy drops from 100% to 98.4375%",
        "at 33 registers per thread occupancy drops from 100% to 75%",
        "above 28160 bytes of shared memory per block occupancy drops from 100% to 87.5%",
    }
    assert change.predicted.throughput_warps_per_ns_per_sm == BOUND  # 64 warps: past the knee of 20
    assert change.predicted_current.throughput_warps_per_ns_per_sm == pytest.approx(8 / 400)
    assert change.throughput_ratio == pytest.approx(BOUND / (8 / 400))  # 2.5x


def test_what_if_registers_limit():
    # 64 registers: 2,048 per warp, 16,384 / 2,048 = 8 warps per sub-partition, 32 per SM: 4 blocks of 8 warps.
    change = what_if(h100_result(None), 256, 64, 0)
    assert (change.occupancy.active_blocks_per_sm, change.occupancy.theoretical_warps_per_sm) == (4, 32)
    assert change.occupancy.limiter == "registers"
    assert change.predicted is None and change.throughput_ratio is None


def test_what_if_refuses_an_unknown_device_and_an_impossible_configuration():
    with pytest.raises(TracekitError, match="compute capability is unknown"):
        what_if(h100_result(None, cc=None), 256, 32, 0)
    with pytest.raises(TracekitError, match="block size 2048"):
        what_if(h100_result(None), 2048, 32, 0)
    with pytest.raises(TracekitError, match="shared memory per block"):
        what_if(h100_result(None), 256, 32, 300_000)


def test_kernel_sweep_fits_exact_points_and_names_the_launches():
    points = [
        MeasuredPoint(10 + i, n, min(n / LATENCY_NS, BOUND), "trace") for i, n in enumerate((8.0, 16.0, 32.0, 64.0))
    ]
    fit, section, family = fit_family(points, [], 4)
    note = family_note(family, section)
    assert family.outcome == SweepOutcome.FITTED and family.occupancy_levels_warps_per_sm == (8.0, 16.0, 32.0, 64.0)
    assert fit.latency == pytest.approx(LATENCY_NS)
    assert fit.throughput_bound == pytest.approx(BOUND)
    assert section.launch_ids == (10, 11, 12, 13)
    assert [p.launch_id for p in section.points] == [10, 11, 12, 13]
    assert "ids 10, 11, 12, 13" in note and "4 occupancies" in note


def test_kernel_sweep_needs_three_distinct_occupancies_spanning_twice():
    """Points within 5% of one another are one occupancy: fitting them would fit run-to-run noise."""
    near = [
        MeasuredPoint(1, 8.0, 0.02, "trace"),
        MeasuredPoint(2, 8.04, 0.021, "trace"),
        MeasuredPoint(3, 16.0, 0.04, "trace"),
    ]
    fit, section, family = fit_family(near, [], 4)
    note = family_note(family, section)
    assert fit is None and section is None and family.outcome == SweepOutcome.TOO_FEW_OCCUPANCIES
    assert "4 launches of this kernel" in note and "3 with a measured occupancy" in note
    assert "at 2 distinct occupancies" in note
    narrow = [MeasuredPoint(i, n, 0.01 * n, "trace") for i, n in enumerate((40.0, 48.0, 56.0, 64.0))]
    fit, section, family = fit_family(narrow, [], 4)
    assert fit is None and "spanning 1.6x" in family_note(
        family, section
    )  # 4 occupancies, but 40 to 64 is less than a factor of 2
