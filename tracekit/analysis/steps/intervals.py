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
    nonempty = pl.col("end_ns") > pl.col("start_ns")
    groups = [pl.col(by).filter(nonempty).n_unique()] if by else []
    origin, last, *count = intervals.select(
        pl.col("start_ns").filter(nonempty).min(), pl.col("end_ns").filter(nonempty).max(), *groups
    ).row(0)
    if origin is None:
        return intervals.select(*keys, "start_ns", "end_ns").clear().with_columns(before_ns=pl.lit(0, pl.Int64))
    span = int(last) - int(origin) + 1
    if by and (count[0] + 1) * span >= 2**62:  # too far apart for one int64 axis: one group at a time
        parts = [
            merge(part.drop(by)).select(pl.lit(name[0], part.schema[by]).alias(by), pl.all())
            for name, part in intervals.filter(nonempty).group_by(by)
        ]
        return pl.concat(parts).sort(by, "start_ns")
    # the groups laid end to end on one axis (group k, in sorted order, shifted by k spans; null first), so that
    # one sort of one column and one running maximum serve every group: a sort by group and start, or windowed
    # expressions (`over`), cost several copies of a million-row frame
    names = intervals.filter(nonempty)[by].unique().drop_nulls().sort() if by else None
    rank = pl.col(by).rank("dense").fill_null(0).cast(pl.Int64) if by else pl.lit(0, pl.Int64)
    reach = pl.col("end_ns").cum_max()
    new = (pl.col("start_ns") > reach.shift(1)).fill_null(True)  # a merged run begins past every earlier end
    group = pl.col("start_ns") // span
    # one lazy query: each stage's columns are freed once the next has them
    runs = (
        intervals.lazy()
        .select(*keys, "start_ns", "end_ns")
        .filter(nonempty)
        .select(pl.col("start_ns", "end_ns") + rank * span - origin)
        .sort("start_ns")
        .select(
            pl.when(new).then(pl.col("start_ns")).forward_fill().alias("start_ns"),
            reach.alias("end_ns"),
            new.shift(-1).fill_null(True).alias("last"),  # the last interval of each merged run
        )
        .filter("last")
        .select(group.alias("group"), pl.col("start_ns", "end_ns") - group * span + origin)
    )
    length = pl.col("end_ns") - pl.col("start_ns")
    total = length.cum_sum()
    first = (pl.col("group") != pl.col("group").shift(1)).fill_null(True)
    before = total - length - pl.when(first).then(total - length).forward_fill()
    named = []
    if by and names is not None:  # group k > 0 is the k-th name; group 0, null
        value = pl.lit(names).gather((pl.col("group") - 1).clip(lower_bound=0)) if len(names) else None
        named = [pl.when(pl.col("group") > 0).then(value).otherwise(None).cast(names.dtype).alias(by)]
    return runs.select(*named, "start_ns", "end_ns", before.alias("before_ns")).collect()


def measure_before(merged: pl.DataFrame, times: pl.Series, groups: pl.Series | None = None) -> pl.Series:
    """The length of the `merged` union (per group) before each time: the cumulative length up to the last
    interval that starts at or before it, plus the part of that interval before it."""
    times = times.cast(pl.Int64)
    if merged.height == 0:
        return pl.repeat(0, len(times), dtype=pl.Int64, eager=True).alias("measure_ns")
    at = _last_starting(merged, times, groups)
    found = pl.DataFrame({"time_ns": times}).with_columns(
        merged.select(pl.col("start_ns", "end_ns", "before_ns").gather(at)).get_columns()
    )
    inside = (pl.min_horizontal("time_ns", "end_ns") - pl.col("start_ns")).clip(lower_bound=0)
    return found.select((pl.col("before_ns") + inside).fill_null(0).alias("measure_ns")).to_series()


def measure(merged: pl.DataFrame, starts: pl.Series, ends: pl.Series, groups: pl.Series | None = None) -> pl.Series:
    """The length of the union inside each [start, end)."""
    return (measure_before(merged, ends, groups) - measure_before(merged, starts, groups)).clip(lower_bound=0)


