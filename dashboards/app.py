"""The dashboard: a Dash app over one store, with upload, library, launch and compare pages.

`create_app(db_url)` builds a fresh app (tests make several in one process, so nothing is registered globally);
`tracekit.dashboards.wsgi:server` is the WSGI object gunicorn workers load. Everything from an input file is
shown as text: no component here renders HTML or markdown from a user's string.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs

from dash import Dash, Input, Output, dcc, html

from tracekit.store import Store

from . import pages_compare, pages_launch, pages_library, pages_upload
from .analysis_cache import AnalysisCache
from .common import not_found

ASSETS_DIR = Path(__file__).parent / "assets"
DEFAULT_MAX_UPLOAD_BYTES = 200 * 1000 * 1000


def _nav() -> html.Nav:
    links = [("Upload", "/upload"), ("Library", "/library"), ("Compare", "/compare")]
    return html.Nav(
        [html.Span("tracekit", className="brand")]
        + [dcc.Link(label, href=href, className="nav-link") for label, href in links]
    )


def create_app(db_url: str | None = None, max_upload_bytes: int = DEFAULT_MAX_UPLOAD_BYTES) -> Dash:
    """A dashboard over the store at `db_url` (None: $TRACEKIT_DB, else the embedded store)."""
    store = Store.open(db_url)
    cache = AnalysisCache(store)  # one per app: a worker computes each launch's analysis once
    app = Dash(
        __name__,
        title="tracekit",
        update_title=None,
        assets_folder=str(ASSETS_DIR),
        suppress_callback_exceptions=True,
        serve_locally=True,
    )
    app.layout = html.Div([dcc.Location(id="url", refresh=False), _nav(), html.Main(id="page")])

    @app.callback(Output("page", "children"), Input("url", "pathname"), Input("url", "search"))
    def route(pathname: str | None, search: str | None):
        path = (pathname or "/").rstrip("/") or "/"
        query = {key: values[-1] for key, values in parse_qs((search or "").lstrip("?")).items()}
        if path in ("/", "/library"):
            return pages_library.layout(store)
        if path == "/upload":
            return pages_upload.layout(max_upload_bytes)
        if path.startswith("/launch/"):
            launch_id = path.removeprefix("/launch/")
            if not launch_id.isdigit():
                return not_found(f"{launch_id!r} is not a launch id (expected a number, as in /launch/12)")
            return pages_launch.layout(store, cache, int(launch_id))
        if path == "/compare":
            return pages_compare.layout(store, cache, query.get("a"), query.get("b"))
        return not_found(f"no page at {path}")

    pages_upload.register_callbacks(app, store, max_upload_bytes)
    pages_library.register_callbacks(app, store)
    pages_launch.register_callbacks(app, cache)
    return app
