"""Frames for the region figures: the warp timeline coloured by region and each region's occupancy over time.

A launch has tens of thousands of region instances; a browser draws a few thousand bars well. So the timeline is
drawn bar by bar only when few enough instances are in view (`MAX_SLICES`), else binned: rows of consecutive warps
(in SM, block, warp order) by equal time bins, each cell taking the region that held the most of those warps'
time in it (exclusive time: the innermost region, so an enclosing "mainloop" does not hide what ran inside it),
and the share it held. Zooming (a window of time and rows) brings the bars back.

Times are those of `regions.region_intervals`: the launch's unit (ns or SM cycles), relative to its first region
start. Pure polars, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import polars as pl

from tracekit.analysis.regions import (
    WARP_KEYS,
    TimeUnit,
    region_intervals,
    region_occupancy,
    with_parents,
)
from tracekit.scalars import as_int

MAX_SLICES = 6000  # bars drawn one by one up to this many in view (three points each)
MAX_CELLS = 20000  # binned view: rows x time bins at most
MAX_ROWS = 200  # binned view: warps are grouped into at most this many rows
OCCUPANCY_BINS = 200


@dataclass(frozen=True)
class RegionLayout:
    """A launch's regions ready for any view: instances with their row and direct parent, and the region names in
    the order they first started (the colour order, the same in every view)."""

    linked: pl.DataFrame  # region_intervals + row + parent_iid/parent_start/parent_end (regions.with_parents)
    rows: pl.DataFrame  # row, sm_id, block_id, warp_in_block: one per warp
    time_unit: TimeUnit
    span: int
    names: tuple[str, ...]


@dataclass(frozen=True)
class RegionTimeline:
    """One view of the timeline: bars (`slices`) or binned cells (`cells`), never both."""

    mode: Literal["slices", "binned"]
    time_unit: TimeUnit
    names: tuple[str, ...]  # every region of the launch, colour order
    window: tuple[int, int]  # the time shown
    row_range: tuple[int, int]  # first and last row shown (inclusive)
    in_view: int  # region instances in the window and rows
    slices: pl.DataFrame | None  # row, region, depth, start, end, sm_id, block_id, warp_in_block
    cells: pl.DataFrame | None  # y, bin_start, bin_end, region, share (of the row's warp time in the bin)
    groups: pl.DataFrame | None  # binned: each warp's row and binned row y (`warp_groups`)
    rows: pl.DataFrame  # the warps shown: row, sm_id, block_id, warp_in_block


def region_layout(regions: pl.DataFrame) -> RegionLayout:
    """Rows (one per warp, in SM, block, warp order) and parents of one launch's regions (`REGION_SCHEMA`)."""
    intervals, unit = region_intervals(regions)
    rows = (
        intervals.select(WARP_KEYS)
        .unique()
        .sort(WARP_KEYS)
        .with_row_index("row")
        .with_columns(pl.col("row").cast(pl.Int64))
    )
    linked = with_parents(intervals.join(rows, on=WARP_KEYS, how="left"))
    names = intervals.group_by("region").agg(pl.col("start").min()).sort(["start", "region"])["region"].to_list()
    return RegionLayout(linked, rows, unit, as_int(intervals["end"].max()), tuple(names))


