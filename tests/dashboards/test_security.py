"""The dashboard as a hostile network sees it, against the real gunicorn process `tracekit serve --workers`
starts: foreign Host names (DNS rebinding), forged cross-origin callbacks, a missing token on a non-loopback
bind, oversized and streamed bodies and a gzip bomb, with the workers' peak RSS (VmHWM) bounded."""

from __future__ import annotations

import base64
import contextlib
import gzip
import http.client
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path

import pytest

from tracekit.api import TraceAnalysis
from tracekit.store import Store

UPLOAD_CAP_MB = 2  # the servers here take 2 MB per drop, so that "over the cap" stays cheap to send
RSS_GROWTH_LIMIT_BYTES = 150 * 2**20  # a buffered 2 GB body would add 2 GB; the cap allows a few MB


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Gunicorn:
    """`tracekit serve --workers 1 ...` (or plain gunicorn) in a subprocess with its own TMPDIR."""

    def __init__(self, tmp_path: Path, db_url: str, *args: str, env: dict[str, str] | None = None, raw=False):
        self.port = free_port()
        self.tmp = tmp_path / "server-tmp"
        self.tmp.mkdir()
        self.log_path = tmp_path / "server.log"
        environment = {**os.environ, "TMPDIR": str(self.tmp), **(env or {})}
        environment.pop("TRACEKIT_TOKEN", None) if "TRACEKIT_TOKEN" not in (env or {}) else None
        if raw:  # gunicorn run by hand, as a deployment might, with only the store in the environment
            command = [
                sys.executable,
                "-m",
                "gunicorn",
                "--workers",
                "1",
                "--bind",
                f"0.0.0.0:{self.port}",
                "--no-control-socket",
                "tracekit.dashboards.wsgi:server",
            ]
            environment["TRACEKIT_DB"] = db_url
        else:
            command = [sys.executable, "-m", "tracekit.cli.main", "serve", "--db", db_url, "--port", str(self.port)]
            command += ["--max-upload-mb", str(UPLOAD_CAP_MB), *args]
            if "--threaded" in command:  # the development server (no --workers), one process
                command.remove("--threaded")
            else:
                command += ["--workers", "1"]
        self.log = open(self.log_path, "w")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(command, stdout=self.log, stderr=subprocess.STDOUT, env=environment)
        self.wait_ready()

    def wait_ready(self, timeout_s: float = 60) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited with {self.process.returncode}:\n{self.log_path.read_text()}")
            try:
                status, _, _ = self.request("GET", "/_dash-layout")
                if status in (200, 401, 403) and self.worker_pids():
                    return
            except OSError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"server did not answer in {timeout_s} s:\n{self.log_path.read_text()}")

    def request(self, method: str, path: str, body: bytes | None = None, headers: dict | None = None):
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            connection.request(method, path, body=body, headers=headers or {})
            response = connection.getresponse()
            return response.status, dict(response.getheaders()), response.read()
        finally:
            connection.close()

    def worker_pids(self) -> list[int]:
        children = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children")
        pids = [int(pid) for pid in children.read_text().split()] if children.exists() else []
        return pids or [self.process.pid]  # the threaded server answers in its own process

    def peak_rss_bytes(self) -> int:
        """The largest VmHWM of the workers (the processes that read requests)."""
        peaks = []
        for pid in self.worker_pids():
            status = Path(f"/proc/{pid}/status").read_text()
            peaks.append(int(re.search(r"VmHWM:\s+(\d+) kB", status).group(1)) * 1024)
        return max(peaks)

    def printed_token(self) -> str:
        match = re.search(r"\?token=([A-Za-z0-9_\-]+)", self.log_path.read_text())
        assert match, self.log_path.read_text()
        return match.group(1)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()


@pytest.fixture
def seeded_db(tmp_path: Path, write_warp_trace, synthetic_warps) -> str:
    """A SQLite store holding one warp-trace import (id 1)."""
    url = f"sqlite:///{tmp_path / 'store.sqlite'}"
    store = Store.open(url)
    from tracekit.ingest import ingest

    ingest(store, write_warp_trace(tmp_path / "seed.csv", "seed_kernel", synthetic_warps(16)))
    store.engine.dispose()
    return url


@pytest.fixture
def server_factory(tmp_path: Path):
    servers: list[Gunicorn] = []

    def start(db_url: str, *args: str, **kwargs) -> Gunicorn:
        folder = tmp_path / f"server{len(servers)}"
        folder.mkdir()
        server = Gunicorn(folder, db_url, *args, **kwargs)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


