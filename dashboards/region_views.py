"""The launch page's region figures: the warp timeline coloured by region (binned when zoomed out, every bar when
zoomed in) and each region's occupancy over time, as `tracekit.present.regions` builds them (the HTML report's too);
a zoom redraws the timeline through the same function.

Frames come from `tracekit.analysis.region_timeline`; a launch's region layout (its instances with rows and
parents) is cached per process by launch id (`AnalysisCache.regions`), as its warps are, since imports never change.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import polars as pl
from dash import Dash, Input, Output, State, no_update

from tracekit import figures
from tracekit.api import (
    LaunchAnalysis,
    RegionLayout,
    RegionTimeline,
    region_window,
)
from tracekit.present.regions import region_charts, region_timeline_chart
from tracekit.present.sections import Figure

from .analysis_cache import AnalysisCache


@dataclass(frozen=True)
class RegionView:
    """What the region panel draws (`present.regions.region_charts`): the timeline's first view with its note, its
    row map, the occupancy chart."""

    timeline: Figure
    row_map: list[list[int]] | None  # binned: each drawn row's first and last warp row (for zooming); None: bars
    occupancy: Figure


def layout_of(cache: AnalysisCache, launch_id: int) -> RegionLayout | None:
    """The launch's region layout, cached; None when it has no regions."""

    def load() -> RegionLayout | None:
        return cache.traces.region_layout(launch_id)

    return cache.regions.get(launch_id, load)


def row_map(timeline: RegionTimeline) -> list[list[int]] | None:
    """Binned: each drawn row's first and last warp row, so that a zoom on drawn rows finds its warps."""
    if timeline.groups is None:
        return None
    spans = timeline.groups.group_by("y").agg(pl.col("row").min().alias("first"), pl.col("row").max().alias("last"))
    return [[int(first), int(last)] for _, first, last in spans.sort("y").iter_rows()]


def initial_view(cache: AnalysisCache, launch_id: int, result: LaunchAnalysis) -> RegionView | None:
    """The panel's figures for the whole launch, built once per launch."""
    if result.regions is None:
        return None

    def build() -> RegionView | None:
        layout = layout_of(cache, launch_id)
        if layout is None:
            return None
        timeline = region_window(layout)
        curves = cache.traces.region_occupancy(launch_id, result.regions.sm_count if result.regions else None)
        drawn, occupancy = region_charts(timeline, curves, layout.names, layout.time_unit, zoomable=True)
        return RegionView(drawn, row_map(timeline), occupancy)

    return cache.figures.get(("regions", launch_id), build)


def view_from_relayout(
    relayout: dict[str, Any] | None, scale: float, rows: list[list[int]] | None
) -> tuple[tuple[int, int] | None, tuple[int, int] | None] | None:
    """The time window (the launch's unit) and warp rows a zoom asks for; (None, None) for the whole launch;
    None when neither axis changed."""
    if not relayout:
        return None
    if relayout.get("xaxis.autorange"):
        return None, None
    window = _axis_range(relayout, "xaxis")
    y = _axis_range(relayout, "yaxis")
    if window is None and y is None:
        return None
    time_window = None
    if window is not None:
        low, high = math.floor(min(window) * scale), math.ceil(max(window) * scale)
        time_window = (low, high) if high > low else None
    row_range = None
    if y is not None:
        first, last = math.floor(min(y) + 0.5), math.ceil(max(y) - 0.5)  # rows (each y +- 0.5) the range touches
        if rows is not None:  # binned rows: back to the warp rows they gather
            first, last = max(first, 0), min(last, len(rows) - 1)
            chosen = rows[first : last + 1]
            row_range = (min(r[0] for r in chosen), max(r[1] for r in chosen)) if chosen else None
        else:
            row_range = (max(first, 0), last) if last >= max(first, 0) else None
    return time_window, row_range


def _axis_range(relayout: dict[str, Any], axis: str) -> tuple[float, float] | None:
    if f"{axis}.range[0]" in relayout and f"{axis}.range[1]" in relayout:
        return float(relayout[f"{axis}.range[0]"]), float(relayout[f"{axis}.range[1]"])
    value = relayout.get(f"{axis}.range")
    if isinstance(value, list) and len(value) == 2:
        return float(value[0]), float(value[1])
    return None


# Only relayouts that move an axis reach the server (as for the warp timeline, pages_launch.TIME_AXIS_EVENTS):
# plotly reports a resize after a redraw ({"autosize": true}) as a relayout too; sent on, it can overtake a zoom
# in flight, and Dash keeps only the latest answer for an output, so the zoom's figure would be dropped.
AXIS_EVENTS = """
function (relayout) {
    if (!relayout) { return window.dash_clientside.no_update; }
    const moved = ["xaxis", "yaxis"].some(function (axis) {
        return relayout[axis + ".autorange"] || (axis + ".range[0]" in relayout && axis + ".range[1]" in relayout)
            || Array.isArray(relayout[axis + ".range"]);
    });
    return moved ? relayout : window.dash_clientside.no_update;
}
"""


def register_callbacks(app: Dash, cache: AnalysisCache) -> None:
    app.clientside_callback(
        AXIS_EVENTS,
        Output("region-timeline-view", "data"),
        Input("region-timeline", "relayoutData"),
        prevent_initial_call=True,
    )

    @app.callback(
        Output("region-timeline", "figure"),
        Output("region-timeline-note", "children"),
        Output("region-timeline-rows", "data"),
        Input("region-timeline-view", "data"),
        State("launch-id", "data"),
        State("region-timeline-rows", "data"),
        prevent_initial_call=True,
    )
    def redraw_region_timeline(relayout: dict | None, launch_id: int, rows: list[list[int]] | None):
        layout = layout_of(cache, int(launch_id))
        if layout is None:
            return no_update, no_update, no_update
        scale = figures.region_axis(layout.time_unit)[1]
        asked = view_from_relayout(relayout, scale, rows)
        if asked is None:
            return no_update, no_update, no_update
        window, row_range = asked
        if window is None and row_range is None:
            analysis = cache.get(int(launch_id))
            view = initial_view(cache, int(launch_id), analysis.result) if analysis and analysis.result else None
            if view is None:
                return no_update, no_update, no_update
            return view.timeline.spec, view.timeline.note, view.row_map
        try:
            timeline = region_window(layout, window, row_range)
        except ValueError:
            return no_update, no_update, no_update
        chart = region_timeline_chart(timeline, zoomable=True)  # the first view's function, for the zoomed window
        return chart.spec, chart.note, row_map(timeline)
