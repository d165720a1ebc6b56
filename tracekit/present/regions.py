"""A launch's named regions drawn, as every view shows them: the warp timeline coloured by region (every bar, or
binned when more instances are in view than `MAX_SLICES`) and each region's occupancy over time, as plotly dicts
(`tracekit.figures.region_timeline_spec`, `region_occupancy_spec`) under their titles and notes. The HTML report
draws them for the whole launch; the launch page too, and again for each zoom of its timeline (`zoomable`)."""

from __future__ import annotations

import polars as pl

from tracekit.analysis.region_timeline import MAX_SLICES, RegionTimeline
from tracekit.present.sections import Figure

TIMELINE_TITLE = "Warp timeline by region"
OCCUPANCY_TITLE = "Warps in each region per SM over time"


def timeline_note(timeline: RegionTimeline, zoomable: bool = False) -> str:
    """How to read the timeline: its bars, or its binned rows and cells; with `zoomable` (a view that redraws it
    for a zoom) how to see every bar or the whole launch again."""
    if timeline.mode == "slices":
        note = (
            f"{timeline.in_view:,} region instances in view, each a bar (nested ones thinner, on top); each warp a row."
        )
        return note + (" Double-click to zoom out." if zoomable else "")
    note = (
        f"{timeline.in_view:,} region instances in view: binned. Each row gathers warps at one position in their "
        "blocks (a role, such as producer or consumer) on neighbouring SMs; each cell takes the colour of the "
        "region that held most of their time there (the innermost one)."
    )
    if zoomable:
        return note + f" Zoom in (drag a box) to {MAX_SLICES:,} instances or fewer to see every bar."
    return note + " The dashboard's launch page draws every bar when zoomed in."


def region_timeline_chart(timeline: RegionTimeline, zoomable: bool = False) -> Figure:
    """The warp timeline coloured by region (`region_timeline.region_timeline`: the whole launch, or a zoom)."""
    from tracekit import figures  # plotly only where a chart is drawn

    return Figure(
        "region_timeline", TIMELINE_TITLE, figures.region_timeline_spec(timeline), timeline_note(timeline, zoomable)
    )


def region_occupancy_chart(curves: pl.DataFrame, names: tuple[str, ...], time_unit: str) -> Figure:
    """Mean warps inside each region per SM over time (`region_timeline.region_occupancy_curves`)."""
    from tracekit import figures

    return Figure(
        "region_occupancy",
        OCCUPANCY_TITLE,
        figures.region_occupancy_spec(curves, names, time_unit),
        "Mean warps inside each region per SM; an enclosing region counts the warps in its nested ones.",
    )


def region_charts(
    timeline: RegionTimeline, curves: pl.DataFrame, names: tuple[str, ...], time_unit: str, zoomable: bool = False
) -> list[Figure]:
    """The region section's charts, in page order: the timeline, then each region's occupancy over time (frames
    from `region_timeline.region_figure_frames` or the API's `region_window` and `region_occupancy`)."""
    return [region_timeline_chart(timeline, zoomable), region_occupancy_chart(curves, names, time_unit)]
