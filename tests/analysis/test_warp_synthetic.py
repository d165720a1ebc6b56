"""Per-warp analyses on synthetic launches, checked against independent numpy computations.

The synthetic launch: each SM has `slots` block slots; each slot runs its blocks back to back, a new block
starting `gap` ns after the previous one's last warp ended; warps of a block enter a little apart and run a
log-normal few µs. Times are in 32 ns steps like %globaltimer unless `timer_step_ns=1`.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from tracekit.analysis import blocks, latency, littles_law, tail, throughput, timeline, warp_occupancy, windows

ORIGIN = 1_750_000_000_000_000_000


def synthesize(sms=16, slots=4, blocks_per_slot=40, warps_per_block=8, timer_step_ns=32, seed=7, slow_factor=1):
    """(warps frame, gaps in ns between consecutive blocks of each slot). `slow_factor` stretches the warps of
    the last block of one slot on SM 5: an imbalanced kernel whose long block starts late."""
    rng = np.random.default_rng(seed)
    shape = (sms, slots, blocks_per_slot, warps_per_block)
    entry_ns = rng.integers(0, 100, size=shape)
    entry_ns -= entry_ns.min(axis=3, keepdims=True)  # a block starts with its first warp
    latency_ns = rng.lognormal(np.log(3000), 0.35, size=shape).astype(np.int64)
    latency_ns[5, slots // 2, -1] *= slow_factor
    block_ns = (entry_ns + latency_ns).max(axis=3)
    gap_ns = rng.integers(100, 600, size=shape[:3])
    first_ns = rng.integers(0, 2000, size=shape[:2])[:, :, None]
    block_start_ns = first_ns + np.concatenate(
        [np.zeros(shape[:2] + (1,), np.int64), np.cumsum(block_ns + gap_ns, axis=2)[:, :, :-1]], axis=2
    )
    start_ns = (block_start_ns[..., None] + entry_ns).ravel()
    end_ns = start_ns + latency_ns.ravel()
    frame = pl.DataFrame(
        {
            "sm_id": np.broadcast_to(np.arange(sms, dtype=np.int32)[:, None, None, None], shape).ravel(),
            "block_id": np.repeat(np.arange(sms * slots * blocks_per_slot), warps_per_block),
            "warp_in_block": np.broadcast_to(np.arange(warps_per_block, dtype=np.int32), shape).ravel(),
            "start_ns": ORIGIN + start_ns // timer_step_ns * timer_step_ns,
            "end_ns": ORIGIN + end_ns // timer_step_ns * timer_step_ns,
        }
    ).with_columns(start_cycles=pl.lit(None, pl.Int64), end_cycles=pl.lit(None, pl.Int64))
    return frame, gap_ns[:, :, :-1].ravel()  # the gap after each block that has a successor in its slot


@pytest.fixture(scope="module")
def launch():
    return synthesize()[0]


def numpy_times(warps: pl.DataFrame, sm_id: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Relative start and end times, from the frame's own columns (not through the module)."""
    origin = warps["start_ns"].min()
    if sm_id is not None:
        warps = warps.filter(pl.col("sm_id") == sm_id)
    return (warps["start_ns"] - origin).to_numpy(), (warps["end_ns"] - origin).to_numpy()


def sampled_active(starts: np.ndarray, ends: np.ndarray, times: np.ndarray) -> np.ndarray:
    """Warps active at each time: started at or before it and not yet ended."""
    return np.searchsorted(np.sort(starts), times, side="right") - np.searchsorted(np.sort(ends), times, side="right")


def test_littles_law_closes_on_the_whole_launch(launch):
    for sm_count in (None, 20):
        law = littles_law.check_littles_law(launch, "launch", sm_count=sm_count)
        assert abs(law.relative_error) < 1e-9
        assert law.warps_started == law.warps_resident == launch.height
    # The identity behind it, computed here: sum of latencies = integral of the active-warp count.
    starts, ends = numpy_times(launch)
    law = littles_law.check_littles_law(launch, "launch")
    assert law.mean_occupancy * law.window_ns[1] * 16 == pytest.approx(float((ends - starts).sum()), rel=1e-12)


