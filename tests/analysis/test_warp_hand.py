"""Per-warp analyses on five warps whose every quantity is worked out by hand in the comments.

Relative times (ns after the first start; the absolute times add ORIGIN + 100):

    SM 0  block 0  warp 0  [  0, 200)   latency 200
    SM 0  block 0  warp 1  [  0, 300)   latency 300
    SM 0  block 2  warp 0  [320, 400)   latency  80
    SM 1  block 1  warp 0  [ 50, 150)   latency 100
    SM 1  block 1  warp 1  [100, 250)   latency 150

Active warps, SM 0: 2 on [0,200), 1 on [200,300), 0 on [300,320), 1 on [320,400)  -> integral 400+100+80 = 580
             SM 1: 1 on [50,100), 2 on [100,150), 1 on [150,250)                -> integral 50+100+100 = 250
GPU total: 2,3,4,3,2,1 on the 50 ns steps from 0 to 300, 0 on [300,320), 1 on [320,400) -> 830 = sum of latencies.
"""

from __future__ import annotations

import json
import math

import polars as pl
import pytest

from tracekit.analysis import blocks, latency, littles_law, tail, throughput, timeline, warp_occupancy, windows
from tracekit.errors import TracekitError
from tracekit.present.rules.notes import edge_explanation

ORIGIN = 1_750_000_000_000_000_000  # %globaltimer reads ns since the epoch
ROWS = [  # sm_id, block_id, warp_in_block, start_rel_ns, end_rel_ns
    (0, 0, 0, 0, 200),
    (0, 0, 1, 0, 300),
    (0, 2, 0, 320, 400),
    (1, 1, 0, 50, 150),
    (1, 1, 1, 100, 250),
]


def warps_frame(rows=ROWS) -> pl.DataFrame:
    """The frame as Store.warps returns it: absolute times, cycles null."""
    return pl.DataFrame(
        {
            "sm_id": [row[0] for row in rows],
            "block_id": [row[1] for row in rows],
            "warp_in_block": [row[2] for row in rows],
            "start_ns": [ORIGIN + 100 + row[3] for row in rows],
            "end_ns": [ORIGIN + 100 + row[4] for row in rows],
            "start_cycles": [None] * len(rows),
            "end_cycles": [None] * len(rows),
        },
        schema={
            "sm_id": pl.Int32,
            "block_id": pl.Int64,
            "warp_in_block": pl.Int32,
            "start_ns": pl.Int64,
            "end_ns": pl.Int64,
            "start_cycles": pl.Int64,
            "end_cycles": pl.Int64,
        },
    )


@pytest.fixture
def warps() -> pl.DataFrame:
    return warps_frame()


def test_relative_times_shift_to_the_first_start(warps):
    rel = warp_occupancy.relative_times(warps)
    assert rel["start_rel_ns"].to_list() == [row[3] for row in ROWS]
    assert rel["end_rel_ns"].to_list() == [row[4] for row in ROWS]


def test_occupancy_steps_per_sm_and_gpu(warps):
    steps = warp_occupancy.occupancy_steps(warps)
    assert steps.rows() == [
        (0, 0, 2),
        (0, 200, 1),
        (0, 300, 0),
        (0, 320, 1),
        (0, 400, 0),
        (1, 50, 1),
        (1, 100, 2),
        (1, 150, 1),
        (1, 250, 0),
    ]
    gpu = warp_occupancy.occupancy_steps(warps, per_sm=False)
    assert gpu.rows() == [(0, 2), (50, 3), (100, 4), (150, 3), (200, 2), (250, 1), (300, 0), (320, 1), (400, 0)]


def test_an_end_and_a_start_at_the_same_time_do_not_overlap():
    # SM 0: [0,100) then [100,200) in the same slot, and a third warp [100,150): at t=100 one ends, two start.
    # Ends first: the count goes 1 -> 0 -> 2 at t=100, never 3; the step holds the count after all events.
    frame = warps_frame([(0, 0, 0, 0, 100), (0, 1, 0, 100, 200), (0, 1, 1, 100, 150)])
    assert warp_occupancy.occupancy_steps(frame).rows() == [(0, 0, 1), (0, 100, 2), (0, 150, 1), (0, 200, 0)]
    assert warp_occupancy.mean_occupancy(frame).max_active_warps_per_sm == 2
    # Slots: the warp starting at 100 reuses the slot freed at 100.
    assert timeline.warps_in_window(frame, (0, 200))["slot"].to_list() == [0, 0, 1]


