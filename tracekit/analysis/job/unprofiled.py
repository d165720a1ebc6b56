"""The job as it runs without the profiler: each rank's windows as the rank's own replay without the profiler
(`steps.unprofiled.replay_without_profiler`, the step analysis's one replay) has them, the ranks then met again at
every collective (`replay.rewindowed`).

A profiled rank is slower on its host by what recording cost it, and the ranks do not pay it alike: in a
data-parallel job the rank whose host falls behind in the forward pass arrives last at every all-reduce while the
others wait in theirs, so the profiled job shows a straggler the program does not have (a 2-GPU ResNet-50 whose
ranks both run 26.6 ms steps unprofiled reads as rank 0 late by 15 ms a step, traced). A rank's own replay keeps its
GPU durations, its collectives' waits included, so it cannot say when the others would have arrived; but a window
(the rank's own time before a collective, from the later of its previous arrival and the last collective that ended
on it) holds no waiting for the others, so the replay's windows are the rank's own time without the profiler. The
same kernel is found in both by its launch's correlation id. Replaying the job's meetings with those windows gives
each rank's arrivals as the program makes them; the straggler, its cause and its gain are then read from them.

The job's step is the time between the ends of consecutive steps' last collectives (the loop's period, as CUDA events
around each step time it), replayed and as traced.
"""

from __future__ import annotations

import polars as pl

from tracekit.analysis.job.rank import IDLE_CLASSES, RankTables
from tracekit.analysis.job.replay import rewindowed

# the replayed job step's median error against the program's CUDA-event step over the nine recorded 2-GPU jobs
# (sample_traces/jobs/evaluate.py, 2026-11-29): a straggler whose replayed gain is less than this share of the step
# is not told from what the replay leaves of the profiler, and is not named (`analysis.analyze_job`)
REPLAY_ERROR_PCT = 4.4
# a window's parts, as the rank tables name them, and their names without the profiler
PARTS = ("compute_ns", *(f"{name}_ns" for name in IDLE_CLASSES))
OWN = "unprofiled_own_ns"
UNPROFILED = {part: f"unprofiled_{part}" for part in PARTS}


def with_replay(recorded: RankTables, replayed: RankTables) -> RankTables:
    """`recorded`'s tables with the rank's own time in each window without the profiler beside its collectives
    (OWN and UNPROFILED's columns, from the same kernel in `replayed`: the rank's tables of its replay)."""
    # the computation that ran longer beside a collective than alone is taken out too (`inflation.measure_inflation`)
    windows = replayed.collectives.select(
        "correlation_id",
        (pl.col("start_ns") - pl.col("window_start_ns") - pl.col("inflated_ns")).clip(lower_bound=0).alias(OWN),
        *(pl.col(part).alias(name) for part, name in UNPROFILED.items() if part != "compute_ns"),
        (pl.col("compute_ns") - pl.col("inflated_ns")).clip(lower_bound=0).alias(UNPROFILED["compute_ns"]),
    ).filter(pl.col("correlation_id").is_not_null())
    joined = recorded.collectives.join(windows, on="correlation_id", how="left")
    return RankTables(recorded.summary, recorded.steps, joined, recorded.kernels, recorded.idle)


def has_replay(collectives: pl.DataFrame) -> bool:
    """Whether every rank's windows were replayed (a rank read without it, or host collectives, leave it out)."""
    return OWN in collectives.columns and collectives[OWN].null_count() < collectives.height


def without_profiler(aligned: pl.DataFrame) -> pl.DataFrame:
    """The shared collectives on the reference clock (`align.corrected`) as the job runs without the profiler: the
    meetings replayed with each window's unprofiled own time, and the windows' parts without the profiler."""
    moved = rewindowed(aligned, OWN)
    return moved.with_columns(pl.coalesce(name, part).alias(part) for part, name in UNPROFILED.items())


def step_periods(aligned: pl.DataFrame) -> pl.DataFrame:
    """step, period_ns: from the end of the previous step's last collective to the end of this step's (on the
    latest rank); the first step has none."""
    ends = aligned.group_by("step").agg(pl.col("end_ns").max()).sort("step")
    return ends.select("step", pl.col("end_ns").diff().alias("period_ns")).filter(pl.col("period_ns").is_not_null())
