"""Steps page `/steps?import=<id>`: a stored trace's steps as the program runs them (`tracekit step IMPORT`: the
trace replayed without the profiler's own host work; its step time, interval and calibration first): the steps
table, the representative step's timeline (host calls, GPU streams, idle gaps coloured by cause) and its breakdown
above the fold, then the idle causes with their evidence, GPU time by category and operator, and what to try first. With
`&baseline=<id>` the step is set against that import's (`tracekit step IMPORT --baseline BASELINE`): what each part
took in both and what grew, above the timeline. Without an import it lists the imports that hold a host timeline.
Everything is read through `tracekit.api` and worded by `tracekit.present.steps`; names from the trace are shown
as text."""

from __future__ import annotations

from typing import Any

from dash import dcc, html

from tracekit import figures
from tracekit.api import (
    TraceAnalysis,
    trace_features,
)
from tracekit.errors import TracekitError
from tracekit.present import steps as present
from tracekit.present import trace_features as hta
from tracekit.present.sections import Table

from .common import TABLE_STYLE, DataTable, not_found
from .panels import GRAPH_CONFIG


def _table(table_id: str, rows: list[dict[str, str]]) -> Any:
    columns = [{"name": key, "id": key} for key in (rows[0] if rows else {})]
    return DataTable(id=table_id, columns=columns, data=rows, **TABLE_STYLE)


def _section_table(table_id: str, table: Table, heading: Any = html.H4) -> list[Any]:
    """A table `tracekit.present` decided, under its title (`heading`), its note below."""
    rows = [dict(zip(table.columns, row, strict=True)) for row in table.rows]
    columns = [{"name": name, "id": name} for name in table.columns]
    shown = DataTable(id=table_id, columns=columns, data=rows, **TABLE_STYLE)
    return [heading(table.title), shown, html.P(table.note or "")]


def _trace_features(found: trace_features.TraceFeatures) -> html.Div:
    """HTA's trace analyses of the whole import (`tracekit features IMPORT`), each table as the CLI shows it."""
    tables = hta.feature_tables(found)
    parts = [part for i, table in enumerate(tables) for part in _section_table(f"steps-hta-{i}", table)]
    for chart in hta.feature_figures(found):
        graph = dcc.Graph(id=f"steps-hta-{chart.key}", figure=chart.spec, config=GRAPH_CONFIG)
        parts += [html.H4(chart.title), graph, html.P(chart.note or "")]
    return html.Div([html.H3("Trace analyses (as HTA has them)"), *parts], id="steps-hta")


def _chooser(traces: TraceAnalysis) -> html.Div:
    """The imports that hold a host timeline, each a link to its steps."""
    found = traces.imports_with_host_timeline()
    if not found:
        return html.Div(
            [
                html.H2("Steps"),
                html.P("No stored import holds a host timeline: import a PyTorch profiler trace or an nsys export."),
            ],
            id="steps-page",
        )
    return html.Div(
        [
            html.H2("Steps"),
            html.Ul([html.Li(dcc.Link(f"import {i}: {name}", href=f"/steps?import={i}")) for i, name in found]),
        ],
        id="steps-page",
    )


def _comparison(traces: TraceAnalysis, baseline_ref: str, result: Any, step_name: str | None) -> tuple[list, list]:
    """The step against its baseline: its headline (above the timeline) and each part before, after and changed
    (below the breakdown, which stay above the fold)."""
    found = traces.compare_with_baseline(baseline_ref, result, step_name)
    headline = html.P(
        f"Against import {baseline_ref} (baseline): {present.comparison_headline(found)}", id="steps-compare-headline"
    )
    table = [
        html.H3(f"Against import {baseline_ref} (baseline)"),
        _table("steps-compare", present.comparison_rows(found)),
    ]
    return [headline], table


def _baselines(traces: TraceAnalysis, import_ref: str, step_name: str | None) -> html.Div:
    """Links that set this step against another stored trace's."""
    others = [(i, name) for i, name in traces.imports_with_host_timeline() if str(i) != import_ref]
    step = f"&step={step_name}" if step_name else ""
    links = [
        html.Li(dcc.Link(f"import {i}: {name}", href=f"/steps?import={import_ref}&baseline={i}{step}"))
        for i, name in others
    ]
    return html.Div([html.H3("Compare with a baseline"), html.Ul(links or [html.Li("no other stored trace")])])


def _without_steps(traces: TraceAnalysis, import_ref: str, reason: str) -> html.Div:
    """An import with no step to show: the reason, and HTA's analyses where they have something to show (a trace of
    the CUPTI range profiler: its kernel counters)."""
    try:
        found = traces.features(import_ref)
    except TracekitError:
        return not_found(reason)
    if not found.counters.kernels.height:
        return not_found(reason)
    return html.Div([html.H2("Steps"), html.P(reason, id="steps-missing"), _trace_features(found)], id="steps-page")


def layout(
    traces: TraceAnalysis, import_ref: str | None, step_name: str | None = None, baseline_ref: str | None = None
) -> html.Div:
    if not import_ref:
        return _chooser(traces)
    for ref in (import_ref, baseline_ref):
        if ref is not None and not ref.isdigit():
            return not_found(f"{ref!r} is not an import id (expected a number, as in /steps?import=3)")
    try:
        program = traces.program_steps(import_ref, step_name)  # the step as the program runs it, without the profiler
        result = program.unprofiled
        view = traces.program_timeline(import_ref, program)
        if result.representative_step is None or view is None:
            return not_found(f"import {import_ref}: no step")
        headline, against = _comparison(traces, baseline_ref, result, step_name) if baseline_ref else ([], [])
        analysed = traces.features(import_ref)
        if baseline_ref:  # HTA's TraceDiff: the operators against the baseline's (`tracekit diff BASELINE IMPORT`)
            diff = trace_features.diff_of_features(traces.features(baseline_ref), analysed)
            against += _section_table("steps-operator-diff", hta.diff_table(diff))
        features = _trace_features(analysed)
    except TracekitError as exc:
        return _without_steps(traces, import_ref, str(exc))
    step = result.steps[result.representative_step]
    suggestions = [html.Li(present.suggestion_line(s)) for s in result.what_to_try]
    return html.Div(
        [
            html.H2(present.program_headline(program), id="steps-program"),
            html.Ul([html.Li(line.strip()) for line in present.program_lines(program)[1:]], id="steps-program-notes"),
            html.H3(present.title(result), id="steps-title"),
            html.P(present.step_heading(step), id="steps-heading"),
            *headline,
            dcc.Graph(id="steps-timeline", figure=figures.step_timeline_spec(view), config=GRAPH_CONFIG),
            dcc.Graph(id="steps-breakdown", figure=figures.step_breakdown_spec(step), config=GRAPH_CONFIG),
            *against,
            html.H3("Steps"),
            _table("steps-table", present.step_rows(result)),
            *_section_table("steps-causes", present.cause_table(step), html.H3),
            html.H3("GPU time by category"),
            _table("steps-categories", present.category_rows(step)),
            html.H3("GPU time by operator"),
            _table("steps-operators", present.operator_rows(step)),
            html.P(present.critical_path_line(result) or "", id="steps-critical-path"),
            html.H3("What to try first"),
            html.P(present.try_note(result), id="steps-try-note"),
            html.Ul(suggestions or [html.Li("nothing: the GPU does not idle in this step")], id="steps-try"),
            *[html.P(f"warning: {w}", className="warning") for w in result.warnings],
            features,
            _baselines(traces, import_ref, step_name),
        ],
        id="steps-page",
    )
