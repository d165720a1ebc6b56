"""The WSGI entry point for gunicorn: `gunicorn tracekit.dashboards.wsgi:server`.

Each worker builds its own app (and database engine) on import; the store comes from $TRACEKIT_DB.
"""

from __future__ import annotations

import os

from .app import create_app

server = create_app(os.environ.get("TRACEKIT_DB")).server
