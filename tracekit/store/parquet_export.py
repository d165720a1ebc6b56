"""The store's normalized tables as a Parquet dataset (`tracekit export --parquet DIR`), for DuckDB, Spark or
polars on a cluster once a team outgrows one machine.

Layout (zstd; the bulk tables hive-partitioned by import, so a query reads only the imports it names):

    DIR/imports.parquet            one row per import (device fields; device_extra and warnings as JSON text)
    DIR/launches.parquet           one row per launch (import_id, kernel, grid, block, registers, times, ...)
    DIR/metrics/import_id=N/part-0.parquet    every metric of the import's launches (launch_id, section, name, ...)
    DIR/warps/import_id=N/launch-L.parquet    one launch's warps (launch_id, sm_id, block_id, ..., start_ns, end_ns)
    DIR/regions/import_id=N/launch-L.parquet  one launch's named region instances
    DIR/nvtx_ranges.parquet, DIR/memcpys.parquet, DIR/analysis_results.parquet (result_json: tracekit.analysis/2)
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Final

import polars as pl
from sqlalchemy import select

from tracekit.store import columnar, schema
from tracekit.store.regions import launch_regions
from tracekit.store.store import Store

COMPRESSION: Final = "zstd"


def _table_frame(store: Store, table, where=None, json_columns: tuple[str, ...] = ()) -> pl.DataFrame:
    """A small table's rows (imports, launches, ...) as a frame typed from its SQL columns."""
    statement = select(table).order_by(*table.primary_key.columns)
    if where is not None:
        statement = statement.where(where)
    with store.engine.connect() as connection:
        rows = [dict(row) for row in connection.execute(statement).mappings()]
    for row in rows:
        for name in json_columns:
            row[name] = None if row[name] is None else json.dumps(row[name])
    schema = {column.name: _dtype(column) for column in table.columns}
    return pl.DataFrame(rows, schema=schema, orient="row") if rows else pl.DataFrame(schema=schema)


def _dtype(column) -> pl.DataType:
    python_type: Any
    try:
        python_type = column.type.python_type
    except NotImplementedError:
        return pl.Utf8()
    if python_type is int:
        return pl.Int64()
    if python_type is float:
        return pl.Float64()
    if column.type.__class__.__name__ == "DateTime":
        return pl.Datetime("us", "UTC")
    return pl.Utf8()


def export_parquet(
    store: Store,
    folder: Path,
    import_ids: Iterable[int] | None = None,
    progress: Callable[[Iterable[Any], str], Iterable[Any]] = lambda items, _: items,
) -> dict[str, int]:
    """Write the dataset for these imports (all when None) into `folder`, which must not exist or be empty;
    returns the rows written per table."""
    wanted = None if import_ids is None else sorted({int(i) for i in import_ids})
    imports = _table_frame(
        store,
        schema.imports,
        None if wanted is None else schema.imports.c.id.in_(wanted),
        json_columns=("device_extra", "warnings"),
    )
    ids = imports["id"].to_list()
    launches = _table_frame(store, schema.launches, schema.launches.c.import_id.in_(ids))
    folder.mkdir(parents=True, exist_ok=True)
    written = {"imports": imports.height, "launches": launches.height}
    imports.write_parquet(folder / "imports.parquet", compression=COMPRESSION)
    launches.write_parquet(folder / "launches.parquet", compression=COMPRESSION)
    for name, table in (("nvtx_ranges", schema.nvtx_ranges), ("memcpys", schema.memcpys)):
        frame = _table_frame(store, table, table.c.import_id.in_(ids))
        frame.write_parquet(folder / f"{name}.parquet", compression=COMPRESSION)
        written[name] = frame.height
    launch_ids = launches["id"].to_list()
    results = _table_frame(store, schema.analysis_results, schema.analysis_results.c.launch_id.in_(launch_ids))
    results.write_parquet(folder / "analysis_results.parquet", compression=COMPRESSION)
    written["analysis_results"] = results.height

    written.update(metrics=0, warps=0, regions=0)
    by_import = launches.select("import_id", "id").group_by("import_id", maintain_order=True).agg("id")
    warp_counts = store.warp_counts(launch_ids)
    for import_id, ids_of_import in progress(list(by_import.iter_rows()), "exporting"):
        partition = f"import_id={import_id}"
        with store.engine.connect() as connection:
            metrics = columnar.read(connection, columnar.METRICS, ids_of_import, with_launch_id=True)
        if metrics.height:
            (folder / "metrics" / partition).mkdir(parents=True, exist_ok=True)
            metrics.write_parquet(folder / "metrics" / partition / "part-0.parquet", compression=COMPRESSION)
            written["metrics"] += metrics.height
        for launch_id in ids_of_import:
            frames = []
            if launch_id in warp_counts:
                frames.append(("warps", store.warps(launch_id)))
            regions = launch_regions(store, launch_id)
            if regions.height:
                frames.append(("regions", regions))
            for kind, frame in frames:
                (folder / kind / partition).mkdir(parents=True, exist_ok=True)
                frame = frame.select(pl.lit(launch_id, pl.Int64).alias("launch_id"), pl.all())
                frame.write_parquet(folder / kind / partition / f"launch-{launch_id}.parquet", compression=COMPRESSION)
                written[kind] += frame.height
    return written
