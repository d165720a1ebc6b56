"""Computation slowed by a collective beside it: what the job's replay without the profiler takes back out (a rank
that waited in its all-reduces under the profiler ran its backward beside NCCL kernels spinning on SMs)."""

from __future__ import annotations

import polars as pl

from tracekit.analysis.steps import intervals

NO_INFLATION = pl.DataFrame(schema={"correlation_id": pl.Int64, "inflation_ns": pl.Int64})


def measure_inflation(gpu: pl.DataFrame) -> pl.DataFrame:
    """correlation_id, inflation_ns: how much longer each computation kernel that ran beside a collective's kernel
    took than the same kernel (name and launch shape) with none beside it, the median of those. NCCL's kernels hold
    SMs while they wait for the other ranks, so a rank that waited in its all-reduces under the profiler ran its
    backward beside them, slower than the program does once the ranks arrive together (a 2-GPU GPT-2: 240 against
    189 us for the same GEMMs). A kernel with no run of its own alone counts nothing."""
    if "grid" not in gpu.columns:
        return NO_INFLATION
    collectives = intervals.merge(gpu.filter("is_collective"))
    work = gpu.filter(
        ~pl.col("is_collective") & (pl.col("kind") == "kernel") & pl.col("correlation_id").is_not_null()
    ).select("correlation_id", "name", "grid", "start_ns", "end_ns")
    if collectives.height == 0 or work.height == 0:
        return NO_INFLATION
    work = work.with_columns(
        (intervals.measure(collectives, work["start_ns"], work["end_ns"]) > 0).alias("_beside"),
        (pl.col("end_ns") - pl.col("start_ns")).alias("_ns"),
    )
    # grouped by the name as it is (categorical in a job's rows): as text, a 100 MB rank's names are tens of MB
    alone = work.filter(~pl.col("_beside")).group_by("name", "grid").agg(pl.col("_ns").median().alias("_alone"))
    return (
        work.filter("_beside")
        .join(alone, on=["name", "grid"], nulls_equal=True)
        .select("correlation_id", (pl.col("_ns") - pl.col("_alone")).clip(lower_bound=0).round().cast(pl.Int64))
        .rename({"_ns": "inflation_ns"})
        .filter(pl.col("inflation_ns") > 0)
    )


def inflated(gpu: pl.DataFrame, inflation: pl.DataFrame, starts: pl.Series, ends: pl.Series) -> pl.Series:
    """The inflation (`measure_inflation`) of the kernels that began in each [start, end)."""
    found = gpu.join(inflation, on="correlation_id").select("start_ns", "inflation_ns").sort("start_ns")
    if found.height == 0:
        return pl.repeat(0, len(starts), dtype=pl.Int64, eager=True)
    total = pl.concat([pl.Series([0], dtype=pl.Int64), found["inflation_ns"].cum_sum()])
    begun = found["start_ns"]
    return total.gather(begun.search_sorted(ends, side="left")) - total.gather(begun.search_sorted(starts, side="left"))
