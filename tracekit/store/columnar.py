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
from collections.abc import Iterable, Iterator, Sequence

import polars as pl
from sqlalchemy import Connection, and_, delete, func, insert, or_, select

from tracekit import counters
from tracekit.parsed import METRIC_SCHEMA, WARP_SCHEMA
from tracekit.store import schema

ENCODING = "arrow-ipc-zstd"
WARPS, METRICS = "warps", "metrics"
CHUNK_ROWS = {WARPS: 2_000_000, METRICS: 250_000}  # a warp chunk decodes to ~100 MB; a metric chunk to ~25 MB
COLUMNS = {
    WARPS: {name: dtype for name, dtype in WARP_SCHEMA.items() if name != "launch_key"},
    METRICS: {name: dtype for name, dtype in METRIC_SCHEMA.items() if name != "launch_key"},
}
REQUIRED = {WARPS: ("sm_id", "block_id", "warp_in_block", "start_ns", "end_ns"), METRICS: ("name",)}
ID_BATCH = 5_000  # launch ids per IN (...): far below SQLite's and PostgreSQL's parameter limits
# id runs per query: their ORs nest one level each, and SQLite refuses an expression deeper than 1,000
RUNS_PER_QUERY = 400
INSERT_BATCH_BYTES = 64 << 20  # encoded chunks held before they are sent


class BulkIntegrityError(ValueError):
    """A bulk row breaks a rule the row tables enforced with NOT NULL: nothing of the import is kept."""


def _catalog_metric_names() -> frozenset[str]:
    """Every metric name (and display name) the analysis looks up by name: the alias tuples of
    `tracekit.counters`, and the two it reads directly."""
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


def decode(data: bytes, kind: str, columns: Sequence[str] | None = None) -> pl.DataFrame:
    """A chunk's rows, typed as the kind's columns (metric chunks lead with their rows' launch_id); `columns`:
    only these of the kind's columns, the others never decompressed (IPC compresses each column apart)."""
    wanted = COLUMNS[kind] if columns is None else {name: COLUMNS[kind][name] for name in columns}
    if columns is not None:
        present = pl.read_ipc_schema(io.BytesIO(data))
        frame = pl.read_ipc(data, columns=[name for name in ("launch_id", *wanted) if name in present])
    else:
        frame = pl.read_ipc(data)
    lead = [pl.col("launch_id").cast(pl.Int64)] if "launch_id" in frame.columns else []
    return frame.select(*lead, *(pl.col(name).cast(dtype) for name, dtype in wanted.items()))


def empty(kind: str) -> pl.DataFrame:
    return pl.DataFrame(schema=COLUMNS[kind])


def _chunk_row(kind: str, chunk: pl.DataFrame, index: int, keep_id: bool) -> dict:
    first, last = chunk.select(pl.col("launch_id").min().alias("first"), pl.col("launch_id").max().alias("last")).row(0)
    return {
        "launch_id": first,
        "last_launch_id": last,
        "kind": kind,
        "chunk_index": index,
        "row_count": chunk.height,
        "encoding": ENCODING,
        "data": encode(chunk if keep_id else chunk.drop("launch_id")),
    }


def _chunks(frame: pl.DataFrame, kind: str) -> Iterator[dict]:
    """The chunk rows of `frame` (launch_id first, then the kind's columns), in the order written back.

    Warps: one launch's rows per chunk, without launch_id, launches in ascending id. Metrics: chunks of consecutive
    launches, each row with its launch_id, a launch's rows in its file's order. A metric-major file (a raw page
    lists each metric for every launch) is stored launch by launch too: one launch reads back its own chunk, not
    every chunk of the import, and the analysis reads each launch's rows as one slice, without a sort."""
    missing = [name for name in REQUIRED[kind] if frame[name].null_count()]
    if missing:
        raise BulkIntegrityError(f"{kind}: {', '.join(missing)} missing in {frame[missing[0]].null_count()} rows")
    limit = CHUNK_ROWS[kind]
    order = None  # rows out of launch order: a stable permutation, gathered a chunk at a time (no sorted copy)
    if not frame["launch_id"].is_sorted():
        order = frame.select(pl.arg_sort_by("launch_id", maintain_order=True)).to_series()
    ids = frame["launch_id"] if order is None else frame["launch_id"].gather(order)

    def rows(offset: int, length: int) -> pl.DataFrame:
        return frame.slice(offset, length) if order is None else frame[order.slice(offset, length)]

    runs = ids.rle().struct.unnest()  # (len, value) per launch
    offset, pending = 0, 0  # metrics: rows of the launches gathered for the next chunk
    for count, _ in runs.iter_rows():
        if kind == WARPS:
            for index, start in enumerate(range(0, count, limit)):
                yield _chunk_row(kind, rows(offset + start, min(limit, count - start)), index, keep_id=False)
            offset += count
            continue
        if pending and pending + count > limit:
            yield _chunk_row(kind, rows(offset, pending), 0, keep_id=True)
            offset, pending = offset + pending, 0
        pending += count
    if pending:
        yield _chunk_row(kind, rows(offset, pending), 0, keep_id=True)


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
            connection.execute(insert(schema.bulk_chunks), batch)
            batch, size = [], 0
    if batch:
        connection.execute(insert(schema.bulk_chunks), batch)


