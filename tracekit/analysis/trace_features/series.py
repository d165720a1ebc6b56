"""A step-function time series cut down for a chart: at most `points` stretches of time per group, each drawn as
its highest value and the value it ended on, so a chart of a million launches draws in a browser, still shows every
peak, and falls back where the series did (a copy's bandwidth drops to zero between copies)."""

from __future__ import annotations

import polars as pl

MAX_POINTS = 2_000  # per group (stream, copy kind): a chart's width in pixels, about


def peaks(series: pl.DataFrame, group: str, value: str, points: int = MAX_POINTS) -> pl.DataFrame:
    """`series` (group, time_ns, value) as it is where a group has at most `points` rows; else that group's time
    cut into `points` equal stretches, each given by two rows: its first time with its highest value, and its last
    change with the value it ended on (one row where the stretch holds one change)."""
    if series.height == 0:
        return series.select(group, "time_ns", value)
    counts = series.group_by(group).len()
    small = counts.filter(pl.col("len") <= points)[group]
    kept = series.filter(pl.col(group).is_in(small.implode())).select(group, "time_ns", value)
    large = series.filter(~pl.col(group).is_in(small.implode()))
    if large.height == 0:
        return kept.sort(group, "time_ns")
    first, last = pl.col("time_ns").min().over(group), pl.col("time_ns").max().over(group)
    stretch = ((pl.col("time_ns") - first) * points // (last - first + 1)).alias("stretch")
    ordered = large.sort(group, "time_ns", maintain_order=True).with_columns(stretch)
    stretches = ordered.group_by(group, "stretch").agg(
        pl.col("time_ns").first().alias("first_ns"),
        pl.col(value).max().alias("peak"),
        pl.col("time_ns").last().alias("last_ns"),
        pl.col(value).last().alias("ended"),
    )
    rows = pl.concat(
        [
            stretches.select(group, pl.col("first_ns").alias("time_ns"), pl.col("peak").alias(value), order=pl.lit(0)),
            stretches.filter(pl.col("last_ns") > pl.col("first_ns")).select(
                group, pl.col("last_ns").alias("time_ns"), pl.col("ended").alias(value), order=pl.lit(1)
            ),
        ]
    )
    reduced = rows.sort(group, "time_ns", "order").select(group, "time_ns", value)
    return pl.concat([kept, reduced.cast(kept.schema)]).sort(group, "time_ns", maintain_order=True)
