"""Fixtures for the dashboard tests: a real `tracekit serve` process, headless Chromium, warp-trace files.

Browser and server tests skip outside CI with the reason printed, and fail in CI (where `CI` is set).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from tests.helpers import headless_chromium, skip_or_fail

POSTGRES_ADMIN_URL = os.environ.get("TRACEKIT_TEST_POSTGRES", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
SHOTS_DIR = Path("/tmp/tracekit_shots")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Server:
    """`tracekit serve` in a subprocess; `url` is its base address."""

    def __init__(self, db_url: str, workers: int | None, log_path: Path, env: dict[str, str] | None = None):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        command = [sys.executable, "-m", "tracekit.cli.main", "serve", "--db", db_url, "--port", str(self.port)]
        if workers:
            command += ["--workers", str(workers)]
        self.log_path = log_path
        self.log = open(log_path, "w")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(
            command, stdout=self.log, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})}
        )

    def wait_ready(self, timeout_s: float = 60) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"tracekit serve exited with {self.process.returncode}:\n{self.log_path.read_text()}"
                )
            try:
                with urllib.request.urlopen(f"{self.url}/_dash-layout", timeout=2) as response:
                    if response.status == 200:
                        return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError(f"tracekit serve did not answer in {timeout_s} s:\n{self.log_path.read_text()}")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()


@pytest.fixture(scope="module")
def start_server(tmp_path_factory) -> Iterator[Callable[..., Server]]:
    """`start_server(db_url, workers=None, env=None)`: a running `tracekit serve` (with `env` added to its
    environment), stopped at the end of the module."""
    servers: list[Server] = []

    def start(db_url: str, workers: int | None = None, env: dict[str, str] | None = None) -> Server:
        server = Server(db_url, workers, tmp_path_factory.mktemp("serve") / "serve.log", env)
        servers.append(server)
        server.wait_ready()
        return server

    yield start
    for server in servers:
        server.stop()


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    """One headless Chromium for the whole module, with a fresh profile."""
    driver = headless_chromium(tmp_path_factory.mktemp("chromium-profile"))
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Callable[[object, str], Path]:
    """`shots(driver, name)`: a screenshot into the module's tmp dir, and the first of each name also into
    /tmp/tracekit_shots/ for a person to look at."""
    folder = tmp_path_factory.mktemp("shots")
    SHOTS_DIR.mkdir(parents=True, exist_ok=True)

    def take(driver, name: str) -> Path:
        path = folder / f"{name}.png"
        driver.save_screenshot(str(path))
        shutil.copy(path, SHOTS_DIR / path.name)
        return path

    return take


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A store URL for a fresh schema in the real PostgreSQL server (dropped afterwards); the schema reaches
    every process, gunicorn workers included, through the URL's `options=-csearch_path=...`."""
    try:
        admin = create_engine(POSTGRES_ADMIN_URL)
        with admin.connect() as connection:
            connection.execute(text("select 1"))
    except Exception as exc:  # noqa: BLE001 - any connection failure means no server
        skip_or_fail(f"no PostgreSQL at {POSTGRES_ADMIN_URL}: {str(exc).splitlines()[0]}")
    schema = f"tk_{uuid.uuid4().hex[:12]}"
    with admin.begin() as connection:
        connection.execute(text(f"create schema {schema}"))
    try:
        yield f"{POSTGRES_ADMIN_URL}?options=-csearch_path%3D{schema}"
    finally:
        with admin.begin() as connection:
            connection.execute(text(f"drop schema {schema} cascade"))
        admin.dispose()


def _synthetic_warps(
    blocks: int, sm_count: int = 8, blocks_per_sm: int = 2, warps_per_block: int = 4, block_ns: int = 1000
) -> list[tuple[int, int, int, int, int]]:
    """(sm_id, block_id, warp_in_block, start_ns, end_ns) of a regular schedule, relative to 0: blocks fill
    `blocks_per_sm` slots on each SM in waves; warp w of a block starts 10*w ns after the block and runs
    `block_ns` + 7*(block % 5) ns."""
    rows = []
    per_wave = sm_count * blocks_per_sm
    for block in range(blocks):
        wave, place = divmod(block, per_wave)
        sm_id = place % sm_count
        block_start = wave * (block_ns + 100)
        for warp in range(warps_per_block):
            start = block_start + 10 * warp
            rows.append((sm_id, block, warp, start, start + block_ns + 7 * (block % 5)))
    return rows


@pytest.fixture(scope="session")
def synthetic_warps() -> Callable[..., list[tuple[int, int, int, int, int]]]:
    """`synthetic_warps(blocks, ...)`: the rows of a regular schedule (see `_synthetic_warps`)."""
    return _synthetic_warps


@pytest.fixture(scope="session")
def write_warp_trace() -> Callable[..., Path]:
    """`write_warp_trace(path, kernel, warps)`: a `tracekit-warp-trace v1` CSV of `synthetic_warps` rows, with
    times shifted to a `%globaltimer`-like origin."""

    def write(
        path: Path, kernel: str, warps: list[tuple[int, int, int, int, int]], origin_ns: int = 1_700_000_000_000_000_000
    ) -> Path:
        blocks = max(row[1] for row in warps) + 1
        lines = [
            "# tracekit-warp-trace v1",
            f"# kernel: {kernel}",
            "# device_name: Test GPU",
            "# sm_count: 8",
            "# max_warps_per_sm: 64",
            f"# grid: {blocks},1,1",
            "# block: 128,1,1",
            "launch,sm_id,block_id,warp_in_block,start_ns,end_ns",
        ]
        lines += [
            f"0,{sm},{block},{warp},{origin_ns + start},{origin_ns + end}" for sm, block, warp, start, end in warps
        ]
        path.write_text("\n".join(lines) + "\n")
        return path

    return write
