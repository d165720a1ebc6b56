"""The launch page's analysis panels, rendered from the engine's `LaunchAnalysis` (`tracekit.api.analyze_stored`).

Renderers only: every number is the result's own (or a `WhatIf`'s or `Prediction`'s), formatted. Evidence and
explanations are the analysis's sentences, shown as text.
"""

from __future__ import annotations

import math
from typing import Any

from dash import dcc, html

from tracekit import format as display
from tracekit.api import LaunchAnalysis, Prediction, WhatIf
from tracekit.present.launch import (
    answer_figures,
    launch_table,
    occupancy_table,
    region_table,
    stalls_table,
    sweep_table,
    tail_table,
    warps_table,
)
from tracekit.present.prediction import (
    PredictionTables,
    ceilings_cited,
    prediction_table,
    prediction_tables,
    prediction_text,
)
from tracekit.present.rules.notes import sweep_note
from tracekit.present.sections import Figure, Table, littles_law_table
from tracekit.present.source_lines import SourcePanel
from tracekit.present.try_first import Tries, TryFirst, try_first
from tracekit.present.verdict import BLOCK_LIMITS, limit_label, verdict_text

ANALYSIS_RUNNING = "Analysing..."
NEEDS_TRACE = "Needs per-warp timings (a warp trace recorded inside the kernel)."
NEEDS_REGIONS = "Needs named regions recorded inside the kernel (Proton, WARP_REGION_BEGIN/END, a Chrome trace)."
NEEDS_STALLS = (
    "Needs Nsight Compute's warp stall metrics (the WarpStateStats section, smsp__average_warps_issue_stalled_*)."
)


def fmt(value: Any, digits: int = 2, suffix: str = "") -> str:
    """A number as `tracekit.format` writes it (separators, 4 significant digits, no scientific notation)."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "n/a"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float):
        return f"{display.number(value)}{suffix}"
    return f"{value}{suffix}"


dur = display.duration  # a time in ns: 256.8 µs


def _get(section: Any, name: str) -> Any:
    """A field of a result section that may be absent (a launch without a trace has no `warps`)."""
    return None if section is None else getattr(section, name)


def fields_table(rows: list[tuple[str, str]], table_id: str) -> html.Table:
    return html.Table(
        html.Tbody([html.Tr([html.Th(label), html.Td(text)]) for label, text in rows]),
        id=table_id,
        className="table fields",
    )


def table_view(table: Table, table_id: str) -> html.Table:
    """A table `tracekit.present` decided, laid out as the report lays it out: its columns, then its rows."""
    return html.Table(
        [
            html.Thead(html.Tr([html.Th(h) for h in table.columns])),
            html.Tbody([html.Tr([html.Td(cell) for cell in row]) for row in table.rows]),
        ],
        id=table_id,
        className="table",
    )


def table_with_note(table: Table, table_id: str) -> list:
    """`table_view` and the note under it, as the report writes them."""
    return [table_view(table, table_id), *([html.P(table.note, className="hint")] if table.note else [])]


def _section(slot_id: str, title: str, body: list) -> html.Section:
    return html.Section([html.H3(title), *body], id=slot_id, className="analysis-slot")


def analysis_running_panel(warp_count: int) -> html.Section:
    """The verdict's place while a big launch is analysed (the page asks for the analysis once drawn)."""
    return _section(
        "verdict-panel",
        "Verdict",
        [
            html.P(
                f"{ANALYSIS_RUNNING} This launch has {warp_count:,} warps: its figures are drawn first, and the "
                "verdict, Little's law, the tail, the stalls and the calculator appear here when it is done.",
                id="analysis-running",
                className="hint",
            )
        ],
    )


NEEDS_COUNTERS = (
    "Nsight Compute counters (ncu --set full, or a profiled run of the same kernel to pair with) would add the "
    "speed-of-light chart, the roofline and What to try first."
)
NO_FLOPS = (
    "No floating-point instruction was counted, so there is no roofline point (FLOP/s against FLOP per byte); "
    "the units' rates are in the speed-of-light chart."
)
GRAPH_CONFIG: Any = {"displaylogo": False}


