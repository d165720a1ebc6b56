"""Launch page `/launch/<id>`: the verdict first, then its warps on the SMs over time, the analysis panels
(occupancy and its what-if calculator, occupancy over time, warp latency, Little's law, the kernel's occupancy
sweep, stalls), the launch's table as every view shows it (`present.launch.launch_table`) and its raw metrics.

The analysis comes from `AnalysisCache` (once per launch per process); callbacks only format or look up.
"""

from __future__ import annotations

import json
import math
from typing import Any, Literal

import polars as pl
from dash import Dash, Input, Output, State, ctx, dcc, html, no_update

from tracekit import figures
from tracekit import format as display
from tracekit.api import (
    MAX_WARP_BARS,
    Knobs,
    LaunchAnalysis,
    Prediction,
    TraceAnalysis,
    binned_activity,
    full_view_bins,
    occupancy_change,
    warps_in_window,
)
from tracekit.errors import TracekitError
from tracekit.present.launch import TraceFrames, latency_chart, launch_figures, occupancy_chart, timeline_chart
from tracekit.present.rules.notes import counters_evidence, fitted_note
from tracekit.present.rules.notes import sweep_note as family_sweep_note
from tracekit.present.source_lines import NO_SOURCE, SourcePanel, source_panel

from . import panels, region_views
from .analysis_cache import AnalysisCache, LaunchPage
from .common import TABLE_STYLE, DataTable, DataTableClass, not_found
from .region_views import RegionView

ALL_SMS = "all"
Spec = dict[str, Any]  # a figure as a plotly dict (tracekit.figures, tracekit.present)


def _text(value) -> str:
    return "" if value is None else str(value)


def metrics_table(metrics: pl.DataFrame, table_id: str = "metrics-table") -> DataTableClass:
    columns = [
        ("section", "section", "text"),
        ("name", "metric", "text"),
        ("unit", "unit", "text"),
        ("value", "value", "numeric"),
        ("text_value", "as written", "text"),
    ]
    return DataTable(
        id=table_id,
        columns=[{"id": key, "name": name, "type": kind} for key, name, kind in columns],
        data=metrics.select([key for key, _, _ in columns]).to_dicts(),
        filter_action="native",
        sort_action="native",
        page_size=30,
        **TABLE_STYLE,
    )


def metrics_section(metrics: pl.DataFrame) -> html.P | DataTableClass:
    if metrics.height == 0:
        return html.P(
            "No metrics were recorded for this launch (warp traces and Nsight Systems carry none).",
            className="hint",
            id="metrics-table",
        )
    return metrics_table(metrics)


def what_if_prefill(result: LaunchAnalysis) -> dict[str, int | None]:
    """The calculator's inputs as the launch ran: threads per block, registers per thread, dynamic shared memory
    per block (as the kernel is launched; the static part comes with the code) and the grid's blocks."""
    kernel = result.kernel
    block, grid = kernel.block, kernel.grid
    threads = math.prod(int(v) for v in block if v is not None) if all(v is not None for v in block) else None
    blocks = math.prod(int(v) for v in grid if v is not None) if grid and all(v is not None for v in grid) else None
    return {
        "threads_per_block": threads,
        "registers_per_thread": kernel.registers_per_thread,
        "shared_mem_per_block_bytes": dynamic_shared_mem(result),
        "grid_blocks": blocks,
    }


def dynamic_shared_mem(result: LaunchAnalysis) -> int | None:
    """The launch's dynamic shared memory per block: recorded, else the total less the static part (as the
    predictor reads it)."""
    kernel = result.kernel
    if kernel.dynamic_shared_mem_per_block_bytes is not None:
        return int(kernel.dynamic_shared_mem_per_block_bytes)
    if kernel.shared_mem_per_block_bytes is None:
        return None
    return int(kernel.shared_mem_per_block_bytes) - int(kernel.static_shared_mem_per_block_bytes or 0)


def sweep_note(result: LaunchAnalysis) -> str:
    return fitted_note(result.sweep) if result.sweep else family_sweep_note(result) or ""


def what_if_knobs(
    result: LaunchAnalysis, threads: int, registers: int, smem: int, ilp: float | None, grid: int | None
) -> Knobs:
    """The knobs of `api.predict_stored` the user changed: a value equal to the launch's own is no change."""
    prefill = what_if_prefill(result)

    def changed(value: int | None, now: int | None) -> int | None:
        return value if value != now else None

    return Knobs(
        block=changed(threads, prefill["threads_per_block"]),
        regs=changed(registers, prefill["registers_per_thread"]),
        smem=changed(smem, prefill["shared_mem_per_block_bytes"]),
        grid=changed(grid, prefill["grid_blocks"]),
        ilp=ilp,
    )


