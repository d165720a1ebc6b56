"""Pieces every page uses: table styling and the not-found page."""

from __future__ import annotations

from dash import html

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
