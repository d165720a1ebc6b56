"""The store and `tracekit import`/`rm` under concurrent, interrupted and hostile use, with real SQLite files,
the real PostgreSQL server and real `tracekit` processes."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from tests.helpers import skip_or_fail
from tests.hostile.cases import WARP_COLUMNS, warp_csv, warp_rows
from tracekit.ingest import ingest
from tracekit.scratch import remove_stale
from tracekit.store import Store

POSTGRES_ADMIN_URL = os.environ.get("TRACEKIT_TEST_POSTGRES", "postgresql+psycopg://postgres@127.0.0.1:5432/test")


def tracekit(*args: str, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tracekit.cli.main", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=timeout,
    )


def trace(folder: Path, kernel: str, rows=None) -> Path:
    path = folder / f"{kernel}.csv"
    path.write_bytes(warp_csv(rows, header=f"# tracekit-warp-trace v1\n# kernel: {kernel}\n"))
    return path


def import_names(url: str) -> list[str]:
    store = Store.open(url)
    try:
        return store.imports()["name"].to_list()
    finally:
        store.engine.dispose()


# ---- ids ----------------------------------------------------------------------------------------------------------


def test_ids_are_never_reused_after_a_delete(store, tmp_path):
    """An old link to /launch/N or a script holding import N must not reach other data after `rm`."""
    first, _ = ingest(store, trace(tmp_path, "first"))
    second, _ = ingest(store, trace(tmp_path, "second"))
    launch_ids = store.launches()["id"].to_list()
    store.delete_import(second.import_id)
    third, _ = ingest(store, trace(tmp_path, "third"))
    assert third.import_id > second.import_id > first.import_id
    new_launch = store.launches(import_id=third.import_id)["id"].to_list()
    assert min(new_launch) > max(launch_ids)


def test_migration_0004_rebuilds_an_existing_sqlite_store_keeping_rows_and_cascades(tmp_path):
    """A store made at revision 0003 (no AUTOINCREMENT) keeps every row through the rebuild, and deleting an
    import still cascades to its launches afterwards."""
    from alembic import command

    from tracekit.store.engine import alembic_config, make_engine

    url = f"sqlite:///{tmp_path / 'old.sqlite'}"
    engine = make_engine(url)
    with engine.begin() as connection:
        config = alembic_config()
        config.attributes["connection"] = connection
        command.upgrade(config, "0003")
    with engine.begin() as connection:
        for import_id in (1, 2):
            connection.execute(
                text(
                    "INSERT INTO imports (id, name, source_path, format, sha256, size_bytes, imported_at) "
                    "VALUES (:id, :name, '/x', 'warp-trace', :sha, 1, '2026-01-01')"
                ),
                {"id": import_id, "name": f"old{import_id}", "sha": f"{import_id:064d}"},
            )
            connection.execute(
                text("INSERT INTO launches (id, import_id, launch_index, kernel_name) VALUES (:id, :id, 0, 'k')"),
                {"id": import_id},
            )
    engine.dispose()
    before = sqlite3.connect(tmp_path / "old.sqlite").execute("select sql from sqlite_master where name='imports'")
    assert "AUTOINCREMENT" not in before.fetchone()[0]

    store = Store.open(url)
    schema = sqlite3.connect(tmp_path / "old.sqlite").execute(
        "select name, sql from sqlite_master where name in ('imports', 'launches')"
    )
    assert all("AUTOINCREMENT" in sql for _, sql in schema.fetchall())
    assert store.imports()["name"].to_list() == ["old1", "old2"]
    store.delete_import(1)
    assert store.launches()["import_id"].to_list() == [2]  # the foreign key still cascades
    added, _ = ingest(store, trace(tmp_path, "new"))
    assert added.import_id == 3
    store.engine.dispose()


# ---- batches ------------------------------------------------------------------------------------------------------


def test_a_batch_is_all_or_nothing_and_keep_going_keeps_the_good_files(tmp_path):
    url = f"sqlite:///{tmp_path / 'store.sqlite'}"
    good = [trace(tmp_path, "good1"), trace(tmp_path, "good2")]
    bad = tmp_path / "bad.csv"
    bad.write_bytes(warp_csv([[0, -1, 0, 0, 10, 20]]))
    result = tracekit("import", "--db", url, *map(str, good), str(bad))
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"tracekit: error: {bad}:9 (column 'sm_id'): negative SM id (nothing imported: the batch of 3 files is "
        "all or nothing; --keep-going imports the good ones)"
    ]
    assert result.stdout == ""
    assert import_names(url) == []

    result = tracekit("import", "--keep-going", "--db", url, *map(str, good), str(bad))
    assert result.returncode == 2
    assert result.stderr.splitlines() == [f"tracekit: error: {bad}:9 (column 'sm_id'): negative SM id"]
    assert result.stdout.splitlines()[-1] == "2 of 3 files imported, 1 failed"
    assert import_names(url) == ["good1.csv", "good2.csv"]


def test_rm_with_an_unknown_id_deletes_nothing(tmp_path):
    url = f"sqlite:///{tmp_path / 'store.sqlite'}"
    assert tracekit("import", "--db", url, str(trace(tmp_path, "a")), str(trace(tmp_path, "b"))).returncode == 0
    result = tracekit("rm", "--db", url, "1", "99")
    assert result.returncode == 2 and result.stderr.startswith("tracekit: error: no import with id 99")
    assert import_names(url) == ["a.csv", "b.csv"]


def test_a_locked_store_is_one_clear_line(tmp_path):
    """Another process holding the write lock: after the busy timeout, one line saying so, nothing written."""
    url = f"sqlite:///{tmp_path / 'store.sqlite'}"
    Store.open(url).engine.dispose()
    holder = sqlite3.connect(tmp_path / "store.sqlite", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        started = time.monotonic()
        result = tracekit(
            "import", "--db", url, str(trace(tmp_path, "k")), env={"TRACEKIT_SQLITE_BUSY_TIMEOUT_MS": "1500"}
        )
        waited = time.monotonic() - started
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"tracekit: error: store {url} is locked by another process that is writing to it (waited 1.5 s); "
        "try again when that import or delete has finished"
    ]
    assert waited >= 1.5
    assert import_names(url) == []


# ---- first use by many processes at once ---------------------------------------------------------------------------


def concurrent_imports(url: str, folder: Path, count: int = 8) -> list[subprocess.CompletedProcess]:
    paths = [trace(folder, f"kernel{index}") for index in range(count)]
    command = [sys.executable, "-m", "tracekit.cli.main", "import", "--db", url]
    processes = [
        subprocess.Popen([*command, str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for path in paths
    ]
    results = []
    for process in processes:
        stdout, stderr = process.communicate(timeout=300)
        results.append(subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr))
    return results


def test_eight_concurrent_first_use_imports_on_sqlite_all_succeed(tmp_path):
    url = f"sqlite:///{tmp_path / 'fresh.sqlite'}"
    results = concurrent_imports(url, tmp_path)
    assert [r.returncode for r in results] == [0] * 8, [r.stderr for r in results]
    assert all(r.stderr == "" for r in results)
    assert sorted(import_names(url)) == sorted(f"kernel{index}.csv" for index in range(8))


@pytest.fixture
def fresh_postgres_url():
    """A new, empty schema (no tables yet: the imports below are its first use)."""
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


@pytest.mark.postgres
def test_eight_concurrent_first_use_imports_on_postgres_all_succeed(fresh_postgres_url, tmp_path):
    results = concurrent_imports(fresh_postgres_url, tmp_path)
    assert [r.returncode for r in results] == [0] * 8, [r.stderr for r in results]
    assert all(r.stderr == "" for r in results)
    assert sorted(import_names(fresh_postgres_url)) == sorted(f"kernel{index}.csv" for index in range(8))


# ---- temporary files ----------------------------------------------------------------------------------------------


def test_sigterm_during_an_import_leaves_no_temporary_file(tmp_path):
    import gzip

    tmp_dir = tmp_path / "tmp"
    tmp_dir.mkdir()
    import io

    import polars as pl

    # gzip Parquet: the importer inflates it to a temporary file (a gzip CSV is read by polars without one)
    rows = [[0, b % 4, b, 0, 1000 + b, 2000 + b] for b in range(1_500_000)]
    parquet = io.BytesIO()
    columns = WARP_COLUMNS.strip().split(",")
    pl.DataFrame(rows, schema=columns, orient="row").write_parquet(parquet, compression="uncompressed")
    big = tmp_path / "big.parquet.gz"
    big.write_bytes(gzip.compress(parquet.getvalue(), compresslevel=1))
    process = subprocess.Popen(
        [sys.executable, "-m", "tracekit.cli.main", "import", "--db", f"sqlite:///{tmp_path / 's.sqlite'}", str(big)],
        env={**os.environ, "TMPDIR": str(tmp_dir)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not [p for p in tmp_dir.rglob("*") if p.is_file()]:
        time.sleep(0.01)
    assert [p for p in tmp_dir.rglob("*") if p.is_file()], "the import never wrote its temporary file"
    process.send_signal(signal.SIGTERM)
    process.communicate(timeout=60)
    assert process.returncode == 128 + signal.SIGTERM
    assert [p for p in tmp_dir.rglob("*") if p.is_file()] == []
    assert import_names(f"sqlite:///{tmp_path / 's.sqlite'}") == []


def test_stale_temporary_files_of_dead_processes_are_removed_at_start(tmp_path, monkeypatch):
    """What a SIGKILL leaves (`<kind>-<pid>-...` of a process that no longer runs) goes at the next start; a live
    process's files stay."""
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    folder = tmp_path / "scratch"
    folder.mkdir()
    stale_file = folder / f"warp-trace-{dead.pid}-abc.inflated"
    stale_file.write_bytes(b"x" * 100)
    stale_dir = folder / f"upload-{dead.pid}-xyz"
    stale_dir.mkdir()
    (stale_dir / "a.csv").write_text("1")
    live = folder / f"upload-{os.getppid()}-live"
    live.mkdir()
    unrelated = folder / "notes.txt"
    unrelated.write_text("keep")
    removed = remove_stale(folder)
    assert sorted(removed) == sorted([stale_file, stale_dir])
    assert live.exists() and unrelated.exists()

    # and `tracekit import` does it by itself, in $TMPDIR/tracekit-<uid>/
    scratch = tmp_path / "tmp" / f"tracekit-{os.getuid()}"
    scratch.mkdir(parents=True)
    left = scratch / f"warp-trace-{dead.pid}-def.inflated"
    left.write_bytes(b"y")
    result = tracekit(
        "import",
        "--db",
        f"sqlite:///{tmp_path / 's.sqlite'}",
        str(trace(tmp_path, "k")),
        env={"TMPDIR": str(tmp_path / "tmp")},
    )
    assert result.returncode == 0, result.stderr
    assert not left.exists()


