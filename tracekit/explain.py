"""From the store to analysis results: load each launch's metrics and warps, then analyze them together."""

from __future__ import annotations

from typing import Any

import polars as pl

from tracekit.analysis.result import LaunchInput, analyze_launches
from tracekit.analysis.timeline import binned_activity
from tracekit.analysis.views import latency_histogram, occupancy_over_time
from tracekit.store import Store


def launch_inputs(store: Store, launches: pl.DataFrame) -> list[LaunchInput]:
    """One `LaunchInput` per row of `launches` (as `Store.launches()` returns them)."""
    metrics = store.metrics(launches["id"].to_list()) if launches.height else pl.DataFrame()
    by_launch = metrics.partition_by("launch_id", as_dict=True) if metrics.height else {}
    return [
        LaunchInput(launch=row, metrics=by_launch.get((row["id"],), metrics.clear()),
                    warps=store.warps(row["id"]))
        for row in launches.iter_rows(named=True)
    ]


def analyze_stored(store: Store, launches: pl.DataFrame) -> list[dict[str, Any]]:
    """The analysis objects of the given stored launches, in their order."""
    return analyze_launches(launch_inputs(store, launches))


def launch_views(store: Store, launch_id: int, bins: int = 400) -> dict[str, pl.DataFrame] | None:
    """The aggregated frames a launch's figures need; None when the launch has no warp records."""
    launch = store.launches(launch_ids=[launch_id])
    warps = store.warps(launch_id)
    if warps.height == 0:
        return None
    sm_count = launch["sm_count"][0] if launch.height and launch["sm_count"][0] else None
    return {
        "activity_by_sm": binned_activity(warps, bins=bins),
        "occupancy_over_time": occupancy_over_time(warps, sm_count=sm_count, bins=bins),
        "latency_histogram": latency_histogram(warps),
    }
