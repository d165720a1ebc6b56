"""`tracekit serve`: the dashboard over the same store the CLI uses."""

from __future__ import annotations

import importlib.util
import os
import sys
from typing import Annotated

import typer

from tracekit.cli.common import DbOption, err_console, open_store
from tracekit.errors import TracekitError
from tracekit.store.engine import resolve_url


def gunicorn_argv(host: str, port: int, workers: int) -> list[str]:
    """The command that runs the dashboard under gunicorn; workers build their app from $TRACEKIT_DB.

    The long timeout lets a large upload finish importing. Newer gunicorn opens a control socket at one fixed
    path per user, so two dashboards on one machine would collide: it is turned off where it exists.
    """
    from gunicorn.config import KNOWN_SETTINGS

    argv = [
        sys.executable,
        "-m",
        "gunicorn",
        "--workers",
        str(workers),
        "--bind",
        f"{host}:{port}",
        "--timeout",
        "600",
        "--access-logfile",
        "-",
    ]
    if any(setting.name == "control_socket_disable" for setting in KNOWN_SETTINGS):
        argv.append("--no-control-socket")
    return [*argv, "tracekit.dashboards.wsgi:server"]


def serve_command(
    db: DbOption = None,
    host: Annotated[str, typer.Option("--host", help="Address to listen on (0.0.0.0: every interface).")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="TCP port.", min=1, max=65535)] = 8050,
    workers: Annotated[
        int | None,
        typer.Option(
            "--workers",
            min=1,
            help="Run under gunicorn with N worker processes (default: one threaded process).",
        ),
    ] = None,
) -> None:
    """Start the dashboard: upload files, browse the library, look at launches and compare them."""
    url = resolve_url(db)
    store = open_store(url)  # creates or upgrades the schema once, before any worker starts
    store.engine.dispose()
    if workers is None:
        from tracekit.dashboards.app import create_app

        err_console.print(f"tracekit: dashboard on http://{host}:{port}/ (store {store.url})", markup=False)
        create_app(url).run(host=host, port=port, debug=False)
        return
    if importlib.util.find_spec("gunicorn") is None:
        raise TracekitError("--workers needs gunicorn: pip install 'tracekit[serve]'")
    err_console.print(
        f"tracekit: dashboard on http://{host}:{port}/ with {workers} gunicorn workers (store {store.url})",
        markup=False,
    )
    sys.stdout.flush()
    sys.stderr.flush()
    argv = gunicorn_argv(host, port, workers)
    os.execve(sys.executable, argv, {**os.environ, "TRACEKIT_DB": url})