def try_first_div(section: TryFirst) -> html.Div:
    """What to try first: the predicted changes, best first, each with its basis; or why there are none."""
    if not section.items:
        return html.Div([html.H4(section.heading), html.P(section.note, id="what-to-try-note")], id="what-to-try")
    items = [
        html.Li(
            [
                html.Span(item.line + (f"; {item.nsight}" if item.nsight else "")),
                html.Div(item.basis, className="hint basis"),
            ]
        )
        for item in section.items
    ]
    return html.Div([html.H4(section.heading), html.Ol(items, id="what-to-try-list")], id="what-to-try")


def predictions_div(predictions: PredictionTables) -> html.Details:
    """What to try first's changes, each as the table `tracekit predict` prints under its answer (folded), and the
    measured ceilings they cite."""
    tables = [
        part
        for i, table in enumerate(predictions.tables)
        for part in (html.H5(table.title), table_view(table, f"what-to-try-prediction-{i}"))
    ]
    ceilings = [html.P(predictions.ceilings, className="hint")] if predictions.ceilings else []
    return html.Details([html.Summary(predictions.heading), *tables, *ceilings], id="what-to-try-predictions")


PANEL_IDS = {"speed_of_light": "sol", "roofline": "roofline"}  # the answer's charts' element ids


def answer_panel(
    result: LaunchAnalysis, tries: Tries, not_shown: list[str] | None = None, source: SourcePanel | None = None
) -> html.Section:
    """The one-screen answer: the engine's headline (what costs the most time), mode and limiter, the
    speed-of-light chart, the roofline, the source lines (`source`, where the launch has source samples) and What
    to try first; what is missing, one line each (`not_shown`: the page's other sections left out for lack of
    data, the source lines among them)."""
    verdict = result.classification
    body: list = [
        html.P(verdict.headline or verdict_text(verdict), id="verdict-headline", className="headline"),
        html.P(verdict_text(verdict), id="verdict-mode", className="verdict"),
    ]
    missing: list[str] = []
    drawn = answer_figures(result)  # plotly dicts, drawn as the report and a notebook draw them
    charts = [
        html.Div(
            [
                html.H4(chart.title),
                dcc.Graph(id=f"{PANEL_IDS[chart.key]}-figure", figure=chart.spec, config=GRAPH_CONFIG),
            ],
            className="chart",
            id=f"{PANEL_IDS[chart.key]}-panel",
        )
        for chart in drawn
    ]
    keys = {chart.key for chart in drawn}
    if "speed_of_light" not in keys:
        missing.append(NEEDS_COUNTERS)
    elif "roofline" not in keys:
        missing.append(NO_FLOPS)
    if charts:
        body.append(html.Div(charts, className="answer-charts"))
    if source is not None:
        body.append(source_panel(source))
    body.append(try_first_div(try_first(result, tries)))  # always: the changes, or why there are none
    if tries and not isinstance(tries, str):  # each change as `tracekit predict` and the reports give it
        body.append(predictions_div(prediction_tables(tries, result)))
    missing += not_shown or []
    if missing:
        body.append(html.Ul([html.Li(line) for line in missing], id="not-recorded", className="hint"))
    return html.Section(body, id="verdict-panel", className="answer")


def _data(**values: str) -> dict[str, Any]:
    """`data-*` attributes for a Dash element (their names are no Python keywords)."""
    return {f"data-{name}": value for name, value in values.items()}