def _runs(launch_ids: Iterable[int]) -> list[tuple[int, int]]:
    """Sorted ids as (first, last) runs of consecutive ids."""
    runs: list[tuple[int, int]] = []
    for launch_id in sorted({int(i) for i in launch_ids}):
        if runs and launch_id == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], launch_id)
        else:
            runs.append((launch_id, launch_id))
    return runs


def read(
    connection: Connection,
    kind: str,
    launch_ids: Iterable[int],
    with_launch_id: bool,
    columns: Sequence[str] | None = None,
) -> pl.DataFrame:
    """The rows of these launches in the order they were written (launch by launch; a launch's warps, or its metric
    rows as the file listed them; a store written before metrics were kept launch by launch interleaves a raw
    page's launches); with `with_launch_id` a first
    column launch_id (Int64); `columns`: only these of the kind's columns (in this order), default all."""
    wanted = sorted({int(i) for i in launch_ids})
    runs = _runs(wanted)
    seen: dict[int, tuple[int, bytes]] = {}
    for start in range(0, len(runs), RUNS_PER_QUERY):
        overlaps = [
            and_(schema.bulk_chunks.c.launch_id <= last, schema.bulk_chunks.c.last_launch_id >= first)
            for first, last in runs[start : start + RUNS_PER_QUERY]
        ]
        rows = connection.execute(
            select(schema.bulk_chunks.c.id, schema.bulk_chunks.c.launch_id, schema.bulk_chunks.c.data).where(
                schema.bulk_chunks.c.kind == kind, or_(*overlaps)
            )
        )
        for chunk_id, launch_id, data in rows:
            seen[chunk_id] = (launch_id, data)
    frames = []
    for _, (launch_id, data) in sorted(seen.items()):  # chunk ids: the order written
        frame = decode(data, kind, columns)
        if "launch_id" in frame.columns:
            if not (frame["launch_id"].is_in(wanted).all()):
                frame = frame.filter(pl.col("launch_id").is_in(wanted))
        else:
            frame = frame.select(pl.lit(launch_id, pl.Int64).alias("launch_id"), pl.all())
        frames.append(frame)
    if not frames:
        frame = empty(kind) if columns is None else empty(kind).select(columns)
        return frame.select(pl.lit(None, pl.Int64).alias("launch_id"), pl.all()) if with_launch_id else frame
    frame = pl.concat(frames, rechunk=len(frames) > 1)
    return frame if with_launch_id else frame.drop("launch_id")


def row_counts(connection: Connection, kind: str, launch_ids: Iterable[int]) -> dict[int, int]:
    """Rows stored per launch (launches without any are absent); for warps, whose chunks hold one launch."""
    counts: dict[int, int] = {}
    ids = sorted({int(i) for i in launch_ids})
    for start in range(0, len(ids), ID_BATCH):
        for launch_id, count in connection.execute(
            select(schema.bulk_chunks.c.launch_id, func.sum(schema.bulk_chunks.c.row_count))
            .where(schema.bulk_chunks.c.kind == kind, schema.bulk_chunks.c.launch_id.in_(ids[start : start + ID_BATCH]))
            .group_by(schema.bulk_chunks.c.launch_id)
        ):
            if count:
                counts[int(launch_id)] = int(count)
    return counts


def delete_launches(connection: Connection, launch_ids_statement) -> None:
    """Delete the chunks of these launches (a metric chunk holds launches of one import only)."""
    connection.execute(delete(schema.bulk_chunks).where(schema.bulk_chunks.c.launch_id.in_(launch_ids_statement)))


def write_aggregates(connection: Connection, launch_id: int, version: str, frames: dict[str, pl.DataFrame]) -> None:
    """Small derived frames of one launch (a page's figure aggregates), kept beside its bulk as kind
    "view<version>:<name>" so that any process reuses them; replaces those already there."""
    kinds = {f"view{version}:{name}": frame for name, frame in frames.items()}
    if any(len(kind) > 20 for kind in kinds):
        raise ValueError(f"view kinds are at most 20 characters: {sorted(kinds)}")
    connection.execute(
        delete(schema.bulk_chunks).where(
            schema.bulk_chunks.c.launch_id == int(launch_id), schema.bulk_chunks.c.kind.in_(list(kinds))
        )
    )
    connection.execute(
        insert(schema.bulk_chunks),
        [
            {
                "launch_id": int(launch_id),
                "last_launch_id": int(launch_id),
                "kind": kind,
                "chunk_index": 0,
                "row_count": frame.height,
                "encoding": ENCODING,
                "data": encode(frame),
            }
            for kind, frame in kinds.items()
        ],
    )


def read_aggregates(connection: Connection, launch_id: int, version: str, names: Iterable[str]) -> dict | None:
    """The frames `write_aggregates` kept for this launch and version, or None unless every one of `names` is there."""
    kinds = {f"view{version}:{name}": name for name in names}
    rows = connection.execute(
        select(schema.bulk_chunks.c.kind, schema.bulk_chunks.c.data).where(
            schema.bulk_chunks.c.launch_id == int(launch_id), schema.bulk_chunks.c.kind.in_(list(kinds))
        )
    ).all()
    if len(rows) != len(kinds):
        return None
    return {kinds[kind]: pl.read_ipc(data) for kind, data in rows}
