"""Every generated hostile input (tests/hostile/cases.py), imported by `tracekit import`.

For each, through the CLI's entry point in the test's process (one case per importer as a real process): exit code
2, exactly one line on stderr naming the file (as the terminal shows it: control characters escaped) and the
problem, no traceback, the SQLite store byte-identical, the input unchanged with nothing written beside it, and no
temporary file left. On PostgreSQL the same files go through one real `--keep-going` process and one all-or-nothing
run, with every table's row count unchanged.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
from sqlalchemy import create_engine, func, select, text

from tests.helpers import run_cli, skip_or_fail
from tests.hostile.cases import BOMB_CAP_BYTES, NCU_REP_EXPORT, Case, all_cases, warp_csv
from tracekit.cli.common import escape_control
from tracekit.store import Store
from tracekit.store import schema as store_schema

CASES = all_cases()


def test_there_are_at_least_100_cases_across_every_importer():
    assert len(CASES) >= 100
    importers = {case.importer for case in CASES}
    assert {"warp-trace", "nsys-sqlite", "ncu-csv", "ncu-rep", "any"} <= importers


def test_the_real_ncu_rep_cut_and_corrupted_is_among_the_cases():
    """The three cases made from a real .ncu-rep of ../shared are generated only where it is: its absence is a skip
    with the reason outside CI (where cases.py fails the collection instead)."""
    if not NCU_REP_EXPORT.exists():
        skip_or_fail(f"{NCU_REP_EXPORT} is absent (the shared real exports live beside the checkout)")
    ids = {case.case_id for case in CASES}
    assert {"ncu-rep-truncated-half", "ncu-rep-truncated-64", "ncu-rep-corrupt-middle"} <= ids


def run_import(args: list[str], tmp_dir: Path, cwd: Path, real_process: bool = True) -> subprocess.CompletedProcess:
    """`tracekit import ARGS` with its temp dir in `tmp_dir` and the tests' inflation cap: a real process, or through
    the CLI's entry point in this process (`tests.helpers.run_cli`; 150 cases at an interpreter start each were two
    CPU-minutes of the suite)."""
    environment = {
        **os.environ,
        "TMPDIR": str(tmp_dir),
        "TRACEKIT_MAX_INFLATED_BYTES": str(BOMB_CAP_BYTES),
    }
    environment.pop("TRACEKIT_DEBUG", None)
    return run_cli("import", *args, cwd=cwd, env=environment, real_process=real_process)


# One case per importer also goes through a real process (the first of each).
REAL_PROCESS_CASES = {next(c.case_id for c in CASES if c.importer == name) for name in {c.importer for c in CASES}}


@pytest.fixture(scope="module")
def seeded_store(tmp_path_factory) -> Path:
    """A SQLite store with one import in it, closed (so its file holds everything)."""
    folder = tmp_path_factory.mktemp("seed")
    seed = folder / "seed.csv"
    seed.write_bytes(warp_csv())
    store = Store.open(f"sqlite:///{folder / 'store.sqlite'}")
    from tracekit.ingest import ingest

    result, _ = ingest(store, seed)
    assert result.created
    store.engine.dispose()
    return folder / "store.sqlite"


def files_under(folder: Path) -> list[Path]:
    return sorted(path for path in folder.rglob("*") if path.is_file())


@pytest.mark.parametrize("case", CASES, ids=[case.case_id for case in CASES])
def test_hostile_input_is_one_line_exit_2_and_changes_nothing(case: Case, seeded_store: Path, tmp_path: Path):
    inputs, tmp_dir, store_dir = tmp_path / "in", tmp_path / "tmp", tmp_path / "store"
    for folder in (inputs, tmp_dir, store_dir):
        folder.mkdir()
    path = inputs / case.file_name
    path.write_bytes(case.content)
    store = store_dir / "store.sqlite"
    store.write_bytes(seeded_store.read_bytes())
    before = store.read_bytes()

    args = [str(path), "--db", f"sqlite:///{store}"]
    result = run_import(args, tmp_dir, cwd=inputs, real_process=case.case_id in REAL_PROCESS_CASES)

    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    shown = escape_control(str(path)).replace("\n", " ")
    assert lines[0].startswith(f"tracekit: error: {shown}"), (lines[0], shown)
    problem = lines[0].removeprefix(f"tracekit: error: {shown}")
    assert re.search(case.problem, problem), problem
    assert result.stdout == ""
    assert store.read_bytes() == before  # not one byte of the store changed
    assert files_under(inputs) == [path] and path.read_bytes() == case.content  # input untouched, nothing beside
    assert files_under(tmp_dir) == []  # no temporary file left


def test_input_sqlite_in_wal_mode_gets_no_wal_or_shm_files(tmp_path: Path, seeded_store: Path):
    """An input in WAL mode is opened immutable: a readable one imports without a -wal/-shm beside it."""
    from tests.hostile.cases import nsys_sqlite

    inputs = tmp_path / "in"
    inputs.mkdir()
    path = inputs / "wal.sqlite"
    path.write_bytes(nsys_sqlite(wal=True))
    assert path.read_bytes()[18:20] == b"\x02\x02"  # the header says WAL
    store = tmp_path / "store.sqlite"
    store.write_bytes(seeded_store.read_bytes())
    result = run_import([str(path), "--db", f"sqlite:///{store}"], tmp_path, cwd=inputs)
    assert result.returncode == 0, result.stderr
    assert files_under(inputs) == [path]


# ---- PostgreSQL: the same files in two batch runs ------------------------------------------------------------------


def table_counts(url: str, search_path: str) -> dict[str, int]:
    engine = create_engine(url, connect_args={"options": f"-csearch_path={search_path}"})
    try:
        with engine.connect() as connection:
            return {
                table.name: connection.scalar(select(func.count()).select_from(table))
                for table in store_schema.metadata.sorted_tables
            }
    finally:
        engine.dispose()


@pytest.fixture
def postgres_schema_url(postgres_store) -> tuple[str, str]:
    """The conftest's fresh PostgreSQL schema, seeded with one import, as a URL other processes can open."""
    engine = postgres_store.engine
    with engine.connect() as connection:
        schema = connection.execute(text("select current_schema()")).scalar()
    base = engine.url.render_as_string(hide_password=False)
    return f"{base}?options=-csearch_path%3D{schema}", schema