def test_mean_occupancy_over_the_launch(warps):
    occupancy = warp_occupancy.mean_occupancy(warps)
    assert occupancy.window_ns == (0, 400)
    assert occupancy.sm_count == 2
    assert occupancy.mean_occupancy_warps_per_sm == pytest.approx(830 / (400 * 2))  # 1.0375
    # SM 0: mean 580/400 = 1.45, E[n^2] = (4*200 + 1*100 + 1*80)/400 = 2.45, variance 2.45 - 1.45^2 = 0.3475
    # SM 1: mean 250/400 = 0.625, E[n^2] = (1*50 + 4*50 + 1*100)/400 = 0.875, variance 0.484375
    assert occupancy.per_sm.rows() == [
        (0, 1.45, pytest.approx(0.3475), 380, 2),
        (1, 0.625, pytest.approx(0.484375), 200, 2),
    ]
    # GPU curve (total / 2): E[total^2] = (4+9+16+9+4+1)*50/400 + 1*80/400 = 5.575, E[total] = 2.075,
    # variance of the total 5.575 - 2.075^2 = 1.269375, per SM /4.
    assert occupancy.variance_over_time == pytest.approx(1.269375 / 4)
    assert occupancy.variance_across_sms == pytest.approx(((1.45 - 1.0375) ** 2 + (0.625 - 1.0375) ** 2) / 2)
    # Over the time each SM held a warp: SM 0 380 ns, SM 1 200 ns.
    assert occupancy.mean_warps_per_active_sm == pytest.approx(830 / 580)
    assert occupancy.max_active_warps_per_sm == 2
    assert occupancy.to_dict()["per_sm"][1]["mean_active_warps"] == 0.625


def test_mean_occupancy_counts_idle_sms_and_windows(warps):
    # Two more SMs that ran nothing halve the GPU mean and pull the across-SM variance toward the zeros.
    four = warp_occupancy.mean_occupancy(warps, sm_count=4)
    assert four.mean_occupancy_warps_per_sm == pytest.approx(830 / 1600)
    means = [1.45, 0.625, 0.0, 0.0]
    assert four.variance_across_sms == pytest.approx(sum(m * m for m in means) / 4 - (sum(means) / 4) ** 2)
    # [100, 300): SM 0 has 2 on [100,200) and 1 on [200,300) = 300; SM 1 2 on [100,150), 1 on [150,250) = 200.
    window = warp_occupancy.mean_occupancy(warps, window=(100, 300))
    assert window.mean_occupancy_warps_per_sm == pytest.approx(500 / (200 * 2))
    assert window.per_sm["mean_active_warps"].to_list() == [1.5, 1.0]


def test_latency_stats(warps):
    stats = latency.latency_stats(warps)
    # Sorted latencies 80, 100, 150, 200, 300: mean 830/5; p90 at rank 3.6 -> 200 + 0.6*100; p99 at 3.96.
    assert stats.count == 5
    assert stats.mean_latency_ns == 166.0
    assert (stats.p50_latency_ns, stats.p90_latency_ns, stats.p99_latency_ns) == (150.0, 260.0, pytest.approx(296.0))
    assert (stats.min_latency_ns, stats.max_latency_ns) == (80, 300)
    deviations = [(x - 166) ** 2 for x in (80, 100, 150, 200, 300)]
    assert stats.std_latency_ns == pytest.approx(math.sqrt(sum(deviations) / 5))


def test_latency_by_sm_and_by_warp_position(warps):
    by_sm = latency.latency_by_sm(warps)
    assert by_sm.select("sm_id", "warps", "mean_latency_ns", "max_latency_ns").rows() == [
        (0, 3, pytest.approx(580 / 3), 300),
        (1, 2, 125.0, 150),
    ]
    by_position = latency.latency_by_warp_position(warps)
    # warp 0 of its block: 200, 80, 100; warp 1: 300, 150.
    assert by_position.select("warp_in_block", "warps", "mean_latency_ns", "min_latency_ns").rows() == [
        (0, 3, pytest.approx(380 / 3), 80),
        (1, 2, 225.0, 150),
    ]


