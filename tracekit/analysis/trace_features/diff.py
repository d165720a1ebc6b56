"""An operator-level diff of two traces (HTA's `TraceDiff.compare_traces`): which operators one run has that the
other has not, and for those in both, how their count, CPU time and GPU time changed.

An operator's CPU time is the sum of its ranges (nested calls of one operator each count, as HTA counts them); its
GPU time is the time of the activities it launched as the outermost operator on the launching thread (the step
analysis' attribution, `GPU_OP_SCHEMA.operator`). Two traces of different lengths compare in total: record the
same number of steps for a like-for-like diff.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from tracekit.host_events import OPERATOR_DOMAIN, HostEvents

ADDED, REMOVED, CHANGED, SAME = "added", "removed", "changed", "same"


@dataclass(frozen=True)
class TraceDiff:
    """`table`: one row per operator name (operator, status, count_a, count_b, cpu_ns_a, cpu_ns_b, gpu_ns_a,
    gpu_ns_b, gpu_delta_ns, cpu_delta_ns), the largest GPU time change first; the number of each status."""

    source_a: str | None
    source_b: str | None
    table: pl.DataFrame
    added: int
    removed: int
    changed: int
    same: int


def operator_totals(events: HostEvents) -> pl.DataFrame:
    """Each operator's count, CPU time and GPU time in one trace (operator, count, cpu_ns, gpu_ns): one side of a
    diff, kept with the trace's other analyses so that two analysed traces diff without reading them again."""
    cpu = (
        events.ranges.filter(pl.col("domain") == OPERATOR_DOMAIN)
        .group_by(pl.col("name").alias("operator"))
        .agg(count=pl.len(), cpu_ns=(pl.col("end_ns") - pl.col("start_ns")).sum())
    )
    gpu = (
        events.gpu.filter(pl.col("operator").is_not_null())
        .group_by("operator")
        .agg(gpu_ns=(pl.col("end_ns") - pl.col("start_ns")).sum())
    )
    return cpu.join(gpu, on="operator", how="full", coalesce=True).with_columns(
        pl.col("count").fill_null(0), pl.col("cpu_ns").fill_null(0), pl.col("gpu_ns").fill_null(0)
    )


def operator_diff(a: HostEvents, b: HostEvents) -> TraceDiff:
    """Trace `b` against trace `a`, operator by operator."""
    return totals_diff(operator_totals(a), operator_totals(b), a.source, b.source)


def totals_diff(before: pl.DataFrame, after: pl.DataFrame, source_a: str | None, source_b: str | None) -> TraceDiff:
    """Two traces' `operator_totals`, `after` against `before`."""
    joined = before.join(after, on="operator", how="full", coalesce=True, suffix="_b")
    joined = joined.rename({"count": "count_a", "cpu_ns": "cpu_ns_a", "gpu_ns": "gpu_ns_a"}).with_columns(
        pl.col("^(count|cpu_ns|gpu_ns)_[ab]$").fill_null(0)
    )
    in_a = (pl.col("count_a") > 0) | (pl.col("gpu_ns_a") > 0)
    in_b = (pl.col("count_b") > 0) | (pl.col("gpu_ns_b") > 0)
    status = (
        pl.when(~in_a)
        .then(pl.lit(ADDED))
        .when(~in_b)
        .then(pl.lit(REMOVED))
        .when(pl.col("count_a") != pl.col("count_b"))
        .then(pl.lit(CHANGED))
        .otherwise(pl.lit(SAME))
    )
    table = (
        joined.with_columns(
            status=status,
            gpu_delta_ns=pl.col("gpu_ns_b") - pl.col("gpu_ns_a"),
            cpu_delta_ns=pl.col("cpu_ns_b") - pl.col("cpu_ns_a"),
        )
        .select(
            "operator",
            "status",
            "count_a",
            "count_b",
            "cpu_ns_a",
            "cpu_ns_b",
            "gpu_ns_a",
            "gpu_ns_b",
            "gpu_delta_ns",
            "cpu_delta_ns",
        )
        .sort(pl.col("gpu_delta_ns").abs(), pl.col("cpu_delta_ns").abs(), "operator", descending=[True, True, False])
    )
    counts = dict(table.group_by("status").len().iter_rows())
    return TraceDiff(
        source_a,
        source_b,
        table,
        counts.get(ADDED, 0),
        counts.get(REMOVED, 0),
        counts.get(CHANGED, 0),
        counts.get(SAME, 0),
    )
