"""Helpers the test folders share (importable as `tests.helpers`; pytest puts the repo root on sys.path)."""

from __future__ import annotations

import atexit
import functools
import gzip
import io
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

import polars as pl
import pytest

from tracekit.importers.units import normalize_unit

IN_CI = bool(os.environ.get("CI"))
REPO = Path(__file__).resolve().parents[1]
# ../shared, beside the checkout: real exports and examples from elsewhere, too large or not ours to commit. A test
# that reads it skips with the reason where it is absent (skip_or_fail) and fails in CI, which has it.
SHARED = REPO.parent / "shared"
REAL_EXPORTS = SHARED / "real_exports"
REGION_EXAMPLES = SHARED / "region_examples"
# TRACEKIT_TEST_CLI=process: every `run_cli` call starts a real `tracekit` process (as each file's first call does).
CLI_PROCESSES_ONLY = os.environ.get("TRACEKIT_TEST_CLI") == "process"
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--window-size=1400,1800",
]
METRIC_COLUMNS = ["launch_id", "section", "name", "unit", "value", "text_value", "kind"]


def skip_or_fail(reason: str) -> None:
    """Skip with a printed reason outside CI; fail in CI, where a missing server or browser must not pass."""
    if IN_CI:
        pytest.fail(f"required in CI: {reason}")
    print(f"SKIP: {reason}")
    pytest.skip(reason)


# HTA's CUPTI range-profiler test trace (A100, 77 kernels with SASS counters), in ../shared/real_exports/
HTA_CUPTI_TRACE = "kineto_gz_hta_cupti_range_profiler.json.gz"


def real_export_path(name: str) -> Path:
    """A file in ../shared/real_exports/, or a skip (a failure in CI) when that folder is absent."""
    path = REAL_EXPORTS / name
    if not path.exists():
        skip_or_fail(f"{path} is absent (the shared real exports live beside the checkout)")
    return path


def headless_chromium(profile_dir: Path):
    """Debian's Chromium through Selenium 4 and chromedriver, headless, with a fresh profile."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    chromedriver = shutil.which("chromedriver")
    if not chromium or not chromedriver:
        skip_or_fail("browser tests need chromium and chromedriver (apt-get install chromium chromium-driver)")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        skip_or_fail("browser tests need selenium 4 (pip install 'selenium>=4.20')")
    options = webdriver.ChromeOptions()
    for flag in [*CHROMIUM_FLAGS, f"--user-data-dir={profile_dir}"]:
        options.add_argument(flag)
    options.binary_location = chromium
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(chromedriver))
    driver.set_page_load_timeout(60)
    return driver


@functools.cache
def plain_report(path: Path) -> Path:
    """A .ncu-rep as NVIDIA's ncu_report loads it: a gzipped one (sample_traces/h100/samples.ncu-rep.gz) inflated once
    per process into a temporary folder, removed at exit (the library reads no gzip; `tracekit import` inflates
    it itself)."""
    if path.suffix != ".gz":
        return path
    folder = Path(tempfile.mkdtemp(prefix="tk-test-ncu-rep-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    plain = folder / path.name.removesuffix(".gz")
    with gzip.open(path, "rb") as source, plain.open("wb") as target:
        shutil.copyfileobj(source, target)
    return plain


def ncu_rep_action(path: Path):
    """The first launch of a real .ncu-rep, read with NVIDIA's ncu_report module (the independent view)."""
    ncu_report = pytest.importorskip("ncu_report")
    return ncu_report.load_report(str(plain_report(path))).range_by_idx(0).action_by_idx(0)


def ncu_rep_metrics(action) -> pl.DataFrame:
    """ncu_report -> the long metrics frame, units scaled to base units as the importers do."""
    rows = []
    for name in action.metric_names():
        value = action[name].value()
        if isinstance(value, int | float) and not isinstance(value, bool):
            unit, factor = normalize_unit(action[name].unit())
            rows.append((1, None, name, unit, float(value) * factor, None, "float"))
        else:
            rows.append((1, None, name, action[name].unit(), None, None if value is None else str(value), "text"))
    return pl.DataFrame(rows, schema=METRIC_COLUMNS, orient="row")


