"""Compare page `/compare?a=<id>&b=<id>`: two launches side by side: both verdicts, the difference table of
`api.compare_launches` (the rows `tracekit compare` prints), the charts of A against B as the HTML comparison draws
them (`present.comparison.comparison_charts`: occupancy over time with linked time axes, the latency histograms
overlaid, the sweeps), and the metrics both recorded."""

from __future__ import annotations

from dash import dcc, html
from dash.dash_table.Format import Format, Group, Scheme, Trim

from tracekit import figures
from tracekit import format as display
from tracekit.api import TraceAnalysis, compare_launches, shared_metrics
from tracekit.present.comparison import comparison_charts, comparison_table
from tracekit.present.launch import TraceFrames, launch_table, verdict_text
from tracekit.present.rules.ceilings import unit_sentences

from .analysis_cache import AnalysisCache, LaunchPage
from .common import TABLE_STYLE, DataTable
from .panels import GRAPH_CONFIG, table_view


def _chooser(a: str | None, b: str | None) -> html.Form:
    """A plain GET form: the page is addressed by its query string, so it can be bookmarked and shared."""
    return html.Form(
        [
            html.Label("launch A ", htmlFor="compare-a"),
            dcc.Input(id="compare-a", name="a", type="number", value=_launch_id(a), className="id-input"),
            html.Label(" launch B ", htmlFor="compare-b"),
            dcc.Input(id="compare-b", name="b", type="number", value=_launch_id(b), className="id-input"),
            html.Button("Compare", type="submit"),
        ],
        action="/compare",
        method="GET",
        className="actions",
    )


def _launch_id(text: str | None) -> int | None:
    return int(text) if text and text.strip().isdigit() else None


def _verdict(label: str, analysis: LaunchPage) -> html.Div:
    side = label.lower()
    if analysis.result is None:
        return html.Div([html.P(analysis.error or "", className="error")], id=f"compare-verdict-{side}")
    verdict = analysis.result.classification
    return html.Div(
        [
            html.P(verdict_text(verdict), className="verdict", id=f"compare-verdict-mode-{side}"),
            html.Ul([html.Li(line) for line in verdict.evidence]),
        ],
        id=f"compare-verdict-{side}",
    )


def side_launch_table(analysis: LaunchPage, label: str) -> list:
    """The side's launch as every view shows it (`present.launch.launch_table`); nothing where its analysis failed
    (its verdict says why)."""
    if analysis.result is None:
        return []
    return [table_view(launch_table(analysis.result), f"launch-table-{label.lower()}")]


def answer_charts(analyses: dict[str, LaunchPage]) -> dict[str, list]:
    """Each side's speed-of-light chart and roofline, on shared axes (the speed of light is always 0 to 110% of
    the nominal peak; the rooflines share the ranges that hold both launches' points and ridges)."""
    rooflines = {
        label: a.result.ceilings.roofline
        for label, a in analyses.items()
        if a.result is not None and a.result.ceilings is not None and a.result.ceilings.roofline is not None
    }
    axes = figures.roofline_axes(list(rooflines.values()))
    charts: dict[str, list] = {}
    for label, analysis in analyses.items():
        side = label.lower()
        parts: list = []
        result = analysis.result
        words = unit_sentences(result.ceilings) if result is not None else {}
        sol = figures.speed_of_light_figure(result, unit_words=words) if result is not None else None
        if sol is not None:
            parts += [html.H4("Speed of light"), dcc.Graph(id=f"compare-sol-{side}", figure=sol, config=GRAPH_CONFIG)]
        roof = figures.roofline_figure(rooflines[label], axes) if label in rooflines and axes else None
        if roof is not None:
            parts += [html.H4("Roofline"), dcc.Graph(id=f"compare-roofline-{side}", figure=roof, config=GRAPH_CONFIG)]
        charts[label] = parts
    return charts


def difference_table(analyses: dict[str, LaunchPage]) -> list:
    """`api.compare_launches` of A against B, as the rows `tracekit compare` prints; a change no larger than either
    side's run-to-run spread is marked (with one launch a side no spread is known)."""
    result_a, result_b = analyses["A"].result, analyses["B"].result
    if result_a is None or result_b is None:
        return [html.P("No comparison: the analysis did not run on both launches (see above).", className="error")]
    table = comparison_table(compare_launches([result_a], [result_b]))
    header = html.Thead(html.Tr([html.Th(column) for column in table.columns]))
    rows = [
        html.Tr([html.Td(cell) for cell in row], className="within-noise" if "within" in row[-1] else "")
        for row in table.rows
    ]
    return [
        html.Table([header, html.Tbody(rows)], id="compare-diff-table", className="table"),
        html.P(table.note or "", className="hint"),
    ]


