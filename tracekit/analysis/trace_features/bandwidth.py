"""Copy and set bandwidth over time, per kind (HTA's `get_memory_bw_time_series` and `get_memory_bw_summary`).

Each copy or set moves its bytes at bytes / duration while it runs; the series per kind (HtoD, DtoH, DtoD, PtoP,
Memset) is the sum over the activities running at each instant, a step function that changes at their starts and
ends. A zero-length activity is taken as lasting 1 ns (HTA rounds it up to 1 us for the same reason: no infinite
rate)."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from tracekit.host_events import KERNEL, MEMSET

SET_KIND = "Memset"


@dataclass(frozen=True)
class CopyBandwidth:
    """One kind of copy or set over the trace: how many, their bytes and time, the rate each achieved (median,
    95th percentile, max, in bytes per ns = GB/s) and the highest sum of the rates of those running at once."""

    kind: str
    count: int
    total_bytes: int
    busy_ns: int
    median_gbps: float
    p95_gbps: float
    max_gbps: float
    peak_concurrent_gbps: float


@dataclass(frozen=True)
class MemoryBandwidth:
    """`series`: one row per change (time_ns, kind, bandwidth_gbps, the sum running from then on); `kinds`: the
    summary per kind, most bytes first."""

    series: pl.DataFrame
    kinds: tuple[CopyBandwidth, ...]


def memory_bandwidth(gpu: pl.DataFrame) -> MemoryBandwidth:
    """The bandwidth series and summary of the copies and sets with a size in the trace."""
    moves = gpu.filter((pl.col("kind") != KERNEL) & pl.col("size_bytes").is_not_null()).select(
        pl.when(pl.col("kind") == MEMSET)
        .then(pl.lit(SET_KIND))
        .otherwise(pl.col("copy_kind").fill_null("copy"))
        .alias("kind"),
        "start_ns",
        "end_ns",
        "size_bytes",
        gbps=pl.col("size_bytes") / pl.max_horizontal(pl.col("end_ns") - pl.col("start_ns"), pl.lit(1)),
    )
    steps = pl.concat(
        [
            moves.select("kind", pl.col("start_ns").alias("time_ns"), pl.col("gbps").alias("change")),
            moves.select("kind", pl.col("end_ns").alias("time_ns"), (-pl.col("gbps")).alias("change")),
        ]
    )
    # ends before starts at one instant: back-to-back copies do not add up
    series = (
        steps.sort("kind", "time_ns", "change")
        .with_columns(bandwidth_gbps=pl.col("change").cum_sum().over("kind").clip(lower_bound=0.0))
        .select("time_ns", "kind", "bandwidth_gbps")
    )
    peaks = series.group_by("kind").agg(peak=pl.col("bandwidth_gbps").max())
    summary = (
        moves.group_by("kind")
        .agg(
            count=pl.len(),
            total_bytes=pl.col("size_bytes").sum(),
            busy_ns=(pl.col("end_ns") - pl.col("start_ns")).sum(),
            median=pl.col("gbps").median(),
            p95=pl.col("gbps").quantile(0.95, "linear"),
            max=pl.col("gbps").max(),
        )
        .join(peaks, on="kind", how="left")
        .sort("total_bytes", "kind", descending=[True, False])
    )
    kinds = tuple(
        CopyBandwidth(
            kind=row["kind"],
            count=int(row["count"]),
            total_bytes=int(row["total_bytes"]),
            busy_ns=int(row["busy_ns"]),
            median_gbps=float(row["median"]),
            p95_gbps=float(row["p95"]),
            max_gbps=float(row["max"]),
            peak_concurrent_gbps=float(row["peak"] or 0.0),
        )
        for row in summary.iter_rows(named=True)
    )
    return MemoryBandwidth(series, kinds)