def source_panel(panel: SourcePanel) -> html.Div:
    """The launch's source lines as `present.source_lines.source_panel` decided them: its sentences, the code with
    a heat column (each line's share of the warp samples) and the limiter's lines marked, beside the stall reasons.
    The code is the profiled file's text, shown as text (never markup)."""
    rows = [
        html.Tr(
            [
                html.Td(code.share, className="heat", style={"backgroundColor": f"rgba(214, 69, 44, {code.heat:.3f})"}),
                html.Td(code.place if code.number is None else str(code.number), className="line-number"),
                html.Td("◆" if code.holds_limiter else "", className="limiter-mark"),
                html.Td(html.Code(code.text), className="code"),
                html.Td(code.kind, className="line-kind"),
            ],
            className="limiter" if code.holds_limiter else None,
            title=code.detail or None,
            **_data(line="" if code.number is None else str(code.number), rank=str(code.rank or "")),
        )
        for code in panel.code
    ]
    listing = html.Div(
        [
            html.Table(html.Tbody(rows), id="source-code", className="source-code"),
            html.P(panel.code_note, className="hint"),
        ],
        className="source-listing",
    )
    stalls = html.Div(table_with_note(panel.stalls, "source-stalls"), className="source-stalls")
    return html.Div(
        [
            html.H4(panel.title),
            html.Div([html.P(sentence) for sentence in panel.sentences], id="source-sentences"),
            html.Div([listing, stalls], className="source-columns"),
        ],
        id="source-panel",
    )


def _value_text(value: Any) -> str:
    if value.unit == "fraction" and isinstance(value.value, int | float):
        return display.fraction(value.value)
    if value.unit == "%" and isinstance(value.value, int | float):
        return display.percent(value.value)
    if value.unit == "ns" and isinstance(value.value, int | float):
        return dur(value.value)
    return f"{fmt(value.value)}{' ' + value.unit if value.unit else ''}"


def findings_panel(result: LaunchAnalysis) -> html.Section:
    """The engine's findings ranked by the SM time they cost, each expandable to its numbers and the metrics it
    cites; then every evidence sentence, the flags and the advice."""
    verdict = result.classification
    items = []
    for finding in verdict.findings:
        details: list = []
        if finding.values:
            details.append(
                fields_table(
                    [(v.name, _value_text(v)) for v in finding.values], f"finding-{finding.id or finding.kind}"
                )
            )
        if finding.metrics:
            details.append(html.P(["metrics: ", *[html.Code(m + " ") for m in finding.metrics]], className="hint"))
        items.append(
            html.Details(
                [
                    html.Summary(
                        [html.Span(display.fraction(finding.sm_time_fraction), className="cost"), " ", finding.text]
                    ),
                    *details,
                ],
                className="finding",
            )
        )
    body: list = [html.Div(items, id="findings")]
    extra: list = []
    if verdict.reason:
        extra.append(html.P(verdict.reason, className="hint"))
    if verdict.needed_occupancy_warps_per_sm is not None:
        extra.append(
            html.P(f"Occupancy needed to hide latency: {fmt(verdict.needed_occupancy_warps_per_sm, 1)} warps per SM")
        )
    if verdict.evidence:
        extra.append(html.Ul([html.Li(line) for line in verdict.evidence], id="verdict-evidence"))
    if verdict.flags:
        extra.append(html.P("Flags: " + ", ".join(verdict.flags)))
    if verdict.advice:
        extra += [html.H4("Advice"), html.Ul([html.Li(line) for line in verdict.advice], id="verdict-advice")]
    body.append(html.Details([html.Summary("All evidence, flags and advice"), *extra], id="evidence-details"))
    return _section("findings-panel", "Findings, by the time they cost", body)


def verdict_panel(result: LaunchAnalysis) -> html.Section:
    """The answer without What to try (the report and callers without a store)."""
    return answer_panel(result, None)


NOT_SHOWN_TRACE = (
    "A warp trace recorded inside the kernel (warp_trace.cuh) would add the warps on the SMs, occupancy over time, "
    "warp latency and Little's law."
)
NOT_SHOWN_STALLS = "Nsight Compute's WarpStateStats section would add the stall breakdown."
NOT_SHOWN_REGIONS = (
    "Named regions (WARP_REGION_BEGIN/END, Proton, a %globaltimer profiler) would add per-region timing."
)


def not_shown(result: LaunchAnalysis) -> list[str]:
    """One line per section the launch has no data for, saying what recording would add it."""
    lines = []
    if result.warps is None:
        lines.append(NOT_SHOWN_TRACE)
    if not result.stalls.by_reason and result.classification.utilization:
        lines.append(NOT_SHOWN_STALLS)
    if result.sweep is None:
        lines.append(sweep_note(result) or "No occupancy sweep.")
    if result.regions is None:
        lines.append(NOT_SHOWN_REGIONS)
    return lines


