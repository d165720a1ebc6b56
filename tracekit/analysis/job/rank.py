"""One rank's part of a job (the map's polars work): its steps, its collectives with what the rank did before
each (computation, and GPU idle split by what the host was doing), its kernels by step, and whether its profiler
dropped events.

A rank's collectives are its NCCL kernels (arrival: the kernel's start) or, where its GPU ran none, its host-side
collectives (gloo: `host.host_collectives`, arrival: a worker took it up and its copy to the host was done). A
collective's *window* on a rank is the part of the step the rank spends on its own before it, so the part that
makes it late: from the later of its previous arrival and the last end of a synchronizing collective (all-reduce,
all-gather, reduce-scatter, all-to-all, barrier: no rank leaves one before the last arrives) before this arrival,
to this arrival. NCCL's collectives run one after another on their stream, so that is the previous one's end;
gloo's overlap, so within a step's backward it is the previous bucket's arrival. Idle in a window is GPU time with
no activity, classed by the host: a DataLoader range over it (data loading), a synchronizing call returning at its
start (sync), or anything else (Python and other host work). A gap where the rank's own launches say kernels ran
but the trace holds none of them was dropped by the profiler (sampled or lost events) and is never counted as idle.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from tracekit.analysis.job import arrival
from tracekit.analysis.job.frames import HostCollectives, RankFrames
from tracekit.analysis.job.host import host_collectives
from tracekit.analysis.job.inflation import NO_INFLATION, inflated, measure_inflation
from tracekit.analysis.steps import intervals
from tracekit.analysis.steps.calls import EVENT_RECORD_CALLS, LAUNCH, SYNC, base_name

IDLE_CLASSES = ("loader", "sync", "host", "dropped")
SYNC_TOLERANCE_NS = 20_000  # a gap begun up to this long before a sync returned still follows it
SEQUENCE_STRIDE = 1_000_000  # order-matched collectives: step * stride + their order within the step
NCCL_KIND = r"nccl(?:Dev)?Kernel_([A-Za-z]+)"
# the collectives no rank leaves before every rank has arrived (a broadcast's or a send's root may leave early)
SYNCHRONIZING = r"(?i)all|reduce_?scatter|barrier"
# a trace is flagged sampled when more of its launches than this have no GPU activity
MISSING_LAUNCHES_FLAG = 0.01


class RankError(ValueError):
    """A rank's trace the job analysis cannot use (no steps, no GPU activity)."""


@dataclass(frozen=True)
class RankTables:
    summary: pl.DataFrame  # one row: rank, world_size, source, launches, missing_launches, dropped_ns, sampled, ...
    steps: pl.DataFrame  # rank, step, start_ns, end_ns, busy_ns, idle_ns, dropped_ns
    collectives: pl.DataFrame  # rank, step, position, process_group, collective, sequence, correlation_id,
    # start_ns, end_ns, window_start_ns, compute_ns and the IDLE_CLASSES' _ns
    kernels: pl.DataFrame  # rank, step, kind, name, stream_id, start_ns, end_ns, collective
    idle: pl.DataFrame  # rank, step, start_ns, end_ns, idle_class: the GPU's gaps by IDLE_CLASSES (the timeline's)
    inflation: pl.DataFrame | None = (
        None  # correlation_id, inflation_ns (`inflation.measure_inflation`); not written with the tables
    )


def _steps(frames: RankFrames) -> pl.DataFrame:
    marked = frames.ranges.filter(pl.col("kind") == "step")
    if marked.height:
        return (
            marked.select(
                pl.col("name").str.extract(r"(\d+)$").cast(pl.Int64).alias("step"),
                "start_ns",
                "end_ns",
            )
            .unique("step", keep="first")
            .sort("start_ns")
        )
    if frames.gpu.height == 0:
        raise RankError("no GPU activity and no ProfilerStep ranges")
    return frames.gpu.select(
        pl.lit(0, pl.Int64).alias("step"), pl.col("start_ns").min(), pl.col("end_ns").max()
    )  # one step: the whole trace