def contains(merged: pl.DataFrame, times: pl.Series) -> pl.Series:
    """Whether each time lies inside an interval of the union (its end included)."""
    times = times.cast(pl.Int64)
    if merged.height == 0:
        return pl.repeat(False, len(times), dtype=pl.Boolean, eager=True).alias("inside")
    end = merged["end_ns"].gather(_last_starting(merged, times, None))
    return (end >= times).fill_null(False).alias("inside")


def _last_starting(merged: pl.DataFrame, times: pl.Series, groups: pl.Series | None) -> pl.Series:
    """The row of `merged` (sorted by group, then start) of the last interval of each time's group that starts
    at or before it; null where there is none. One sorted search, with no sort or join of the queries (a million
    of them): the groups laid end to end on one axis as in `merge`; a null group matches nothing, as in a join."""
    if groups is None:
        keys, wanted = merged["start_ns"], times
    else:
        table = merged[merged.columns[0]]
        asked = groups.cast(table.dtype)
        names = table.drop_nulls().unique().sort()
        bounds = pl.concat([merged["start_ns"], times]).drop_nulls()
        origin, span = int(bounds.min()), int(bounds.max()) - int(bounds.min()) + 1  # type: ignore[arg-type]
        if len(names) == 0:
            return pl.repeat(None, len(times), dtype=pl.Int64, eager=True)
        if (len(names) + 1) * span >= 2**62:  # too far apart for one int64 axis
            return _last_starting_joined(merged, times, asked)
        rank = names.search_sorted(asked).cast(pl.Int64)
        known = (names.gather(rank.clip(upper_bound=len(names) - 1)) == asked).fill_null(False)
        # null groups sort first in `merge`: below every key
        keys = (names.search_sorted(table).cast(pl.Int64) * span + merged["start_ns"] - origin).set(table.is_null(), -1)
        wanted = (rank * span + times - origin).set(~known, None)
    at = keys.search_sorted(wanted, side="right").cast(pl.Int64) - 1
    missing = wanted.is_null() | (at < 0)
    if groups is not None:  # the last key below may be an earlier group's, where this group starts later
        missing = missing | (table.gather(at.clip(lower_bound=0)) != asked).fill_null(True)
    return at.set(missing, None)


def _last_starting_joined(merged: pl.DataFrame, times: pl.Series, groups: pl.Series) -> pl.Series:
    """`_last_starting` by an as-of join per group (times too far apart to lay the groups on one axis)."""
    table = merged.select(pl.col(merged.columns[0]).alias("group"), pl.col("start_ns").alias("time_ns"))
    query = pl.DataFrame({"time_ns": times, "group": groups}).with_row_index("row")
    found = (
        query.filter(pl.col("time_ns").is_not_null())
        .sort("time_ns")
        .join_asof(
            table.with_row_index("at").sort("time_ns"),
            on="time_ns",
            by="group",
            strategy="backward",
            check_sortedness=False,
        )
        .filter(pl.col("at").is_not_null())
    )
    at = pl.repeat(None, len(times), dtype=pl.Int64, eager=True)
    return at.scatter(found["row"], found["at"].cast(pl.Int64)) if found.height else at


def gaps(merged: pl.DataFrame, start_ns: int, end_ns: int) -> pl.DataFrame:
    """The complement of the union inside [start_ns, end_ns): gap_start_ns, gap_end_ns (sorted)."""
    inside = merged.filter((pl.col("end_ns") > start_ns) & (pl.col("start_ns") < end_ns))
    starts = pl.concat([pl.Series([start_ns], dtype=pl.Int64), inside["end_ns"]])
    ends = pl.concat([inside["start_ns"], pl.Series([end_ns], dtype=pl.Int64)])
    frame = pl.DataFrame(
        {"gap_start_ns": starts.clip(lower_bound=start_ns), "gap_end_ns": ends.clip(upper_bound=end_ns)}
    )
    return frame.filter(pl.col("gap_end_ns") > pl.col("gap_start_ns"))
