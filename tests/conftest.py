"""Shared fixtures: real SQLite and PostgreSQL stores, paths to real exports and samples.

A test that needs a server or a browser skips outside CI with the reason printed, and fails in CI
(where `CI` is set), so a missing service can never pass silently there.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

# Under pytest-xdist each worker has a core to itself: polars' thread pool (a thread per core by default) would only
# contend with the other workers' (5% of the suite's CPU time). The `tracekit` processes the tests start inherit it.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.setdefault("POLARS_MAX_THREADS", "1")

import pytest  # noqa: E402
from sqlalchemy import create_engine, text  # noqa: E402

from tests.helpers import IN_CI, REAL_EXPORTS, skip_or_fail  # noqa: E402
from tracekit.store import Store  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "sample_traces"
POSTGRES_ADMIN_URL = os.environ.get("TRACEKIT_TEST_POSTGRES", "postgresql+psycopg://postgres@127.0.0.1:5432/test")


@pytest.fixture(scope="session", autouse=True)
def _no_user_store(tmp_path_factory) -> Iterator[None]:
    """No test, nor a CLI process a test starts, touches the user's own store: the default store's data folder
    (XDG) lies in this session's temp dir (one per xdist worker) and a TRACEKIT_DB from the shell is dropped."""
    patch = pytest.MonkeyPatch()
    patch.setenv("XDG_DATA_HOME", str(tmp_path_factory.mktemp("xdg-data")))
    patch.delenv("TRACEKIT_DB", raising=False)
    yield
    patch.undo()


@pytest.fixture
def real_export():
    """`real_export("file")`: a path in ../shared/real_exports/, or a skip when that folder is absent."""

    def get(name: str) -> Path:
        path = REAL_EXPORTS / name
        if not path.exists():
            skip_or_fail(f"{path} is absent (the shared real exports live beside the checkout)")
        return path

    return get


@pytest.fixture
def sample_trace():
    """`sample_trace("file")`: a committed sample under sample_traces/ (fails in CI when missing)."""

    def get(name: str) -> Path:
        path = SAMPLES / name
        if not path.exists():
            skip_or_fail(f"{path} is missing: run sample_traces/make_samples.sh on a GPU machine")
        return path

    return get


@pytest.fixture(scope="session")
def empty_sqlite_store_file(tmp_path_factory) -> Path:
    """A new store's file, migrated to the head once per worker (Store.open runs every migration on a new file:
    0.14 s, paid by 200-odd tests)."""
    path = tmp_path_factory.mktemp("empty-store") / "store.sqlite"
    Store.open(f"sqlite:///{path}").engine.dispose()  # closed: the file holds everything, no -wal beside it
    return path


@pytest.fixture
def sqlite_store(tmp_path: Path, empty_sqlite_store_file: Path) -> Store:
    """A new, empty SQLite store of this test's own: a copy of `empty_sqlite_store_file`."""
    path = tmp_path / "store.sqlite"
    shutil.copyfile(empty_sqlite_store_file, path)
    return Store.open(f"sqlite:///{path}")


@pytest.fixture
def postgres_store():
    """A fresh schema in the real PostgreSQL server, dropped afterwards."""
    try:
        admin = create_engine(POSTGRES_ADMIN_URL)
        with admin.connect() as connection:
            connection.execute(text("select 1"))
    except Exception as exc:  # noqa: BLE001 - any connection failure means no server
        skip_or_fail(f"no PostgreSQL at {POSTGRES_ADMIN_URL}: {str(exc).splitlines()[0]}")
    schema = f"tk_{uuid.uuid4().hex[:12]}"
    with admin.begin() as connection:
        connection.execute(text(f"create schema {schema}"))
    engine = create_engine(POSTGRES_ADMIN_URL, connect_args={"options": f"-csearch_path={schema}"})
    try:
        yield Store(engine)
    finally:
        engine.dispose()
        with admin.begin() as connection:
            connection.execute(text(f"drop schema {schema} cascade"))
        admin.dispose()


@pytest.fixture(params=["sqlite", "postgres"])
def store(request) -> Store:
    """Each store test runs on SQLite and on PostgreSQL."""
    return request.getfixturevalue(f"{request.param}_store")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """In CI (env `CI` set) a skipped test is a failure: a missing fixture file, server, browser or package must
    not pass silently there (skip_or_fail already fails; this catches any other skip, importorskip included)."""
    outcome = yield
    report = outcome.get_result()
    # The one exemption: a test marked `needs_gpu` may skip in CI, where no runner has a GPU (tracekit calibrate's
    # device test); it runs on the GPU machine, and its skip prints why.
    if item.get_closest_marker("needs_gpu") is not None:
        return
    if IN_CI and report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"skipped in CI, which must run every test: {reason}"


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    """A module skipped at import (pytest.importorskip at module level) fails in CI too."""
    outcome = yield
    report = outcome.get_result()
    if IN_CI and report.skipped:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"skipped in CI, which must run every test: {reason}"


# The files that keep one worker longest (25 s or more each in .ci/run), longest first. Under `pytest -n` they start
# first (pyproject.toml's --no-loadscope-reorder keeps this order): xdist's default order, most tests first, sent
# them last, and one worker ran alone for the suite's last minute or so.
SLOWEST_FILES = (
    "tests/dashboards/test_one_verdict.py",
    "tests/cli/test_polish.py",
    "tests/cli/test_demo_command.py",
    "tests/analysis/test_what_to_try_ceilings.py",
    "tests/dashboards/test_security.py",
    "tests/cli/test_export_command.py",
    "tests/reports/test_compare.py",
    "tests/analysis/test_refactor_snapshot.py",
    "tests/importers/test_refusal_hints.py",
    "tests/store/test_hardening.py",
    "tests/dashboards/test_browser.py",
    "tests/analysis/steps/test_steps_recorded.py",
    "tests/store/test_columnar.py",
    "tests/ceilings/test_every_launch.py",
    "tests/dashboards/test_launch_answer.py",
)


def pytest_collection_modifyitems(config, items):
    """The slowest files first, each file's tests still together and in their order (the sort is stable)."""
    rank = {path: index for index, path in enumerate(SLOWEST_FILES)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))
