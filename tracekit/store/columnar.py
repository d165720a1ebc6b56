"""A launch's bulk (its warp records, its full metric vector) as Arrow IPC chunks (zstd) in `bulk_chunks`.

Millions of rows went into `warps` and `metrics` one row at a time (executemany, COPY) and came back one Python
tuple at a time: most of an import's and an analysis's time. Stored as columnar chunks, a launch's rows are
written and read as a few blobs inside the import's own transaction (so SQLite and PostgreSQL stay atomic and
self-contained) and decode straight into polars. The catalog stays relational: imports, launches, and the
metrics the analysis names (`CATALOG_METRICS`) also go to `metrics`, for SQL users; `Store.metrics` reads the
chunks, so it returns every metric, as before.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator

import polars as pl
from sqlalchemy import Connection, delete, func, insert, select

from tracekit.parsed import METRIC_SCHEMA, WARP_SCHEMA
from tracekit.store.schema import BulkChunkRow

ENCODING = "arrow-ipc-zstd"
WARPS, METRICS = "warps", "metrics"
CHUNK_ROWS = {WARPS: 2_000_000, METRICS: 1_000_000}  # a chunk decodes to at most ~100 MB
COLUMNS = {
    WARPS: {name: dtype for name, dtype in WARP_SCHEMA.items() if name != "launch_key"},
    METRICS: {name: dtype for name, dtype in METRIC_SCHEMA.items() if name != "launch_key"},
}
REQUIRED = {WARPS: ("sm_id", "block_id", "warp_in_block", "start_ns", "end_ns"), METRICS: ("name",)}
ID_BATCH = 5_000  # launch ids per IN (...): far below SQLite's and PostgreSQL's parameter limits
INSERT_BATCH_BYTES = 64 << 20  # encoded chunks held before they are sent


class BulkIntegrityError(ValueError):
    """A bulk row breaks a rule the row tables enforced with NOT NULL: nothing of the import is kept."""


def _catalog_metric_names() -> frozenset[str]:
    """Every metric name (and display name) the analysis looks up by name: the alias tuples of
    `tracekit.analysis.counters`, and the two it reads directly."""
    from tracekit.analysis import counters

    names: set[str] = {"gpu__time_duration.sum", "launch__shared_mem_config_size"}

    def collect(value: object) -> None:
        if isinstance(value, str):
            names.add(value)
        elif isinstance(value, tuple | list | frozenset | set):
            for item in value:
                collect(item)
        elif isinstance(value, dict):
            for item in value.values():
                collect(item)

    for key, value in vars(counters).items():
        if key.isupper():
            collect(value)
    return frozenset(names)


CATALOG_METRICS = _catalog_metric_names()


def encode(frame: pl.DataFrame) -> bytes:
    buffer = io.BytesIO()
    frame.write_ipc(buffer, compression="zstd")
    return buffer.getvalue()


def decode(data: bytes, kind: str) -> pl.DataFrame:
    frame = pl.read_ipc(data)
    return frame.select(pl.col(name).cast(dtype) for name, dtype in COLUMNS[kind].items())


def empty(kind: str) -> pl.DataFrame:
    return pl.DataFrame(schema=COLUMNS[kind])


def _chunks(frame: pl.DataFrame, kind: str) -> Iterator[dict]:
    """The chunk rows of `frame` (columns: launch_id and the kind's columns), launch by launch in first-seen
    order, each launch's rows in their order."""
    missing = [name for name in REQUIRED[kind] if frame[name].null_count()]
    if missing:
        raise BulkIntegrityError(f"{kind}: {', '.join(missing)} missing in {frame[missing[0]].null_count()} rows")
    columns = list(COLUMNS[kind])
    one_launch = frame["launch_id"].n_unique() == 1
    for part in [frame] if one_launch else frame.partition_by("launch_id", maintain_order=True):
        launch_id = int(part["launch_id"][0])
        for index, chunk in enumerate(part.select(columns).iter_slices(CHUNK_ROWS[kind])):
            yield {
                "launch_id": launch_id,
                "kind": kind,
                "chunk_index": index,
                "row_count": chunk.height,
                "encoding": ENCODING,
                "data": encode(chunk),
            }


def write(connection: Connection, kind: str, frame: pl.DataFrame) -> None:
    """Store `frame` (launch_id + the kind's columns, cast as needed) as chunks, on the caller's transaction."""
    if frame.height == 0:
        return
    frame = frame.select(
        pl.col("launch_id").cast(pl.Int64), *(pl.col(name).cast(dtype) for name, dtype in COLUMNS[kind].items())
    )
    batch: list[dict] = []
    size = 0
    for row in _chunks(frame, kind):
        batch.append(row)
        size += len(row["data"])
        if size >= INSERT_BATCH_BYTES:
            connection.execute(insert(BulkChunkRow), batch)
            batch, size = [], 0
    if batch:
        connection.execute(insert(BulkChunkRow), batch)


def _id_batches(launch_ids: Iterable[int]) -> Iterator[list[int]]:
    ids = sorted({int(i) for i in launch_ids})
    for start in range(0, len(ids), ID_BATCH):
        yield ids[start : start + ID_BATCH]


def read(connection: Connection, kind: str, launch_ids: Iterable[int], with_launch_id: bool) -> pl.DataFrame:
    """The rows of these launches, launch by launch (ascending id: the order they were imported in), each
    launch's rows in their stored order; with `with_launch_id` a first column launch_id (Int64)."""
    frames = []
    for ids in _id_batches(launch_ids):
        rows = connection.execute(
            select(BulkChunkRow.launch_id, BulkChunkRow.data)
            .where(BulkChunkRow.kind == kind, BulkChunkRow.launch_id.in_(ids))
            .order_by(BulkChunkRow.launch_id, BulkChunkRow.chunk_index)
        )
        for launch_id, data in rows:
            frame = decode(data, kind)
            if with_launch_id:
                frame = frame.select(pl.lit(launch_id, pl.Int64).alias("launch_id"), pl.all())
            frames.append(frame)
    if not frames:
        frame = empty(kind)
        return frame.select(pl.lit(None, pl.Int64).alias("launch_id"), pl.all()) if with_launch_id else frame
    return pl.concat(frames, rechunk=True)


def row_counts(connection: Connection, kind: str, launch_ids: Iterable[int]) -> dict[int, int]:
    """Rows stored per launch (launches without any are absent)."""
    counts: dict[int, int] = {}
    for ids in _id_batches(launch_ids):
        for launch_id, count in connection.execute(
            select(BulkChunkRow.launch_id, func.sum(BulkChunkRow.row_count))
            .where(BulkChunkRow.kind == kind, BulkChunkRow.launch_id.in_(ids))
            .group_by(BulkChunkRow.launch_id)
        ):
            if count:
                counts[int(launch_id)] = int(count)
    return counts


def delete_launches(connection: Connection, launch_ids_statement) -> None:
    connection.execute(delete(BulkChunkRow).where(BulkChunkRow.launch_id.in_(launch_ids_statement)))