def test_throughput(warps):
    result = throughput.warp_throughput(warps, sm_clock_hz=2e9)
    # 5 warps end in (0, 400] on 2 SMs: 5 / 800 warps per ns per SM; at 2 cycles per ns, half that per cycle.
    assert result.warps_completed == 5
    assert result.throughput_warps_per_ns_per_sm == 5 / 800
    assert result.throughput_warps_per_cycle_per_sm == pytest.approx(5 / 1600)
    assert result.per_sm.rows() == [(0, 3, 3 / 400), (1, 2, 2 / 400)]
    # (100, 300]: ends at 150, 200, 250, 300 -> 4; starts in [100, 300): only [100,250).
    window = throughput.warp_throughput(warps, window=(100, 300))
    assert (window.warps_completed, window.warps_started) == (4, 1)
    assert window.throughput_warps_per_cycle_per_sm is None


def test_littles_law_over_the_launch_closes_exactly(warps):
    law = littles_law.check_littles_law(warps, "launch")
    # 166 ns x 5/800 warps/ns/SM = 1.0375 = 830 / 800.
    assert law.window_ns == (0, 400)
    assert law.mean_occupancy == pytest.approx(1.0375)
    assert law.mean_latency_ns == 166.0
    assert law.arrival_throughput_warps_per_ns_per_sm == 5 / 800
    assert law.relative_error == 0.0 and law.clipped_relative_error == 0.0
    assert edge_explanation(law.to_dict()) == "closes exactly: no warp crosses the window's edges"


def test_littles_law_over_a_window_both_ways(warps):
    law = littles_law.check_littles_law(warps, (100, 300))
    assert law.window_kind == "given"
    assert law.mean_occupancy == pytest.approx(1.25)  # 500 warp-ns / (200 ns x 2 SMs)
    # Clipped: the 4 resident warps inside [100,300) last 100, 200, 50, 150 -> mean 125, 4/400 per ns per SM.
    assert law.warps_resident == 4
    assert law.mean_clipped_latency_ns == 125.0
    assert law.clipped_latency_x_throughput == pytest.approx(1.25)
    assert law.clipped_relative_error == pytest.approx(0.0, abs=1e-15)
    # Whole: only [100,250) starts inside: 150 ns x 1/400 = 0.375, 70% short of 1.25.
    assert (law.warps_started, law.mean_latency_ns) == (1, 150.0)
    assert law.latency_x_throughput == pytest.approx(0.375)
    assert law.relative_error == pytest.approx(-0.7)
    # The gap is the warp time carried in by the three warps that started before 100: 100 + 200 + 50.
    assert (law.warps_straddling_start, law.warps_straddling_end) == (3, 0)
    assert (law.carried_in_warp_ns, law.spilled_out_warp_ns) == (350, 0)
    assert law.latency_x_throughput - law.mean_occupancy == pytest.approx((0 - 350) / 400)
    # Halves: [100,200) holds 100+100+50+100 = 350 warp-ns, [200,300) 100+50 = 150: (1.5 - 3.5) / 2.5.
    assert law.occupancy_drift == pytest.approx(-0.8)
    assert edge_explanation(law.to_dict()) == (
        "edge effects: 3 warps straddle the start (350 warp-ns carried in), 0 straddle the end (0 warp-ns spilled "
        "out): -0.875 warps/SM; occupancy drifts -80.0% across the window"
    )


def test_tail(warps):
    result = tail.measure_tail(warps)
    # Blocks start at 0, 50, 320; the last at 320 -> tail 80 of 400. SM 1 finishes at 250, SM 0 at 400.
    assert (result.span_ns, result.last_block_start_ns, result.after_last_block_start_ns) == (400, 320, 80)
    assert result.after_last_block_start_fraction == 0.2
    assert (result.first_sm_idle_ns, result.tail_ns) == (250, 150)
    assert result.tail_fraction == 0.375
    # [320,400): one warp on 2 SMs -> 0.5; [0,320): 750 warp-ns / 640.
    assert result.mean_occupancy_in_tail_warps_per_sm == 0.5
    assert result.mean_occupancy_before_tail_warps_per_sm == pytest.approx(750 / 640)
    assert (result.sm_finish_min_ns, result.sm_finish_max_ns, result.sm_finish_mean_ns) == (250, 400, 325.0)
    assert result.sm_finish_std_ns == 75.0
    assert tail.measure_tail(warps, sm_count=3).idle_sms == 1


