"""Occupancy sweep fit: exact recovery of L and B from min(n / L, B), approximate from gradual and noisy points."""

from __future__ import annotations

import random

import polars as pl
import pytest

from tracekit.analysis.sweep import fit_occupancy_sweep
from tracekit.analysis.sweep_rule import MeasuredPoint, same_measurement
from tracekit.errors import TracekitError

LATENCY_NS = 400.0  # L: a warp's latency, ns
BOUND = 0.05  # B: warps per ns per SM
WARPS = [4, 8, 12, 16, 24, 32, 48, 64]  # the knee L * B = 20 warps per SM lies between 16 and 24


def sweep(throughputs: list[float], warps: list[float] = WARPS) -> pl.DataFrame:
    return pl.DataFrame({"occupancy_warps_per_sm": warps, "throughput": throughputs})


def smooth_min(n: float, p: float = 4.0) -> float:
    """A throughput that approaches B gradually: the p-norm smooth minimum of n / L and B (always below min)."""
    rising = n / LATENCY_NS
    return rising * BOUND / (rising**p + BOUND**p) ** (1 / p)


def test_exact_points_recover_latency_bound_and_knee():
    fit = fit_occupancy_sweep(sweep([min(n / LATENCY_NS, BOUND) for n in WARPS]))
    assert fit.latency == pytest.approx(LATENCY_NS, rel=1e-9)
    assert fit.throughput_bound == pytest.approx(BOUND, rel=1e-9)
    assert fit.needed_occupancy_warps_per_sm == pytest.approx(20.0, rel=1e-9)
    assert fit.residual_rms == pytest.approx(0.0, abs=1e-12)
    assert fit.knee_gap_fraction == pytest.approx(0.0, abs=1e-12)
    points = fit.points
    assert points.columns == ["occupancy_warps_per_sm", "throughput", "predicted_throughput", "regime"]
    assert points.get_column("predicted_throughput").to_list() == pytest.approx(points.get_column("throughput"))
    assert points.get_column("regime").to_list() == ["latency"] * 4 + ["throughput"] * 4


def test_unsorted_input_is_sorted_by_occupancy():
    order = [5, 0, 7, 2, 6, 1, 3, 4]
    warps = [WARPS[i] for i in order]
    fit = fit_occupancy_sweep(sweep([min(n / LATENCY_NS, BOUND) for n in warps], warps))
    assert fit.points.get_column("occupancy_warps_per_sm").to_list() == WARPS
    assert fit.latency == pytest.approx(LATENCY_NS)


def test_gradual_saturation_fits_below_the_true_bound_and_reports_the_gap():
    """Every point lies below min(n/L, B), so the plateau mean is below B and the rising slope below 1/L."""
    fit = fit_occupancy_sweep(sweep([smooth_min(n) for n in WARPS]))
    assert 0.9 * BOUND < fit.throughput_bound < BOUND
    assert LATENCY_NS < fit.latency < 1.15 * LATENCY_NS
    assert fit.needed_occupancy_warps_per_sm == pytest.approx(20.0, rel=0.1)
    # Near the knee (16 and 24 warps) the smooth curve is 3-6% below the fitted min(); at n = 24 it is
    # smooth_min(24) / fitted B - 1.
    assert fit.knee_gap_fraction == pytest.approx(1 - smooth_min(24) / fit.throughput_bound, rel=1e-9)
    assert 0.02 < fit.knee_gap_fraction < 0.2


def test_noisy_points_recover_latency_and_bound_approximately():
    rng = random.Random(7)
    warps = [n for n in range(2, 65, 2)]
    throughputs = [min(n / LATENCY_NS, BOUND) * (1 + rng.uniform(-0.03, 0.03)) for n in warps]
    fit = fit_occupancy_sweep(sweep(throughputs, warps))
    assert fit.latency == pytest.approx(LATENCY_NS, rel=0.05)
    assert fit.throughput_bound == pytest.approx(BOUND, rel=0.02)
    assert fit.needed_occupancy_warps_per_sm == pytest.approx(20.0, rel=0.06)