# The test files whose first `run_cli` call has started a real process, in this worker.
_FILES_WITH_A_PROCESS: set[str] = set()


def _first_call_of_its_file() -> bool:
    frame = sys._getframe(2)
    while frame is not None and not Path(frame.f_code.co_filename).name.startswith("test_"):
        frame = frame.f_back  # through the file's own wrapper or a conftest fixture, to the test
    name = frame.f_code.co_filename if frame is not None else ""
    first = name not in _FILES_WITH_A_PROCESS
    _FILES_WITH_A_PROCESS.add(name)
    return first


def run_cli(
    *args: str,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    real_process: bool | None = None,
    timeout: float = 600,
) -> subprocess.CompletedProcess[str]:
    """`tracekit ARGS` as a user runs it: its exit code, stdout and stderr, with `env` as the whole environment.

    A real `python -m tracekit.cli.main` process for the first call of each test file (`real_process=None`), where
    `real_process` is True, and for every call with TRACEKIT_TEST_CLI=process. Otherwise in this process, through
    `tracekit.cli.main.main` (what that process runs), with argv, environment, working directory, streams, temp dir,
    the signal handlers main() installs and the two consoles (made anew for the environment, as a process start
    makes them) put back after: an interpreter start per call was a fifth of the suite's CPU time.
    """
    if real_process is None:
        real_process = _first_call_of_its_file()
    if real_process or CLI_PROCESSES_ONLY:
        return subprocess.run(
            [sys.executable, "-m", "tracekit.cli.main", *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=cwd,
            env=None if env is None else dict(env),
            stdin=subprocess.DEVNULL,
        )
    from tracekit.cli import common
    from tracekit.cli.main import main

    saved_env, saved_cwd, saved_argv = dict(os.environ), os.getcwd(), sys.argv
    saved_streams, saved_tempdir = (sys.stdin, sys.stdout, sys.stderr), tempfile.tempdir
    handlers = {number: signal.getsignal(number) for number in (signal.SIGTERM, signal.SIGHUP)}
    out, err = io.StringIO(), io.StringIO()
    try:
        if env is not None:
            os.environ.clear()
            os.environ.update(env)
        if cwd is not None:
            os.chdir(cwd)
        sys.argv = ["tracekit", *args]
        sys.stdin, sys.stdout, sys.stderr = io.StringIO(), out, err
        tempfile.tempdir = None  # gettempdir() reads TMPDIR afresh
        for console in (common.console, common.err_console):  # Rich reads COLUMNS and the like when made
            console.__init__(stderr=console.stderr, soft_wrap=console.soft_wrap)
        try:
            main()
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved_streams
        sys.argv, tempfile.tempdir = saved_argv, saved_tempdir
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        for number, handler in handlers.items():  # None: not installed from Python, so main() left it alone
            if handler is not None:
                signal.signal(number, handler)
        for console in (common.console, common.err_console):
            console.__init__(stderr=console.stderr, soft_wrap=console.soft_wrap)
    return subprocess.CompletedProcess(["tracekit", *args], code, out.getvalue(), err.getvalue())


# ---- the recorded source-lines set (sample_traces/source_lines, issue 45) ------------------------------------------
SOURCE_LINES_SET = REPO / "sample_traces" / "source_lines"
HOSTILE_SOURCE = "<script>alert(1)</script><img src=x onerror=alert(2)>"


def marked_line(source: Path, mark: str) -> int:
    """The line number of the case's `[case: ...]` comment: the ground truth the recorded set is judged on."""
    [number] = [i for i, line in enumerate(source.read_text().splitlines(), start=1) if mark in line]
    return number


def hostile_source_csv(folder: Path) -> Path:
    """reduce1's Source-page CSV with line 33's text replaced by markup."""
    lines = (
        gzip.decompress((SOURCE_LINES_SET / "h200" / "csv" / "reduce1.cuda_sass.csv.gz").read_bytes())
        .decode()
        .splitlines()
    )
    at = next(i for i, line in enumerate(lines) if line.startswith('"33",'))
    cells = lines[at].split('","')
    cells[1] = HOSTILE_SOURCE.replace('"', '""')
    lines[at] = '","'.join(cells)
    path = folder / "hostile.csv"
    path.write_text("\n".join(lines))
    return path