def region_timeline(
    layout: RegionLayout,
    window: tuple[int, int] | None = None,
    row_range: tuple[int, int] | None = None,
    max_slices: int = MAX_SLICES,
    max_cells: int = MAX_CELLS,
    max_rows: int = MAX_ROWS,
) -> RegionTimeline:
    """The timeline in a time window (the launch's unit; None: all of it) and a range of warp rows (inclusive;
    None: all): bars when at most `max_slices` instances are in view, else binned cells."""
    last_row = layout.rows.height - 1
    lo, hi = window if window is not None else (0, max(layout.span, 1))
    first, last = row_range if row_range is not None else (0, last_row)
    first, last = max(0, min(first, last_row)), max(0, min(last, last_row))
    if hi <= lo or last < first:
        raise ValueError(f"empty view: time {lo} to {hi}, rows {first} to {last}")
    in_rows = layout.linked.filter(pl.col("row").is_between(first, last))
    visible = in_rows.filter((pl.col("start") < hi) & ((pl.col("end") > lo) | (pl.col("start") >= lo)))
    shown_rows = layout.rows.filter(pl.col("row").is_between(first, last))
    if visible.height <= max_slices:
        slices = visible.select("row", "region", "depth", "start", "end", *WARP_KEYS).sort("row", "depth", "start")
        return RegionTimeline(
            "slices",
            layout.time_unit,
            layout.names,
            (lo, hi),
            (first, last),
            visible.height,
            slices,
            None,
            None,
            shown_rows,
        )
    groups = warp_groups(shown_rows, max_rows)
    bins = max(10, min(400, max_cells // max(1, as_int(groups["y"].max()) + 1)))
    cells = dominant_cells(in_rows, groups, lo, hi, bins)
    return RegionTimeline(
        "binned",
        layout.time_unit,
        layout.names,
        (lo, hi),
        (first, last),
        visible.height,
        None,
        cells,
        groups,
        shown_rows,
    )


def warp_groups(rows: pl.DataFrame, max_rows: int = MAX_ROWS) -> pl.DataFrame:
    """Binned rows: warps at the same position in their blocks (one role of a warp-specialized kernel), in SM
    order, gathered in runs so that at most about `max_rows` rows remain; producers and consumers never share
    a row. Columns: row (the warp's), y (the binned row), warp_in_block, sm_min, sm_max, warps."""
    positions = rows["warp_in_block"].n_unique()
    per_position = max(1, max_rows // positions)
    ranked = rows.sort("row").with_columns(
        pl.col("row").rank("ordinal").over("warp_in_block").cast(pl.Int64).alias("rank"),
        pl.len().over("warp_in_block").alias("count"),
    )
    ranked = ranked.with_columns(
        ((pl.col("rank") - 1) // ((pl.col("count") + per_position - 1) // per_position)).alias("run")
    )
    keys = ranked.select("run", "warp_in_block").unique().sort("run", "warp_in_block").with_row_index("y")
    grouped = ranked.join(keys, on=["run", "warp_in_block"])
    summary = grouped.group_by("y").agg(
        pl.col("sm_id").min().alias("sm_min"), pl.col("sm_id").max().alias("sm_max"), pl.len().alias("warps")
    )
    return (
        grouped.join(summary, on="y")
        .select("row", pl.col("y").cast(pl.Int64), "warp_in_block", "sm_min", "sm_max", "warps")
        .sort("row")
    )


def _bins(start: pl.Expr, end: pl.Expr, lo: int, width: int, bins: int) -> pl.Expr:
    """The bins an interval touches inside [lo, lo + bins * width)."""
    first = ((pl.max_horizontal(start, pl.lit(lo)) - lo) // width).clip(0, bins - 1)
    last = ((pl.min_horizontal(end, pl.lit(lo + bins * width)) - 1 - lo) // width).clip(0, bins - 1)
    return pl.int_ranges(first, pl.max_horizontal(first, last) + 1)


def dominant_cells(linked: pl.DataFrame, groups: pl.DataFrame, lo: int, hi: int, bins: int) -> pl.DataFrame:
    """Per (binned row y of `groups`, time bin): the region with the most exclusive warp time there and its share
    of the row's warp time in the bin (warps x bin width). Cells where no warp was in any region are absent."""
    width = max(1, -(-(hi - lo) // bins))
    bins = -(-(hi - lo) // width)

    def pieces(frame: pl.DataFrame, key: str, start: str, end: str) -> pl.DataFrame:
        return (
            frame.filter((pl.col(start) < hi) & (pl.col(end) > lo))
            .select(pl.col(key).alias("iid"), pl.col(start).alias("s"), pl.col(end).alias("e"))
            .with_columns(_bins(pl.col("s"), pl.col("e"), lo, width, bins).alias("bin"))
            .explode("bin")
            .with_columns((lo + pl.col("bin") * width).alias("b0"))
            .with_columns(
                (pl.min_horizontal("e", pl.col("b0") + width, pl.lit(hi)) - pl.max_horizontal("s", "b0"))
                .clip(lower_bound=0)
                .alias("t")
            )
            .group_by("iid", "bin")
            .agg(pl.col("t").sum())
        )

    own = pieces(linked, "iid", "start", "end")
    nested = linked.filter(pl.col("parent_iid").is_not_null()).with_columns(
        pl.max_horizontal("start", "parent_start").alias("cs"), pl.min_horizontal("end", "parent_end").alias("ce")
    )
    children = pieces(nested, "parent_iid", "cs", "ce").rename({"t": "child"})
    exclusive = (
        own.join(children, on=["iid", "bin"], how="left")
        .with_columns((pl.col("t") - pl.col("child").fill_null(0)).alias("exclusive"))
        .join(linked.select("iid", "region", "row"), on="iid")
        .join(groups.select("row", "y"), on="row")
        .group_by("y", "bin", "region")
        .agg(pl.col("exclusive").sum())
        .filter(pl.col("exclusive") > 0)
    )
    sizes = groups.group_by("y").agg(pl.len().alias("warps"))
    best = exclusive.sort(["y", "bin", "exclusive", "region"], descending=[False, False, True, False]).unique(
        ["y", "bin"], keep="first", maintain_order=True
    )
    return (
        best.join(sizes, on="y")
        .with_columns(
            (lo + pl.col("bin") * width).alias("bin_start"),
            pl.min_horizontal(lo + (pl.col("bin") + 1) * width, pl.lit(hi)).alias("bin_end"),
        )
        .with_columns(
            (pl.col("exclusive") / (pl.col("warps") * (pl.col("bin_end") - pl.col("bin_start")))).alias("share")
        )
        .select("y", "bin", "bin_start", "bin_end", "region", "share")
        .sort("y", "bin")
    )


def region_occupancy_curves(
    regions: pl.DataFrame, sm_count: int | None = None, bins: int = OCCUPANCY_BINS
) -> pl.DataFrame:
    """Mean warps inside each region per SM over time: `regions.region_occupancy` summed over SMs and divided by
    `sm_count` (default: the SMs seen; 1 when the file does not say which SM), every bin present (0 where none).

    Columns: region, bin, bin_start, bin_end, mean_warps_per_sm (time in the launch's unit)."""
    occupancy = region_occupancy(regions, bins)
    seen = occupancy["sm_id"].n_unique() if occupancy.height else 1
    sms = sm_count or seen
    names = occupancy.select("region").unique()
    grid = occupancy.select("bin", "bin_start", "bin_end").unique()
    full = names.join(
        pl.DataFrame({"bin": range(as_int(grid["bin"].max()) + 1)}, schema={"bin": grid["bin"].dtype}),
        how="cross",
    )
    width = as_int((grid["bin_end"] - grid["bin_start"]).max())
    summed = occupancy.group_by("region", "bin").agg(pl.col("mean_warps").sum())
    return (
        full.join(summed, on=["region", "bin"], how="left")
        .with_columns(
            (pl.col("bin") * width).alias("bin_start"),
            ((pl.col("bin") + 1) * width).alias("bin_end"),
            (pl.col("mean_warps").fill_null(0.0) / sms).alias("mean_warps_per_sm"),
        )
        .select("region", "bin", "bin_start", "bin_end", "mean_warps_per_sm")
        .sort("region", "bin")
    )


def region_figure_frames(regions: pl.DataFrame, sm_count: int | None = None) -> dict[str, object]:
    """What the report's region figures need for one launch: the whole timeline and the occupancy curves."""
    layout = region_layout(regions)
    return {
        "region_timeline": region_timeline(layout),
        "region_occupancy": region_occupancy_curves(regions, sm_count),
        "region_time_unit": layout.time_unit,
        "region_names": layout.names,
    }
