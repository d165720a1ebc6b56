"""Pieces every page uses: table styling and the not-found page."""

from __future__ import annotations

from typing import Any

from dash import html
from dash.dash_table.DataTable import DataTable as DataTableClass

# dash.dash_table's __init__ is untyped (`# type: ignore`), so mypy finds no DataTable there, and the class's generated
# hints take dict-invariant types (data: Sequence[dict[str | float | int, ...]]) that no list of row dicts fits:
# tables are built through this untyped name, and annotations name the class.
DataTable: Any = DataTableClass

TABLE_STYLE = {
    "style_table": {"overflowX": "auto"},
    "style_cell": {
        "textAlign": "left",
        "fontFamily": "inherit",
        "fontSize": "0.9rem",
        "maxWidth": "40rem",
        "overflow": "hidden",
        "textOverflow": "ellipsis",
    },
    "style_header": {"fontWeight": "bold"},
}


def not_found(message: str) -> html.Div:
    """A page for an id or path that does not exist; `message` is shown as text."""
    return html.Div([html.H2("Not found"), html.P(message, className="error")], className="not-found")