def launch_panel(result: LaunchAnalysis | None) -> html.Section:
    """What ran (`present.launch.launch_table`, the table every view of the launch shows); while a big launch is
    analysed, a place-holder."""
    if result is None:
        return _section("launch-panel", "Launch", [html.P(ANALYSIS_RUNNING, className="hint")])
    table = launch_table(result)
    return _section("launch-panel", table.title, [table_view(table, "launch-table")])


def occupancy_panel(result: LaunchAnalysis) -> html.Section:
    """The occupancy table every view shows (`present.launch.occupancy_table`)."""
    return _section("occupancy-panel", "Occupancy", [table_view(occupancy_table(result), "occupancy-table")])


def occupancy_time_panel(result: LaunchAnalysis | None, chart: Figure | None) -> html.Section:
    """The curve (`present.launch.occupancy_chart`), with the tail marked and tabulated once the analysis
    (`result`) is there."""
    if chart is None:
        return _section("occupancy-time-panel", "Occupancy over time", [html.P(NEEDS_TRACE, className="hint")])
    graph = dcc.Graph(id="occupancy-time-figure", figure=chart.spec, config=GRAPH_CONFIG)
    if result is None:
        return _section(
            "occupancy-time-panel",
            chart.title,
            [html.P(ANALYSIS_RUNNING + " The tail is marked here when it is done.", className="hint"), graph],
        )
    tail = [table_view(tail_table(result.tail), "tail-table")] if result.tail else []
    return _section(
        "occupancy-time-panel",
        chart.title,
        [
            *([html.P(chart.note, className="hint")] if chart.note else []),
            graph,
            *tail,
        ],
    )


def latency_panel(result: LaunchAnalysis | None, chart: Figure | None) -> html.Section:
    """The histogram (`present.launch.latency_chart`), with the latency statistics once the analysis (`result`)
    is there."""
    if chart is None:
        return _section("latency-panel", "Warp latency", [html.P(NEEDS_TRACE, className="hint")])
    figure = dcc.Graph(id="latency-figure", figure=chart.spec, config=GRAPH_CONFIG)
    if result is None:
        return _section("latency-panel", "Warp latency", [figure])
    table = [table_view(warps_table(result.warps), "latency-table")] if result.warps else []
    return _section("latency-panel", "Warp latency", [figure, *table])


def littles_law_panel(result: LaunchAnalysis) -> html.Section:
    """Both sides of occupancy = latency x throughput (`present.sections.littles_law_table`, the report's table
    too): the steady-state window, the same clipped to the window, and the whole launch."""
    law = littles_law_table(result)
    if law is None:
        return _section("littles-law-panel", "Little's law", [html.P(NEEDS_TRACE, className="hint")])
    table = table_view(law, "littles-law-table")
    body: list = [
        html.P(
            "Occupancy (mean resident warps per SM) against latency x throughput (warps started per unit of "
            "time per SM). Clipped: each warp counted only for its time inside the window.",
            className="hint",
        ),
        table,
    ]
    if law.note:
        body.append(html.P(law.note, id="littles-law-explanation"))
    return _section("littles-law-panel", "Little's law", body)


def stall_panel(result: LaunchAnalysis, chart: Figure | None) -> html.Section:
    """The stall reasons (`present.launch.stall_chart`) and their groups."""
    stalls = result.stalls
    if chart is None:
        return _section("stall-panel", "Stall breakdown", [html.P(NEEDS_STALLS, className="hint")])
    table = stalls_table(stalls) if stalls else None
    return _section(
        "stall-panel",
        "Stall breakdown",
        [
            dcc.Graph(id="stall-figure", figure=chart.spec, config=GRAPH_CONFIG),
            *(table_with_note(table, "stall-table") if table else []),
        ],
    )


