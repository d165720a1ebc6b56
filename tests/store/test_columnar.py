"""The columnar bulk store (migration 0005): a store written in the old row layout and migrated gives the same
`tracekit analyze --json` and `tracekit report` as a fresh one, on the samples and the real exports, on SQLite
and on PostgreSQL; the chunks hold exactly the parsed rows."""

from __future__ import annotations

import os
import re
from pathlib import Path

import polars as pl
import pytest
from alembic import command
from sqlalchemy import func, select, text

from tests.conftest import REAL_EXPORTS, SAMPLES
from tests.helpers import run_cli
from tracekit.importers import read_file
from tracekit.store import Store, columnar, schema
from tracekit.store.engine import alembic_config, current_revision
from tracekit.store.schema import SCHEMA_REVISION

FILES = [
    SAMPLES / "h100" / "samples.raw.csv",
    SAMPLES / "h100" / "samples.details.csv",
    SAMPLES / "h100" / "vector_add_08warps.csv.gz",
    SAMPLES / "h100" / "vector_add_64warps.csv.gz",
    SAMPLES / "h100" / "imbalanced_blocks.csv.gz",
    SAMPLES / "h100" / "samples.sqlite",
    REAL_EXPORTS / "ncu_raw_B200_sdpa_flash_RooflineAnalysis.csv",
    REAL_EXPORTS / "ncu_details_sm80class_kerneltime_rules_bert_leleucas.csv",
    REAL_EXPORTS / "nsys_2024.5.1_GTX1050_bitonic_report1.sqlite",  # 153 launches (a 3,689-launch one: 2x the time)
]


# a whole-step section of the Markdown report (reports.markdown.steps_lines): its headline, the program's step
STEPS_HEADING = re.compile(r"\n### (?:step |no repeating step found)")


def tracekit(*args: str) -> str:
    result = run_cli(*args, env={**os.environ, "COLUMNS": "200"})
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def store_url(store: Store) -> str:
    """A URL another process opens the same store (and PostgreSQL schema) with."""
    url = store.engine.url.render_as_string(hide_password=False)
    if store.engine.dialect.name == "postgresql":
        with store.engine.connect() as connection:
            schema = connection.execute(text("select current_schema()")).scalar()
        url += f"?options=-csearch_path%3D{schema}"
    return url


def outputs(url: str, import_ids: list[str]) -> tuple[str, str]:
    """What the user sees, computed afresh (the analysis cache emptied first)."""
    store = Store.open(url)
    with store.engine.begin() as connection:
        connection.execute(text("DELETE FROM analysis_results"))
    store.engine.dispose()
    return tracekit("analyze", "--db", url, "--json", *import_ids), tracekit(
        "report", "--db", url, "--format", "md", *import_ids
    )


def counts(store: Store) -> dict[str, int]:
    with store.engine.connect() as connection:
        return {
            table.name: connection.scalar(select(func.count()).select_from(table))
            for table in (schema.warps, schema.metrics, schema.bulk_chunks)
        }


def test_old_layout_migrated_gives_the_same_results_as_a_fresh_store(store: Store) -> None:
    files = [path for path in FILES if path.exists()]
    if not (REAL_EXPORTS / FILES[-1].name).exists():
        from tests.helpers import skip_or_fail

        skip_or_fail(f"{REAL_EXPORTS} is absent (the shared real exports live beside the checkout)")
    url = store_url(store)
    tracekit("import", "--db", url, *map(str, files))
    import_ids = [str(i) for i in store.imports()["id"].to_list()]
    assert len(import_ids) == len(files)
    parsed = [read_file(path) for path in files]
    fresh = outputs(url, import_ids)
    fresh_counts = counts(store)
    assert fresh_counts["warps"] == 0
    every_metric = sum(p.metrics.height for p in parsed)
    assert store.metrics(store.launches()["id"].to_list()).height == every_metric
    assert 0 < fresh_counts["metrics"] < every_metric  # the catalog's metrics only

    # the old layout: every warp and every metric a row, no chunks (what revision 0004 wrote)
    store.engine.dispose()
    with store.engine.begin() as connection:
        config = alembic_config()
        config.attributes["connection"] = connection
        command.downgrade(config, "0004")
        assert current_revision(connection) == "0004"
        assert "bulk_chunks" not in {t for t in connection.dialect.get_table_names(connection)}
        rows = {table: connection.scalar(text(f"SELECT count(*) FROM {table}")) for table in ("warps", "metrics")}
    assert rows == {"warps": sum(p.warps.height for p in parsed), "metrics": every_metric}

    migrated = Store.open(url)  # opening the store runs migration 0005
    assert current_revision(migrated.engine) == SCHEMA_REVISION
    assert counts(migrated) == fresh_counts
    analyzed, report = outputs(url, import_ids)
    assert analyzed == fresh[0]
    # the report's whole-step sections need the host events a store keeps since revision 0006: the old layout had
    # none (downgrading to 0004 drops them), so the migrated report is the fresh one without them
    launches, steps = STEPS_HEADING.split(fresh[1], maxsplit=1)
    assert "synchronization" in steps and not STEPS_HEADING.search(report)
    assert report == launches.rstrip() + "\n"
    migrated.engine.dispose()


