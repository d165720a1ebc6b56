"""The store round-trips imports, launches, metrics and warps, on SQLite and on PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from sqlalchemy import inspect

from tracekit.errors import NotFoundError
from tracekit.parsed import LAUNCH_SCHEMA, METRIC_SCHEMA, WARP_SCHEMA, Device, ParsedImport, conform
from tracekit.store import Store, file_sha256
from tracekit.store.engine import current_revision, resolve_url
from tracekit.store.schema import SCHEMA_REVISION


def make_parsed() -> ParsedImport:
    launches = conform(
        pl.DataFrame(
            {
                "launch_key": [0, 1],
                "kernel_name": ["vector_add(float const*, float*, int)", 'reduce<"x", 3>'],
                "grid_x": [4096, 1],
                "grid_y": [1, 1],
                "grid_z": [1, 1],
                "block_x": [256, 1024],
                "block_y": [1, 1],
                "block_z": [1, 1],
                "registers_per_thread": [16, 32],
                "dynamic_smem_bytes": [49152, 0],
                "start_ns": [1_000, 9_000],
                "end_ns": [5_000, 9_500],
                "duration_ns": [4_000.0, 500.0],
            }
        ),
        LAUNCH_SCHEMA,
    )
    metrics = conform(
        pl.DataFrame(
            {
                "launch_key": [0, 0, 1],
                "section": ["Occupancy", "Occupancy", None],
                "name": [
                    "sm__warps_active.avg.pct_of_peak_sustained_active",
                    "launch__occupancy_limiter",
                    "gpu__time_duration.sum",
                ],
                "unit": ["%", None, "ns"],
                "value": [37.5, None, 500.0],
                "text_value": [None, "Registers", None],
                "kind": ["float", "text", "float"],
            }
        ),
        METRIC_SCHEMA,
    )
    warps = conform(
        pl.DataFrame(
            {
                "launch_key": [0, 0, 0, 1],
                "sm_id": [0, 0, 131, 5],
                "block_id": [0, 0, 1, 0],
                "warp_in_block": [0, 1, 0, 0],
                "start_ns": [1_000, 1_032, 1_100, 9_000],
                "end_ns": [4_000, 4_500, 5_000, 9_400],
                "start_cycles": [10, 20, None, None],
                "end_cycles": [6_000, 7_000, None, None],
            }
        ),
        WARP_SCHEMA,
    )
    device = Device(
        name="NVIDIA H100 80GB HBM3",
        compute_capability="9.0",
        sm_count=132,
        sm_clock_hz=1.98e9,
        max_warps_per_sm=64,
        extra={"max_registers_per_sm": 65536},
    )
    return ParsedImport(
        format="warp-trace",
        tool="warp_trace.cuh",
        tool_version="1",
        device=device,
        launches=launches,
        metrics=metrics,
        warps=warps,
        warnings=["clock() may wrap"],
    )


@pytest.fixture
def source(tmp_path: Path) -> Path:
    path = tmp_path / "trace.csv"
    path.write_text("the bytes whose sha256 identifies the import\n")
    return path


def test_round_trip(store: Store, source: Path) -> None:
    result = store.add_import(make_parsed(), source, name="vector add")
    assert result.created and result.launch_count == 2 and result.warp_count == 4

    info = store.get_import(result.import_id)
    assert info["name"] == "vector add"
    assert info["sha256"] == file_sha256(source)
    assert info["size_bytes"] == source.stat().st_size
    assert (info["device_name"], info["compute_capability"], info["sm_count"]) == ("NVIDIA H100 80GB HBM3", "9.0", 132)
    assert info["sm_clock_hz"] == pytest.approx(1.98e9)
    assert info["device_extra"] == {"max_registers_per_sm": 65536}
    assert info["warnings"] == ["clock() may wrap"]

    launches = store.launches(import_id=result.import_id)
    assert launches["kernel_name"].to_list() == ["vector_add(float const*, float*, int)", 'reduce<"x", 3>']
    assert launches["grid_x"].to_list() == [4096, 1]
    assert launches["dynamic_smem_bytes"].to_list() == [49152, 0]
    assert launches["duration_ns"].to_list() == [4000.0, 500.0]
    assert launches["device_name"].to_list() == ["NVIDIA H100 80GB HBM3"] * 2
    first, second = launches["id"].to_list()

    metrics = store.metrics([first])
    assert metrics.height == 2
    by_name = {row["name"]: row for row in metrics.iter_rows(named=True)}
    assert by_name["sm__warps_active.avg.pct_of_peak_sustained_active"]["value"] == 37.5
    assert by_name["launch__occupancy_limiter"]["text_value"] == "Registers"
    assert by_name["launch__occupancy_limiter"]["value"] is None
    assert store.metrics([second])["value"].to_list() == [500.0]

    warps = store.warps(first)
    assert warps["sm_id"].to_list() == [0, 0, 131]
    assert warps["start_ns"].to_list() == [1_000, 1_032, 1_100]
    assert warps["end_cycles"].to_list() == [6_000, 7_000, None]
    assert store.warps(second)["end_ns"].to_list() == [9_400]
    assert store.warp_counts([first, second]) == {first: 3, second: 1}

    imports = store.imports()
    assert imports["launch_count"].to_list() == [2]


def test_same_file_twice_adds_nothing(store: Store, source: Path) -> None:
    first = store.add_import(make_parsed(), source)
    again = store.add_import(make_parsed(), source)
    assert not again.created
    assert again.import_id == first.import_id
    assert (again.launch_count, again.warp_count) == (2, 4)
    assert store.imports().height == 1


def test_failed_import_leaves_store_as_it_was(store: Store, source: Path, tmp_path: Path) -> None:
    store.add_import(make_parsed(), source)
    broken = make_parsed()
    # A warp row without an SM id violates NOT NULL after launches and metrics were written: all must roll back.
    broken.warps = broken.warps.with_columns(pl.lit(None, dtype=pl.Int32).alias("sm_id"))
    other = tmp_path / "other.csv"
    other.write_text("different bytes\n")
    with pytest.raises(Exception):  # noqa: B017 - the database's own integrity error, dialect-specific
        store.add_import(broken, other)
    assert store.imports().height == 1
    assert store.launches().height == 2
    assert store.find_by_sha256(file_sha256(other)) is None


def test_delete_removes_everything_under_the_import(store: Store, source: Path, tmp_path: Path) -> None:
    kept_source = tmp_path / "kept.csv"
    kept_source.write_text("kept\n")
    kept = store.add_import(make_parsed(), kept_source)
    gone = store.add_import(make_parsed(), source)
    gone_launches = store.launches(import_id=gone.import_id)["id"].to_list()
    store.delete_import(gone.import_id)
    assert store.imports()["id"].to_list() == [kept.import_id]
    assert store.launches(import_id=gone.import_id).height == 0
    assert store.metrics(gone_launches).height == 0
    assert store.warp_counts(gone_launches) == {}
    kept_launches = store.launches(import_id=kept.import_id)["id"].to_list()
    assert sum(store.warp_counts(kept_launches).values()) == 4
    with pytest.raises(NotFoundError):
        store.delete_import(gone.import_id)


def test_schema_version_is_recorded(store: Store) -> None:
    assert current_revision(store.engine) == SCHEMA_REVISION
    tables = set(inspect(store.engine).get_table_names())
    assert {"imports", "launches", "metrics", "warps", "nvtx_ranges", "memcpys", "alembic_version"} <= tables


def test_url_resolution(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TRACEKIT_DB", "postgresql://someone@db.example/tracekit")
    assert resolve_url() == "postgresql+psycopg://someone@db.example/tracekit"
    assert resolve_url(str(tmp_path / "x.sqlite")) == f"sqlite:///{tmp_path / 'x.sqlite'}"
    monkeypatch.delenv("TRACEKIT_DB")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert resolve_url() == f"sqlite:///{tmp_path / 'xdg' / 'tracekit' / 'tracekit.sqlite'}"


def test_launch_keys_become_stored_ids_dropping_rows_of_no_launch() -> None:
    """Keys 0..n-1 onto consecutive ids (an offset) and onto any other ids (a lookup) give the same mapping."""
    from tracekit.store.store import _with_launch_ids

    frame = pl.DataFrame({"launch_key": [0, 1, 2, 5, 1], "value": [1.0, 2.0, 3.0, 4.0, 5.0]})
    keys = pl.Series("launch_key", [0, 1, 2])
    consecutive = _with_launch_ids(frame, keys, [10, 11, 12])
    assert consecutive.select("launch_id", "value").rows() == [(10, 1.0), (11, 2.0), (12, 3.0), (11, 5.0)]
    gaps = _with_launch_ids(frame, keys, [10, 12, 13])
    assert gaps.select("launch_id", "value").rows() == [(10, 1.0), (12, 2.0), (13, 3.0), (12, 5.0)]
    shuffled = _with_launch_ids(frame, pl.Series("launch_key", [2, 0, 1]), [10, 11, 12])
    assert shuffled.select("launch_id", "value").rows() == [(11, 1.0), (12, 2.0), (10, 3.0), (12, 5.0)]


def test_postgres_compresses_cached_analyses_with_lz4_and_not_chunks_again(postgres_store: Store) -> None:
    """Cached analyses (kB of JSON each) are compressed with lz4, not pglz (most of a 1,008-launch report's cache
    write); Arrow IPC chunks, zstd-compressed already, are stored without another try."""
    from sqlalchemy import text

    from tracekit.api import analyze_stored
    from tracekit.ingest import ingest

    result, _ = ingest(postgres_store, Path(__file__).resolve().parents[2] / "sample_traces/h100/samples.raw.csv")
    analyze_stored(postgres_store, postgres_store.launches(import_id=result.import_id))
    with postgres_store.engine.connect() as connection:
        lz4 = connection.execute(
            text("SELECT count(*) FROM pg_settings WHERE name = 'default_toast_compression' AND 'lz4' = ANY(enumvals)")
        ).scalar()
        storage = dict(
            connection.execute(
                text(
                    "SELECT c.relname, a.attstorage FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
                    "WHERE c.relname IN ('bulk_chunks', 'host_event_chunks') AND a.attname = 'data' "
                    "AND c.relnamespace = to_regnamespace(current_schema())"
                )
            ).all()
        )
        methods = {
            row[0]
            for row in connection.execute(
                text("SELECT pg_column_compression(result_json) FROM analysis_results WHERE length(result_json) > 4000")
            )
        }
    assert storage == {"bulk_chunks": "e", "host_event_chunks": "e"}
    assert methods == ({"lz4"} if lz4 else {"pglz"})