def comparison_figures(analyses: dict[str, LaunchPage]) -> list:
    """A against B drawn (`present.comparison.comparison_charts`, as the HTML comparison draws them): occupancy
    over time with linked time axes, the latency histograms overlaid, the sweeps; or why a side is not drawn."""
    charts = comparison_charts(
        {label: analysis.result for label, analysis in analyses.items()},
        {
            label: TraceFrames(a.occupancy_curve, a.latency_histogram)
            if a.occupancy_curve is not None and a.latency_histogram is not None
            else None
            for label, a in analyses.items()
        },
    )
    body: list = [html.P(charts.note, className="hint")] if charts.note else []
    for chart in charts.figures:
        body += [
            html.H4(chart.title),
            *([html.P(chart.note, className="hint")] if chart.note else []),
            dcc.Graph(id=f"compare-{chart.key}-figure", figure=chart.spec, config=GRAPH_CONFIG),
        ]
    return body


def layout(traces: TraceAnalysis, cache: AnalysisCache, a: str | None, b: str | None) -> html.Div:
    page: list = [html.H2("Compare two launches"), _chooser(a, b)]
    ids = {"A": _launch_id(a), "B": _launch_id(b)}
    if a is None and b is None:
        page.append(html.P("Pick two launch ids, or select two launches in the library.", className="hint"))
        return html.Div(page)
    bad = [f"{label} ({value!r})" for label, value in (("A", a), ("B", b)) if _launch_id(value) is None]
    if bad:
        page.append(html.P(f"Launch {' and '.join(bad)} is not a launch id (a number).", className="error"))
        return html.Div(page)
    found = {label: cache.get(launch_id) for label, launch_id in ids.items() if launch_id is not None}  # both
    missing = [f"{label} = {ids[label]}" for label, analysis in found.items() if analysis is None]
    if missing:
        page.append(html.P(f"No launch {' and '.join(missing)} in the store.", className="error"))
        return html.Div(page)
    analyses = {label: analysis for label, analysis in found.items() if analysis is not None}  # both
    charts = answer_charts(analyses)
    columns = []
    for label, analysis in analyses.items():
        launch_id = ids[label]
        columns.append(
            html.Div(
                [
                    html.H3(f"{label}: launch {launch_id}"),
                    html.P(
                        display.kernel_name(analysis.launch["kernel_name"] or analysis.launch["mangled_name"]),
                        className="kernel-name",
                        title=analysis.launch["kernel_name"] or "",
                    ),
                    dcc.Link("open launch page", href=f"/launch/{launch_id}"),
                    _verdict(label, analysis),
                    *charts[label],
                    *side_launch_table(analysis, label),
                ],
                className="compare-column",
            )
        )
    page.append(html.Div(columns, className="compare-columns"))
    page.append(
        html.Section(
            [html.H3("A against B"), *difference_table(analyses), *comparison_figures(analyses)],
            className="analysis-slot",
            id="compare-analysis-panel",
        )
    )
    shared = shared_metrics(analyses["A"].metrics, analyses["B"].metrics)
    table_columns = [
        ("section", "section", "text"),
        ("name", "metric", "text"),
        ("unit", "unit", "text"),
        ("value_a", "A", "numeric"),
        ("value_b", "B", "numeric"),
        ("ratio_b_to_a", "B / A", "numeric"),
    ]
    # numbers stay numbers (sorting, filters); shown with separators and 4 significant digits, never 1e+05
    number_format = Format(precision=4, scheme=Scheme.decimal, group=Group.yes, trim=Trim.yes)
    page.append(
        html.Section(
            [
                html.H3(f"Metrics in both ({shared.height})"),
                DataTable(
                    id="compare-metrics-table",
                    columns=[
                        {"id": key, "name": name, "type": kind}
                        | ({"format": number_format} if kind == "numeric" else {})
                        for key, name, kind in table_columns
                    ],
                    data=shared.to_dicts(),
                    filter_action="native",
                    sort_action="native",
                    page_size=30,
                    **TABLE_STYLE,
                ),
            ]
        )
    )
    return html.Div(page)
