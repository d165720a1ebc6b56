"""The latency-hiding model on small hand-made cases: the knee, gradual saturation, ILP, waves, launch rate."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracekit.analysis import model


def test_far_below_the_knee_throughput_is_n_over_l() -> None:
    # L = 100 ns per request, bound far away: doubling the concurrency doubles the throughput.
    x1 = model.soft_min_throughput(4, 100.0, 1000.0, 2.0)
    x2 = model.soft_min_throughput(8, 100.0, 1000.0, 2.0)
    assert x1 == pytest.approx(0.04, rel=1e-3)
    assert x2 / x1 == pytest.approx(2.0, rel=1e-3)


def test_at_the_ceiling_more_concurrency_buys_nothing() -> None:
    # Needed concurrency L x B = 100 x 1 = 100; at 10x that, the throughput is the bound.
    assert model.needed_concurrency(100.0, 1.0) == 100.0
    at = model.soft_min_throughput(1000, 100.0, 1.0, 4.0)
    beyond = model.soft_min_throughput(4000, 100.0, 1.0, 4.0)
    assert at == pytest.approx(1.0, rel=1e-3)
    assert beyond / at == pytest.approx(1.0, abs=1e-3)


def test_gradual_saturation_lies_below_the_sharp_knee() -> None:
    sharp = model.model_throughput(100, 100.0, 1.0)
    soft = model.soft_min_throughput(100, 100.0, 1.0, 2.0)
    assert sharp == 1.0
    assert soft == pytest.approx(1 / math.sqrt(2))  # at the knee the p = 2 norm gives 1/sqrt(2) of the bound
    assert model.soft_min_throughput(100, 100.0, 1.0, 50.0) == pytest.approx(1.0, rel=0.02)  # p -> inf: the knee


def test_ilp_multiplies_concurrency() -> None:
    assert model.concurrency(16, 4) == 64
    x_warps = model.soft_min_throughput(model.concurrency(64, 1), 500.0, None, 2.0)
    x_ilp = model.soft_min_throughput(model.concurrency(16, 4), 500.0, None, 2.0)
    assert x_ilp == pytest.approx(x_warps)


def test_fit_recovers_latency_bound_and_sharpness() -> None:
    conc = [8.0, 16.0, 24.0, 32.0, 48.0, 64.0]
    thr = [model.soft_min_throughput(c, 40.0, 1.2, 2.0) for c in conc]
    fit = model.fit_saturation(conc, thr)
    assert fit.latency == pytest.approx(40.0, rel=0.02)
    assert fit.bound == pytest.approx(1.2, rel=0.02)
    assert fit.sharpness == pytest.approx(2.0, abs=0.06)
    with pytest.raises(ValueError, match="two or more"):
        model.fit_saturation([8.0, 8.0], [1.0, 1.0])


def test_from_utilization_passes_through_the_point() -> None:
    lat, bound = model.from_utilization(2.0, 10.0, 0.5, 2.0)
    assert bound == pytest.approx(4.0)
    assert model.soft_min_throughput(10.0, lat, bound, 2.0) == pytest.approx(2.0)
    lat0, none = model.from_utilization(2.0, 10.0, 0.0)
    assert none is None and lat0 == pytest.approx(5.0)


def test_waves_and_tail() -> None:
    assert model.waves(264, 2, 132) == 1.0
    # 1.5 waves of equal blocks in lockstep: two block times, slots held 1.5 of 2 (PMPP's partial last wave).
    assert model.wave_residency(1.5, 0.0) == pytest.approx(0.75)
    # Blocks of unequal length: finishes spread over one block time, makespan W + 1/2.
    assert model.wave_residency(1.5, 1.0) == pytest.approx(0.75)
    assert model.wave_residency(1.9, 1.0) == pytest.approx(1.9 / 2.4)
    assert model.wave_residency(1.9, 0.0) == pytest.approx(0.95)
    assert model.wave_residency(10.0, 0.0) == 1.0
    assert model.wave_residency(10.0, 1.0) == pytest.approx(10 / 10.5)
    # Under one wave: a block time at least, W of the slots whatever the smear.
    assert model.wave_residency(0.125, 0.0) == model.wave_residency(0.125, 1.0) == pytest.approx(0.125)
    # Many waves approach full residency either way; few waves lose the most.
    assert model.wave_residency(200.0) > 0.995 > model.wave_residency(10.0) > model.wave_residency(1.9)


def test_launch_rate_binds_for_many_small_blocks() -> None:
    # 1.25e7 blocks/s per SM over 132 SMs: 524,288 blocks take 318 us, far above a 140 us work time: the block
    # scheduler binds (it starts blocks while the SMs work, so the slower of the two is the duration).
    launch = model.launch_time_ns(524_288, 1.25e7, 132)
    assert launch == pytest.approx(317_750, rel=1e-3)
    assert model.combine_times(140_000.0, launch) == launch
    assert model.combine_times(140_000.0, 5_000.0) == pytest.approx(140_000.0, rel=1e-3)  # few blocks: no cost


# ---- Little's law with a loaded-latency curve (DRAM, tracekit calibrate) ----------------------------------


def _flat_then_steep(throughput: float) -> float:
    """A loaded-latency curve like the H100's: 400 ns up to 2 units of throughput, then rising to 1,600 ns at 3."""
    return 400.0 if throughput <= 2.0 else 400.0 + 1200.0 * (throughput - 2.0)