def test_block_replacement(warps):
    frame = blocks.blocks_frame(warps)
    # Block 0 ends at 300 on SM 0, block 2 starts there at 320: gap 20. Nothing follows blocks 1 and 2.
    assert frame.select("sm_id", "block_id", "start_ns", "end_ns", "end_spread_ns", "gap_ns").rows() == [
        (0, 0, 0, 300, 100, 20),
        (0, 2, 320, 400, 0, None),
        (1, 1, 50, 250, 100, None),
    ]
    result = blocks.block_replacement(warps)
    assert (result.blocks, result.replacements, result.gap_mean_ns, result.gap_max_ns) == (3, 1, 20.0, 20)
    assert result.end_spread_mean_ns == pytest.approx(200 / 3)
    assert result.end_spread_max_ns == 100
    # Lost: the gap leaves block 0's 2 slots empty for 20 ns = 40 warp-ns; finished warps wait 100 (block 0,
    # warp 0) + 100 (block 1, warp 0) = 200 warp-ns; over 400 ns x 2 SMs.
    assert result.lost_to_gaps_warps_per_sm == 40 / 800
    assert result.lost_to_end_spread_warps_per_sm == 200 / 800
    # Block durations 80, 200, 300 ns: linear p10 = 80 + 0.2 x 120 = 104, p90 = 200 + 0.8 x 100 = 280, median 200.
    assert result.duration_relative_spread == pytest.approx((280 - 104) / 200)


def test_binned_activity(warps):
    binned = timeline.binned_activity(warps, bins=4)
    # SM 0 on [0,100): 2; [100,200): 2; [200,300): 1; [300,400): 80 ns of 1 warp -> 0.8.
    # SM 1 on [0,100): 50 ns of 1 -> 0.5; [100,200): 2x50 + 1x50 -> 1.5; [200,300): 50 ns -> 0.5; then 0.
    assert binned.rows() == [
        (0, 0, 100, 2.0),
        (0, 100, 200, 2.0),
        (0, 200, 300, 1.0),
        (0, 300, 400, 0.8),
        (1, 0, 100, 0.5),
        (1, 100, 200, 1.5),
        (1, 200, 300, 0.5),
        (1, 300, 400, 0.0),
    ]
    # A window that cuts through warps: [50, 350) in 3 bins.
    assert timeline.binned_activity(warps, bins=3, window=(50, 350))["mean_active_warps"].to_list() == [
        2.0,
        1.5,
        0.8,
        1.5,
        1.0,
        0.0,
    ]


def test_warps_in_window_caps_earliest_first(warps):
    shown = timeline.warps_in_window(warps, (100, 300))
    # Resident in [100,300): all but the warp starting at 320.
    assert shown.select("sm_id", "block_id", "warp_in_block", "slot").rows() == [
        (0, 0, 0, 0),
        (0, 0, 1, 1),
        (1, 1, 0, 0),
        (1, 1, 1, 1),
    ]
    capped = timeline.warps_in_window(warps, (100, 300), max_warps=3)
    assert capped.select("start_rel_ns", "end_rel_ns").rows() == [(0, 200), (0, 300), (50, 150)]
    # Over the launch, block 2's warp on SM 0 takes slot 0 again: both slots were free at 320.
    assert timeline.warps_in_window(warps, (0, 400)).filter(pl.col("block_id") == 2)["slot"].item() == 0


def test_trace_vs_counter():
    result = warp_occupancy.trace_vs_counter(32.0, 64, 60.0)
    # 32 of 64 warps is 50%; 60% of 64 is 38.4 warps: the counter is 6.4 warps, 10 points higher.
    assert result["trace_pct"] == 50.0
    assert result["counter_warps_per_sm"] == pytest.approx(38.4)
    assert result["difference_warps_per_sm"] == pytest.approx(6.4)
    assert result["difference_pct_points"] == 10.0