def import_count(db_url: str) -> int:
    store = Store.open(db_url)
    try:
        return store.imports().height
    finally:
        store.engine.dispose()


def callback_body(output: str, outputs: list, inputs: list, state: list, changed: list[str]) -> bytes:
    return json.dumps(
        {"output": output, "outputs": outputs, "inputs": inputs, "state": state, "changedPropIds": changed}
    ).encode()


def delete_body(import_id: int) -> bytes:
    """The callback the library's confirm dialog fires: delete the selected imports."""
    names = [
        ("imports-table", "data"),
        ("imports-table", "selected_rows"),
        ("imports-table", "selected_row_ids"),
        ("launches-table", "data"),
        ("launches-table", "selected_rows"),
        ("launches-table", "selected_row_ids"),
        ("delete-status", "children"),
    ]
    return callback_body(
        ".." + "...".join(f"{i}.{p}" for i, p in names) + "..",
        [{"id": i, "property": p} for i, p in names],
        [{"id": "confirm-delete", "property": "submit_n_clicks", "value": 1}],
        [{"id": "imports-table", "property": "selected_row_ids", "value": [import_id]}],
        ["confirm-delete.submit_n_clicks"],
    )


def upload_body(file_name: str, raw: bytes) -> bytes:
    data_url = "data:application/octet-stream;base64," + base64.b64encode(raw).decode()
    return callback_body(
        "..upload-status.children...upload.contents..",
        [{"id": "upload-status", "property": "children"}, {"id": "upload", "property": "contents"}],
        [{"id": "upload", "property": "contents", "value": [data_url]}],
        [{"id": "upload", "property": "filename", "value": [file_name]}],
        ["upload.contents"],
    )


JSON = {"Content-Type": "application/json"}


# ---- Host and Origin ----------------------------------------------------------------------------------------------


def test_foreign_host_is_refused_and_own_names_are_served(server_factory, seeded_db):
    server = server_factory(seeded_db)
    for host in ("evil.example", f"evil.example:{server.port}", "rebind.attacker.test."):
        status, _, body = server.request("GET", "/", headers={"Host": host})
        assert status == 400, host
        assert b"Host" in body and b"<" not in body  # plain text, nothing echoed as HTML
    for host in (f"127.0.0.1:{server.port}", f"localhost:{server.port}", f"[::1]:{server.port}"):
        status, _, _ = server.request("GET", "/_dash-layout", headers={"Host": host})
        assert status == 200, host
    # the refusal covers every route, the callback endpoint included
    status, _, _ = server.request("POST", "/_dash-update-component", delete_body(1), {**JSON, "Host": "evil.example"})
    assert status == 400
    assert import_count(seeded_db) == 1


def test_forged_cross_origin_delete_is_refused_and_deletes_nothing(server_factory, seeded_db):
    server = server_factory(seeded_db)
    own = f"http://127.0.0.1:{server.port}"
    forged = [
        {"Origin": "http://evil.example"},
        {"Origin": "null"},  # sandboxed iframe or file: page
        {"Origin": f"http://127.0.0.1:{server.port + 1}"},  # another local service's page
        {"Origin": own, "Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-site"},
        {"Referer": "http://evil.example/page"},
    ]
    for headers in forged:
        status, _, body = server.request("POST", "/_dash-update-component", delete_body(1), {**JSON, **headers})
        assert status == 403, headers
        assert b"refused" in body
        assert import_count(seeded_db) == 1, headers
    # the same request from the dashboard's own page goes through: the refusals above were the Origin's doing
    headers = {**JSON, "Origin": own, "Sec-Fetch-Site": "same-origin"}
    status, _, body = server.request("POST", "/_dash-update-component", delete_body(1), headers)
    assert status == 200, body
    assert import_count(seeded_db) == 0


# ---- the token ----------------------------------------------------------------------------------------------------


