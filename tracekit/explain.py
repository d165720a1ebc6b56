"""From the store to analysis results: load each launch's metrics and warps, then analyze them together."""

from __future__ import annotations

from typing import Any

import polars as pl

from tracekit.analysis.result import LaunchInput, analyze_launches
from tracekit.analysis.timeline import binned_activity
from tracekit.analysis.views import latency_histogram, occupancy_over_time
from tracekit.parsed import WARP_SCHEMA, empty_frame
from tracekit.store import Store

FIGURE_BINS = 200  # time bins of the timeline and occupancy figures: a figure stays small for any trace size


def launch_inputs(store: Store, launches: pl.DataFrame) -> list[LaunchInput]:
    """One `LaunchInput` per row of `launches` (as `Store.launches()` returns them)."""
    launch_ids = launches["id"].to_list()
    metrics = store.metrics(launch_ids) if launch_ids else pl.DataFrame()
    by_launch = metrics.partition_by("launch_id", as_dict=True) if metrics.height else {}
    traced = store.warp_counts(launch_ids) if launch_ids else {}  # one query, not one per untraced launch
    no_warps = empty_frame({k: v for k, v in WARP_SCHEMA.items() if k != "launch_key"})
    return [
        LaunchInput(
            launch=row,
            metrics=by_launch.get((row["id"],), metrics.clear()),
            warps=store.warps(row["id"]) if row["id"] in traced else no_warps,
        )
        for row in launches.iter_rows(named=True)
    ]


def analyze_stored(store: Store, launches: pl.DataFrame) -> list[dict[str, Any]]:
    """The analysis objects of the given stored launches, in their order."""
    return analyze_launches(launch_inputs(store, launches))


def figure_views(warps: pl.DataFrame, sm_count: int | None, bins: int = FIGURE_BINS) -> dict[str, pl.DataFrame]:
    """The aggregated frames a launch's figures need, from warps already loaded."""
    return {
        "activity_by_sm": binned_activity(warps, bins=bins),
        "occupancy_over_time": occupancy_over_time(warps, sm_count=sm_count, bins=bins),
        "latency_histogram": latency_histogram(warps),
    }


def launch_views(store: Store, launch_id: int, bins: int = FIGURE_BINS) -> dict[str, pl.DataFrame] | None:
    """The figure frames of one stored launch; None when it has no warp records."""
    warps = store.warps(launch_id)
    if warps.height == 0:
        return None
    launch = store.launches(launch_ids=[launch_id])
    return figure_views(warps, launch["sm_count"][0] if launch.height else None, bins)


def analyze_with_views(
    store: Store, launches: pl.DataFrame, with_views: bool = True
) -> tuple[list[dict[str, Any]], dict[int, dict[str, pl.DataFrame]]]:
    """The analysis objects and, when asked, the figure frames of every traced launch, keyed by launch id; each
    launch's warps are read from the store once for both."""
    inputs = launch_inputs(store, launches)
    results = analyze_launches(inputs)
    views = {}
    if with_views:
        for data, result in zip(inputs, results, strict=True):
            if data.warps.height:
                views[result["launch_id"]] = figure_views(data.warps, data.launch.get("sm_count") or None)
    return results, views
