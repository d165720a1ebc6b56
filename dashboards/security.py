"""What stands between the dashboard and the network: Host and Origin checks, the access token, read-only mode
and the request size cap. `protect(server, settings)` installs it on the Flask server as the first
`before_request` hook, so it covers every route, including routes registered after it (the JSON API too).

- Host: a request whose Host is a name this server does not answer to is refused (400). That stops DNS
  rebinding, where a page on evil.example re-points its own name at 127.0.0.1 and reads the dashboard. IP
  literals are always accepted (a rebinding attack needs a name), as are `localhost`, this machine's names, the
  bound name and `--allowed-host` names (`*`: any).
- Origin: a state-changing request (any method but GET/HEAD/OPTIONS, so every Dash callback) sent by a browser
  from another origin is refused (403): its Origin must be this server's own Host (or an allowed origin), and
  `Sec-Fetch-Site`, when sent, must be `same-origin`. Requests with neither header come from scripts, not from
  browsers, and need the token like every other request when one is set.
- Token: when set (always when listening beyond loopback), every request must carry it: `?token=`, the cookie
  the first `?token=` page view sets (HttpOnly, SameSite=Lax), or `Authorization: Bearer`. A request arriving
  on a non-loopback listener while no token is set is refused too, so running gunicorn by hand on 0.0.0.0
  without TRACEKIT_TOKEN exposes nothing.
- Size: a body over `max_body_bytes` is refused from its Content-Length before it is read, and while streaming
  when it has none (Flask's MAX_CONTENT_LENGTH on the WSGI input), so a large upload never fills memory.
- Read-only: no method but GET/HEAD/OPTIONS, apart from Dash's callback endpoint; the app does not register its
  upload and delete callbacks then, so nothing can change the store.
"""

from __future__ import annotations

import hmac
import io
import ipaddress
import os
import socket
from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import urlencode, urlsplit

from flask import Flask, Response, request

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
DASH_CALLBACK_PATH = "/_dash-update-component"
TOKEN_QUERY = "token"
LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})


def is_loopback(host: str | None) -> bool:
    """True for 127.0.0.0/8, ::1 and localhost; False for wildcard binds (0.0.0.0, ::) and real addresses."""
    if not host:
        return False
    name = host.strip("[]").lower().rstrip(".")
    if name in LOOPBACK_NAMES or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _is_ip_literal(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def _host_name(host_header: str) -> str:
    """`example.org:8050` -> `example.org`, `[::1]:8050` -> `::1`, lowercased, without a trailing dot."""
    host = host_header.strip().lower()
    if host.startswith("["):
        return host[1:].partition("]")[0]
    if host.count(":") == 1:
        host = host.partition(":")[0]
    return host.rstrip(".")


def _machine_names() -> set[str]:
    names = set()
    for name in (socket.gethostname(), socket.getfqdn()):
        if name:
            names.add(name.lower().rstrip("."))
    return names


def _split_list(text: str | None) -> tuple[str, ...]:
    return tuple(item.strip() for item in (text or "").split(",") if item.strip())


@dataclass(frozen=True)
class Settings:
    """How one dashboard protects itself; `from_env` reads what `tracekit serve` hands its gunicorn workers."""

    bind_host: str = "127.0.0.1"
    token: str | None = None
    read_only: bool = False
    allowed_hosts: tuple[str, ...] = ()
    allowed_origins: tuple[str, ...] = ()
    max_body_bytes: int | None = None
    _names: frozenset[str] = field(default=frozenset(), repr=False)

    def __post_init__(self) -> None:
        names = {name.lower().rstrip(".") for name in self.allowed_hosts} | LOOPBACK_NAMES | _machine_names()
        if self.bind_host and self.bind_host not in ("0.0.0.0", "::", ""):
            names.add(self.bind_host.strip("[]").lower())
        object.__setattr__(self, "_names", frozenset(names))

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None, **overrides) -> Settings:
        environ = dict(os.environ if environ is None else environ)
        values = {
            "bind_host": environ.get("TRACEKIT_BIND_HOST") or "127.0.0.1",
            "token": environ.get("TRACEKIT_TOKEN") or None,
            "read_only": environ.get("TRACEKIT_READ_ONLY", "").lower() in ("1", "true", "yes"),
            "allowed_hosts": _split_list(environ.get("TRACEKIT_ALLOWED_HOSTS")),
            "allowed_origins": _split_list(environ.get("TRACEKIT_ALLOWED_ORIGINS")),
        }
        return cls(**{**values, **overrides})

    def host_allowed(self, host_header: str | None) -> bool:
        if "*" in self.allowed_hosts:
            return True
        if not host_header:
            return False
        name = _host_name(host_header)
        return _is_ip_literal(name) or name.endswith(".localhost") or name in self._names

    def origin_allowed(self, origin: str, host_header: str | None) -> bool:
        if origin in self.allowed_origins:
            return True
        parts = urlsplit(origin)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            return False  # "null" (sandboxed frames, file: pages) and anything odd
        if not host_header:
            return False
        return parts.netloc.lower() == host_header.strip().lower()


