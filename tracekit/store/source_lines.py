"""Reading the Source-page samples the store holds (tables `source_samples` and `source_files`, written by
`Store.add_import`)."""

from __future__ import annotations

import polars as pl
from sqlalchemy import func, select

from tracekit.parsed import SOURCE_FILE_SCHEMA, SOURCE_SAMPLE_SCHEMA
from tracekit.store import schema
from tracekit.store.store import Store

SAMPLE_COLUMNS = {name: dtype for name, dtype in SOURCE_SAMPLE_SCHEMA.items() if name != "launch_key"}
FILE_COLUMNS = {name: dtype for name, dtype in SOURCE_FILE_SCHEMA.items() if name != "launch_key"}


def launch_source_samples(store: Store, launch_id: int) -> pl.DataFrame:
    """One launch's instructions with their counters, typed as `SOURCE_SAMPLE_SCHEMA` without launch_key."""
    table = schema.source_samples
    statement = select(*[table.c[name] for name in SAMPLE_COLUMNS]).where(table.c.launch_id == int(launch_id))
    with store.engine.connect() as connection:
        rows = connection.execute(statement.order_by(table.c.id)).all()
    return pl.DataFrame([tuple(row) for row in rows], schema=SAMPLE_COLUMNS, orient="row")


def launch_source_files(store: Store, launch_id: int) -> pl.DataFrame:
    """The source files (path, text) the launch's report embedded."""
    table = schema.source_files
    statement = select(*[table.c[name] for name in FILE_COLUMNS]).where(table.c.launch_id == int(launch_id))
    with store.engine.connect() as connection:
        rows = connection.execute(statement.order_by(table.c.id)).all()
    return pl.DataFrame([tuple(row) for row in rows], schema=FILE_COLUMNS, orient="row")


def source_sample_counts(store: Store, launch_ids: list[int]) -> dict[int, int]:
    """Instructions with source samples stored per launch (launches without any are absent)."""
    table = schema.source_samples
    with store.engine.connect() as connection:
        rows = connection.execute(
            select(table.c.launch_id, func.count()).where(table.c.launch_id.in_(launch_ids)).group_by(table.c.launch_id)
        ).all()
    return {launch_id: count for launch_id, count in rows}