def test_little_law_on_the_flat_part_scales_with_concurrency() -> None:
    # Latency flat: bytes in flight = X x L, so twice the concurrency moves twice the bytes.
    x = model.loaded_latency_throughput(2.0, 0.5, 3.0, _flat_then_steep)
    assert x == pytest.approx(1.0, rel=1e-6)


def test_latency_grows_near_the_ceiling_so_throughput_bends_below_the_knee() -> None:
    # Concurrency x6 from 0.5: the sharp knee says min(3, 3) = 3; latency rising past 2 holds it below: bytes in
    # flight X x L(X) stay 6 x 0.5 x 400 = 1,200.
    x = model.loaded_latency_throughput(6.0, 0.5, 3.0, _flat_then_steep)
    assert 2.0 < x < 3.0
    assert x * _flat_then_steep(x) == pytest.approx(6.0 * 0.5 * 400.0, rel=1e-4)


def test_the_ceiling_is_never_passed_and_fixed_work_dilutes_the_latency() -> None:
    assert model.loaded_latency_throughput(1000.0, 0.5, 3.0, _flat_then_steep) == pytest.approx(3.0, rel=1e-2)
    # A warp waiting for memory half its time: latency growth costs it only half as much.
    pure = model.loaded_latency_throughput(6.0, 0.5, 3.0, _flat_then_steep, memory_share=1.0)
    half = model.loaded_latency_throughput(6.0, 0.5, 3.0, _flat_then_steep, memory_share=0.5)
    assert half > pure


def test_latency_curve_interpolates_and_holds_its_ends() -> None:
    curve = ((0.1, 350.0), (0.5, 450.0), (1.0, 1450.0))
    assert model.interpolate_latency(curve, 0.0) == 350.0
    assert model.interpolate_latency(curve, 0.3) == pytest.approx(400.0)
    assert model.interpolate_latency(curve, 1.2) == 1450.0


def test_block_starts_and_work_overlap_the_slower_binds() -> None:
    assert model.combine_times(100.0, 60.0) == 100.0
    assert model.combine_times(100.0, 160.0) == 160.0
    assert model.remove_launch_time(100.0, 60.0) == 100.0
    assert model.combine_times(3.0, 4.0, order=2.0) == pytest.approx(5.0)


@settings(max_examples=300, deadline=None)
@given(
    steps=st.lists(st.floats(0.0, 2.0), min_size=1, max_size=12),
    base_ns=st.floats(50.0, 1000.0),
    scale=st.floats(0.01, 50.0),
    now=st.floats(0.01, 0.99),
    share=st.floats(0.0, 1.0),
    fixed=st.floats(0.1, 4.0),
    queued=st.one_of(st.none(), st.floats(1.0, 3.0)),
)
def test_the_exact_solve_on_the_curve_segments_is_the_bisections_answer(
    steps, base_ns, scale, now, share, fixed, queued
):
    """With the knots of a piecewise-linear, rising latency curve the throughput is solved on its segment (a
    quadratic); it is what bisecting the whole range finds."""
    fractions = [(i + 1) / (len(steps) + 1) for i in range(len(steps))]
    latencies = [base_ns * (1.0 + sum(steps[: i + 1])) for i in range(len(steps))]
    curve = tuple(zip(fractions, latencies, strict=True))
    ceiling = 3.0

    def latency_at(x: float) -> float:
        return model.interpolate_latency(curve, x / ceiling)

    latency_now = None if queued is None else queued * latency_at(now * ceiling)
    args = (scale, now * ceiling, ceiling, latency_at, share, latency_now, fixed)
    exact = model.loaded_latency_throughput(*args, knots=[f * ceiling for f in fractions])
    # the bisection stops within a part in 10^12 of the range
    assert exact == pytest.approx(model.loaded_latency_throughput(*args), rel=1e-9, abs=ceiling * 1e-11)
