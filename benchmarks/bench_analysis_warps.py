"""Times the per-warp analyses on 10M synthetic warps, next to the time polars needs just to sort the frame.

Run: python benchmarks/bench_analysis_warps.py [warps]   (default 10,000,000)
The analyses are timed one by one, each on its own (as the dashboard calls them, every one sorting the warp events
it needs), then `_warp_sections` as a whole: what `tracekit analyze` pays per launch, with the event sweep done once
(`launch_steps`) and passed on. Target (issue 4): `_warp_sections` on 10M warps in about 4 s on 2 cores.
The synthetic launch is plausible for an H100: 132 SMs, 8 resident blocks of 8 warps per SM, warp latencies of a
few µs (log-normal), each block slot taking a new block a few hundred ns after its block's last warp ends,
timestamps in 32 ns steps like %globaltimer. Peak memory is the process's maximum resident set (ru_maxrss).
"""

from __future__ import annotations

import resource
import sys
import time

import numpy as np
import polars as pl

from tracekit.analysis import blocks, latency, littles_law, tail, throughput, timeline, warp_occupancy, windows
from tracekit.analysis.result import _warp_sections

SM_COUNT = 132
BLOCK_SLOTS_PER_SM = 8
WARPS_PER_BLOCK = 8
TIMER_STEP_NS = 32


def synthesize(warp_count: int, seed: int = 1) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    blocks_per_slot = max(1, warp_count // (SM_COUNT * BLOCK_SLOTS_PER_SM * WARPS_PER_BLOCK))
    shape = (SM_COUNT, BLOCK_SLOTS_PER_SM, blocks_per_slot, WARPS_PER_BLOCK)
    entry_ns = rng.integers(0, 100, size=shape)  # warps of a block start a little apart
    latency_ns = rng.lognormal(np.log(3000), 0.35, size=shape).astype(np.int64)
    offset_ns = entry_ns + latency_ns
    block_ns = offset_ns.max(axis=3)
    gap_ns = rng.integers(100, 600, size=shape[:3])
    first_ns = rng.integers(0, 2000, size=shape[:2])[:, :, None]  # ramp-up: slots fill over 2 µs
    block_start_ns = first_ns + np.concatenate(
        [np.zeros(shape[:2] + (1,), np.int64), np.cumsum(block_ns + gap_ns, axis=2)[:, :, :-1]], axis=2
    )
    start_ns = block_start_ns[..., None] + entry_ns
    end_ns = start_ns + latency_ns
    block_order = np.argsort(block_start_ns.ravel(), kind="stable")
    block_id = np.empty(block_order.size, np.int64)
    block_id[block_order] = np.arange(block_order.size)
    origin = 1_750_000_000_000_000_000  # %globaltimer is ns since the epoch
    return pl.DataFrame(
        {
            "sm_id": np.broadcast_to(np.arange(SM_COUNT, dtype=np.int32)[:, None, None, None], shape).ravel(),
            "block_id": np.repeat(block_id, WARPS_PER_BLOCK),
            "warp_in_block": np.broadcast_to(np.arange(WARPS_PER_BLOCK, dtype=np.int32), shape).ravel(),
            "start_ns": origin + start_ns.ravel() // TIMER_STEP_NS * TIMER_STEP_NS,
            "end_ns": origin + end_ns.ravel() // TIMER_STEP_NS * TIMER_STEP_NS,
        }
    ).with_columns(start_cycles=pl.lit(None, pl.Int64), end_cycles=pl.lit(None, pl.Int64))


def peak_rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2  # KiB on Linux


def timed(label: str, function, baseline_s: float | None = None):
    started = time.perf_counter()
    result = function()
    seconds = time.perf_counter() - started
    ratio = f"{seconds / baseline_s:6.1f}x sort" if baseline_s else ""
    print(f"{label:<44} {seconds:7.2f} s  {ratio:>12}  peak RSS {peak_rss_gb():5.2f} GB", flush=True)
    return result, seconds


def main() -> None:
    warp_count = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000_000
    warps, _ = timed("synthesize", lambda: synthesize(warp_count))
    print(f"{warps.height:,} warps on {SM_COUNT} SMs, {warps.estimated_size() / 1e9:.2f} GB frame")
    _, sort_s = timed("baseline: sort by (sm_id, start_ns)", lambda: warps.sort("sm_id", "start_ns"))
    rel, _ = timed("relative_times", lambda: warp_occupancy.relative_times(warps), sort_s)
    cases = [
        ("occupancy_steps per SM", lambda: warp_occupancy.occupancy_steps(rel)),
        ("mean_occupancy", lambda: warp_occupancy.mean_occupancy(rel, sm_count=SM_COUNT)),
        ("latency_stats", lambda: latency.latency_stats(rel)),
        ("latency_by_sm", lambda: latency.latency_by_sm(rel)),
        ("latency_by_warp_position", lambda: latency.latency_by_warp_position(rel)),
        ("warp_throughput", lambda: throughput.warp_throughput(rel, sm_count=SM_COUNT, sm_clock_hz=1.98e9)),
        ("steady_state_window", lambda: windows.steady_state_window(rel)),
        ("check_littles_law launch", lambda: littles_law.check_littles_law(rel, "launch", SM_COUNT)),
        ("check_littles_law steady state", lambda: littles_law.check_littles_law(rel, None, SM_COUNT)),
        ("measure_tail", lambda: tail.measure_tail(rel, SM_COUNT)),
        ("block_replacement", lambda: blocks.block_replacement(rel, SM_COUNT)),
        ("binned_activity 400 bins", lambda: timeline.binned_activity(rel, 400)),
        ("warps_in_window 20000", lambda: timeline.warps_in_window(rel, (0, 200_000), 20_000)),
    ]
    total_s = 0.0
    results = {}
    for label, function in cases:
        result, seconds = timed(label, function, sort_s)
        if label.startswith("check_littles_law"):  # keep only what is printed below, not the big frames
            results[label] = result
        total_s += seconds
    print(f"{'all analyses':<44} {total_s:7.2f} s  {total_s / sort_s:6.1f}x sort  peak RSS {peak_rss_gb():5.2f} GB")
    timed("launch_steps (the sweep, shared)", lambda: warp_occupancy.launch_steps(rel), sort_s)
    device = {"device": {"sm_count": SM_COUNT, "sm_clock_hz": 1.98e9}}
    timed("_warp_sections: tracekit analyze, 1 launch", lambda: _warp_sections(warps, device, 64, None), sort_s)
    law = results["check_littles_law launch"]
    steady = results["check_littles_law steady state"]
    print(
        f"Little's law, launch: relative error {law.relative_error:.2e}; steady state {steady.window_ns}: "
        f"{steady.relative_error:+.2e} (clipped {steady.clipped_relative_error:+.1e})"
    )


if __name__ == "__main__":
    main()
