"""Interval algebra on frames: the union of intervals and how much of it lies before a time.

The union of N intervals is one sort and a running maximum; how much of the union lies in [a, b) is then two
as-of lookups into its cumulative length, so a step's busy time, or the part of an idle gap a host thread spent
in API calls, costs a join, never a loop over events.
"""

from __future__ import annotations

import polars as pl


def merge(intervals: pl.DataFrame, by: str | None = None) -> pl.DataFrame:
    """The union of [start_ns, end_ns) intervals (per `by` group) as disjoint sorted intervals, with
    `before_ns`, the union's length before each interval's start."""
    keys = [by] if by else []
    frame = intervals.select(*keys, "start_ns", "end_ns").filter(pl.col("end_ns") > pl.col("start_ns"))
    frame = frame.sort(*keys, "start_ns")
    if frame.height == 0:
        return frame.with_columns(before_ns=pl.lit(0, pl.Int64))
    # groups laid end to end on one axis (group k shifted by k spans), so that one running maximum serves every
    # group: windowed expressions (`over`) cost several copies of a million-row frame
    origin, span = int(frame["start_ns"].min()), int(frame["end_ns"].max()) - int(frame["start_ns"].min()) + 1  # type: ignore[arg-type]
    if by:
        first = (pl.col(by) != pl.col(by).shift(1)).fill_null(True)
        frame = frame.with_columns(offset=(first.cast(pl.Int64).cum_sum() - 1) * span - origin)
    else:
        frame = frame.with_columns(offset=pl.lit(-origin, pl.Int64))
    end = pl.col("end_ns") + pl.col("offset")
    reach = end.cum_max().shift(1)
    new = reach.is_null() | (pl.col("start_ns") + pl.col("offset") > reach)
    frame = frame.with_columns(new=new, reach=end.cum_max())
    last = pl.col("new").shift(-1).fill_null(True)  # the last interval of each merged run
    merged = frame.with_columns(run_start=pl.when("new").then("start_ns").forward_fill()).filter(last)
    merged = merged.select(
        *keys, pl.col("run_start").alias("start_ns"), (pl.col("reach") - pl.col("offset")).alias("end_ns")
    )
    length = pl.col("end_ns") - pl.col("start_ns")
    total = length.cum_sum()
    if by:
        first = (pl.col(by) != pl.col(by).shift(1)).fill_null(True)
        base = pl.when(first).then(total - length).forward_fill()
        before = total - length - base
    else:
        before = total - length
    return merged.with_columns(before_ns=before)


def measure_before(merged: pl.DataFrame, times: pl.Series, groups: pl.Series | None = None) -> pl.Series:
    """The length of the `merged` union (per group) before each time: the cumulative length up to the last
    interval that starts at or before it, plus the part of that interval before it."""
    by = "group" if groups is not None else None
    query = pl.DataFrame({"time_ns": times.cast(pl.Int64)}).with_row_index("row")
    if groups is not None:
        query = query.with_columns(group=groups.cast(merged.schema[merged.columns[0]]))
        table = merged.rename({merged.columns[0]: "group"})
    else:
        table = merged
    if table.height == 0:
        return pl.Series("measure_ns", [0] * query.height, dtype=pl.Int64)
    table = table.select(*([by] if by else []), pl.col("start_ns").alias("time_ns"), "start_ns", "end_ns", "before_ns")
    found = (
        query.filter(pl.col("time_ns").is_not_null())
        .sort("time_ns")
        .join_asof(table.sort("time_ns"), on="time_ns", by=by, strategy="backward", check_sortedness=False)
    )
    inside = (pl.min_horizontal(pl.col("time_ns"), pl.col("end_ns")) - pl.col("start_ns")).clip(lower_bound=0)
    found = found.select("row", (pl.col("before_ns") + inside).fill_null(0).alias("measure_ns"))
    return _scattered(found, "measure_ns", 0, query.height)


def _scattered(found: pl.DataFrame, column: str, default: int | bool, height: int) -> pl.Series:
    """`found[column]` put back at its `row` in a series of `height` (`default` elsewhere): a scatter, not a
    join and a sort back (each a copy of a million-row query)."""
    dtype = found.schema[column]
    out = pl.repeat(default, height, dtype=dtype, eager=True).alias(column)
    if found.height:
        out.scatter(found["row"], found[column])
    return out


def measure(merged: pl.DataFrame, starts: pl.Series, ends: pl.Series, groups: pl.Series | None = None) -> pl.Series:
    """The length of the union inside each [start, end)."""
    return (measure_before(merged, ends, groups) - measure_before(merged, starts, groups)).clip(lower_bound=0)


def contains(merged: pl.DataFrame, times: pl.Series) -> pl.Series:
    """Whether each time lies inside an interval of the union (its end included)."""
    query = pl.DataFrame({"time_ns": times.cast(pl.Int64)}).with_row_index("row")
    if merged.height == 0:
        return pl.Series("inside", [False] * query.height)
    table = merged.select(pl.col("start_ns").alias("time_ns"), "end_ns").sort("time_ns")
    found = query.filter(pl.col("time_ns").is_not_null()).sort("time_ns").join_asof(table, on="time_ns")
    found = found.select("row", (pl.col("end_ns") >= pl.col("time_ns")).fill_null(False).alias("inside"))
    return _scattered(found, "inside", False, query.height)


def gaps(merged: pl.DataFrame, start_ns: int, end_ns: int) -> pl.DataFrame:
    """The complement of the union inside [start_ns, end_ns): gap_start_ns, gap_end_ns (sorted)."""
    inside = merged.filter((pl.col("end_ns") > start_ns) & (pl.col("start_ns") < end_ns))
    starts = pl.concat([pl.Series([start_ns], dtype=pl.Int64), inside["end_ns"]])
    ends = pl.concat([inside["start_ns"], pl.Series([end_ns], dtype=pl.Int64)])
    frame = pl.DataFrame(
        {"gap_start_ns": starts.clip(lower_bound=start_ns), "gap_end_ns": ends.clip(upper_bound=end_ns)}
    )
    return frame.filter(pl.col("gap_end_ns") > pl.col("gap_start_ns"))