def _with_step(rows: pl.DataFrame, steps: pl.DataFrame, at: str) -> pl.DataFrame:
    """Each row's step: the step range holding `at` (rows outside every step dropped)."""
    bounds = steps.select(pl.col("start_ns").alias("_from"), pl.col("end_ns").alias("_to"), "step")
    return (
        rows.sort(at)
        .join_asof(bounds.sort("_from"), left_on=at, right_on="_from", strategy="backward")
        .filter(pl.col(at) <= pl.col("_to"))
        .drop("_from", "_to")
    )


def _is_collective() -> pl.Expr:
    """A collective kernel: one that carries collective metadata, or NCCL's (names may be Categorical)."""
    return pl.col("collective").is_not_null() | pl.col("name").cast(pl.Utf8).str.starts_with("nccl")


def _work_calls(frames: RankFrames) -> pl.DataFrame:
    """The launch calls whose work a trace records as a GPU activity (an event record enqueues a marker)."""
    return frames.calls.filter(
        (pl.col("kind") == LAUNCH) & ~base_name(pl.col("name").cast(pl.Utf8)).is_in(list(EVENT_RECORD_CALLS))
    )


def _gpu_by_step(frames: RankFrames, steps: pl.DataFrame) -> pl.DataFrame:
    """GPU activities with their step, found from the time of the call that enqueued them (GPU work runs after the
    host's step range ends when the host runs ahead; a launch, or a blocking copy, which is a sync), else from their
    own start. Where the trace holds launch calls, an activity whose call it lacks was launched before the profiler
    recorded the host (its warm-up) and is left out: its step is not known."""
    launched = (
        frames.calls.select("correlation_id", pl.col("start_ns").alias("launch_ns"))
        .drop_nulls()
        .unique("correlation_id", keep="first")
    )
    # what each distinct kernel name says (NCCL's, and its kind), looked up by name: the names are read once each
    text = pl.col("name").cast(pl.Utf8)
    by_name = frames.gpu.select(pl.col("name").unique()).with_columns(
        text.str.starts_with("nccl").alias("_nccl"), text.str.extract(NCCL_KIND).str.to_lowercase().alias("_kind")
    )
    gpu = (
        frames.gpu.join(launched, on="correlation_id", how="left")
        .join(by_name, on="name", how="left", nulls_equal=True)
        .with_columns(
            pl.coalesce("launch_ns", "start_ns").alias("at_ns"),
            (pl.col("collective").is_not_null() | pl.col("_nccl").fill_null(False)).alias("is_collective"),
            pl.coalesce("collective", "_kind").alias("collective"),
        )
        .drop("_nccl", "_kind")
    )
    if launched.height:
        gpu = gpu.filter(pl.col("launch_ns").is_not_null() | pl.col("correlation_id").is_null())
    return _with_step(gpu, steps, "at_ns").drop("launch_ns")


def _missing_launches(frames: RankFrames) -> pl.DataFrame:
    """Launch calls whose GPU activity the trace lacks (before its last activity: the end of a trace cuts the
    rest)."""
    if frames.gpu.height == 0:
        return frames.calls.clear()
    last = frames.gpu["start_ns"].max()
    return _work_calls(frames).filter(
        pl.col("correlation_id").is_not_null()
        & ~pl.col("correlation_id").is_in(frames.gpu["correlation_id"].drop_nulls().implode())
        & (pl.col("start_ns") < last)
    )


def _idle(frames: RankFrames, busy: pl.DataFrame, start_ns: int, end_ns: int) -> pl.DataFrame:
    """The GPU's idle gaps in [start_ns, end_ns) classed by IDLE_CLASSES: start_ns, end_ns, idle_class."""
    gaps = intervals.gaps(busy, start_ns, end_ns).rename({"gap_start_ns": "start_ns", "gap_end_ns": "end_ns"})
    if gaps.height == 0:
        return gaps.with_columns(pl.lit("host").alias("idle_class"))
    # a missing launch's kernel would have run in the first gap that ends after its call
    missing = _missing_launches(frames).select(pl.col("start_ns").alias("call_ns")).sort("call_ns")
    dropped = (
        missing.join_asof(
            gaps.with_row_index("gap").sort("end_ns"), left_on="call_ns", right_on="end_ns", strategy="forward"
        )["gap"]
        .drop_nulls()
        .unique()
    )
    loaders = intervals.merge(frames.ranges.filter(pl.col("kind") == "loader"))
    loading = intervals.measure(loaders, gaps["start_ns"], gaps["end_ns"])
    sync_ends = frames.calls.filter(pl.col("kind") == SYNC)["end_ns"].sort()
    syncs_in = sync_ends.search_sorted(gaps["end_ns"], side="right").cast(pl.Int64) - sync_ends.search_sorted(
        gaps["start_ns"] - SYNC_TOLERANCE_NS, side="left"
    ).cast(pl.Int64)
    length = gaps["end_ns"] - gaps["start_ns"]
    gap_index = pl.int_range(0, gaps.height, eager=True)
    return gaps.with_columns(
        pl.when(gap_index.is_in(dropped.implode()))
        .then(pl.lit("dropped"))
        .when(loading * 2 > length)
        .then(pl.lit("loader"))
        .when(syncs_in > 0)
        .then(pl.lit("sync"))
        .otherwise(pl.lit("host"))
        .alias("idle_class")
    )


