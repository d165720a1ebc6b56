"""Fixtures for the report tests: warp-trace files written here, the CLI as a user runs it, headless Chromium.

The browser fixture skips outside CI with the reason printed and fails in CI (where `CI` is set).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers import headless_chromium, run_cli

HOSTILE_NAME = "<img src=x onerror=alert(1)>"

# (launch, sm_id, block_id, warp_in_block, start_ns, end_ns)
Warp = tuple[int, int, int, int, int, int]


def write_trace(
    path: Path, kernel: str, warps: list[Warp], sm_count: int = 2, grid: str = "4,1,1", block: str = "64,1,1"
) -> Path:
    """A `tracekit-warp-trace v1` CSV (the layout documented in importers/warp_trace/reader.py)."""
    header = [
        "# tracekit-warp-trace v1",
        f"# kernel: {kernel}",
        "# device_name: NVIDIA H100 80GB HBM3",
        "# compute_capability: 9.0",
        f"# sm_count: {sm_count}",
        "# sm_clock_hz: 1980000000",
        "# max_warps_per_sm: 64",
        f"# grid: {grid}",
        f"# block: {block}",
        "# registers_per_thread: 32",
        "# static_smem_bytes: 0",
        "# dynamic_smem_bytes: 0",
        "launch,sm_id,block_id,warp_in_block,start_ns,end_ns",
    ]
    path.write_text("\n".join(header + [",".join(map(str, warp)) for warp in warps]) + "\n")
    return path


def make_tiny_warps(launch: int = 0, stretch: float = 1.0) -> list[Warp]:
    """4 blocks of 2 warps on 2 SMs: blocks 0 and 1 run 0-1000 ns; then block 2 runs 1000-2000 on SM 0 and block 3
    1000-3000 on SM 1. Times scale with `stretch` (a slower version of the same kernel)."""
    raw = [
        (0, 0, 0, 0, 1000),
        (0, 0, 1, 0, 1000),
        (1, 1, 0, 0, 1000),
        (1, 1, 1, 0, 1000),
        (0, 2, 0, 1000, 2000),
        (0, 2, 1, 1000, 2000),
        (1, 3, 0, 1000, 3000),
        (1, 3, 1, 1000, 3000),
    ]
    return [
        (launch, sm, block, warp, round(start * stretch), round(end * stretch)) for sm, block, warp, start, end in raw
    ]


@pytest.fixture
def tiny_warps() -> Callable[..., list[Warp]]:
    """`tiny_warps(launch=0, stretch=1.0)`: the hand-checkable 8-warp launch described in `make_tiny_warps`."""
    return make_tiny_warps


@pytest.fixture
def trace_file(tmp_path: Path) -> Callable[..., Path]:
    """`trace_file(name, kernel, warps, **header)`: a warp trace written into the test's folder."""

    def make(name: str, kernel: str, warps: list[Warp], **header) -> Path:
        return write_trace(tmp_path / name, kernel, warps, **header)

    return make


@pytest.fixture
def db_path(tmp_path: Path) -> str:
    return str(tmp_path / "store.sqlite")


def run_tracekit(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """The CLI as a user runs it (`tests.helpers.run_cli`), so exit codes and error lines are what a user sees."""
    env = {**os.environ, "COLUMNS": "220"}  # rich tables on one line per row when piped
    return run_cli(*args, cwd=cwd, env=env)


@pytest.fixture
def cli() -> Callable[..., subprocess.CompletedProcess]:
    return run_tracekit


@pytest.fixture(scope="session")
def browser(tmp_path_factory):
    """Headless Chromium through Selenium 4 and Debian's chromedriver."""
    driver = headless_chromium(tmp_path_factory.mktemp("chromium-profile"))
    try:
        yield driver
    finally:
        driver.quit()
