"""Compare page `/compare?a=<id>&b=<id>`: two launches side by side, and the metrics they share.

The analysis comparison (verdicts, occupancy, Little's law of both) will sit in the `analysis-slot` section once
`analyze_launch` exists.
"""

from __future__ import annotations

from dash import dash_table, dcc, html

from tracekit.store import Store

from .common import TABLE_STYLE
from .comparison import metric_comparison
from .pages_launch import launch_table


def _chooser(a: str | None, b: str | None) -> html.Form:
    """A plain GET form: the page is addressed by its query string, so it can be bookmarked and shared."""
    return html.Form([
        html.Label("launch A ", htmlFor="compare-a"),
        dcc.Input(id="compare-a", name="a", type="number", value=_launch_id(a), className="id-input"),
        html.Label(" launch B ", htmlFor="compare-b"),
        dcc.Input(id="compare-b", name="b", type="number", value=_launch_id(b), className="id-input"),
        html.Button("Compare", type="submit"),
    ], action="/compare", method="GET", className="actions")


def _launch_id(text: str | None) -> int | None:
    return int(text) if text and text.strip().isdigit() else None


def layout(store: Store, a: str | None, b: str | None) -> html.Div:
    page: list = [html.H2("Compare two launches"), _chooser(a, b)]
    ids = {"A": _launch_id(a), "B": _launch_id(b)}
    if a is None and b is None:
        page.append(html.P("Pick two launch ids, or select two launches in the library.", className="hint"))
        return html.Div(page)
    bad = [f"{label} ({value!r})" for label, value in (("A", a), ("B", b)) if _launch_id(value) is None]
    if bad:
        page.append(html.P(f"Launch {' and '.join(bad)} is not a launch id (a number).", className="error"))
        return html.Div(page)
    launches = store.launches(launch_ids=list(ids.values()))
    found = {row["id"]: row for row in launches.iter_rows(named=True)}
    missing = [f"{label} = {launch_id}" for label, launch_id in ids.items() if launch_id not in found]
    if missing:
        page.append(html.P(f"No launch {' and '.join(missing)} in the store.", className="error"))
        return html.Div(page)
    columns = []
    for label, launch_id in ids.items():
        launch = found[launch_id]
        columns.append(html.Div([
            html.H3(f"{label}: launch {launch_id}"),
            html.P(launch["kernel_name"] or "", className="kernel-name"),
            dcc.Link("open launch page", href=f"/launch/{launch_id}"),
            launch_table(launch, table_id=f"launch-table-{label.lower()}"),
        ], className="compare-column"))
    page.append(html.Div(columns, className="compare-columns"))
    page.append(html.Section([html.H3("Analysis"), html.P("Not computed yet: both verdicts and their evidence.",
                                                          className="hint")], className="analysis-slot",
                             id="compare-analysis-panel"))
    shared = metric_comparison(store.metrics([ids["A"]]), store.metrics([ids["B"]]))
    table_columns = [("section", "section", "text"), ("name", "metric", "text"), ("unit", "unit", "text"),
                     ("value_a", "A", "numeric"), ("value_b", "B", "numeric"), ("ratio_b_to_a", "B / A", "numeric")]
    page.append(html.Section([
        html.H3(f"Metrics in both ({shared.height})"),
        dash_table.DataTable(
            id="compare-metrics-table",
            columns=[{"id": key, "name": name, "type": kind} for key, name, kind in table_columns],
            data=shared.to_dicts(), filter_action="native", sort_action="native", page_size=30, **TABLE_STYLE),
    ]))
    return html.Div(page)
