"""The dashboard: a Dash app over one store, with upload, library, launch, compare, steps and job pages.

`create_app(db_url)` builds a fresh app (tests make several in one process, so nothing is registered globally);
`tracekit.dashboards.wsgi:server` is the WSGI object gunicorn workers load. Everything from an input file is
shown as text: no component here renders HTML or markdown from a user's string. `security.protect` guards
every route of the Flask server (Host, Origin, token, size cap, read-only): see dashboards/security.py.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from urllib.parse import parse_qs

from dash import Dash, Input, Output, dcc, html

from tracekit import api
from tracekit.scratch import remove_stale

from . import pages_compare, pages_job, pages_launch, pages_library, pages_steps, pages_upload, region_views
from .analysis_cache import AnalysisCache
from .api_routes import register_api
from .common import not_found
from .security import Settings, protect

ASSETS_DIR = Path(__file__).parent / "assets"
DEFAULT_MAX_UPLOAD_BYTES = 200 * 1000 * 1000
REQUEST_OVERHEAD_BYTES = 1 << 20  # the JSON around an upload's base64 data


def max_body_bytes(max_upload_bytes: int) -> int:
    """The largest request body: one drop of files (base64, 4 bytes per 3) plus the callback's JSON."""
    return -(-max_upload_bytes * 4 // 3) + REQUEST_OVERHEAD_BYTES


def _nav() -> html.Nav:
    links = [
        ("Upload", "/upload"),
        ("Library", "/library"),
        ("Compare", "/compare"),
        ("Steps", "/steps"),
        ("Job", "/job"),
    ]
    return html.Nav(
        [html.Span("tracekit", className="brand")]
        + [dcc.Link(label, href=href, className="nav-link") for label, href in links]
    )


def create_app(
    db_url: str | None = None, max_upload_bytes: int = DEFAULT_MAX_UPLOAD_BYTES, settings: Settings | None = None
) -> Dash:
    """A dashboard over the store at `db_url` (None: $TRACEKIT_DB, else the embedded store).

    `settings` (default: loopback only, no token, writable) decide who may reach it; see dashboards/security.py.
    """
    settings = settings or Settings()
    read_only = settings.read_only
    traces = api.open(db_url)
    remove_stale()  # uploads a killed worker left behind
    cache = AnalysisCache(traces)  # one per app: a worker computes each launch's analysis once
    app = Dash(
        __name__,
        title="tracekit",
        update_title=None,  # type: ignore[arg-type]  # Dash documents None (no "Updating..." title); typed str
        assets_folder=str(ASSETS_DIR),
        suppress_callback_exceptions=True,
        serve_locally=True,
    )
    protect(app.server, replace(settings, max_body_bytes=max_body_bytes(max_upload_bytes)))
    app.layout = html.Div(
        [
            dcc.Location(id="url", refresh=False),
            _nav(),
            html.Main(id="page"),
            # Loads the plotting library while the server computes the page (it loads on a page's first figure
            # otherwise, after the page arrives: about a second of a first draw on a laptop).
            dcc.Graph(id="plotly-preload", style={"display": "none"}),
        ]
    )

    @app.callback(Output("page", "children"), Input("url", "pathname"), Input("url", "search"))
    def route(pathname: str | None, search: str | None):
        path = (pathname or "/").rstrip("/") or "/"
        query = {key: values[-1] for key, values in parse_qs((search or "").lstrip("?")).items()}
        if path in ("/", "/library"):
            return pages_library.layout(traces, read_only)
        if path == "/upload":
            return pages_upload.layout(max_upload_bytes, read_only)
        if path.startswith("/launch/"):
            launch_id = path.removeprefix("/launch/")
            if not launch_id.isdigit():
                return not_found(f"{launch_id!r} is not a launch id (expected a number, as in /launch/12)")
            pair = query.get("pair")
            return pages_launch.layout(traces, cache, int(launch_id), int(pair) if pair and pair.isdigit() else None)
        if path == "/compare":
            return pages_compare.layout(traces, cache, query.get("a"), query.get("b"))
        if path == "/steps":
            return pages_steps.layout(traces, query.get("import"), query.get("step"), query.get("baseline"))
        if path == "/job":
            return pages_job.layout(max_upload_bytes)
        return not_found(f"no page at {path}")

    if not read_only:  # read-only: the callbacks that change the store do not exist at all
        pages_upload.register_callbacks(app, traces, max_upload_bytes)
    pages_library.register_callbacks(app, traces, read_only)
    pages_job.register_callbacks(app, max_upload_bytes)  # writes nothing to the store: on a read-only one too
    pages_launch.register_callbacks(app, cache)
    region_views.register_callbacks(app, cache)
    register_api(app.server, cache)
    return app
