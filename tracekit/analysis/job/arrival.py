"""When a rank arrives at an NCCL collective: when it is ready for it, not when the kernel begins (see `ready`),
and which collectives gate the rank's work after them (the anchors of its windows, `rank.rank_tables`)."""

from __future__ import annotations

import polars as pl

GATE_NS = 20_000  # a kernel starting this soon after a collective's end, its stream idle, waited on it


def ready(gpu: pl.DataFrame, collectives: pl.DataFrame, bounded: bool) -> pl.DataFrame:
    """NCCL's collectives with the rank's arrival at each: when it was ready for it, not when the kernel began.
    NCCL runs a rank's collectives one after another on its stream, so a rank that waits in one for the others
    starts the next late though its data was ready: its own computation went on meanwhile on the compute stream.
    A rank is ready when the host has launched the collective and the GPU work launched before it has ended (the
    stream waits on an event recorded after that work; work on every stream is counted, a side stream's too); the
    kernel's start bounds it. A collective *gates* the rank's work when it runs on the computation's own stream, or
    a kernel starts within GATE_NS of its end, queued behind it on its stream, or launched before its end with its
    own stream idle (it waited on it: the optimizer after the last all-reduce, a layer after its all-gather); only
    those anchor the windows that follow (`rank.rank_tables`). `bounded`: a kernel's start bounds its readiness (a
    recorded trace; a replay keeps only the dependencies its trace showed, and a collective whose start the trace
    shows behind its stream's previous one lost its wait on the computation there)."""
    ready = pl.max_horizontal("at_ns", "_work_done")
    done = (
        gpu.filter(~pl.col("is_collective"))
        .select(pl.col("at_ns").alias("_launched"), "end_ns")
        .sort("_launched")
        .select("_launched", pl.col("end_ns").cum_max().alias("_work_done"))
    )
    arrived = (
        collectives.sort("at_ns")
        .join_asof(done, left_on="at_ns", right_on="_launched", strategy="backward", allow_exact_matches=False)
        .with_columns(
            pl.col("start_ns").alias("kernel_start_ns"),
            (pl.min_horizontal("start_ns", ready) if bounded else ready).alias("start_ns"),
            ordered=pl.lit(True),
        )
        .drop("_launched", "_work_done")
    )
    on_stream = gpu.sort("stream_id", "start_ns").with_columns(
        pl.col("end_ns", "is_collective", "correlation_id").shift(1).over("stream_id").name.prefix("_before_")
    )
    # a kernel queued behind the collective on its own stream (one stream for both)
    behind = on_stream.filter(
        ~pl.col("is_collective")
        & pl.col("_before_is_collective").fill_null(False)
        & (pl.col("start_ns") - pl.col("_before_end_ns") <= GATE_NS)
    )["_before_correlation_id"]
    # a collective on the stream the computation runs on: what follows it there waits for it (whether or not the
    # trace kept what followed: a sampling profiler drops kernels)
    work_streams = gpu.filter(~pl.col("is_collective"))["stream_id"].drop_nulls().unique().implode()
    shared = gpu.filter(pl.col("is_collective") & pl.col("stream_id").is_in(work_streams))[
        "correlation_id"
    ].drop_nulls()
    # a kernel launched before the collective ended, its stream idle, starting just after it (an event's wait)
    waited = (
        on_stream.filter(
            ~pl.col("is_collective")
            & (pl.col("_before_end_ns").is_null() | (pl.col("_before_end_ns") < pl.col("start_ns") - GATE_NS))
        )
        .select(pl.col("start_ns").alias("_waiter_start"), pl.col("at_ns").alias("_waiter_launched"))
        .sort("_waiter_start")
    )
    gates = (
        arrived.select("correlation_id", "end_ns")
        .sort("end_ns")
        .join_asof(waited, left_on="end_ns", right_on="_waiter_start", strategy="forward", tolerance=GATE_NS)
        .select(
            "correlation_id",
            (
                (pl.col("_waiter_start").is_not_null() & (pl.col("_waiter_launched") < pl.col("end_ns")))
                | pl.col("correlation_id").is_in(behind.drop_nulls().implode())
                | pl.col("correlation_id").is_in(shared.implode())
            ).alias("gating"),
        )
    )
    return arrived.join(gates, on="correlation_id", how="left").with_columns(pl.col("gating").fill_null(False))
