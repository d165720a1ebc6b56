"""Writers of one SQLite store at once: 8 first-use `tracekit import` processes started together on a new store
while both cores are busy all succeed, and a writer waits as long as the writer before it needs, however short
SQLite's busy timeout. Real processes, real files, a real store file."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from tracekit.ingest import ingest
from tracekit.store import Store

REPO = Path(__file__).resolve().parents[2]
H100 = REPO / "sample_traces" / "h100"
FILES = [
    H100 / "abs_negative.csv.gz",
    H100 / "abs_positive.csv.gz",
    H100 / "black_scholes.csv.gz",
    H100 / "memcpy_1load.csv.gz",
    H100 / "memcpy_2loads.csv.gz",
    H100 / "permute_identity.csv.gz",
    H100 / "samples.details.csv",
    H100 / "samples.sqlite",
]
# Far shorter than one import's write: contention alone would fail a writer that only waited this long.
SHORT_BUSY_TIMEOUT_MS = "100"


def _environment() -> dict[str, str]:
    return {**os.environ, "TRACEKIT_SQLITE_BUSY_TIMEOUT_MS": SHORT_BUSY_TIMEOUT_MS}


def _import(path: Path, db: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "tracekit.cli.main", "import", str(path), "--db", str(db)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_environment(),
    )


def _stored(db: Path) -> dict[str, int]:
    """Each stored file's launch count, by content digest."""
    store = Store.open(str(db))
    imports = store.imports()
    launches = store.launches()
    return {
        sha: launches.filter(launches["import_id"] == import_id).height
        for import_id, sha in zip(imports["id"].to_list(), imports["sha256"].to_list(), strict=True)
    }


@contextmanager
def busy_cores() -> Iterator[None]:
    """Every core spinning in a process of its own while the block runs (and no longer: the suite's other worker
    shares these cores)."""
    spinners = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(max(2, os.cpu_count() or 2))
    ]
    try:
        yield
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()


def test_eight_first_use_imports_on_a_loaded_machine_all_succeed(tmp_path):
    assert all(path.exists() for path in FILES)
    db = tmp_path / "new.sqlite"
    assert not db.exists()
    with busy_cores():
        processes = [_import(path, db) for path in FILES]  # all started before any finishes its first use
        outcomes = [(process.wait(timeout=600), process.stdout, process.stderr) for process in processes]
    failures = [stderr.read() for code, _, stderr in outcomes if code != 0]
    assert failures == [], failures
    # the same files imported one by one into another store: the same imports, launch for launch
    baseline = Store.open(str(tmp_path / "sequential.sqlite"))
    for path in FILES:
        ingest(baseline, path)
    assert _stored(db) == _stored(tmp_path / "sequential.sqlite")
    assert len(_stored(db)) == len(FILES)


def test_a_writer_waits_as_long_as_the_writer_before_it(tmp_path):
    """A write transaction held open for 20 times the busy timeout: the import waits for it, then succeeds."""
    db = tmp_path / "store.sqlite"
    store = Store.open(str(db))
    held_s = 3.0
    started = threading.Event()
    released: list[datetime] = []

    def hold() -> None:
        with store.transaction() as connection:
            connection.exec_driver_sql("SELECT 1")
            started.set()
            time.sleep(held_s)
            released.append(datetime.now(UTC))

    holder = threading.Thread(target=hold)
    holder.start()
    assert started.wait(timeout=30)
    process = _import(FILES[0], db)
    code = process.wait(timeout=300)
    holder.join()
    assert code == 0, process.stderr.read() if process.stderr else ""
    # it wrote after the held transaction ended (instead of failing after 0.1 s)
    imported_at = store.imports()["imported_at"].to_list()
    assert len(imported_at) == 1
    assert imported_at[0].replace(tzinfo=UTC) >= released[0]
