"""`tracekit serve` refuses a bad store or option with one line, before anything listens."""

from __future__ import annotations

import http.client
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path


def serve(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tracekit.cli.main", "serve", *args], capture_output=True, text=True, timeout=60
    )


def test_unknown_store_url_is_one_line_and_exit_code_2():
    result = serve("--db", "nosuchdialect://x", "--port", "1")
    assert result.returncode == 2
    assert result.stderr.startswith("tracekit: error: cannot use store URL 'nosuchdialect://x'")
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr


def test_zero_workers_is_refused():
    result = serve("--db", "sqlite:///:memory:", "--workers", "0")
    assert result.returncode == 2
    assert "--workers" in result.stderr and "Traceback" not in result.stderr


class Served:
    """A `tracekit <command> ...` process serving the dashboard on a free port, with its output in a file."""

    def __init__(self, tmp_path: Path, *args: str):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = tmp_path / "serve.log"
        self.log = open(self.log_path, "w")  # noqa: SIM115 - closed in stop()
        environment = {key: value for key, value in os.environ.items() if key != "TRACEKIT_TOKEN"}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tracekit.cli.main", *args, "--port", str(self.port)],
            stdout=self.log,
            stderr=subprocess.STDOUT,
            env=environment,
            cwd=tmp_path,
        )

    def wait_ready(self, timeout_s: float = 120) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"exited with {self.process.returncode}:\n{self.log_path.read_text()}")
            try:
                with urllib.request.urlopen(f"{self.url}/_dash-layout", timeout=2):
                    return
            except OSError:
                time.sleep(0.2)
        raise AssertionError(f"no answer in {timeout_s} s:\n{self.log_path.read_text()}")

    def request(self, method: str, path: str, body: bytes | None = None, **headers: str):
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        connection.request(method, path, body=body, headers=headers)
        response = connection.getresponse()
        content = response.read()
        connection.close()
        return response, content

    def stop(self) -> str:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()
        return self.log_path.read_text()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def assert_production_server_with_security(served: Served) -> str:
    """The pages come from waitress (not Flask's development server) and every security check still answers."""
    response, body = served.request("GET", "/library")
    assert response.status == 200 and response.getheader("Server") == "tracekit"
    assert response.getheader("X-Frame-Options") == "DENY"
    response, body = served.request("GET", "/_dash-layout", Host="evil.example")
    assert response.status == 400 and b"DNS rebinding" in body
    response, body = served.request(
        "POST", "/_dash-update-component", b"{}", Origin="http://evil.example", **{"Content-Type": "application/json"}
    )
    assert response.status == 403 and b"cross-origin" in body
    log = served.stop()
    assert "development server" not in log and "WARNING" not in log
    assert "werkzeug" not in log.lower()
    return log


def test_serve_runs_waitress_with_every_security_check(tmp_path):
    served = Served(tmp_path, "serve", "--db", f"sqlite:///{tmp_path / 'store.sqlite'}", "--max-upload-mb", "0.01")
    try:
        served.wait_ready()
        # A body over the 10 kB cap (and its base64 and 1 MiB JSON allowance) is refused from its length alone.
        connection = http.client.HTTPConnection("127.0.0.1", served.port, timeout=30)
        connection.putrequest("POST", "/_dash-update-component")
        connection.putheader("Content-Type", "application/json")
        connection.putheader("Content-Length", str(50_000_000))
        connection.endheaders()
        assert connection.getresponse().status == 413
        connection.close()
    finally:
        if served.process.poll() is None:
            log = assert_production_server_with_security(served)
            assert log.startswith("tracekit: dashboard on http://127.0.0.1:")