# ---- what the terminal shows --------------------------------------------------------------------------------------


def test_kernel_names_cannot_drive_the_terminal(tmp_path):
    kernel = "\x1b[2J\x1b]8;;http://evil.example\x07[bold red]fake[/bold red] :smile: \u202ek"
    path = tmp_path / "t.csv"
    path.write_bytes(
        warp_csv(warp_rows(), header=f"# tracekit-warp-trace v1\n# kernel: {kernel}\n# device_name: [blink]x\n")
    )
    url = f"sqlite:///{tmp_path / 's.sqlite'}"
    assert tracekit("import", "--db", url, str(path)).returncode == 0
    for command in (["ls"], ["show", "1"]):
        result = tracekit(*command, "--db", url, env={"COLUMNS": "400"})
        assert result.returncode == 0, result.stderr
        out = result.stdout
        assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out
    shown = tracekit("show", "1", "--names", "full", "--db", url, env={"COLUMNS": "400"}).stdout
    assert "\\x1b[2J\\x1b]8;;http://evil.example\\x07[bold red]fake[/bold red] :smile: \\u202ek" in shown
    assert "[blink]x" in tracekit("ls", "--db", url, env={"COLUMNS": "400"}).stdout


@pytest.mark.postgres
def test_launch_id_blocks_taken_at_once_on_postgres_are_consecutive_and_disjoint(fresh_postgres_url):
    """Imports take their launch ids as one block (nextval, then setval past the block, under a lock): blocks taken
    by eight writers at once are each consecutive, none overlaps another, and the sequence goes on past them."""
    from concurrent.futures import ThreadPoolExecutor

    from tracekit.store import Store

    store = Store.open(fresh_postgres_url)
    with ThreadPoolExecutor(8) as pool:
        blocks = list(pool.map(lambda _: store._reserve_launch_ids(1000), range(32)))
    taken = [i for block in blocks for i in block]
    assert all(block == list(range(block[0], block[0] + 1000)) for block in blocks)
    assert len(set(taken)) == len(taken) == 32_000
    assert store._reserve_launch_ids(1) == [max(taken) + 1]
    store.engine.dispose()
