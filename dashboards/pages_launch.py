"""Launch page `/launch/<id>`: the verdict and analysis panels (from `analyze_launch`), the launch's
configuration, its warps on the SMs over time, and its raw metrics."""

from __future__ import annotations

import logging
import math
from collections import OrderedDict
from threading import Lock

import plotly.graph_objects as go
import polars as pl
from dash import Dash, Input, Output, State, ctx, dash_table, dcc, html, no_update

from tracekit.analysis import timeline, views
from tracekit.analysis.result import LaunchInput, analyze_launch
from tracekit.errors import TracekitError
from tracekit.store import Store

from . import figures, panels
from .common import TABLE_STYLE, not_found

MAX_WARP_BARS = 6000  # three points each: 18k points, under the ~20k the browser is sent at most
MAX_HEATMAP_CELLS = 20000
ALL_SMS = "all"

log = logging.getLogger(__name__)


def _text(value) -> str:
    return "" if value is None else str(value)


def _number(value, digits: int = 0) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return f"{value:,.{digits}f}"


def launch_fields(launch: dict) -> list[tuple[str, str]]:
    """(label, text) pairs of one `Store.launches()` row, in reading order."""
    dims = lambda prefix: ("" if launch[f"{prefix}_x"] is None  # noqa: E731
                           else f"{launch[f'{prefix}_x']} x {launch[f'{prefix}_y']} x {launch[f'{prefix}_z']}")
    device = " ".join(part for part in (_text(launch["device_name"]),
                                        f"(CC {launch['compute_capability']})" if launch["compute_capability"] else "",
                                        f"{launch['sm_count']} SMs" if launch["sm_count"] else "") if part)
    return [
        ("kernel", _text(launch["kernel_name"])),
        ("mangled name", _text(launch["mangled_name"])),
        ("grid", dims("grid")),
        ("block", dims("block")),
        ("registers per thread", _text(launch["registers_per_thread"])),
        ("static shared memory (bytes)", _number(launch["static_smem_bytes"])),
        ("dynamic shared memory (bytes)", _number(launch["dynamic_smem_bytes"])),
        ("duration (ns)", _number(launch["duration_ns"])),
        ("device", device),
        ("stream", _text(launch["stream_id"])),
        ("NVTX", _text(launch["nvtx_path"])),
        ("import", f"{launch['import_id']} ({launch['import_name']}, {launch['format']})"),
    ]


def launch_table(launch: dict, table_id: str = "launch-table") -> html.Table:
    rows = [html.Tr([html.Th(label), html.Td(text)]) for label, text in launch_fields(launch) if text]
    return html.Table(html.Tbody(rows), id=table_id, className="table fields")


def metrics_table(metrics: pl.DataFrame, table_id: str = "metrics-table") -> dash_table.DataTable:
    columns = [("section", "section", "text"), ("name", "metric", "text"), ("unit", "unit", "text"),
               ("value", "value", "numeric"), ("text_value", "as written", "text")]
    return dash_table.DataTable(
        id=table_id,
        columns=[{"id": key, "name": name, "type": kind} for key, name, kind in columns],
        data=metrics.select([key for key, _, _ in columns]).to_dicts(),
        filter_action="native", sort_action="native", page_size=30, **TABLE_STYLE,
    )


def metrics_section(metrics: pl.DataFrame) -> html.Div | dash_table.DataTable:
    if metrics.height == 0:
        return html.P("No metrics were recorded for this launch (warp traces and Nsight Systems carry none).",
                      className="hint", id="metrics-table")
    return metrics_table(metrics)


def analysis_sections(launch: dict, metrics: pl.DataFrame, warps: pl.DataFrame) -> list[html.Section]:
    """Verdict, occupancy, occupancy over time, warp latency and Little's law panels, in page order."""
    try:
        result = analyze_launch(LaunchInput(launch, metrics, warps))
        curve = histogram = None
        if warps.height:
            sm_count = max(int(launch["sm_count"] or 0), warps["sm_id"].n_unique())
            curve = views.occupancy_over_time(warps, sm_count)
            histogram = views.latency_histogram(warps)
    except TracekitError as exc:
        return panels.analysis_failed(f"The analysis cannot run on this launch: {exc}")
    except Exception as exc:  # noqa: BLE001 - one bad launch must not take the page down; it is logged in full
        log.exception("analysing launch %s failed", launch.get("id"))
        return panels.analysis_failed(f"The analysis failed ({type(exc).__name__}: {exc}); the server log has "
                                      "the details.")
    return [panels.verdict_panel(result), panels.occupancy_panel(result),
            panels.occupancy_time_panel(result, curve), panels.latency_panel(result, histogram),
            panels.littles_law_panel(result)]


class WarpCache:
    """The last few launches' warps, in relative time: zooming re-reads nothing from the store."""

    def __init__(self, store: Store, size: int = 4):
        self.store, self.size, self.lock = store, size, Lock()
        self.frames: OrderedDict[int, pl.DataFrame] = OrderedDict()

    def get(self, launch_id: int) -> pl.DataFrame:
        with self.lock:
            if launch_id in self.frames:
                self.frames.move_to_end(launch_id)
                return self.frames[launch_id]
        warps = self.store.warps(launch_id)
        frame = timeline.relative_times(warps) if warps.height else warps
        with self.lock:
            self.frames[launch_id] = frame
            while len(self.frames) > self.size:
                self.frames.popitem(last=False)
        return frame