def sweep_panel(result: LaunchAnalysis, sweep_note: str, chart: Figure | None) -> html.Section:
    """Throughput against occupancy over the kernel's launches, with the fitted min(n / L, B) and this launch's
    point (`present.launch.sweep_chart`)."""
    sweep = result.sweep
    if not sweep or chart is None:
        return _section(
            "sweep-panel", "Throughput against occupancy", [html.P(sweep_note, className="hint", id="sweep-note")]
        )
    return _section(
        "sweep-panel",
        "Throughput against occupancy",
        [
            html.P(sweep_note, className="hint", id="sweep-note"),
            dcc.Graph(id="sweep-figure", figure=chart.spec, config=GRAPH_CONFIG),
            *table_with_note(sweep_table(sweep), "sweep-table"),
        ],
    )


def what_if_panel(prefill: dict[str, int | None], initial: list) -> html.Section:
    """The what-if calculator: block size, registers per thread, dynamic shared memory per block and the grid,
    prefilled from the launch, and ILP; `initial` is `what_if_body` for the prefilled values."""
    # No min / max / step: the browser would silently drop a value out of range; the server says what is wrong.
    inputs = [
        ("whatif-block", "threads per block", prefill.get("threads_per_block"), None),
        ("whatif-registers", "registers per thread", prefill.get("registers_per_thread"), None),
        ("whatif-smem", "dynamic shared memory per block (bytes)", prefill.get("shared_mem_per_block_bytes"), None),
        ("whatif-ilp", "ILP (independent requests per warp)", None, "1, as run"),
        ("whatif-grid", "blocks in the grid (same work)", prefill.get("grid_blocks"), None),
    ]
    controls = []
    for input_id, label, value, placeholder in inputs:
        controls += [
            html.Label(label, htmlFor=input_id),
            dcc.Input(
                id=input_id,
                type="number",
                value=value,
                placeholder=placeholder,
                debounce=True,
                className="id-input",
            ),
        ]
    return _section(
        "what-if-panel",
        "What if: occupancy calculator and prediction",
        [
            html.P(
                "Change the launch configuration and press Enter: the theoretical occupancy on this device and its "
                "limits, and what the change would buy as tracekit predict says it: the predicted duration and "
                "speed-up with its interval, the regime after the change, what the prediction rests on, and "
                "Nsight Compute's estimate beside it.",
                className="hint",
            ),
            html.Div(controls, className="actions"),
            html.Div(initial, id="whatif-result"),
        ],
    )


def what_if_body(
    change: WhatIf | None,
    prediction: Prediction | str | None,
    error: str | None,
    result: LaunchAnalysis | None = None,
) -> list:
    """The calculator's answer: occupancy, limiter and limits, the nearest cliffs, then the prediction
    (`tracekit.api.predict_stored`) or why there is none. `error`: one line instead of all of it; `result`: the
    launch, for what binds it now."""
    if change is None:
        return [html.P(error or "", className="error", id="whatif-occupancy")]
    occupancy = change.occupancy
    limits = occupancy.limits_blocks_per_sm
    limiter = limit_label(occupancy.limiter) + (
        f" (also {', '.join(limit_label(k) for k in occupancy.limiters[1:])})" if len(occupancy.limiters) > 1 else ""
    )
    headline = (
        f"Theoretical occupancy {occupancy.theoretical_warps_per_sm} of {occupancy.max_warps_per_sm} warps "
        f"per SM ({occupancy.theoretical_pct:.1f}%), limited by {limiter}"
    )
    if change.current_warps_per_sm is not None:
        headline += f"; the launch as run: {change.current_warps_per_sm} warps per SM."
    rows = [
        (
            "blocks per SM allowed by " + " / ".join(limit_label(key) for key in BLOCK_LIMITS),
            " / ".join(fmt(limits.get(key)) for key in BLOCK_LIMITS),
        ),
        ("active blocks per SM", fmt(occupancy.active_blocks_per_sm)),
        ("warps per block", fmt(occupancy.warps_per_block)),
        ("registers allocated per block", fmt(occupancy.allocated_registers_per_block)),
        (
            "shared memory allocated per block, with the static part and the driver's reserve (bytes)",
            fmt(occupancy.allocated_shared_mem_per_block_bytes),
        ),
    ]
    body: list = [html.P(headline, id="whatif-occupancy", className="verdict"), fields_table(rows, "whatif-table")]
    if change.cliffs:
        body += [
            html.H4("Nearest occupancy changes"),
            html.Ul([html.Li(cliff.text) for cliff in change.cliffs], id="whatif-cliffs"),
        ]
    body.append(html.H4("What it would buy (tracekit predict)"))
    if prediction is None or isinstance(prediction, str):
        body.append(html.P(f"No prediction: {prediction or 'not asked'}", id="whatif-prediction", className="hint"))
        return body
    return body + prediction_body(prediction, result)


