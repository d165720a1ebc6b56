"""A launch's figure aggregates, its warps reduced for its figures: what the report and the dashboard plot,
already aggregated so a 10M-warp launch sends a few thousand points, never the warps themselves."""

from __future__ import annotations

import polars as pl

from tracekit.analysis.timeline import binned_activity
from tracekit.analysis.warp_occupancy import Window, resolve_sm_count


def occupancy_over_time(
    warps: pl.DataFrame, sm_count: int | None = None, bins: int = 400, window: Window | None = None
) -> pl.DataFrame:
    """bin_start_ns, bin_end_ns, mean_active_warps_per_sm: the GPU-wide occupancy curve (idle SMs count as 0)."""
    sm_count = resolve_sm_count(warps, sm_count)
    return (
        binned_activity(warps, bins=bins, window=window)
        .group_by("bin_start_ns", "bin_end_ns")
        .agg(mean_active_warps_per_sm=pl.col("mean_active_warps").sum() / sm_count)
        .sort("bin_start_ns")
    )


def latency_histogram(warps: pl.DataFrame, bins: int = 60) -> pl.DataFrame:
    """latency_lo_ns, latency_hi_ns, warps: equal-width bins from the shortest to the longest warp."""
    latency = (pl.col("end_ns") - pl.col("start_ns")).cast(pl.Float64)
    low, high = warps.select(latency.min().alias("low"), latency.max().alias("high")).row(0)
    width = (high - low) / bins if high > low else 1.0
    index = ((latency - low) / width).floor().clip(0, bins - 1).cast(pl.Int64)
    counts = warps.lazy().group_by(bin=index).agg(warps=pl.len()).collect()  # one parallel pass, no sort
    return (
        pl.DataFrame({"bin": range(bins)})
        .join(counts, on="bin", how="left")
        .select(
            latency_lo_ns=low + pl.col("bin") * width,
            latency_hi_ns=low + (pl.col("bin") + 1) * width,
            warps=pl.col("warps").fill_null(0).cast(pl.UInt32),
        )
    )