def what_if_view(
    traces: TraceAnalysis,
    analysis: LaunchPage,
    threads_per_block: int | None,
    registers_per_thread: int | None,
    shared_mem_per_block_bytes: int | None,
    ilp: float | None = None,
    grid_blocks: int | None = None,
) -> list:
    """The calculator's answer for typed values: the occupancy calculator's, and the prediction of
    `api.predict_stored` (the function behind `tracekit predict`) for the knobs that changed. A user's mistake or
    a configuration the device cannot run is one line, never a traceback. `shared_mem_per_block_bytes` is the
    dynamic shared memory, as the kernel would be launched."""
    missing = [
        name
        for name, value in (
            ("threads per block", threads_per_block),
            ("registers per thread", registers_per_thread),
            ("dynamic shared memory per block", shared_mem_per_block_bytes),
        )
        if value is None
    ]
    if missing:
        return panels.what_if_body(
            None, None, f"Enter {', '.join(missing)} (whole numbers; the launch does not record every one of them)."
        )
    assert threads_per_block is not None and registers_per_thread is not None  # none missing
    assert shared_mem_per_block_bytes is not None
    whole = [threads_per_block, registers_per_thread, shared_mem_per_block_bytes]
    if any(float(v) != int(v) for v in whole + ([grid_blocks] if grid_blocks is not None else [])):
        return panels.what_if_body(None, None, "Block size, registers, shared memory and grid are whole numbers.")
    if analysis.result is None:
        return panels.what_if_body(None, None, analysis.error or "The analysis did not run.")
    result = analysis.result
    threads, registers, smem = (int(v) for v in whole)
    grid = int(grid_blocks) if grid_blocks is not None else None
    prediction: Prediction | str
    try:
        prediction = traces.predict(result, **what_if_knobs(result, threads, registers, smem, ilp, grid))
    except TracekitError as exc:
        prediction = str(exc)
    static = int(result.kernel.static_shared_mem_per_block_bytes or 0)
    try:
        change = occupancy_change(result, threads, registers, static + smem)
    except TracekitError as exc:
        # The configuration cannot run: one line, the predictor's where it names the limit.
        refused = prediction if isinstance(prediction, str) else f"Cannot compute the occupancy: {exc}"
        return panels.what_if_body(None, None, refused)
    return panels.what_if_body(change, prediction, None, result)


def what_to_try(cache: AnalysisCache, result: LaunchAnalysis) -> list | str:
    """The predictor's best few changes for the launch (`api.what_to_try_for`, the entry `analyze` and the JSON
    use), once per launch and context; why there are none when it cannot say (no counters nor sweep, a refused
    input): What to try first says so."""

    def predict() -> list | str:
        return cache.traces.what_to_try(result, top=3)

    return cache.figures.get(("what-to-try", result.launch_id, result.engine_version, result.pairing), predict)


def source_lines(cache: AnalysisCache, result: LaunchAnalysis) -> SourcePanel | None:
    """The launch's source panel (`present.source_lines.source_panel`), once per launch and context; None when the
    launch has no source samples."""

    def build() -> SourcePanel | None:
        view = cache.traces.source_lines(int(result.launch_id or 0), result)
        return None if view is None else source_panel(view.result, view.files, view.duration_ns)

    return cache.figures.get(("source-lines", result.launch_id, result.engine_version, result.pairing), build)


def analysis_sections(
    traces: TraceAnalysis,
    analysis: LaunchPage,
    regions: RegionView | None = None,
    tries: list | str | None = None,
    source: SourcePanel | None = None,
) -> list[html.Section]:
    """The page's sections from the result, in page order: the answer (headline, speed of light, roofline, the
    source lines, What to try first), the findings by cost, stalls, occupancy and its calculator, the trace's
    figures, the sweep, the regions and the launch's own table. A section whose data the launch lacks is left out;
    the answer says what would add it. `regions`: the region panel's figures; `tries`: `what_to_try`; `source`:
    `source_lines`."""
    result = analysis.result
    if result is None:
        return panels.analysis_failed(analysis.error or "The analysis did not run.")
    prefill = what_if_prefill(result)
    initial = what_if_view(
        traces,
        analysis,
        prefill["threads_per_block"],
        prefill["registers_per_thread"],
        prefill["shared_mem_per_block_bytes"],
    )
    frames = (
        TraceFrames(analysis.occupancy_curve, analysis.latency_histogram)
        if analysis.occupancy_curve is not None and analysis.latency_histogram is not None
        else None
    )
    charts = {chart.key: chart for chart in launch_figures(result, frames)}  # as the report and a notebook draw
    sections = [
        panels.answer_panel(result, tries, panels.not_shown(result) + ([] if source else [NO_SOURCE]), source),
        panels.findings_panel(result),
    ]
    if "stalls" in charts:
        sections.append(panels.stall_panel(result, charts["stalls"]))
    sections += [panels.occupancy_panel(result), panels.what_if_panel(prefill, initial)]
    if "occupancy_time" in charts:
        sections.append(panels.occupancy_time_panel(result, charts["occupancy_time"]))
    if "latency" in charts:
        sections.append(panels.latency_panel(result, charts["latency"]))
    if result.littles_law:
        sections.append(panels.littles_law_panel(result))
    if "sweep" in charts:
        sections.append(panels.sweep_panel(result, sweep_note(result), charts["sweep"]))
    if result.regions is not None:
        sections.append(panels.region_panel(result, regions))
    return sections + [panels.launch_panel(result)]