def timeline_view(warps: pl.DataFrame, sm_id: int | None,
                  window_ns: tuple[int, int] | None) -> tuple[go.Figure, str]:
    """The figure for a window (relative ns; None: the launch): each warp when few enough are in view, else
    per-SM binned activity. `warps` is the whole launch in relative time (`WarpCache.get`)."""
    if warps.height == 0:
        return figures.message_figure("no per-warp timings for this launch"), (
            "This launch has no per-warp timings; import a warp trace recorded inside the kernel to see its "
            "warps on the SMs.")
    x_range_us = (figures.to_us(window_ns[0]), figures.to_us(window_ns[1])) if window_ns else None
    shown = warps if sm_id is None else warps.filter(pl.col("sm_id") == sm_id)
    try:
        in_view = timeline.warps_in_window(shown, window_ns, MAX_WARP_BARS + 1)
        if in_view.height <= MAX_WARP_BARS:
            return (figures.warp_bars_figure(in_view, sm_id, x_range_us),
                    f"{in_view.height:,} warps in view, each drawn from its start to its end.")
        sm_count = max(shown["sm_id"].n_unique(), 1)
        bins = max(10, min(400, MAX_HEATMAP_CELLS // sm_count))
        binned = timeline.binned_activity(shown, bins, window_ns)
    except TracekitError as exc:
        return figures.message_figure("the warp timings cannot be drawn"), str(exc)
    figure = (figures.sm_heatmap_figure(binned, x_range_us) if sm_id is None
              else figures.sm_activity_figure(binned, sm_id, x_range_us))
    bins_drawn = binned["bin_start_ns"].n_unique()
    return figure, (f"More than {MAX_WARP_BARS:,} warps in view: showing mean resident warps in {bins_drawn} "
                    f"time bins. Zoom in (drag across the time axis) to {MAX_WARP_BARS:,} warps or fewer to see "
                    "each warp; double-click to zoom out.")


def window_from_relayout(relayout: dict | None) -> tuple[int, int] | None | bool:
    """The x window (relative ns) a relayout event asks for; None for the full view; False when x is unchanged."""
    if not relayout:
        return False
    if relayout.get("xaxis.autorange"):
        return None
    if "xaxis.range[0]" in relayout and "xaxis.range[1]" in relayout:
        low, high = relayout["xaxis.range[0]"], relayout["xaxis.range[1]"]
    elif isinstance(relayout.get("xaxis.range"), list) and len(relayout["xaxis.range"]) == 2:
        low, high = relayout["xaxis.range"]
    else:
        return False
    low_ns, high_ns = math.floor(float(low) * 1000.0), math.ceil(float(high) * 1000.0)
    return (low_ns, high_ns) if high_ns > low_ns else False


def layout(store: Store, cache: WarpCache, launch_id: int) -> html.Div:
    launches = store.launches(launch_ids=[launch_id])
    if launches.height == 0:
        return not_found(f"no launch {launch_id} in the store")
    launch = launches.row(0, named=True)
    warps = cache.get(launch_id)
    sm_options = [{"label": "all SMs", "value": ALL_SMS}] + [
        {"label": f"SM {sm}", "value": str(sm)} for sm in sorted(warps["sm_id"].unique().to_list())]
    figure, note = timeline_view(warps, None, None)
    metrics = store.metrics([launch_id])
    verdict, *analysis = analysis_sections(launch, metrics, warps)
    return html.Div([
        dcc.Store(id="launch-id", data=launch_id),
        html.H2(_text(launch["kernel_name"]) or f"launch {launch_id}", className="kernel-name"),
        html.P(f"launch {launch_id}, #{launch['launch_index']} in import {launch['import_id']}", className="hint"),
        verdict,
        html.Section([html.H3("Launch"), launch_table(launch)]),
        html.Section([
            html.H3("Warps on the SMs"),
            html.Div([html.Label("Show ", htmlFor="timeline-sm"),
                      dcc.Dropdown(id="timeline-sm", options=sm_options, value=ALL_SMS, clearable=False,
                                   className="sm-dropdown")], className="actions"),
            html.P(note, id="timeline-note", className="hint"),
            dcc.Graph(id="warp-timeline", figure=figure, config={"displaylogo": False}),
        ], id="timeline-panel"),
        *analysis,
        html.Section([html.H3("Metrics as recorded"), metrics_section(metrics)]),
    ])


def register_callbacks(app: Dash, cache: WarpCache) -> None:
    @app.callback(
        Output("warp-timeline", "figure"),
        Output("timeline-note", "children"),
        Input("warp-timeline", "relayoutData"),
        Input("timeline-sm", "value"),
        State("launch-id", "data"),
        prevent_initial_call=True,
    )
    def redraw_timeline(relayout: dict | None, sm_choice: str, launch_id: int):
        warps = cache.get(int(launch_id))
        if warps.height == 0:
            return no_update, no_update
        sm_id = None if sm_choice in (None, ALL_SMS) else int(sm_choice)
        if ctx.triggered_id == "timeline-sm":
            window = None
        else:
            window = window_from_relayout(relayout)
            if window is False:
                return no_update, no_update
        return timeline_view(warps, sm_id, window)