def _refuse(status: int, message: str) -> Response:
    """A plain-text refusal: nothing from the request is echoed as HTML."""
    response = Response(f"tracekit: {message}\n", status=status, mimetype="text/plain")
    response.headers["Cache-Control"] = "no-store"
    return response


def _cookie_name() -> str:
    """One cookie per port: cookies ignore ports, and two dashboards on one host have different tokens."""
    return f"tracekit_token_{request.environ.get('SERVER_PORT') or 'default'}"


def _presented_tokens() -> Iterable[tuple[str, str]]:
    authorization = request.headers.get("Authorization", "")
    scheme, _, value = authorization.partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        yield "header", value.strip()
    if TOKEN_QUERY in request.args:
        yield "query", request.args[TOKEN_QUERY]
    cookie = request.cookies.get(_cookie_name())
    if cookie:
        yield "cookie", cookie


def _token_matches(expected: str, presented: str) -> bool:
    return hmac.compare_digest(expected.encode(), presented.encode())


def _wants_html() -> bool:
    return request.method == "GET" and (
        request.headers.get("Sec-Fetch-Mode") == "navigate" or "text/html" in request.headers.get("Accept", "")
    )


def _url_without_token() -> str:
    query = [(key, value) for key, value in request.args.items(multi=True) if key != TOKEN_QUERY]
    return request.path + (f"?{urlencode(query)}" if query else "")


def _buffer_streamed_body(limit: int) -> int:
    """A body without Content-Length (chunked): read it up to `limit` + 1 bytes. Past the limit, the size read
    so far (the caller refuses it, the rest is never read); else the body is put back, with its length, for
    the route to read as usual."""
    stream = request.environ["wsgi.input"]
    chunks, size = [], 0
    while size <= limit:
        chunk = stream.read(min(1 << 16, limit + 1 - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    if size <= limit:
        request.environ["wsgi.input"] = io.BytesIO(b"".join(chunks))
        request.environ["CONTENT_LENGTH"] = str(size)
    return size


def protect(server: Flask, settings: Settings) -> None:
    """Install the checks on `server` ahead of every route (see the module docstring)."""
    if settings.max_body_bytes is not None:
        server.config["MAX_CONTENT_LENGTH"] = settings.max_body_bytes
    hooks = server.before_request_funcs.setdefault(None, [])

    def check():
        if not settings.host_allowed(request.host):
            return _refuse(
                400,
                "this server does not answer to that Host name (DNS rebinding protection); "
                "start it with --allowed-host NAME to add a name",
            )
        if settings.token is None and not is_loopback(request.environ.get("SERVER_NAME")):
            return _refuse(
                403,
                "this server listens beyond loopback without an access token; "
                "start it with `tracekit serve` or set TRACEKIT_TOKEN",
            )
        if settings.token is not None:
            found = [(kind, value) for kind, value in _presented_tokens() if _token_matches(settings.token, value)]
            if not found:
                return _refuse(
                    401,
                    "this dashboard needs its access token: open the URL `tracekit serve` printed (it ends in "
                    "?token=...), or send the header Authorization: Bearer TOKEN",
                )
            if found[0][0] == "query" and _wants_html():
                # Keep the token out of the address bar, history and Referer: a cookie carries it from now on.
                response = server.redirect(_url_without_token(), code=303)
                response.set_cookie(
                    _cookie_name(),
                    settings.token,
                    httponly=True,
                    samesite="Lax",
                    secure=request.is_secure,
                    path="/",
                )
                return response
        if request.method not in SAFE_METHODS:
            origin = request.headers.get("Origin")
            fetch_site = request.headers.get("Sec-Fetch-Site")
            if (
                fetch_site is not None
                and fetch_site not in ("same-origin", "none")
                and not (origin is not None and origin in settings.allowed_origins)
            ):
                return _refuse(403, f"cross-site request refused (Sec-Fetch-Site: {fetch_site})")
            if origin is not None and not settings.origin_allowed(origin, request.host):
                return _refuse(403, "cross-origin request refused: its Origin is not this server")
            if origin is None and (referer := request.headers.get("Referer")):
                parts = urlsplit(referer)
                if parts.netloc.lower() != (request.host or "").lower():
                    return _refuse(403, "cross-origin request refused: its Referer is not this server")
            if settings.read_only and request.path != DASH_CALLBACK_PATH:
                return _refuse(405, "this dashboard is read-only")
        if settings.max_body_bytes is not None:
            length = request.content_length
            if length is None and request.environ.get("wsgi.input_terminated"):
                length = _buffer_streamed_body(settings.max_body_bytes)
            if length is not None and length > settings.max_body_bytes:
                return _refuse(
                    413,
                    f"the request is over this server's limit of {settings.max_body_bytes:,} bytes; "
                    "import large files with `tracekit import`",
                )
        return None

    hooks.insert(0, check)

    @server.after_request
    def headers(response: Response) -> Response:
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("X-Frame-Options", "DENY")
        response.headers.setdefault("Referrer-Policy", "no-referrer")
        return response