def timeline_view(warps: pl.DataFrame, sm_id: int | None, window_ns: tuple[int, int] | None) -> tuple[Spec, str]:
    """The figure for a window (relative ns; None: the launch), a plotly dict: each warp when few enough are in
    view, else per-SM binned activity. `warps` is the whole launch in relative time (`AnalysisCache.warps.get`):
    the zoom's detail, which no aggregate holds."""
    if warps.height == 0:
        return figures.message_spec("no per-warp timings for this launch"), (
            "This launch has no per-warp timings; import a warp trace recorded inside the kernel to see its "
            "warps on the SMs."
        )
    x_range_us = (figures.to_us(window_ns[0]), figures.to_us(window_ns[1])) if window_ns else None
    shown = warps if sm_id is None else warps.filter(pl.col("sm_id") == sm_id)
    try:
        if _count_in_window(shown, window_ns) <= MAX_WARP_BARS:  # counting first spares sorting a big launch
            in_view = warps_in_window(shown, window_ns, MAX_WARP_BARS + 1)
            return (
                figures.warp_bars_spec(in_view, sm_id, x_range_us),
                f"{in_view.height:,} warps in view, each drawn from its start to its end.",
            )
        binned = binned_activity(shown, full_view_bins(shown["sm_id"].n_unique()), window_ns)
    except TracekitError as exc:
        return figures.message_spec("the warp timings cannot be drawn"), str(exc)
    return binned_view(binned, sm_id, x_range_us)


def binned_view(binned: pl.DataFrame, sm_id: int | None, x_range_us: tuple[float, float] | None) -> tuple[Spec, str]:
    """The binned timeline's figure and note (`api.binned_activity` frames, computed here for a zoom; the whole
    launch's is `present.launch.timeline_chart` of its stored aggregate)."""
    if sm_id is None and x_range_us is None:
        figure = timeline_chart(binned).spec
    elif sm_id is None:
        figure = figures.sm_heatmap_spec(binned, x_range_us)
    else:
        figure = figures.sm_activity_spec(binned, sm_id, x_range_us)
    return figure, binned_note(binned)


def binned_note(binned: pl.DataFrame) -> str:
    """What the binned timeline shows, and how to see each warp."""
    bins_drawn = binned["bin_start_ns"].n_unique()
    return (
        f"More than {MAX_WARP_BARS:,} warps in view: showing mean resident warps in {bins_drawn} "
        f"time bins. Drag a box over the figure to zoom in to {MAX_WARP_BARS:,} warps or fewer and see "
        "each warp, or pick one SM in the Show menu; double-click the figure to zoom back out."
    )


def _count_in_window(warps: pl.DataFrame, window_ns: tuple[int, int] | None) -> int:
    """How many warps `api.warps_in_window` would find (resident in the window, or starting in it)."""
    if window_ns is None:
        return warps.height
    low, high = window_ns
    start, end = pl.col("start_rel_ns"), pl.col("end_rel_ns")
    return warps.filter((start < high) & ((end > low) | (start >= low))).height


def full_timeline(cache: AnalysisCache, launch: dict) -> tuple[Spec, str]:
    """The whole launch on all SMs: the page's first figure and the one a double-click returns to, built once,
    from the launch's stored aggregate when it has more warps than are drawn one by one (its warps are read only
    when the user zooms in), else from its warps."""

    def build() -> tuple[Spec, str]:
        aggregates = cache.aggregates(launch)
        if aggregates is not None and aggregates.activity is not None:
            return binned_view(aggregates.activity, None, None)
        return timeline_view(cache.warps.get(int(launch["id"])), None, None)

    return cache.figures.get(int(launch["id"]), build)


