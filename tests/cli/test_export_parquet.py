"""`tracekit export --parquet DIR`: the store's normalized tables as a Parquet dataset that polars (and DuckDB,
Spark) read back equal to what the store holds."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import polars as pl
import pytest

from tests.helpers import run_cli
from tracekit.store import Store

REPO = Path(__file__).resolve().parents[2]
FILES = [
    REPO / "sample_traces" / "h100" / "vector_add_08warps.csv.gz",
    REPO / "sample_traces" / "h100" / "samples.raw.csv",
    REPO / "sample_traces" / "h100" / "samples.sqlite",
    REPO / "sample_traces" / "regions" / "ws_pipeline.v2.gz",
]


def tracekit(*args: str) -> subprocess.CompletedProcess:
    return run_cli(*args, env={**os.environ, "COLUMNS": "200"})


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> tuple[Store, Path]:
    folder = tmp_path_factory.mktemp("parquet")
    db = f"sqlite:///{folder / 'store.sqlite'}"
    done = tracekit("import", "--db", db, *map(str, FILES))
    assert done.returncode == 0, done.stderr
    assert tracekit("analyze", "--db", db, "--json", "1").returncode == 0  # an analysis result to export too
    done = tracekit("export", "--db", db, "--parquet", str(folder / "dataset"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"wrote a Parquet dataset to {folder / 'dataset'}: 4 imports")
    return Store.open(db), folder / "dataset"


def scan(dataset: Path, table: str) -> pl.DataFrame:
    return pl.scan_parquet(dataset / table / "**" / "*.parquet", hive_partitioning=True).collect()


def test_catalog_tables_read_back_as_stored(exported) -> None:
    store, dataset = exported
    imports = pl.read_parquet(dataset / "imports.parquet")
    assert imports["id"].to_list() == store.imports()["id"].to_list()
    assert imports["sha256"].to_list() == store.imports()["sha256"].to_list()
    first = store.get_import(1)
    extra = imports["device_extra"][0]
    assert (None if extra is None else json.loads(extra)) == first["device_extra"]
    assert imports["device_extra"].drop_nulls().len() >= 1
    launches = pl.read_parquet(dataset / "launches.parquet")
    stored = store.launches()
    assert launches["id"].to_list() == stored["id"].to_list()
    for column in ("import_id", "kernel_name", "grid_x", "block_x", "registers_per_thread", "duration_ns"):
        assert launches[column].to_list() == stored[column].to_list(), column
    nvtx = pl.read_parquet(dataset / "nvtx_ranges.parquet")
    memcpys = pl.read_parquet(dataset / "memcpys.parquet")
    nsys = int(imports.filter(pl.col("format") == "nsys-sqlite")["id"][0])
    assert nvtx.height == store.nvtx_ranges(nsys).height and memcpys.height == store.memcpys(nsys).height > 0
    results = pl.read_parquet(dataset / "analysis_results.parquet")
    assert results.height >= 1 and json.loads(results["result_json"][0])["schema"] == "tracekit.analysis/2"


def test_bulk_tables_read_back_equal_to_the_store(exported) -> None:
    store, dataset = exported
    launch_ids = store.launches()["id"].to_list()
    metrics = scan(dataset, "metrics")
    assert metrics.drop("import_id").equals(store.metrics(launch_ids))
    warps = scan(dataset, "warps")
    counts = store.warp_counts(launch_ids)
    assert dict(warps.group_by("launch_id").len().iter_rows()) == counts
    traced = min(counts)
    back = warps.filter(pl.col("launch_id") == traced).drop("launch_id", "import_id")
    assert back.equals(store.warps(traced))
    regions = scan(dataset, "regions")
    assert regions.height > 0 and regions["region"].n_unique() > 1
    # a query a team would run: mean warp latency per kernel, joined through launches
    latency = (
        warps.join(pl.read_parquet(dataset / "launches.parquet"), left_on="launch_id", right_on="id")
        .group_by("kernel_name")
        .agg((pl.col("end_ns") - pl.col("start_ns")).mean().alias("mean_ns"))
    )
    traced_kernels = store.launches().filter(pl.col("id").is_in(list(counts)))["kernel_name"].n_unique()
    assert latency.height == traced_kernels and latency["mean_ns"].min() > 0


def test_duckdb_reads_the_dataset_when_installed(exported) -> None:
    duckdb = pytest.importorskip("duckdb")
    store, dataset = exported
    rows = duckdb.sql(
        f"select count(*) from read_parquet('{dataset}/warps/*/*.parquet', hive_partitioning = true)"
    ).fetchall()[0]  # fetchall: DuckDB 2 relations have no fetchone
    assert rows[0] == sum(store.warp_counts(store.launches()["id"].to_list()).values())


def test_one_import_only_and_a_used_folder_is_refused(exported, tmp_path) -> None:
    store, dataset = exported
    db = store.engine.url.render_as_string(hide_password=False)
    done = tracekit("export", "--db", db, "2", "--parquet", str(tmp_path / "one"))
    assert done.returncode == 0, done.stderr
    assert pl.read_parquet(tmp_path / "one" / "imports.parquet")["id"].to_list() == [2]
    assert set(pl.read_parquet(tmp_path / "one" / "launches.parquet")["import_id"]) == {2}
    done = tracekit("export", "--db", db, "--parquet", str(dataset))
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"tracekit: error: --parquet {dataset}: exists and is not an empty folder (a dataset goes to a new one)"
    )
