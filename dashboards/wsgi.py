"""The WSGI entry point for gunicorn: `gunicorn tracekit.dashboards.wsgi:server`.

Each worker builds its own app (and database engine) on import. `tracekit serve` hands its settings to the
workers through the environment: the store ($TRACEKIT_DB), the access token ($TRACEKIT_TOKEN), the bound address
($TRACEKIT_BIND_HOST), $TRACEKIT_READ_ONLY, $TRACEKIT_ALLOWED_HOSTS / $TRACEKIT_ALLOWED_ORIGINS (comma lists)
and $TRACEKIT_MAX_UPLOAD_BYTES. Run by hand on a non-loopback address without $TRACEKIT_TOKEN, every request is
refused (see dashboards/security.py).
"""

from __future__ import annotations

import os

from .app import DEFAULT_MAX_UPLOAD_BYTES, create_app
from .security import Settings

server = create_app(
    os.environ.get("TRACEKIT_DB"),
    int(os.environ.get("TRACEKIT_MAX_UPLOAD_BYTES") or DEFAULT_MAX_UPLOAD_BYTES),
    Settings.from_env(),
).server