def window_from_relayout(relayout: dict | None) -> tuple[int, int] | None | Literal[False]:
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


def pairing_section(launch_id: int, analysis: LaunchPage) -> html.Section:
    """Where the counters came from and why, and the override (`--pair` on the command line): a form that
    reloads the page with `?pair=<profiled launch id>`."""
    result = analysis.result
    evidence = counters_evidence(result) if result else (panels.ANALYSIS_RUNNING if analysis.pending_warps else "")
    return html.Section(
        [
            html.H3("Counters"),
            html.P(evidence, id="pairing-evidence", className="hint"),
            html.Form(
                [
                    html.Label("Take the counters from launch ", htmlFor="pair-input"),
                    dcc.Input(id="pair-input", name="pair", type="number", min=1, step=1, debounce=True),
                    html.Button("Apply", type="submit"),
                ],
                action=f"/launch/{launch_id}",
                method="get",
                className="actions",
            ),
        ],
        id="pairing-panel",
    )


def page_sections(cache: AnalysisCache, analysis: LaunchPage) -> tuple[html.Section | html.Div, list]:
    """The verdict and the analysis panels; while a big launch's analysis runs, its place-holder and the
    figures its warps give without it."""
    if analysis.pending_warps:
        curve, histogram = analysis.occupancy_curve, analysis.latency_histogram
        return panels.analysis_running_panel(analysis.pending_warps), [
            panels.occupancy_time_panel(None, occupancy_chart(curve) if curve is not None else None),
            panels.latency_panel(None, latency_chart(histogram) if histogram is not None else None),
            panels.launch_panel(None),
        ]
    launch_id = int(analysis.launch["id"])
    regions = region_views.initial_view(cache, launch_id, analysis.result) if analysis.result else None
    tries = what_to_try(cache, analysis.result) if analysis.result else None
    source = source_lines(cache, analysis.result) if analysis.result else None
    sections = analysis_sections(cache.traces, analysis, regions, tries, source)
    if analysis.result is None:
        return sections[0], sections[1:]
    first = 3 if analysis.result.stalls.by_reason else 2  # the answer, the findings and the stalls lead
    return html.Div(sections[:first]), sections[first:]


def layout(traces: TraceAnalysis, cache: AnalysisCache, launch_id: int, pair: int | None = None) -> html.Div:
    analysis = cache.get(launch_id, pair, defer=True)
    if analysis is None:
        return not_found(f"no launch {launch_id} in the store")
    launch = analysis.launch
    aggregates = cache.aggregates(launch)
    sm_options = [{"label": "all SMs", "value": ALL_SMS}] + [
        {"label": f"SM {sm}", "value": str(sm)} for sm in (aggregates.sm_ids if aggregates else [])
    ]
    verdict, analysis_panels = page_sections(cache, analysis)
    timeline_part = []
    if aggregates is not None:  # a traced launch: its warps on the SMs (no empty frame for the others)
        figure, note = full_timeline(cache, launch)
        timeline_part = [timeline_section(note, figure, sm_options)]
    return html.Div(
        [
            dcc.Store(id="launch-id", data=launch_id),
            # set while the analysis is to run: the page asks for it once drawn (FIGURES_FIRST, finish_analysis)
            dcc.Store(id="analysis-pending", data={"pair": pair} if analysis.pending_warps else None),
            dcc.Store(id="analysis-request"),
            dcc.Store(id="timeline-window"),
            html.H2(
                display.kernel_name(_text(launch["kernel_name"]) or _text(launch["mangled_name"]))
                if launch["kernel_name"] or launch["mangled_name"]
                else f"launch {launch_id}",
                className="kernel-name",
                title=_text(launch["kernel_name"]),
            ),
            html.P(f"launch {launch_id}, #{launch['launch_index']} in import {launch['import_id']}", className="hint"),
            html.Div(verdict, id="verdict-slot"),
            *timeline_part,
            html.Div(analysis_panels, id="analysis-slot"),
            pairing_section(launch_id, analysis),
            html.Section([html.H3("Metrics as recorded"), metrics_section(analysis.metrics)]),
        ]
    )


def timeline_section(note: str, figure: Spec, sm_options: list[dict]) -> html.Section:
    """The warps on the SMs over time (a traced launch only)."""
    return html.Section(
        [
            html.H3("Warps on the SMs"),
            html.Div(
                [
                    html.Label("Show ", htmlFor="timeline-sm"),
                    dcc.Dropdown(
                        id="timeline-sm",
                        options=sm_options,
                        value=ALL_SMS,
                        clearable=False,
                        className="sm-dropdown",
                    ),
                ],
                className="actions",
            ),
            html.P(note, id="timeline-note", className="hint"),
            dcc.Graph(id="warp-timeline", figure=figure, config={"displaylogo": False}),
        ],
        id="timeline-panel",
    )