def test_points_that_never_saturate_give_latency_but_no_bound():
    fit = fit_occupancy_sweep(sweep([n / LATENCY_NS for n in [4, 8, 16]], [4, 8, 16]))
    assert fit.latency == pytest.approx(LATENCY_NS)
    assert fit.throughput_bound is None and fit.needed_occupancy_warps_per_sm is None
    assert fit.points.get_column("regime").to_list() == ["latency"] * 3


@pytest.mark.parametrize(
    ("frame", "message"),
    [
        (pl.DataFrame({"occupancy_warps_per_sm": [8, 8], "throughput": [0.01, 0.011]}), "two or more occupancies"),
        (pl.DataFrame({"occupancy_warps_per_sm": [0, 8], "throughput": [0.0, 0.01]}), "occupancy must be > 0"),
        (pl.DataFrame({"warps": [4, 8], "throughput": [0.01, 0.02]}), "missing column(s) occupancy_warps_per_sm"),
    ],
)
def test_bad_sweeps_raise_one_clear_error(frame, message):
    with pytest.raises(TracekitError, match=message.replace("(", r"\(").replace(")", r"\)")):
        fit_occupancy_sweep(frame)


def test_points_all_on_the_plateau_give_the_bound_but_no_latency():
    fit = fit_occupancy_sweep(sweep([BOUND] * 3, [32, 48, 64]))
    assert fit.throughput_bound == pytest.approx(BOUND)
    assert fit.latency is None and fit.needed_occupancy_warps_per_sm is None
    assert fit.points.get_column("regime").to_list() == ["throughput"] * 3


def test_measured_points_say_where_throughput_reaches_90_and_95_percent_and_whether_it_plateaus():
    """Issue 11: the plain copy on the H100 still gains from 32 to 64 warps per SM; the measured points, not the
    model's knee, decide what the advice says."""
    rising = fit_occupancy_sweep(
        pl.DataFrame({"occupancy_warps_per_sm": [8, 16, 32, 64], "throughput": [0.58, 1.0, 1.65, 2.12]})
    )
    assert rising.plateau_reached is False
    assert rising.measured_max_throughput == 2.12
    # 90% of 2.12 = 1.908 lies between 32 (1.65) and 64 (2.12): 32 + 32 x (1.908 - 1.65) / 0.47.
    assert rising.occupancy_at_90pct_warps_per_sm == pytest.approx(32 + 32 * (0.9 * 2.12 - 1.65) / 0.47)
    assert rising.last_step_gain_fraction == pytest.approx(2.12 / 1.65 - 1)
    assert rising.last_step_warps_per_sm == (32, 64)
    assert rising.needed_occupancy_warps_per_sm < 64  # the model's knee sits below a point that still rises
    flat = fit_occupancy_sweep(
        pl.DataFrame({"occupancy_warps_per_sm": [4, 8, 16, 32, 64], "throughput": [0.01, 0.02, 0.04, 0.05, 0.05]})
    )
    assert flat.plateau_reached is True
    assert flat.occupancy_at_95pct_warps_per_sm == pytest.approx(16 + 16 * (0.0475 - 0.04) / 0.01)


def test_points_at_nearly_one_occupancy_form_one_level():
    # A trace and its profiled twin at 63.5 and 64 warps: one level, its throughput the mean of the two.
    fit = fit_occupancy_sweep(
        pl.DataFrame({"occupancy_warps_per_sm": [8.0, 16.0, 63.5, 64.0], "throughput": [1.0, 2.0, 3.0, 3.2]})
    )
    assert fit.last_step_warps_per_sm == (16, 63.75) and fit.measured_max_throughput == pytest.approx(3.1)


def test_one_run_read_from_two_exports_is_one_point():
    """The raw page and the details page of one report give the same point up to the details page's rounding."""
    raw = MeasuredPoint(1, 7.7535968, 0.00048333805343151137, "counters")
    details = MeasuredPoint(2, 7.753596646824291, 0.00048333805343151137, "counters")
    rerun = MeasuredPoint(3, 7.71, 0.000481, "counters")
    assert same_measurement(raw, details)
    assert not same_measurement(raw, rerun)
