"""Ranks lined up on one clock: each collective matched across ranks by (process group, kind, sequence), and each
rank's clock offset from the ends of the collectives it shares.

A collective ends on every rank within microseconds (no rank leaves before the last has sent its part), while
its start is each rank's own arrival; so the ends are the one event every rank sees at the same moment, and the
median of a rank's (end minus the collective's median end) is its clock's offset, robust to a few collectives
that end late on one rank (a slower link on a bandwidth-bound transfer). Only synchronizing collectives count
(the rank tables leave the rooted ones out: a broadcast's root leaves before the others arrive). A link slow by
the same time on every collective cannot be told from a clock offset this way.
"""

from __future__ import annotations

import polars as pl

KEY = ["process_group", "collective", "sequence"]
TIMES = ["start_ns", "kernel_start_ns", "end_ns", "window_start_ns", "previous_end_ns"]  # on a rank's clock


def matched(collectives: pl.DataFrame) -> pl.DataFrame:
    """The collectives that two or more ranks share (one row per rank and key), times from the earliest start."""
    once = collectives.unique([*KEY, "rank"], keep="first")
    shared = once.filter(pl.len().over(KEY) >= 2)
    if shared.height == 0:
        return shared
    origin = int(shared["window_start_ns"].min())  # type: ignore[arg-type]
    return shared.with_columns(pl.col(TIMES) - origin)


def clock_offsets(shared: pl.DataFrame) -> pl.DataFrame:
    """rank, offset_ns (from the lowest rank's clock), collectives: twice over, the second time on the clocks the
    first pass corrected (the collectives' median ends then no longer mix the offsets)."""
    offsets = shared.select("rank").unique().with_columns(offset_ns=pl.lit(0, pl.Int64))
    for _ in range(2):
        ends = shared.join(offsets, on="rank").with_columns(pl.col("end_ns") - pl.col("offset_ns"))
        residual = ends.with_columns((pl.col("end_ns") - pl.col("end_ns").median().over(KEY)).alias("residual_ns"))
        found = residual.group_by("rank").agg(
            pl.col("residual_ns").median().round().cast(pl.Int64).alias("step_ns"), pl.len().alias("collectives")
        )
        offsets = offsets.join(found, on="rank").select(
            "rank", (pl.col("offset_ns") + pl.col("step_ns")).alias("offset_ns"), "collectives"
        )
    reference = offsets.sort("rank")["offset_ns"][0]
    return offsets.with_columns(pl.col("offset_ns") - reference).sort("rank")


def corrected(shared: pl.DataFrame, offsets: pl.DataFrame) -> pl.DataFrame:
    """The shared collectives on the reference rank's clock: arrival_ns (when the rank was ready for it), its
    kernel's start, end_ns and window_start_ns corrected."""
    return (
        shared.join(offsets.select("rank", "offset_ns"), on="rank")
        .with_columns(pl.col(TIMES) - pl.col("offset_ns"))
        .rename({"start_ns": "arrival_ns"})
    )
