"""`tracekit serve`: the dashboard over the same store the CLI uses.

On loopback (the default) no token is needed; on any other address one is required: `--token`,
$TRACEKIT_TOKEN, or a fresh random one printed once in the URL to open. See dashboards/security.py.
"""

from __future__ import annotations

import importlib.util
import os
import secrets
import socket
import sys
from collections.abc import Callable
from typing import Annotated, Any

import typer

from tracekit.cli.common import DbOption, err_console, open_store
from tracekit.errors import TracekitError
from tracekit.store.engine import resolve_url

# gunicorn's default access log line with the path only (%(U)s): the query, where a token may be, is not logged.
ACCESS_LOG_FORMAT = '%(h)s %(l)s %(u)s %(t)s "%(m)s %(U)s %(H)s" %(s)s %(b)s "%(a)s"'


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
        f"[{host}]:{port}" if ":" in host else f"{host}:{port}",
        "--timeout",
        "600",
        "--access-logfile",
        "-",
        "--access-logformat",
        ACCESS_LOG_FORMAT,
    ]
    if any(setting.name == "control_socket_disable" for setting in KNOWN_SETTINGS):
        argv.append("--no-control-socket")
    return [*argv, "tracekit.dashboards.wsgi:server"]


def run_waitress(wsgi_app: Callable[..., Any], host: str, port: int, max_body_bytes: int) -> None:
    """Serve one process with waitress, a production WSGI server in pure Python (threads, no fork: it runs
    where gunicorn cannot, e.g. on Windows), instead of Flask's development server.

    `server_name` is the bound host, so the security checks see the address really listened on (waitress's
    default, `waitress.invalid`, would read as non-loopback); bodies past the cap are refused by waitress
    too, before it buffers them. waitress logs no request lines, so no token reaches a log.
    """
    from waitress import create_server

    server = create_server(
        wsgi_app,
        host=host,
        port=port,
        server_name=host,
        threads=8,
        max_request_body_size=max_body_bytes + 1,
        ident="tracekit",
    )
    try:
        server.run()
    except KeyboardInterrupt:
        pass  # Ctrl-C is how a user stops the server: no traceback; `finally` closes it
    finally:
        server.close()


def _browse_host(host: str) -> str:
    if host in ("0.0.0.0", "::", ""):
        return socket.gethostname()
    return f"[{host}]" if ":" in host else host


def serve_command(
    db: DbOption = None,
    host: Annotated[
        str,
        typer.Option("--host", help="Address to listen on (0.0.0.0: every interface; needs a token, see --token)."),
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="TCP port.", min=1, max=65535)] = 8050,
    workers: Annotated[
        int | None,
        typer.Option(
            "--workers",
            min=1,
            help="Run under gunicorn with N worker processes (default: one waitress process, 8 threads).",
        ),
    ] = None,
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            envvar="TRACEKIT_TOKEN",
            show_envvar=True,
            help="Access token every request must carry (default: none on loopback, a random one printed at "
            "start otherwise).",
        ),
    ] = None,
    read_only: Annotated[
        bool, typer.Option("--read-only", help="No uploads and no deletes: browse and compare only.")
    ] = False,
    allowed_hosts: Annotated[
        list[str] | None,
        typer.Option(
            "--allowed-host",
            help="A host name the server answers to besides IP addresses, localhost and this machine's names "
            "(repeatable; '*': any, e.g. behind a proxy that checks names itself).",
        ),
    ] = None,
    max_upload_mb: Annotated[
        float, typer.Option("--max-upload-mb", min=0.001, help="Largest upload (all files of one drop), in MB.")
    ] = 200.0,
) -> None:
    """Start the dashboard: upload files, browse the library, look at launches and compare them."""
    if token is not None and len(token) < 16:
        raise TracekitError("--token must be at least 16 characters (use a random one, e.g. `openssl rand -hex 16`)")
    from tracekit.dashboards.security import is_loopback

    url = resolve_url(db)
    store = open_store(url)  # creates or upgrades the schema once, before any worker starts
    store.engine.dispose()
    address = f"http://{_browse_host(host)}:{port}/"
    if token is None and not is_loopback(host):
        token = secrets.token_urlsafe(32)  # printed once, here; the user's own token is never printed back
        address += f"?token={token}"
    elif token is not None:
        address += " (open it with ?token=YOUR_TOKEN once)"
    max_upload_bytes = int(max_upload_mb * 1e6)
    mode = ", read-only" if read_only else ""
    environment = {
        "TRACEKIT_DB": url,
        "TRACEKIT_BIND_HOST": host,
        "TRACEKIT_READ_ONLY": "1" if read_only else "",
        "TRACEKIT_ALLOWED_HOSTS": ",".join(allowed_hosts or []),
        "TRACEKIT_MAX_UPLOAD_BYTES": str(max_upload_bytes),
        "TRACEKIT_TOKEN": token or "",
    }
    if workers is None:
        from tracekit.dashboards.app import create_app, max_body_bytes
        from tracekit.dashboards.security import Settings

        settings = Settings.from_env(environment)
        app = create_app(url, max_upload_bytes, settings)
        err_console.print(f"tracekit: dashboard on {address} (store {store.url}{mode})", markup=False)
        run_waitress(app.server, host, port, max_body_bytes(max_upload_bytes))
        return
    if importlib.util.find_spec("gunicorn") is None:
        raise TracekitError("--workers needs gunicorn: pip install 'tracekit[serve]'")
    err_console.print(
        f"tracekit: dashboard on {address} with {workers} gunicorn workers (store {store.url}{mode})",
        markup=False,
    )
    sys.stdout.flush()
    sys.stderr.flush()
    argv = gunicorn_argv(host, port, workers)
    os.execve(sys.executable, argv, {**os.environ, **environment})