# Only relayout events that move the time axis reach the server. Plotly also reports resizes ({"autosize": true})
# as relayouts; sent to the server, such an event can overtake a zoom still in flight, and Dash keeps only the
# latest answer for an output, so the zoom's figure would be dropped.
TIME_AXIS_EVENTS = """
function (relayout) {
    if (!relayout) { return window.dash_clientside.no_update; }
    const moved = relayout["xaxis.autorange"] || ("xaxis.range[0]" in relayout && "xaxis.range[1]" in relayout)
        || Array.isArray(relayout["xaxis.range"]);
    return moved ? relayout : window.dash_clientside.no_update;
}
"""


# A big launch's analysis is asked for once its figures are drawn (or after 3 s, whatever happens): computed while
# the browser draws, it would take the CPU the drawing needs.
FIGURES_FIRST = """
function (pending) {
    if (!pending) { return window.dash_clientside.no_update; }
    const figures = FIGURE_IDS;
    const asked = Date.now();
    return new Promise(function (resolve) {
        (function check() {
            const drawn = figures.every(function (id) { return document.querySelector("#" + id + " .main-svg"); });
            if (drawn || Date.now() - asked > 3000) { resolve(pending); } else { setTimeout(check, 50); }
        })();
    });
}
""".replace("FIGURE_IDS", json.dumps(["warp-timeline", "occupancy-time-figure", "latency-figure"]))


def register_callbacks(app: Dash, cache: AnalysisCache) -> None:
    app.clientside_callback(FIGURES_FIRST, Output("analysis-request", "data"), Input("analysis-pending", "data"))

    app.clientside_callback(
        TIME_AXIS_EVENTS,
        Output("timeline-window", "data"),
        Input("warp-timeline", "relayoutData"),
        prevent_initial_call=True,
    )

    @app.callback(
        Output("warp-timeline", "figure"),
        Output("timeline-note", "children"),
        Input("timeline-window", "data"),
        Input("timeline-sm", "value"),
        State("launch-id", "data"),
        prevent_initial_call=True,
    )
    def redraw_timeline(relayout: dict | None, sm_choice: str, launch_id: int):
        found = cache.traces.launches(launch_ids=[int(launch_id)])
        if found.height == 0 or cache.aggregates(found.row(0, named=True)) is None:
            return no_update, no_update
        sm_id = None if sm_choice in (None, ALL_SMS) else int(sm_choice)
        # A zoom wins when both inputs fire together (the SM menu can report a change as the page settles).
        if "timeline-window.data" in ctx.triggered_prop_ids:
            window = window_from_relayout(relayout)
            if window is False:
                return no_update, no_update
        else:
            window = None
        if sm_id is None and window is None:
            return full_timeline(cache, found.row(0, named=True))
        return timeline_view(cache.warps.get(int(launch_id)), sm_id, window)  # detail: the warps, read once

    @app.callback(
        Output("verdict-slot", "children"),
        Output("analysis-slot", "children"),
        Output("pairing-evidence", "children"),
        Input("analysis-request", "data"),
        State("launch-id", "data"),
        prevent_initial_call=True,
    )
    def finish_analysis(pending: dict | None, launch_id: int):
        """A big launch's analysis, asked for by its page once drawn (`FIGURES_FIRST`): the verdict and panels
        replace the place-holders, and its figures are drawn again with the tail marked."""
        if not pending:
            return no_update, no_update, no_update
        analysis = cache.get(int(launch_id), pending.get("pair"))
        if analysis is None:
            return no_update, no_update, no_update
        verdict, analysis_panels = page_sections(cache, analysis)
        return verdict, analysis_panels, counters_evidence(analysis.result) if analysis.result else ""

    @app.callback(
        Output("whatif-result", "children"),
        Input("whatif-block", "value"),
        Input("whatif-registers", "value"),
        Input("whatif-smem", "value"),
        Input("whatif-ilp", "value"),
        Input("whatif-grid", "value"),
        State("launch-id", "data"),
        prevent_initial_call=True,
    )
    def recompute_what_if(
        threads: int | None,
        registers: int | None,
        smem: int | None,
        ilp: float | None,
        grid: int | None,
        launch_id: int,
    ):
        analysis = cache.get(int(launch_id))
        if analysis is None or analysis.result is None:
            return no_update
        return what_if_view(cache.traces, analysis, threads, registers, smem, ilp, grid)