def test_mean_occupancy_agrees_with_sampling(launch):
    occupancy = warp_occupancy.mean_occupancy(launch)
    starts, ends = numpy_times(launch)
    span = ends.max()
    times = (np.arange(200_000) + 0.5) * span / 200_000
    gpu = sampled_active(starts, ends, times) / 16
    assert occupancy.mean_occupancy_warps_per_sm == pytest.approx(gpu.mean(), rel=2e-3)
    assert occupancy.variance_over_time == pytest.approx(gpu.var(), rel=2e-2)
    for sm_id in (0, 9):
        sm_starts, sm_ends = numpy_times(launch, sm_id)
        sampled = sampled_active(sm_starts, sm_ends, times)
        row = occupancy.per_sm.filter(pl.col("sm_id") == sm_id).row(0, named=True)
        assert row["mean_active_warps"] == pytest.approx(sampled.mean(), rel=2e-3)
        assert row["max_active_warps"] == sampled.max()
    # 4 slots of 8-warp blocks: never more than 32 warps on an SM; the spread of warp latencies within a block
    # (a block lasts as long as its slowest warp) and the gaps keep the mean far below that.
    assert occupancy.max_active_warps_per_sm == 32
    assert 12 < occupancy.mean_occupancy_warps_per_sm < 24


def test_windowed_occupancy_agrees_with_sampling(launch):
    window = (20_000, 50_000)
    occupancy = warp_occupancy.mean_occupancy(launch, window=window, sm_count=20)
    starts, ends = numpy_times(launch)
    times = window[0] + (np.arange(100_000) + 0.5) * (window[1] - window[0]) / 100_000
    assert occupancy.mean_occupancy_warps_per_sm == pytest.approx(
        sampled_active(starts, ends, times).mean() / 20, rel=2e-3
    )


def test_latency_agrees_with_numpy(launch):
    starts, ends = numpy_times(launch)
    latencies = ends - starts
    stats = latency.latency_stats(launch)
    assert stats.count == latencies.size
    assert stats.mean_latency_ns == pytest.approx(latencies.mean(), rel=1e-12)
    for name, q in (("p50_latency_ns", 50), ("p90_latency_ns", 90), ("p99_latency_ns", 99)):
        assert getattr(stats, name) == pytest.approx(np.percentile(latencies, q), rel=1e-12)
    assert stats.std_latency_ns == pytest.approx(latencies.std(), rel=1e-9)
    by_sm = latency.latency_by_sm(launch)
    sm3_starts, sm3_ends = numpy_times(launch, 3)
    assert by_sm.filter(pl.col("sm_id") == 3)["p90_latency_ns"].item() == pytest.approx(
        np.percentile(sm3_ends - sm3_starts, 90), rel=1e-12
    )


def test_throughput_agrees_with_numpy(launch):
    starts, ends = numpy_times(launch)
    window = (10_000, 40_000)
    result = throughput.warp_throughput(launch, window=window, sm_clock_hz=1.98e9)
    completed = int(((ends > window[0]) & (ends <= window[1])).sum())
    assert result.warps_completed == completed
    assert result.throughput_warps_per_ns_per_sm == pytest.approx(completed / (30_000 * 16))
    assert result.throughput_warps_per_cycle_per_sm == pytest.approx(completed / (30_000 * 16) / 1.98)


def test_steady_state_window_excludes_ramp_up_and_tail(launch):
    state = windows.describe_steady_state(launch)
    start_ns, end_ns = state.window_ns
    assert not state.whole_launch
    # Slots join over the first 2 µs, so at t=0 the GPU is far below its level and ramp-up ends later.
    assert 0 < start_ns < 2_100
    assert end_ns <= state.last_block_start_ns == tail.last_block_start_ns(launch)
    # Inside the window the count never stays low: its mean is close to the level.
    inside = warp_occupancy.mean_occupancy(launch, window=state.window_ns)
    assert inside.mean_occupancy_warps_per_sm * 16 > 0.9 * state.steady_level_warps


def test_littles_law_in_the_steady_state_both_ways(launch):
    law = littles_law.check_littles_law(launch)  # default: the steady state
    assert law.window_kind == "steady_state"
    assert law.window_ns == windows.steady_state_window(launch)
    # Clipped to the window the law holds exactly; counting whole warps it misses by the edges only.
    assert abs(law.clipped_relative_error) < 1e-12
    capacity = (law.window_ns[1] - law.window_ns[0]) * law.sm_count
    edge = (law.spilled_out_warp_ns - law.carried_in_warp_ns) / capacity
    assert law.latency_x_throughput - law.mean_occupancy == pytest.approx(edge, abs=1e-12)
    assert law.warps_straddling_start > 0 and law.warps_straddling_end > 0
    # Long stationary window: the carried-in and spilled-out warp time nearly cancel.
    assert 0 < abs(law.relative_error) < 0.01
    # A short window catches few warps whole: the edges weigh far more.
    short = littles_law.check_littles_law(launch, (law.window_ns[0], law.window_ns[0] + 4_000))
    assert abs(short.clipped_relative_error) < 1e-12
    assert abs(short.relative_error) > 10 * abs(law.relative_error)