def test_non_loopback_bind_requires_the_printed_token(server_factory, seeded_db):
    server = server_factory(seeded_db, "--host", "0.0.0.0")
    token = server.printed_token()
    assert len(token) >= 32
    for headers in ({}, {"Authorization": "Bearer wrong-token-wrong-token"}, {"Cookie": "tracekit_token_x=1"}):
        status, _, body = server.request("GET", "/_dash-layout", headers=headers)
        assert status == 401, headers
        assert b"token" in body
    status, _, _ = server.request("GET", "/?token=not-the-token")
    assert status == 401
    status, _, _ = server.request("POST", "/_dash-update-component", delete_body(1), JSON)
    assert status == 401
    assert import_count(seeded_db) == 1

    # the printed URL: a page view sets the cookie and drops the token from the address
    status, headers, _ = server.request("GET", f"/library?a=1&token={token}", headers={"Accept": "text/html"})
    assert status == 303
    assert headers["Location"] == "/library?a=1"
    cookie = headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie
    name_value = cookie.split(";")[0]
    assert name_value.split("=", 1)[1] == token
    for headers in ({"Cookie": name_value}, {"Authorization": f"Bearer {token}"}):
        status, _, _ = server.request("GET", "/_dash-layout", headers=headers)
        assert status == 200, headers
    status, _, body = server.request("GET", f"/_dash-layout?token={token}")  # a script's GET with ?token=
    assert status == 200 and body.startswith(b"{")
    # the JSON API: refused without the token, answered (whatever it answers) with it
    assert server.request("GET", "/api/launches/1/analysis")[0] == 401
    status, _, _ = server.request("GET", "/api/launches/1/analysis", headers={"Authorization": f"Bearer {token}"})
    assert status not in (400, 401, 403)
    # the token does not excuse a forged origin
    forged = {**JSON, "Cookie": name_value, "Origin": "http://evil.example"}
    status, _, _ = server.request("POST", "/_dash-update-component", delete_body(1), forged)
    assert status == 403
    assert import_count(seeded_db) == 1
    # and the access log never holds it
    assert token not in server.log_path.read_text().split("?token=", 1)[1].split("\n", 1)[1]


def test_gunicorn_by_hand_on_all_interfaces_without_a_token_serves_nothing(server_factory, seeded_db):
    server = server_factory(seeded_db, raw=True)
    status, _, body = server.request("GET", "/_dash-layout")
    assert status == 403
    assert b"TRACEKIT_TOKEN" in body
    status, _, _ = server.request("POST", "/_dash-update-component", delete_body(1), JSON)
    assert status == 403
    assert import_count(seeded_db) == 1


def test_explicit_token_on_loopback_is_required(server_factory, seeded_db):
    token = "a-fixed-token-for-this-test-0123456789"
    server = server_factory(seeded_db, env={"TRACEKIT_TOKEN": token})
    assert server.request("GET", "/_dash-layout")[0] == 401
    assert server.request("GET", "/_dash-layout", headers={"Authorization": f"Bearer {token}"})[0] == 200
    assert token not in server.log_path.read_text()  # given by the user: not printed back


# ---- sizes --------------------------------------------------------------------------------------------------------


def send_raw(port: int, head: bytes, body_chunks, timeout_s: float = 60) -> tuple[int | None, int]:
    """Send a request piece by piece; returns (status, bytes of body sent) once the server answers or hangs up."""
    sent = 0
    with socket.create_connection(("127.0.0.1", port), timeout=timeout_s) as sock:
        sock.sendall(head)
        try:
            for chunk in body_chunks:
                sock.sendall(chunk)
                sent += len(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_WR)
        answer = b""
        try:
            while chunk := sock.recv(65536):
                answer += chunk
        except (ConnectionResetError, TimeoutError):
            pass
    match = re.match(rb"HTTP/1\.[01] (\d{3})", answer)
    return (int(match.group(1)) if match else None), sent


def test_oversized_upload_is_refused_from_its_content_length_with_rss_bounded(server_factory, seeded_db):
    server = server_factory(seeded_db)
    before = server.peak_rss_bytes()
    declared = 2 * 10**9
    head = (
        f"POST /_dash-update-component HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {declared}\r\n\r\n"
    ).encode()
    status, sent = send_raw(server.port, head, (b"x" * (1 << 20) for _ in range(64)))
    assert status == 413
    assert server.peak_rss_bytes() - before < RSS_GROWTH_LIMIT_BYTES
    assert import_count(seeded_db) == 1


