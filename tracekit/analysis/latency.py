"""Warp latency (end - start of each warp): its distribution overall, per SM and by the warp's place in its block.

Latency here is Volkov's warp latency: the time a warp holds its slot as the trace sees it, which is the L in
Little's law (occupancy = latency x throughput). Percentiles interpolate linearly between ranks (as numpy does).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import polars as pl

from tracekit.analysis.warp_occupancy import relative_times

LATENCY_NS = (pl.col("end_ns") - pl.col("start_ns")).alias("latency_ns")


def _latency_aggregates() -> list[pl.Expr]:
    latency = pl.col("latency_ns")
    return [
        pl.len().alias("warps"),
        latency.mean().alias("mean_latency_ns"),
        latency.quantile(0.5, "linear").alias("p50_latency_ns"),
        latency.quantile(0.9, "linear").alias("p90_latency_ns"),
        latency.quantile(0.99, "linear").alias("p99_latency_ns"),
        latency.min().alias("min_latency_ns"),
        latency.max().alias("max_latency_ns"),
        latency.std(ddof=0).alias("std_latency_ns"),
    ]


@dataclass(frozen=True)
class LatencyStats:
    """Distribution of warp latencies over a launch, in ns."""

    count: int
    mean_latency_ns: float
    p50_latency_ns: float
    p90_latency_ns: float
    p99_latency_ns: float
    min_latency_ns: int
    max_latency_ns: int
    std_latency_ns: float  # population standard deviation

    def to_dict(self) -> dict:
        return asdict(self)


def latency_stats(warps: pl.DataFrame) -> LatencyStats:
    row = relative_times(warps).select(LATENCY_NS).select(_latency_aggregates()).row(0, named=True)
    return LatencyStats(
        count=int(row["warps"]),
        mean_latency_ns=float(row["mean_latency_ns"]),
        p50_latency_ns=float(row["p50_latency_ns"]),
        p90_latency_ns=float(row["p90_latency_ns"]),
        p99_latency_ns=float(row["p99_latency_ns"]),
        min_latency_ns=int(row["min_latency_ns"]),
        max_latency_ns=int(row["max_latency_ns"]),
        std_latency_ns=float(row["std_latency_ns"]),
    )


def _latency_by(warps: pl.DataFrame, key: str) -> pl.DataFrame:
    return (
        relative_times(warps)
        .lazy()
        .select(key, LATENCY_NS)
        .group_by(key)
        .agg(_latency_aggregates())
        .sort(key)
        .collect()
    )


def latency_by_sm(warps: pl.DataFrame) -> pl.DataFrame:
    """sm_id, warps, mean/p50/p90/p99/min/max/std_latency_ns: one row per SM that ran warps."""
    return _latency_by(warps, "sm_id")


def latency_by_warp_position(warps: pl.DataFrame) -> pl.DataFrame:
    """warp_in_block, warps, mean/p50/p90/p99/min/max/std_latency_ns: whether some warps of a block run longer."""
    return _latency_by(warps, "warp_in_block")