def test_tail_of_an_imbalanced_kernel_is_longer():
    balanced, _ = synthesize(seed=3)
    imbalanced, _ = synthesize(seed=3, slow_factor=30)  # one late block runs 30x longer
    balanced_tail, imbalanced_tail = tail.measure_tail(balanced), tail.measure_tail(imbalanced)
    assert balanced_tail.after_last_block_start_fraction < 0.1
    assert imbalanced_tail.after_last_block_start_fraction > balanced_tail.after_last_block_start_fraction + 0.1
    assert imbalanced_tail.mean_occupancy_in_tail_warps_per_sm < balanced_tail.mean_occupancy_in_tail_warps_per_sm
    # Independent: SM finish times and the last block start from numpy.
    starts, ends = numpy_times(imbalanced)
    sm_ids = imbalanced["sm_id"].to_numpy()
    finish = np.array([ends[sm_ids == sm].max() for sm in range(16)])
    assert imbalanced_tail.sm_finish_max_ns == finish.max() == imbalanced_tail.span_ns
    assert imbalanced_tail.sm_finish_std_ns == pytest.approx(finish.std())
    block_ids = imbalanced["block_id"].to_numpy()
    first_starts = np.full(block_ids.max() + 1, np.iinfo(np.int64).max)
    np.minimum.at(first_starts, block_ids, starts)
    assert imbalanced_tail.last_block_start_ns == first_starts.max()
    assert imbalanced_tail.after_last_block_start_ns == finish.max() - first_starts.max()


def test_block_replacement_recovers_the_generated_gaps():
    # One slot per SM and exact ns: the next block start on an SM is the generated successor's.
    warps, gaps = synthesize(slots=1, blocks_per_slot=30, timer_step_ns=1, seed=11)
    result = blocks.block_replacement(warps)
    assert result.blocks == 16 * 30
    assert result.replacements == gaps.size == 16 * 29
    assert result.gap_mean_ns == pytest.approx(gaps.mean())
    assert result.gap_p90_ns == pytest.approx(np.percentile(gaps, 90))
    assert result.gap_max_ns == gaps.max()
    ends = warps.group_by("block_id").agg(spread=pl.col("end_ns").max() - pl.col("end_ns").min())["spread"]
    assert result.end_spread_mean_ns == pytest.approx(ends.mean())


def test_binned_activity_keeps_the_warp_time(launch):
    binned = timeline.binned_activity(launch, bins=50)
    assert binned.height == 16 * 50
    per_sm = (
        binned.with_columns(warp_ns=pl.col("mean_active_warps") * (pl.col("bin_end_ns") - pl.col("bin_start_ns")))
        .group_by("sm_id")
        .agg(pl.col("warp_ns").sum())
        .sort("sm_id")
    )
    latencies = launch.group_by("sm_id").agg((pl.col("end_ns") - pl.col("start_ns")).sum()).sort("sm_id")
    assert per_sm["warp_ns"].to_numpy() == pytest.approx(latencies["end_ns"].to_numpy().astype(float), rel=1e-12)
    # One bin against sampling.
    row = binned.filter(pl.col("sm_id") == 4).row(20, named=True)
    starts, ends = numpy_times(launch, 4)
    times = row["bin_start_ns"] + (np.arange(20_000) + 0.5) * (row["bin_end_ns"] - row["bin_start_ns"]) / 20_000
    assert row["mean_active_warps"] == pytest.approx(sampled_active(starts, ends, times).mean(), rel=5e-3)


def test_warp_slots_never_overlap_and_fill_to_the_peak(launch):
    shown = timeline.warps_in_window(launch, (0, 30_000), max_warps=100_000)
    assert shown["slot"].max() < 32
    by_slot = shown.sort("sm_id", "slot", "start_rel_ns")
    same_slot = (pl.col("sm_id") == pl.col("sm_id").shift()) & (pl.col("slot") == pl.col("slot").shift())
    overlaps = by_slot.filter(same_slot & (pl.col("start_rel_ns") < pl.col("end_rel_ns").shift()))
    assert overlaps.height == 0
    # The greedy colouring needs exactly as many slots as the most warps resident at once.
    peak = warp_occupancy.occupancy_steps(launch).filter(pl.col("time_ns") < 30_000)
    assert shown.group_by("sm_id").agg(pl.col("slot").max() + 1).sort("sm_id")["slot"].to_list() == (
        peak.group_by("sm_id").agg(pl.col("active_warps").max()).sort("sm_id")["active_warps"].to_list()
    )