@pytest.mark.postgres
def test_hostile_inputs_on_postgres_change_no_row(postgres_store, postgres_schema_url, tmp_path: Path):
    url, schema = postgres_schema_url
    seed = tmp_path / "seed.csv"
    seed.write_bytes(warp_csv())
    from tracekit.ingest import ingest

    ingest(postgres_store, seed)
    before = table_counts(url.split("?")[0], schema)
    assert before["imports"] == 1 and before["bulk_chunks"] == 1  # its 8 warps, one columnar chunk
    inputs, tmp_dir = tmp_path / "in", tmp_path / "tmp"
    inputs.mkdir()
    tmp_dir.mkdir()
    paths = []
    for index, case in enumerate(CASES):
        folder = inputs / f"{index:03d}"
        folder.mkdir()
        path = folder / case.file_name
        path.write_bytes(case.content)
        paths.append(path)

    kept_going = run_import(["--keep-going", "--db", url, *map(str, paths)], tmp_dir, cwd=inputs)
    assert kept_going.returncode == 2
    errors = [line for line in kept_going.stderr.splitlines() if line.startswith("tracekit: error: ")]
    assert len(errors) == len(CASES), kept_going.stderr[-3000:]
    assert "Traceback" not in kept_going.stderr
    for line, path, case in zip(errors, paths, CASES, strict=True):
        shown = escape_control(str(path)).replace("\n", " ")
        assert line.startswith(f"tracekit: error: {shown}"), (line, shown)
        assert re.search(case.problem, line.removeprefix(f"tracekit: error: {shown}")), (case.case_id, line)
    assert f"0 of {len(CASES)} files imported, {len(CASES)} failed" in kept_going.stdout
    assert table_counts(url.split("?")[0], schema) == before

    # all or nothing: a good file first, then a hostile one; the good one is rolled back with the batch
    good = inputs / "good.csv"
    good.write_bytes(warp_csv(header="# tracekit-warp-trace v1\n# kernel: another\n"))
    batch = run_import(["--db", url, str(good), str(paths[0])], tmp_dir, cwd=inputs)
    assert batch.returncode == 2
    assert len(batch.stderr.splitlines()) == 1 and "nothing imported" in batch.stderr
    assert table_counts(url.split("?")[0], schema) == before
    assert files_under(tmp_dir) == []


def test_a_megabyte_line_becomes_a_short_warning(tmp_path: Path, seeded_store: Path):
    """A stray line in an Nsight Compute CSV is kept as a warning; a 20 MB one is cut, not stored or printed whole."""
    from tests.hostile.cases import ncu_details

    path = tmp_path / "n.csv"
    path.write_bytes(b"==WARNING== " + b"x" * 20_000_000 + b"\n" + ncu_details())
    store = tmp_path / "store.sqlite"
    store.write_bytes(seeded_store.read_bytes())
    result = run_import([str(path), "--db", f"sqlite:///{store}"], tmp_path, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert len(result.stderr) < 5000
    assert "... (20,000,012 characters)" in result.stderr