def _measure_classes(idle: pl.DataFrame, starts: pl.Series, ends: pl.Series) -> dict[str, pl.Series]:
    measured = {}
    for name in IDLE_CLASSES:
        merged = intervals.merge(idle.filter(pl.col("idle_class") == name))
        measured[f"{name}_ns"] = intervals.measure(merged, starts, ends)
    return measured


def needs_host_collectives(frames: RankFrames) -> bool:
    """Whether the rank's GPU ran no collective kernel (gloo runs them on host threads: `HostCollectives`)."""
    return frames.gpu.height == 0 or not frames.gpu.select(_is_collective()).to_series().any()


def rank_tables(
    frames: RankFrames,
    host: HostCollectives | None = None,
    replayed: bool = False,
    inflation: pl.DataFrame | None = None,
    with_inflation: bool = False,
) -> RankTables:
    """The rank's tables for the job (all times on the rank's own clock); its collectives from its NCCL kernels,
    else from `host` (gloo's host-side collectives) when given. `replayed`: the frames are a replay's (`arrival.ready`),
    `inflation` the recorded rank's (`inflation.measure_inflation`: a replay's kernels keep their recorded durations);
    `with_inflation`: measure it here (the job without the profiler needs it; as traced, `inflated_ns` is 0)."""
    steps = _steps(frames)
    gpu = _gpu_by_step(frames, steps)
    if gpu.height == 0:
        raise RankError("no GPU activity inside its steps")
    rank = pl.lit(frames.rank, pl.Int64).alias("rank")
    busy = intervals.merge(gpu)
    first = int(steps["start_ns"].min())  # type: ignore[arg-type]
    last = int(pl.concat([steps["end_ns"], gpu["end_ns"]]).max())  # type: ignore[arg-type]
    idle = _idle(frames, busy, first, last)

    on_host = host is not None and not gpu["is_collective"].any()
    if host is not None and on_host:
        found, copies = host_collectives(host, frames.gpu)
        # the copies to the host and back are the collectives' own work, not the rank's computation
        gpu = gpu.with_columns(pl.col("correlation_id").is_in(copies.implode()).fill_null(False).alias("is_collective"))
        collectives = _with_step(found, steps, "at_ns").with_columns(
            pl.lit(None, pl.Int64).alias("sequence"), pl.lit(None, pl.Int64).alias("correlation_id")
        )
    else:
        sequences = frames.comms.select("external_id", "sequence").drop_nulls().unique("external_id", keep="first")
        collectives = gpu.filter(pl.col("is_collective")).join(sequences, on="external_id", how="left")
    compute = intervals.merge(gpu.filter(~pl.col("is_collective")))
    collectives = collectives.select(
        "step", "process_group", "collective", "sequence", "correlation_id", "at_ns", "start_ns", "end_ns"
    ).with_columns(pl.col("collective").fill_null("").str.contains(SYNCHRONIZING).alias("synchronizing"))
    if on_host:  # gloo's collectives overlap on the host's workers: each ended one gates what follows
        collectives = collectives.with_columns(
            pl.col("start_ns").alias("kernel_start_ns"), gating=pl.lit(True), ordered=pl.lit(False)
        )
    else:
        collectives = arrival.ready(gpu, collectives, bounded=not replayed)
    if collectives["synchronizing"].any():  # rooted ones (broadcasts) are no meeting point: left out
        collectives = collectives.filter("synchronizing")
    by_order = collectives["sequence"].null_count() > 0
    order = pl.int_range(pl.len()).over("step", "process_group", "collective")
    step_start = steps.select("step", pl.col("start_ns").alias("_step_start"))
    ended = collectives.filter("gating").select(pl.col("end_ns").alias("_ended")).sort("_ended")
    collectives = (
        collectives.sort("start_ns")
        .with_columns(
            (pl.col("step") * SEQUENCE_STRIDE + order).alias("sequence") if by_order else pl.col("sequence"),
            pl.int_range(pl.len()).over("step").alias("position"),
            pl.col("start_ns").shift(1).alias("_previous_arrival"),
            pl.col("end_ns").shift(1).alias("_previous_end"),
        )
        .join_asof(ended, left_on="start_ns", right_on="_ended", strategy="backward")
        .join(step_start, on="step", how="left")
        .with_columns(
            pl.coalesce(pl.max_horizontal("_previous_arrival", "_ended"), "_step_start").alias("window_start_ns")
        )
        .with_columns(pl.min_horizontal("window_start_ns", "start_ns").alias("window_start_ns"))
    )
    starts, ends = collectives["window_start_ns"], collectives["start_ns"]
    if inflation is None:
        inflation = measure_inflation(gpu) if with_inflation else NO_INFLATION
    collectives = collectives.with_columns(
        intervals.measure(compute, starts, ends).alias("compute_ns"),
        inflated(gpu, inflation, starts, ends).alias("inflated_ns"),
        **_measure_classes(idle, starts, ends),
    ).select(
        rank,
        "step",
        "position",
        pl.col("process_group").fill_null(""),
        "collective",
        "sequence",
        "correlation_id",  # the kernel's launch (NCCL; null for host collectives): the same kernel in a replay
        "start_ns",  # the arrival: when the rank was ready for it (`arrival.ready`)
        "kernel_start_ns",  # when it began on the rank (after the rank's previous collective, where `ordered`)
        "end_ns",
        "gating",
        "ordered",
        "window_start_ns",
        pl.col("_previous_end").alias("previous_end_ns"),  # null for the trace's first: no collective before it
        # whether a collective ended between the rank's previous arrival and this one (it waited there): if not,
        # a lateness at the previous one is carried into this one, not new (gloo's collectives overlap)
        (
            pl.col("_previous_arrival").is_null()
            | (pl.col("_ended").fill_null(-(2**62)) >= pl.col("_previous_arrival"))
        ).alias("resynced"),
        "compute_ns",
        "inflated_ns",  # of it, what kernels beside a collective ran longer than alone (`inflation`)
        *(f"{name}_ns" for name in IDLE_CLASSES),
    )

    step_ends = steps["end_ns"]
    idle_by_class = _measure_classes(idle, steps["start_ns"], step_ends)
    step_rows = steps.select(
        rank,
        "step",
        "start_ns",
        "end_ns",
        intervals.measure(compute, steps["start_ns"], step_ends).alias("busy_ns"),
        (idle_by_class["loader_ns"] + idle_by_class["sync_ns"] + idle_by_class["host_ns"]).alias("idle_ns"),
        idle_by_class["dropped_ns"].alias("dropped_ns"),
    )
    launches = _work_calls(frames).height
    missing = _missing_launches(frames).height
    summary = pl.DataFrame(
        {
            "rank": [frames.rank],
            "world_size": [frames.world_size],
            "source": [frames.source],
            "launches": [launches],
            "missing_launches": [missing],
            "dropped_ns": [int(step_rows["dropped_ns"].sum())],
            "sampled": [launches > 0 and missing > MISSING_LAUNCHES_FLAG * launches],
            "matched_by": ["order" if by_order else "sequence"],
            "process_groups": [host.process_groups if host is not None else None],
        },
        schema_overrides={"world_size": pl.Int64, "process_groups": pl.Int64},
    )
    kernels = gpu.select(
        rank,
        "step",
        "kind",
        "name",
        "stream_id",
        "start_ns",
        "end_ns",
        pl.col("is_collective").alias("collective"),
    )
    gaps = _with_step(idle, steps, "start_ns").select(rank, "step", "start_ns", "end_ns", "idle_class")
    return RankTables(
        summary=summary, steps=step_rows, collectives=collectives, kernels=kernels, idle=gaps, inflation=inflation
    )
