"""Warp throughput: warps completed per ns per SM over a window (Volkov's X in occupancy = latency x X).

A warp counts as completed in [start_ns, end_ns) when its end lies in (start_ns, end_ns]: a warp that ends exactly
at the window's start was not resident in it, and one that ends at the window's end was. So the whole launch
[first start, last end] counts every warp. Starts are counted in [start_ns, end_ns).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import polars as pl

from tracekit.analysis.warp_occupancy import Window, relative_times, resolve_sm_count, resolve_window
from tracekit.errors import TracekitError


def completed_in(window: Window) -> pl.Expr:
    return (pl.col("end_rel_ns") > window[0]) & (pl.col("end_rel_ns") <= window[1])


def started_in(window: Window) -> pl.Expr:
    return (pl.col("start_rel_ns") >= window[0]) & (pl.col("start_rel_ns") < window[1])


@dataclass(frozen=True, eq=False)
class Throughput:
    window_ns: Window
    sm_count: int
    warps_completed: int
    warps_started: int
    throughput_warps_per_ns_per_sm: float  # completions / (window * sm_count)
    sm_clock_hz: float | None
    throughput_warps_per_cycle_per_sm: float | None  # None without a clock
    per_sm: pl.DataFrame  # sm_id, warps_completed, throughput_warps_per_ns

    def to_dict(self) -> dict:
        result = {field.name: getattr(self, field.name) for field in fields(self)}
        result["window_ns"] = list(self.window_ns)
        result["per_sm"] = self.per_sm.to_dicts()
        return result


def warp_throughput(
    warps: pl.DataFrame, window: Window | None = None, sm_count: int | None = None, sm_clock_hz: float | None = None
) -> Throughput:
    """Warps completed per ns per SM over `window` (default: the whole launch), and per cycle at `sm_clock_hz`."""
    rel = relative_times(warps)
    window = resolve_window(rel, window)
    sm_count = resolve_sm_count(rel, sm_count)
    if sm_clock_hz is not None and sm_clock_hz <= 0:
        raise TracekitError(f"the SM clock must be positive, not {sm_clock_hz} Hz")
    duration_ns = window[1] - window[0]
    counts = rel.select(completed=completed_in(window).sum(), started=started_in(window).sum()).row(0, named=True)
    per_ns = counts["completed"] / (duration_ns * sm_count)
    per_sm = (
        rel.lazy()
        .filter(completed_in(window))
        .group_by("sm_id")
        .agg(warps_completed=pl.len())
        .sort("sm_id")
        .with_columns(throughput_warps_per_ns=pl.col("warps_completed") / duration_ns)
        .collect()
    )
    return Throughput(
        window_ns=window,
        sm_count=sm_count,
        warps_completed=int(counts["completed"]),
        warps_started=int(counts["started"]),
        throughput_warps_per_ns_per_sm=per_ns,
        sm_clock_hz=sm_clock_hz,
        throughput_warps_per_cycle_per_sm=per_ns * 1e9 / sm_clock_hz if sm_clock_hz else None,
        per_sm=per_sm,
    )