def test_steady_state_of_a_tiny_trace_is_inside_the_launch(warps):
    state = windows.describe_steady_state(warps)
    # Level: the time-weighted median of the GPU total over [0,320): 0 for 20 ns, 1 for 50, 2 for 100 (the
    # 160th ns falls there), 3 and 4 for the rest. Ramp-up ends at once (2 at t=0); the count last stands
    # >= 0.9 x 2 until 250, before the last block start (320), so the tail starts at 250.
    assert state.steady_level_warps == 2.0
    assert (state.ramp_up_end_ns, state.tail_start_ns) == (0, 250)
    # 250 ns is more than one mean warp latency ((200 + 300 + 80 + 100 + 150) / 5 = 166 ns): warps turn over in it.
    assert not state.whole_launch
    assert windows.steady_state_window(warps) == (0, 250)


def test_a_one_wave_launch_has_no_steady_state():
    """Blocks starting 0-60 ns apart and running ~1 us: the stretch between ramp-up and the last block start is
    far shorter than a warp's latency, so no warp turns over in it and Little's law there would measure only its
    edges. The window is the whole launch, where the law closes exactly."""
    rows = [(sm, sm * 2 + b, 0, 20 * (sm * 2 + b), 1000 + 20 * (sm * 2 + b)) for sm in range(2) for b in range(2)]
    state = windows.describe_steady_state(warps_frame(rows))
    assert state.last_block_start_ns == 60 and state.tail_start_ns - state.ramp_up_end_ns < 1000
    assert state.whole_launch and state.window_ns == (0, 1060)
    law = littles_law.check_littles_law(warps_frame(rows))
    assert law.window_kind == "launch" and law.relative_error == pytest.approx(0.0, abs=1e-12)


def test_results_serialize_to_json(warps):
    results = [
        warp_occupancy.mean_occupancy(warps),
        latency.latency_stats(warps),
        throughput.warp_throughput(warps),
        littles_law.check_littles_law(warps),
        tail.measure_tail(warps),
        blocks.block_replacement(warps),
        windows.describe_steady_state(warps),
    ]
    decoded = [json.loads(json.dumps(result.to_dict())) for result in results]
    assert decoded[0]["per_sm"][0] == {
        "sm_id": 0,
        "mean_active_warps": 1.45,
        "variance_active_warps": pytest.approx(0.3475),
        "active_ns": 380,
        "max_active_warps": 2,
    }
    assert decoded[3]["window_ns"] == [0, 250]  # the steady state found above
    assert (decoded[4]["tail_fraction"], decoded[4]["after_last_block_start_fraction"]) == (0.375, 0.2)


def test_bad_input_is_one_clear_error(warps):
    with pytest.raises(TracekitError, match="no warp records"):
        latency.latency_stats(warps.clear())
    with pytest.raises(TracekitError, match="lack the column"):
        warp_occupancy.mean_occupancy(warps.drop("end_ns"))
    with pytest.raises(TracekitError, match="end before they start"):
        tail.measure_tail(warps.with_columns(end_ns=pl.col("start_ns") - 1))
    with pytest.raises(TracekitError, match="window .* is empty"):
        littles_law.check_littles_law(warps, (300, 100))
    with pytest.raises(TracekitError, match="less than the 2 SMs"):
        throughput.warp_throughput(warps, sm_count=1)
    with pytest.raises(TracekitError, match="bins"):
        timeline.binned_activity(warps, bins=0)


def test_gpu_steps_from_the_per_sm_sweep_equal_a_gpu_sweep():
    # Ties across SMs and within one (t = 100 on both SMs; an end and a start together on SM 0), and a
    # zero-length warp: the GPU-wide curve derived from the per-SM one must equal its own sweep, row for row.
    frame = warps_frame(
        [
            (0, 0, 0, 0, 100),
            (0, 1, 0, 100, 200),
            (1, 2, 0, 50, 100),
            (1, 2, 1, 100, 100),
            (1, 3, 0, 100, 300),
            (0, 4, 0, 150, 250),
        ]
    )
    per_sm = warp_occupancy.occupancy_steps(frame)
    assert warp_occupancy.gpu_steps_from_per_sm(per_sm).equals(warp_occupancy.occupancy_steps(frame, per_sm=False))
    steps = warp_occupancy.launch_steps(frame)
    assert steps.per_sm.equals(per_sm)
    assert (
        warp_occupancy.mean_occupancy(frame, steps=steps).mean_occupancy_warps_per_sm
        == warp_occupancy.mean_occupancy(frame).mean_occupancy_warps_per_sm
    )