def test_chunks_hold_exactly_the_parsed_rows(sqlite_store: Store) -> None:
    """Warps and metrics come back as parsed (types, order, nulls), split over several chunks."""
    from tracekit.ingest import ingest

    path = SAMPLES / "h100" / "vector_add_16warps.csv.gz"
    parsed = read_file(path).conformed()
    old_rows = columnar.CHUNK_ROWS[columnar.WARPS]
    columnar.CHUNK_ROWS[columnar.WARPS] = 10_000  # several chunks per launch
    try:
        result, _ = ingest(sqlite_store, path)
    finally:
        columnar.CHUNK_ROWS[columnar.WARPS] = old_rows
    launch_id = int(sqlite_store.launches(import_id=result.import_id)["id"][0])
    with sqlite_store.engine.connect() as connection:
        chunks = connection.scalar(
            select(func.count()).select_from(schema.bulk_chunks).where(schema.bulk_chunks.c.kind == "warps")
        )
    assert chunks == -(-parsed.warps.height // 10_000) > 1
    expected = parsed.warps.drop("launch_key")
    assert sqlite_store.warps(launch_id).equals(expected)
    assert sqlite_store.warp_counts([launch_id]) == {launch_id: parsed.warps.height}

    raw = SAMPLES / "h100" / "samples.raw.csv"
    parsed = read_file(raw).conformed()
    # metric-major, as a page listing each metric for every launch gives them: launches interleaved
    parsed.metrics = parsed.metrics.sort("name", maintain_order=True)
    old_rows = columnar.CHUNK_ROWS[columnar.METRICS]
    columnar.CHUNK_ROWS[columnar.METRICS] = parsed.metrics.height // 4  # several chunks
    try:
        import_id = sqlite_store.add_import(parsed, raw).import_id
    finally:
        columnar.CHUNK_ROWS[columnar.METRICS] = old_rows
    launches = sqlite_store.launches(import_id=import_id)
    key_to_id = pl.DataFrame({"launch_key": parsed.launches["launch_key"], "launch_id": launches["id"]})
    in_file = parsed.metrics.join(key_to_id, on="launch_key", maintain_order="left").select(
        "launch_id", *columnar.COLUMNS[columnar.METRICS]
    )
    assert in_file["launch_id"].to_list()[:2] != [in_file["launch_id"][0]] * 2
    expected = in_file.sort("launch_id", maintain_order=True)  # stored launch by launch, each in the file's order
    back = sqlite_store.metrics(launches["id"].to_list())
    assert back.columns == expected.columns
    assert back.equals(expected)
    one = int(launches["id"][3])
    assert sqlite_store.metrics([one]).equals(expected.filter(pl.col("launch_id") == one))
    with sqlite_store.engine.connect() as connection:
        chunk = schema.bulk_chunks.c
        chunks = connection.scalar(select(func.count()).select_from(schema.bulk_chunks).where(chunk.kind == "metrics"))
        holding_one = connection.scalar(
            select(func.count())
            .select_from(schema.bulk_chunks)
            .where(chunk.kind == "metrics", chunk.launch_id <= one, chunk.last_launch_id >= one)
        )
    assert chunks >= 4 and holding_one == 1  # one launch's metrics come from its own chunk, not all of the import's


def test_null_warp_fields_are_refused_and_nothing_is_kept(sqlite_store: Store, tmp_path: Path) -> None:
    parsed = read_file(SAMPLES / "h100" / "vector_add_08warps.csv.gz")
    parsed.warps = parsed.warps.with_columns(
        pl.when(pl.int_range(pl.len()) == 5).then(None).otherwise(pl.col("end_ns")).alias("end_ns")
    )
    source = tmp_path / "t.bin"
    source.write_bytes(b"x")
    with pytest.raises(columnar.BulkIntegrityError, match="end_ns"):
        sqlite_store.add_import(parsed, source)
    assert sqlite_store.imports().height == 0
    assert counts(sqlite_store) == {"warps": 0, "metrics": 0, "bulk_chunks": 0}


def test_thousands_of_scattered_launch_ids_are_read_in_batches(sqlite_store: Store) -> None:
    """2,500 separate id runs (a kernel's launches among 100k of an Nsight Systems import) in one query nested
    2,500 ORs, which SQLite refuses (depth 1,000): they are read 400 runs a query, with the same rows."""
    from tracekit.ingest import ingest

    ingest(sqlite_store, SAMPLES / "h100" / "samples.details.csv")
    ids = sqlite_store.launches()["id"].to_list()
    scattered = sorted(set(ids) | set(range(max(ids) + 2, max(ids) + 2 + 5000, 2)))  # absent ids, one per run
    assert len(columnar._runs(scattered)) > 2 * columnar.RUNS_PER_QUERY
    assert sqlite_store.metrics(scattered).equals(sqlite_store.metrics(ids))