def test_streamed_upload_without_length_is_cut_at_the_cap_with_rss_bounded(server_factory, seeded_db):
    server = server_factory(seeded_db)
    before = server.peak_rss_bytes()
    head = (
        f"POST /_dash-update-component HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
        "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    ).encode()
    piece = b"A" * (1 << 20)
    chunks = (b"%x\r\n" % len(piece) + piece + b"\r\n" for _ in range(300))  # 300 MB if nobody stops it
    status, sent = send_raw(server.port, head, chunks)
    assert status == 413
    assert sent < 100 * 2**20  # refused while streaming, not after the whole body
    assert server.peak_rss_bytes() - before < RSS_GROWTH_LIMIT_BYTES
    assert import_count(seeded_db) == 1


def test_gzip_bomb_upload_stops_inflating_at_the_cap(server_factory, seeded_db):
    server = server_factory(seeded_db)
    before = server.peak_rss_bytes()
    header = b"# tracekit-warp-trace v1\nlaunch,sm_id,block_id,warp_in_block,start_ns,end_ns\n"
    # 1 GiB of text in about 1 MB: 1,024 gzip members of 1 MiB of zeros, which a gzip reader inflates as one stream
    # (compressing 1 GiB as one member took the test 8 s)
    bomb = gzip.compress(header) + gzip.compress(b"0" * (1 << 20), compresslevel=9) * 1024
    assert len(bomb) < UPLOAD_CAP_MB * 10**6 / 1.4
    status, _, body = server.request("POST", "/_dash-update-component", upload_body("bomb.csv.gz", bomb), JSON)
    assert status == 200
    text = json.loads(body)["response"]["upload-status"]["children"]
    message = json.dumps(text)
    assert "bomb.csv.gz" in message and f"inflates past {UPLOAD_CAP_MB * 10**6:,} bytes" in message
    assert server.peak_rss_bytes() - before < RSS_GROWTH_LIMIT_BYTES
    assert list(server.tmp.rglob("*")) == [] or all(p.is_dir() for p in server.tmp.rglob("*"))
    assert import_count(seeded_db) == 1


# ---- read-only ----------------------------------------------------------------------------------------------------


def test_read_only_server_has_no_upload_or_delete(server_factory, seeded_db, write_warp_trace, synthetic_warps):
    server = server_factory(seeded_db, "--read-only")
    raw = write_warp_trace(server.tmp.parent / "new.csv", "new_kernel", synthetic_warps(4)).read_bytes()
    for body in (upload_body("new.csv", raw), delete_body(1)):
        status, _, _ = server.request("POST", "/_dash-update-component", body, JSON)
        assert status != 200
    assert server.request("POST", "/anything-else", b"{}", JSON)[0] == 405
    assert import_count(seeded_db) == 1
    # pages still render (the router callback is a POST too)
    routing = callback_body(
        "page.children",
        {"id": "page", "property": "children"},
        [
            {"id": "url", "property": "pathname", "value": "/library"},
            {"id": "url", "property": "search", "value": ""},
        ],
        [],
        ["url.pathname"],
    )
    status, _, body = server.request("POST", "/_dash-update-component", routing, JSON)
    assert status == 200
    page = body.decode()
    assert "seed_kernel" in page and "read-only" in page and "delete-imports" not in page


def test_protection_covers_routes_added_after_the_app(tmp_path):
    """A route registered later on `app.server` (as the JSON API is) is behind the same checks."""
    from tracekit.dashboards.app import create_app
    from tracekit.dashboards.security import Settings

    token = "t" * 40
    app = create_app(f"sqlite:///{tmp_path / 's.sqlite'}", settings=Settings(token=token))

    @app.server.route("/api/later")
    def later():
        return {"ok": True}

    client = app.server.test_client()
    assert client.get("/api/later").status_code == 401
    assert client.get("/api/later", headers={"Host": "evil.example"}).status_code == 400
    assert client.get(f"/api/later?token={token}").get_json() == {"ok": True}
    assert client.get("/api/later", headers={"Authorization": f"Bearer {token}"}).status_code == 200
    response = client.get("/api/later", headers={"Authorization": f"Bearer {token}"})
    assert response.headers["X-Frame-Options"] == "DENY" and response.headers["Referrer-Policy"] == "no-referrer"
    # an unknown path is refused before routing says 404
    assert client.get("/no/such/path").status_code == 401
    assert urllib.parse.quote(token) == token


# ---- uploads: a drop is all or nothing -----------------------------------------------------------------------------


def test_a_drop_with_one_bad_file_imports_none_of_them(sqlite_store, write_warp_trace, synthetic_warps, tmp_path):
    from tracekit.dashboards.pages_upload import import_uploads

    def data_url(raw: bytes) -> str:
        return "data:application/octet-stream;base64," + base64.b64encode(raw).decode()

    good = [write_warp_trace(tmp_path / f"g{i}.csv", f"good{i}", synthetic_warps(4)).read_bytes() for i in range(2)]
    bad = b"# tracekit-warp-trace v1\nlaunch,sm_id,block_id,warp_in_block,start_ns,end_ns\n0,-1,0,0,1,2\n"
    statuses = import_uploads(
        TraceAnalysis(sqlite_store),
        [("g0.csv", data_url(good[0])), ("g1.csv", data_url(good[1])), ("bad.csv", data_url(bad))],
        10**6,
    )
    assert [s.outcome for s in statuses] == ["not imported", "not imported", "error"]
    assert statuses[2].message == "bad.csv:3 (column 'sm_id'): negative SM id"
    assert statuses[0].message == "g0.csv was not imported: bad.csv failed, and a drop is all or nothing"
    assert sqlite_store.imports().height == 0
    statuses = import_uploads(
        TraceAnalysis(sqlite_store), [("g0.csv", data_url(good[0])), ("g1.csv", data_url(good[1]))], 10**6
    )
    assert [s.outcome for s in statuses] == ["imported", "imported"]
    assert sqlite_store.imports()["name"].to_list() == ["g0.csv", "g1.csv"]


# ---- a real browser through the token ------------------------------------------------------------------------------


@pytest.mark.browser
def test_browser_opens_the_printed_url_and_the_dashboard_works_through_the_cookie(
    server_factory, seeded_db, browser, write_warp_trace, synthetic_warps, tmp_path
):
    """Chromium opens `/?token=...` once; the cookie then carries every request the Dash renderer makes (layout,
    callbacks, assets): the library lists the stored import and an upload goes through. Without the token, the
    page is the refusal."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.wait import WebDriverWait

    server = server_factory(seeded_db, "--host", "0.0.0.0")
    token = server.printed_token()
    base = f"http://127.0.0.1:{server.port}"
    browser.delete_all_cookies()
    browser.get(f"{base}/library")
    assert "access token" in browser.find_element(By.TAG_NAME, "body").text
    browser.get(f"{base}/library?token={token}")
    WebDriverWait(browser, 60).until(
        lambda d: d.find_elements(By.CSS_SELECTOR, "#imports-table td[data-dash-column=name]")
    )
    assert "token" not in browser.current_url
    names = [c.text for c in browser.find_elements(By.CSS_SELECTOR, "#imports-table td[data-dash-column=name]")]
    assert names == ["seed.csv"]
    browser.get(f"{base}/upload")
    upload = write_warp_trace(tmp_path / "browser.csv", "browser_kernel", synthetic_warps(4))
    file_input = WebDriverWait(browser, 60).until(lambda d: d.find_element(By.CSS_SELECTOR, "#upload input[type=file]"))
    file_input.send_keys(str(upload))
    WebDriverWait(browser, 60).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#upload-status-table tbody tr"))
    assert "browser.csv imported as import" in browser.find_element(By.ID, "upload-status-table").text
    assert import_count(seeded_db) == 2


def test_threaded_server_has_the_same_protection_and_logs_no_token(server_factory, seeded_db):
    """`tracekit serve --host 0.0.0.0` without --workers (one waitress process): token, Host and Origin checks
    hold, and the token is in its output once, in the URL printed to open, never beside a request."""
    server = server_factory(seeded_db, "--host", "0.0.0.0", "--threaded")
    token = server.printed_token()
    assert server.request("GET", "/_dash-layout")[0] == 401
    assert server.request("GET", "/_dash-layout", headers={"Host": "evil.example"})[0] == 400
    status, headers, _ = server.request("GET", f"/?token={token}", headers={"Accept": "text/html"})
    assert status == 303 and "HttpOnly" in headers["Set-Cookie"]
    forged = {**JSON, "Authorization": f"Bearer {token}", "Origin": "http://evil.example"}
    assert server.request("POST", "/_dash-update-component", delete_body(1), forged)[0] == 403
    assert import_count(seeded_db) == 1
    time.sleep(0.5)
    log = server.log_path.read_text()
    assert log.count(token) == 1  # the printed URL, once
    assert log.splitlines()[0].startswith("tracekit: dashboard on http://")  # and that is where it is
    assert all("[redacted]" in line for line in log.splitlines()[1:] if "token=" in line)