def prediction_body(p: Prediction, result: LaunchAnalysis | None = None) -> list:
    """A prediction in `present.prediction`'s words, the lines `tracekit predict` prints (answer, what binds now
    and after, basis, Nsight Compute's estimate, what would narrow it), the occupancy after the change, the
    measured ceilings cited once, and the derivation folded. `result`: the launch, for what binds it now."""
    text = prediction_text(p, result)
    ceilings = ceilings_cited(text.profiles)
    profiles = [html.P(ceilings, className="hint")] if ceilings else []
    return [
        html.P(text.answer, id="whatif-prediction", className="verdict"),
        table_view(prediction_table(text), "whatif-prediction-table"),
        *profiles,
        html.Details(
            [
                html.Summary("How: each step of the reasoning"),
                html.Ul([html.Li(step) for step in text.steps], id="whatif-steps"),
            ]
        ),
    ]


PANEL_TITLES = (
    ("verdict-panel", "Verdict"),
    ("occupancy-panel", "Occupancy"),
    ("what-if-panel", "What if: occupancy calculator and prediction"),
    ("occupancy-time-panel", "Occupancy over time"),
    ("latency-panel", "Warp latency"),
    ("littles-law-panel", "Little's law"),
    ("sweep-panel", "Throughput against occupancy"),
    ("stall-panel", "Stall breakdown"),
    ("region-panel", "Regions inside the kernel"),
    ("launch-panel", "Launch"),
)


def region_panel(result: LaunchAnalysis, view: Any = None) -> html.Section:
    """Per named region: latency, share of warp time, throughput and Little's law, as the report shows them; with
    `view` (`region_views.RegionView`) the warp timeline coloured by region and each region's occupancy over time."""
    if result.regions is None:
        return _section("region-panel", "Regions inside the kernel", [html.P(NEEDS_REGIONS, className="hint")])
    table = region_table(result.regions)
    figures_part: list = []
    if view is not None:
        timeline, occupancy = view.timeline, view.occupancy  # present.regions' charts
        figures_part = [
            html.H4(timeline.title),
            html.P(timeline.note, id="region-timeline-note", className="hint"),
            dcc.Store(id="region-timeline-rows", data=view.row_map),
            dcc.Store(id="region-timeline-view"),  # the relayouts that move an axis (region_views.AXIS_EVENTS)
            dcc.Graph(id="region-timeline", figure=timeline.spec, config=GRAPH_CONFIG),
            html.H4(occupancy.title),
            html.P(occupancy.note, className="hint"),
            dcc.Graph(id="region-occupancy", figure=occupancy.spec, config=GRAPH_CONFIG),
        ]
    return _section(
        "region-panel",
        table.title,
        [
            html.Table(
                [
                    html.Thead(html.Tr([html.Th(column) for column in table.columns])),
                    html.Tbody([html.Tr([html.Td(cell) for cell in row]) for row in table.rows]),
                ],
                id="region-table",
                className="table",
            ),
            html.P(table.note or "", className="hint"),
            *figures_part,
        ],
    )


def analysis_failed(message: str) -> list[html.Section]:
    """Every panel in its place, saying why it is empty."""
    return [_section(slot_id, title, [html.P(message, className="error")]) for slot_id, title in PANEL_TITLES]
