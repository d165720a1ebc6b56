"""The normalized store: write a `ParsedImport` in one transaction, read launches, metrics and warps as frames."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl
from sqlalchemy import Connection, Engine, delete, func, insert, select, text
from sqlalchemy.exc import IntegrityError, OperationalError

from tracekit.errors import NotFoundError
from tracekit.parsed import LAUNCH_SCHEMA, ParsedImport
from tracekit.store import columnar, schema
from tracekit.store.bulk import bulk_insert
from tracekit.store.engine import driver_error, make_engine, migrate, resolve_url, write_transaction

LAUNCH_COLUMNS = [c for c in LAUNCH_SCHEMA if c != "launch_key"]
READ_BATCH_ROWS = 250_000


def file_sha256(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _with_launch_ids(frame: pl.DataFrame, keys: pl.Series, launch_ids: list[int]) -> pl.DataFrame:
    """`frame` with its launch_key replaced by the stored launch's id, rows of no stored launch dropped (a
    join would copy every column of millions of rows; this maps one). Keys 0..n-1 stored as consecutive ids,
    as a reader numbers them and the store assigns them, are an offset (a hash lookup per row cost 0.1 s per
    million warps)."""
    first = launch_ids[0] if launch_ids else 0
    if (
        keys.len()
        and keys.equals(pl.Series(keys.name, range(keys.len()), dtype=keys.dtype), check_names=False)
        and (launch_ids == list(range(first, first + len(launch_ids))))
    ):
        key = pl.col("launch_key")
        launch_id: pl.Expr = pl.when(key.is_between(0, len(launch_ids) - 1)).then(key.cast(pl.Int64) + first)
    else:
        launch_id = pl.col("launch_key").replace_strict(keys, launch_ids, default=None, return_dtype=pl.Int64)
    mapped = frame.with_columns(launch_id.alias("launch_id")).drop("launch_key")
    return mapped.filter(pl.col("launch_id").is_not_null()) if mapped["launch_id"].null_count() else mapped


@dataclass(frozen=True)
class ImportResult:
    import_id: int
    created: bool  # False when a file with the same sha256 was already stored
    launch_count: int
    warp_count: int


class Store:
    """One store (SQLite file or PostgreSQL database) at its current schema version."""

    def __init__(self, engine: Engine):
        self.engine = engine
        migrate(engine)

    @classmethod
    def open(cls, db: str | None = None) -> Store:
        return cls(make_engine(resolve_url(db)))

    @property
    def url(self) -> str:
        return self.engine.url.render_as_string(hide_password=True)

    # ---- writing -------------------------------------------------------------------------------------------

    @contextmanager
    def transaction(self) -> Iterator[Connection]:
        """One write transaction: committed when the block ends, rolled back (nothing kept) when it raises.

        A store another process holds locked past the busy timeout, or one that is unreachable, becomes one
        `StoreError` line instead of a driver traceback."""
        try:
            with write_transaction(self.engine) as connection:
                yield connection
        except OperationalError as exc:
            raise driver_error(self.url, exc) from None

    def find_by_sha256(self, sha256: str, connection: Connection | None = None) -> int | None:
        if connection is not None:
            return connection.scalar(select(schema.imports.c.id).where(schema.imports.c.sha256 == sha256))
        with self.engine.connect() as connection:
            return connection.scalar(select(schema.imports.c.id).where(schema.imports.c.sha256 == sha256))

    def add_import(
        self,
        parsed: ParsedImport,
        source_path: str | Path,
        name: str | None = None,
        sha256: str | None = None,
        connection: Connection | None = None,
    ) -> ImportResult:
        """Write everything of one file in one transaction; a file already stored (same sha256) adds nothing.

        With `connection` (from `transaction()`), the file joins that transaction instead: a batch of files is
        then committed together or not at all."""
        if connection is None:
            try:
                with self.transaction() as connection:
                    return self.add_import(parsed, source_path, name, sha256, connection)
            except IntegrityError:
                # Another writer stored the same file between our check and our insert.
                existing = self.find_by_sha256(sha256 or file_sha256(source_path))
                if existing is None:
                    raise
                return self.existing_result(existing)
        source_path = Path(source_path)
        sha256 = sha256 or file_sha256(source_path)
        existing = self.find_by_sha256(sha256, connection)
        if existing is not None:
            return self.existing_result(existing, connection)
        parsed = parsed.conformed()
        device = parsed.device
        import_values: dict[str, Any] = {
            "name": name or source_path.name,
            "source_path": str(source_path),
            "format": parsed.format,
            "sha256": sha256,
            "size_bytes": source_path.stat().st_size,
            "imported_at": datetime.now(UTC),
            "tool": parsed.tool,
            "tool_version": parsed.tool_version,
            "device_name": device.name if device else None,
            "compute_capability": device.compute_capability if device else None,
            "sm_count": device.sm_count if device else None,
            "sm_clock_hz": device.sm_clock_hz if device else None,
            "max_warps_per_sm": device.max_warps_per_sm if device else None,
            "device_extra": (device.extra or None) if device else None,
            "warnings": parsed.warnings or None,
        }
        import_id = connection.execute(
            insert(schema.imports).values(import_values).returning(schema.imports.c.id)
        ).scalar_one()
        launch_ids = self._insert_launches(connection, import_id, parsed.launches)
        keys = parsed.launches["launch_key"]
        metrics = _with_launch_ids(parsed.metrics, keys, launch_ids)
        columnar.write(connection, columnar.METRICS, metrics)  # every metric, columnar
        catalog = metrics.filter(pl.col("name").is_in(columnar.CATALOG_METRICS))
        bulk_insert(connection, schema.metrics, catalog)  # the ones the analysis names, relational too
        warps = _with_launch_ids(parsed.warps, keys, launch_ids)
        columnar.write(connection, columnar.WARPS, warps)
        regions = _with_launch_ids(parsed.regions, keys, launch_ids)
        bulk_insert(connection, schema.regions, regions)
        bulk_insert(connection, schema.source_samples, _with_launch_ids(parsed.source_samples, keys, launch_ids))
        bulk_insert(connection, schema.source_files, _with_launch_ids(parsed.source_files, keys, launch_ids))
        for table, frame in (
            (schema.nvtx_ranges, parsed.nvtx_ranges),
            (schema.memcpys, parsed.memcpys),
        ):
            bulk_insert(connection, table, frame.with_columns(pl.lit(import_id).alias("import_id")))
        return ImportResult(import_id, True, parsed.launches.height, parsed.warps.height)

    def _insert_launches(self, connection, import_id: int, launches: pl.DataFrame) -> list[int]:
        """Insert the launches (100k from an Nsight Systems export) by the bulk path, with ids taken first: from
        the table's sequence on PostgreSQL; on SQLite after the largest ever used (AUTOINCREMENT: the import's
        row written before holds the write lock, and SQLite raises its sequence to the ids given)."""
        if launches.height == 0:
            return []
        count = launches.height
        if connection.dialect.name == "postgresql":
            ids = self._reserve_launch_ids(count)
        elif connection.dialect.name == "sqlite":
            used = connection.execute(
                text(
                    "SELECT max(coalesce((SELECT max(id) FROM launches), 0), "
                    "coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'launches'), 0))"
                )
            ).scalar()
            ids = list(range(int(used or 0) + 1, int(used or 0) + 1 + count))
        else:
            rows = [
                {"import_id": import_id, "launch_index": index, **{c: row[c] for c in LAUNCH_COLUMNS}}
                for index, row in enumerate(launches.iter_rows(named=True))
            ]
            result = connection.execute(
                insert(schema.launches).returning(schema.launches.c.id, sort_by_parameter_order=True), rows
            )
            return [row[0] for row in result]
        frame = launches.select(
            pl.Series("id", ids, pl.Int64),
            pl.lit(import_id, pl.Int64).alias("import_id"),
            pl.int_range(count, dtype=pl.Int64).alias("launch_index"),
            *LAUNCH_COLUMNS,
        )
        bulk_insert(connection, schema.launches, frame)
        return ids

    def _reserve_launch_ids(self, count: int) -> list[int]:
        """`count` consecutive ids from the PostgreSQL launches sequence: one nextval and one setval, under a lock
        that a short transaction of their own holds (a nextval per id cost half a second at 100k launches). As
        with nextval, the ids of an import that rolls back are skipped: sequences are not transactional."""
        sequence = "pg_get_serial_sequence('launches', 'id')"
        with self.engine.begin() as reserve:
            reserve.execute(text("SELECT pg_advisory_xact_lock(hashtext('tracekit-launch-ids:' || current_schema()))"))
            last = reserve.execute(
                text(f"SELECT setval({sequence}, nextval({sequence}) + :n - 1)"), {"n": count}
            ).scalar_one()
        return list(range(last - count + 1, last + 1))

    def existing_result(self, import_id: int, connection: Connection | None = None) -> ImportResult:
        if connection is None:
            with self.engine.connect() as connection:
                return self.existing_result(import_id, connection)
        launch_count = connection.scalar(
            select(func.count()).select_from(schema.launches).where(schema.launches.c.import_id == import_id)
        )
        launch_ids = connection.scalars(
            select(schema.launches.c.id).where(schema.launches.c.import_id == import_id)
        ).all()
        warp_count = sum(columnar.row_counts(connection, columnar.WARPS, launch_ids).values())
        return ImportResult(import_id, False, launch_count or 0, warp_count)

    def delete_import(self, import_id: int) -> None:
        """Delete an import with its launches and everything under them, in one transaction."""
        launch_ids = select(schema.launches.c.id).where(schema.launches.c.import_id == import_id)
        with self.transaction() as connection:
            # no foreign key to cascade from
            for table in (schema.warps, schema.metrics, schema.regions, schema.source_samples, schema.source_files):
                connection.execute(delete(table).where(table.c.launch_id.in_(launch_ids)))
            columnar.delete_launches(connection, launch_ids)
            deleted = connection.execute(delete(schema.imports).where(schema.imports.c.id == import_id)).rowcount
        if not deleted:
            raise NotFoundError(f"no import with id {import_id} in {self.url}")

    # ---- reading -------------------------------------------------------------------------------------------

    def _frame(self, statement, schema_overrides: dict | None = None) -> pl.DataFrame:
        """The statement's rows as a frame, built a batch at a time: a whole result at once goes through Python
        objects (about 60 times the frame's memory for 10M warps); batches keep that to one batch's worth. Built as
        `pl.read_database` builds a SQLAlchemy result (rows, their column names, no schema inferred from the
        cursor, which neither SQLite nor psycopg describes in polars' terms), without its test for an ORM session,
        which imports SQLAlchemy's ORM: 0.1 s of every command that reads the store."""
        with self.engine.connect() as connection:
            result = connection.execute(statement)
            columns = list(result.keys())
            batches = [
                pl.DataFrame(
                    rows, schema=columns, schema_overrides=schema_overrides, orient="row", infer_schema_length=None
                )
                for rows in result.partitions(READ_BATCH_ROWS)
            ]
        if not batches:  # no rows: still the statement's columns
            return pl.DataFrame(schema=columns, schema_overrides=schema_overrides)
        return pl.concat(batches, how="vertical_relaxed", rechunk=True)

    def imports(self) -> pl.DataFrame:
        """Every stored import, with its launch count, newest last."""
        launch_count = (
            select(func.count())
            .select_from(schema.launches)
            .where(schema.launches.c.import_id == schema.imports.c.id)
            .scalar_subquery()
        )
        columns = [c for c in schema.imports.columns if c.name not in ("device_extra", "warnings")]
        statement = select(*columns, launch_count.label("launch_count")).order_by(schema.imports.c.id)
        return self._frame(statement)

    def get_import(self, import_id: int) -> dict[str, Any]:
        with self.engine.connect() as connection:
            row = connection.execute(select(schema.imports).where(schema.imports.c.id == import_id)).mappings().first()
        if row is None:
            raise NotFoundError(f"no import with id {import_id} in {self.url}")
        return dict(row)

    def launches(self, import_id: int | None = None, launch_ids: list[int] | None = None) -> pl.DataFrame:
        """Launches joined with their import's device fields (one row per launch)."""
        statement = (
            select(
                schema.launches,
                schema.imports.c.name.label("import_name"),
                schema.imports.c.format,
                schema.imports.c.source_path,
                schema.imports.c.sha256,
                schema.imports.c.device_name,
                schema.imports.c.compute_capability,
                schema.imports.c.sm_count,
                schema.imports.c.sm_clock_hz,
                schema.imports.c.max_warps_per_sm,
            )
            .join(schema.imports)
            .order_by(schema.launches.c.import_id, schema.launches.c.launch_index)
        )
        if import_id is not None:
            statement = statement.where(schema.launches.c.import_id == import_id)
        if launch_ids is not None:
            statement = statement.where(schema.launches.c.id.in_(launch_ids))
        return self._frame(statement)

    def launch_count(self) -> int:
        """How many launches the store holds (one query)."""
        with self.engine.connect() as connection:
            return int(connection.scalar(select(func.count()).select_from(schema.launches)) or 0)

    def launch_fingerprint(self) -> tuple[int, int]:
        """How many launches the store holds and the largest id (one query): imports are immutable and launch ids
        never reused, so it changes exactly when an import or a delete changed the launches."""
        with self.engine.connect() as connection:
            count, top = connection.execute(select(func.count(), func.max(schema.launches.c.id))).one()
        return int(count or 0), int(top or 0)

    def first_launch_ids(self, limit: int) -> list[int]:
        """The first `limit` launch ids in import order (one small query, not the whole catalog)."""
        with self.engine.connect() as connection:
            statement = (
                select(schema.launches.c.id)
                .order_by(schema.launches.c.import_id, schema.launches.c.launch_index)
                .limit(limit)
            )
            return [int(i) for i in connection.scalars(statement)]

    def read_aggregates(self, launch_id: int, version: str, names: Iterable[str]) -> dict[str, pl.DataFrame] | None:
        """A launch's kept figure aggregates (`columnar.read_aggregates`); None unless all of `names` are there."""
        with self.engine.connect() as connection:
            return columnar.read_aggregates(connection, launch_id, version, names)

    def write_aggregates(self, launch_id: int, version: str, frames: dict[str, pl.DataFrame]) -> None:
        """Keeps a launch's figure aggregates beside its bulk (`columnar.write_aggregates`), for every process after;
        not queued behind a long import (a page draw must not wait for one): raises when the store is busy."""
        with self.engine.begin() as connection:
            columnar.write_aggregates(connection, launch_id, version, frames)

    def metrics(self, launch_ids: list[int], columns: Sequence[str] | None = None) -> pl.DataFrame:
        """Every metric of these launches, launch by launch in the order imported, each launch's rows as its file
        listed them: launch_id, section, name, unit, value, text_value, kind (`columns`: launch_id and only these, the
        others never decompressed). Read from columnar chunks, not row by row."""
        with self.engine.connect() as connection:
            return columnar.read(connection, columnar.METRICS, launch_ids, with_launch_id=True, columns=columns)

    def warps(self, launch_id: int, columns: Sequence[str] | None = None) -> pl.DataFrame:
        """One launch's warps, typed as `WARP_SCHEMA` without launch_key, in recorded order: a few Arrow IPC
        chunks decoded straight into polars. `columns`: only these (the others are not decompressed)."""
        with self.engine.connect() as connection:
            return columnar.read(connection, columnar.WARPS, [int(launch_id)], with_launch_id=False, columns=columns)

    def warp_counts(self, launch_ids: list[int]) -> dict[int, int]:
        """Warps stored per launch (launches without any are absent)."""
        with self.engine.connect() as connection:
            return columnar.row_counts(connection, columnar.WARPS, launch_ids)

    def nvtx_ranges(self, import_id: int) -> pl.DataFrame:
        return self._frame(select(schema.nvtx_ranges).where(schema.nvtx_ranges.c.import_id == import_id))

    def memcpys(self, import_id: int) -> pl.DataFrame:
        return self._frame(select(schema.memcpys).where(schema.memcpys.c.import_id == import_id))

    def import_warnings(self, import_ids: list[int]) -> dict[int, list[str]]:
        """The warnings each import stored (an incomplete trace says so there), by import id."""
        if not import_ids:
            return {}
        with self.engine.connect() as connection:
            rows = connection.execute(
                select(schema.imports.c.id, schema.imports.c.warnings).where(schema.imports.c.id.in_(import_ids))
            ).all()
        return {import_id: list(warnings or []) for import_id, warnings in rows}

    # ---- cached analysis results ----------------------------------------------------------------------------

    def cached_results(self, launch_ids: list[int], engine_version: str) -> dict[int, tuple[str, str]]:
        """{launch id: (context digest, result JSON)} of the given launches computed by `engine_version`."""
        if not launch_ids:
            return {}
        with self.engine.connect() as connection:
            rows = connection.execute(
                select(
                    schema.analysis_results.c.launch_id,
                    schema.analysis_results.c.context_digest,
                    schema.analysis_results.c.result_json,
                )
                .where(schema.analysis_results.c.launch_id.in_(launch_ids))
                .where(schema.analysis_results.c.engine_version == engine_version)
            ).all()
        return {launch_id: (digest, text) for launch_id, digest, text in rows}

    def save_results(self, engine_version: str, results: dict[int, tuple[str, str]]) -> None:
        """Replace the cached results of these launches: {launch id: (context digest, result JSON)}. A launch
        deleted meanwhile is skipped (its import is gone, and so is the need for its result)."""
        if not results:
            return
        now = datetime.now(UTC)
        with self.transaction() as connection:
            present = set(
                connection.execute(select(schema.launches.c.id).where(schema.launches.c.id.in_(list(results))))
                .scalars()
                .all()
            )
            ids = [launch_id for launch_id in results if launch_id in present]
            if not ids:
                return
            connection.execute(delete(schema.analysis_results).where(schema.analysis_results.c.launch_id.in_(ids)))
            connection.execute(
                insert(schema.analysis_results),
                [
                    {
                        "launch_id": launch_id,
                        "engine_version": engine_version,
                        "context_digest": results[launch_id][0],
                        "result_json": results[launch_id][1],
                        "computed_at": now,
                    }
                    for launch_id in ids
                ],
            )
