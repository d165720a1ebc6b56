"""A stored launch's warps reduced for its figures (`tracekit.analysis.aggregates`), kept in the store so that a
launch page draws from them without reading its warps again."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import polars as pl

from tracekit.analysis.aggregates import latency_histogram, occupancy_over_time
from tracekit.analysis.engine import ENGINE_VERSION, launch_sm_count
from tracekit.analysis.region_timeline import region_figure_frames
from tracekit.analysis.timeline import binned_activity, relative_times
from tracekit.analysis.types import LaunchAnalysis
from tracekit.store import Store
from tracekit.store.regions import launch_regions

log = logging.getLogger(__name__)

MAX_WARP_BARS = 6000  # a figure draws each warp up to this many (three points each: under ~20k points sent)
MAX_HEATMAP_CELLS = 20000  # a binned warp timeline: SMs x time bins at most
# A launch's figure aggregates are kept in the store under the analysis code's digest (the functions that compute
# them are the engine's), shortened to fit the store's view kinds.
AGGREGATES_VERSION = ENGINE_VERSION.rsplit("+", 1)[-1][:6]
AGGREGATE_NAMES = ("sms", "occupancy", "latency", "activity")


def full_view_bins(sm_rows: int) -> int:
    """Time bins of the binned warp timeline: as many as keep SMs x bins under MAX_HEATMAP_CELLS (10 to 400)."""
    return max(10, min(400, MAX_HEATMAP_CELLS // max(sm_rows, 1)))


def relative_warps(store: Store, launch_id: int) -> pl.DataFrame:
    """One launch's warps with times relative to its first warp start (what the zoomable timeline draws)."""
    warps = store.warps(launch_id)
    return relative_times(warps) if warps.height else warps


def figure_aggregates(
    store: Store, launch: Mapping[str, Any], warps: Callable[[], pl.DataFrame] | None = None
) -> dict[str, pl.DataFrame] | None:
    """A traced launch's figure aggregates, all a launch page needs before any zoom: its SMs with the warp count
    ("sms"), the occupancy curve, the latency histogram and, above MAX_WARP_BARS warps, the whole launch binned on
    all SMs ("activity", else empty). Read from the store, else computed once from its warps (`warps`: a loader
    of `relative_warps`) and kept there for every process after; None for a launch without warps."""
    launch_id = int(launch["id"])
    stored = store.read_aggregates(launch_id, AGGREGATES_VERSION, AGGREGATE_NAMES)
    if stored is not None:
        return stored
    rows = warps() if warps is not None else relative_warps(store, launch_id)
    if not rows.height:
        return None
    sms = rows.select(pl.col("sm_id").unique().sort(), warp_count=pl.len())
    activity = binned_activity(rows, full_view_bins(sms.height)) if rows.height > MAX_WARP_BARS else None
    frames = {
        "sms": sms,
        "occupancy": occupancy_over_time(rows, launch_sm_count(launch.get("sm_count"), rows)),
        "latency": latency_histogram(rows),
        "activity": activity if activity is not None else pl.DataFrame(),
    }
    try:
        store.write_aggregates(launch_id, AGGREGATES_VERSION, frames)
    except Exception:  # noqa: BLE001 - a read-only or busy store: the aggregates stay with the caller only
        log.warning("could not keep launch %s's figure aggregates in the store", launch_id, exc_info=True)
    return frames


def warp_aggregates(warps: pl.DataFrame, sm_count: int | None) -> dict[str, pl.DataFrame]:
    """The figure aggregates of the report's launch section, from warps already loaded: the launch page's frames
    (`figure_aggregates`, the same bins), so both draw one figure (`present.launch.launch_figures`)."""
    return {
        "activity_by_sm": binned_activity(warps, full_view_bins(warps["sm_id"].n_unique())),
        "occupancy_over_time": occupancy_over_time(warps, sm_count),
        "latency_histogram": latency_histogram(warps),
    }


def launch_aggregates(store: Store, launch_id: int) -> dict[str, pl.DataFrame] | None:
    """The figure aggregates of one stored launch (`warp_aggregates`); None when it has no warp records."""
    warps = store.warps(launch_id)
    if warps.height == 0:
        return None
    launch = store.launches(launch_ids=[launch_id])
    sm_count = launch_sm_count(launch["sm_count"][0] if launch.height else None, warps)
    return warp_aggregates(warps, sm_count)


def report_aggregates(store: Store, results: Iterable[LaunchAnalysis]) -> dict[int, dict[str, object]]:
    """The figure aggregates of every traced launch among `results`, by launch id (with the region figures' frames,
    `region_timeline.region_figure_frames`, for launches with named regions)."""
    found: dict[int, dict[str, object]] = {}
    for result in results:
        if result.launch_id is None:
            continue
        frames: dict[str, object] = {}
        if result.warps is not None:
            frames.update(launch_aggregates(store, result.launch_id) or {})
        if result.regions is not None:  # regions in SM cycles alone give no warp records, but still their figures
            frames.update(region_figure_frames(launch_regions(store, result.launch_id), result.regions.sm_count))
        if frames:
            found[result.launch_id] = frames
    return found
