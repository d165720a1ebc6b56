"""The launch queue's length per stream over time (HTA's `get_queue_length_time_series` and its summary).

A stream's queue holds the work the host has issued and the GPU has not started: each launch call that issued an
activity (found by correlation id) adds one when the call begins, the activity's start takes one off. CUDA holds
about a thousand entries per stream (HTA's `max_queue_length` default is 1024); when it is full the next launch
call blocks the host until the GPU takes one, so time spent full is time the host was throttled by the GPU. Counted
this way a full queue reads 1023 (the GPU-bound H200 DDP traces in sample_traces/steps/h200 peak there: the
blocked call's own entry is only counted once it returns), so full is taken as 1023 and above.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

QUEUE_LIMIT = 1024  # entries per stream (HTA's default max_queue_length)
FULL_AT = QUEUE_LIMIT - 1  # the length a full queue reads, counted as above


@dataclass(frozen=True)
class StreamQueue:
    """One stream's queue over the trace: its launches, the longest and the time-weighted mean length (over the
    time from its first launch to its last activity's start), the 95th percentile of the lengths it took, and the
    time it was full."""

    device_id: int | None
    stream_id: int
    launches: int
    max_length: int
    mean_length: float
    p95_length: float
    span_ns: int
    full_ns: int


@dataclass(frozen=True)
class QueueLengths:
    """`series`: one row per change (time_ns, device_id, stream_id, queue_length), a step function per stream;
    `streams`: each stream's summary, longest queue first."""

    series: pl.DataFrame
    streams: tuple[StreamQueue, ...]
    full_at: int = FULL_AT


def queue_lengths(gpu: pl.DataFrame, calls: pl.DataFrame, full_at: int = FULL_AT) -> QueueLengths:
    """The queue length of every stream that ran an activity issued by a launch call in the trace."""
    issued = gpu.filter(pl.col("correlation_id").is_not_null() & pl.col("stream_id").is_not_null()).join(
        calls.filter(pl.col("correlation_id").is_not_null())
        .unique("correlation_id", keep="first")
        .select("correlation_id", pl.col("start_ns").alias("issue_ns")),
        on="correlation_id",
        how="inner",
    )
    keys = ["device_id", "stream_id"]
    changes = pl.concat(
        [
            issued.select(*keys, pl.col("issue_ns").alias("time_ns"), pl.lit(1).alias("change")),
            issued.select(*keys, pl.col("start_ns").alias("time_ns"), pl.lit(-1).alias("change")),
        ]
    )
    # at one instant the launch counts before the start it explains (a length is never below zero for a tie)
    series = changes.sort(*keys, "time_ns", pl.col("change"), descending=[False, False, False, True]).with_columns(
        queue_length=pl.col("change").cum_sum().over(keys)
    )
    series = series.with_columns(
        held_ns=(pl.col("time_ns").shift(-1).over(keys) - pl.col("time_ns")).fill_null(0)
    ).select(*keys, "time_ns", "queue_length", "held_ns")
    summary = series.group_by(keys).agg(
        launches=pl.len() // 2,  # a launch and the start it explains: two rows each
        max_length=pl.col("queue_length").max(),
        weighted=(pl.col("queue_length") * pl.col("held_ns")).sum(),
        span_ns=pl.col("time_ns").max() - pl.col("time_ns").min(),
        p95_length=pl.col("queue_length").quantile(0.95, "nearest"),
        full_ns=pl.col("held_ns").filter(pl.col("queue_length") >= full_at).sum(),
    )
    streams = tuple(
        StreamQueue(
            device_id=row["device_id"],
            stream_id=int(row["stream_id"]),
            launches=int(row["launches"]),
            max_length=int(row["max_length"]),
            mean_length=row["weighted"] / row["span_ns"] if row["span_ns"] else float(row["max_length"]),
            p95_length=float(row["p95_length"]),
            span_ns=int(row["span_ns"]),
            full_ns=int(row["full_ns"] or 0),
        )
        for row in summary.sort("max_length", "stream_id", descending=[True, False]).iter_rows(named=True)
    )
    return QueueLengths(series.drop("held_ns"), streams, full_at)
