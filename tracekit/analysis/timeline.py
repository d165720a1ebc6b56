"""What the warp-timeline figure draws; renderers (dashboard, HTML report) only plot these frames.

Zoomed out: per SM, the mean number of active warps in equal time bins (exact time-averages of the step function,
so a bin's value times its width is the warp-ns in it). Zoomed in: the individual warps of a window, each with the
warp slot it occupies on its SM, so bars on one SM never overlap. Times are relative to the launch's first warp.
"""

from __future__ import annotations

import heapq

import polars as pl

from tracekit.analysis.warp_occupancy import Window, relative_times, resolve_window
from tracekit.errors import TracekitError


def binned_activity(warps: pl.DataFrame, bins: int = 400, window: Window | None = None) -> pl.DataFrame:
    """sm_id, bin_start_ns, bin_end_ns, mean_active_warps: `bins` equal bins of `window` (default: the launch)
    for every SM that ran warps. Fewer bins when the window is shorter than `bins` ns."""
    if bins < 1:
        raise TracekitError(f"the number of bins must be at least 1, not {bins}")
    rel = relative_times(warps)
    start_ns, end_ns = resolve_window(rel, window)
    bins = min(bins, end_ns - start_ns)
    # F(t), the warp-ns on an SM before t, is the sum over started warps of (t - start) minus the sum over ended
    # warps of (t - end). At the bin edges it needs only the count and sum of the starts (ends) before each edge,
    # which one group_by per column gives without sorting the warps. A bin's warp-ns is F(its end) - F(its start).
    sms = rel.lazy().select(pl.col("sm_id").unique()).collect()
    edges = sms.join(pl.DataFrame({"edge": range(bins + 1)}), how="cross").with_columns(
        edge_ns=pl.lit(start_ns) + pl.col("edge") * (end_ns - start_ns) // bins
    )
    before = {
        column: _before_edges(rel, column, sms, start_ns, end_ns, bins) for column in ("start_rel_ns", "end_rel_ns")
    }
    warp_ns_before = (
        pl.col("edge_ns") * pl.col("count")
        - pl.col("total_ns")
        - (pl.col("edge_ns") * pl.col("count_end") - pl.col("total_ns_end"))
    )
    return (
        edges.join(before["start_rel_ns"], on=["sm_id", "edge"])
        .join(before["end_rel_ns"], on=["sm_id", "edge"], suffix="_end")
        .sort("sm_id", "edge")
        .with_columns(warp_ns_before=warp_ns_before)
        .with_columns(
            bin_end_ns=pl.col("edge_ns").shift(-1).over("sm_id"),
            bin_warp_ns=pl.col("warp_ns_before").shift(-1).over("sm_id") - pl.col("warp_ns_before"),
        )
        .filter(pl.col("bin_end_ns").is_not_null())
        .select(
            "sm_id",
            bin_start_ns=pl.col("edge_ns"),
            bin_end_ns=pl.col("bin_end_ns"),
            mean_active_warps=pl.col("bin_warp_ns") / (pl.col("bin_end_ns") - pl.col("edge_ns")),
        )
    )


def _before_edges(
    rel: pl.DataFrame, column: str, sms: pl.DataFrame, start_ns: int, end_ns: int, bins: int
) -> pl.DataFrame:
    """sm_id, edge, count, total_ns: how many times in `column` fall before each bin edge, and their sum."""
    time = pl.col(column)
    # The bin k whose start edge (start_ns + k * width // bins) is the last <= time; -1 before the window and
    # `bins` after it. Edge j has before it the times of bins -1 .. j-1.
    in_bin = (((time - start_ns + 1) * bins - 1) // (end_ns - start_ns)).clip(-1, bins).alias("bin")
    per_bin = rel.lazy().group_by("sm_id", in_bin).agg(count=pl.len().cast(pl.Int64), total_ns=time.sum()).collect()
    grid = sms.join(pl.DataFrame({"bin": range(-1, bins)}), how="cross")
    return (
        grid.join(per_bin, on=["sm_id", "bin"], how="left")
        .fill_null(0)
        .sort("sm_id", "bin")
        .select(
            "sm_id",
            edge=pl.col("bin") + 1,
            count=pl.col("count").cum_sum().over("sm_id"),
            total_ns=pl.col("total_ns").cum_sum().over("sm_id"),
        )
    )


def warps_in_window(warps: pl.DataFrame, window: Window | None, max_warps: int = 20000) -> pl.DataFrame:
    """The warps resident in `window` (relative ns; None: the whole launch), the `max_warps` earliest-starting ones,
    with their slot.

    Columns: sm_id, block_id, warp_in_block, start_rel_ns, end_rel_ns, latency_ns, slot; sorted by SM and start.
    `slot` is the lowest slot free on the warp's SM when it starts (a warp ending at t frees its slot for one
    starting at t), counted among the returned warps; highest slot + 1 is the most warps the view shows at once.
    A result of exactly `max_warps` rows means the window held more.
    """
    rel = relative_times(warps)
    start_ns, end_ns = resolve_window(rel, window)
    start, end = pl.col("start_rel_ns"), pl.col("end_rel_ns")
    shown = (
        rel.filter((start < end_ns) & ((end > start_ns) | (start >= start_ns)))
        .sort("start_rel_ns", "sm_id", "block_id", "warp_in_block")
        .head(max_warps)
        .select("sm_id", "block_id", "warp_in_block", "start_rel_ns", "end_rel_ns", latency_ns=end - start)
        .sort("sm_id", "start_rel_ns", "end_rel_ns", "block_id", "warp_in_block")
    )
    return shown.with_columns(pl.Series("slot", _slots(shown), dtype=pl.Int32))


def _slots(shown: pl.DataFrame) -> list[int]:
    """Greedy interval colouring per SM; a loop, but over at most `max_warps` rows already sorted by SM, start."""
    slots: list[int] = []
    current_sm = None
    busy: list[tuple[int, int]] = []  # (end_rel_ns, slot) of warps still resident
    free: list[int] = []
    next_slot = 0
    for sm_id, start, end in shown.select("sm_id", "start_rel_ns", "end_rel_ns").iter_rows():
        if sm_id != current_sm:
            current_sm, busy, free, next_slot = sm_id, [], [], 0
        while busy and busy[0][0] <= start:
            heapq.heappush(free, heapq.heappop(busy)[1])
        if free:
            slot = heapq.heappop(free)
        else:
            slot, next_slot = next_slot, next_slot + 1
        slots.append(slot)
        heapq.heappush(busy, (end, slot))
    return slots
