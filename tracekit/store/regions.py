"""Reading the named regions the store holds (the table `regions`, written by `Store.add_import`)."""

from __future__ import annotations

import polars as pl
from sqlalchemy import func, select

from tracekit.parsed import REGION_SCHEMA
from tracekit.store import schema
from tracekit.store.store import Store

COLUMNS = {name: dtype for name, dtype in REGION_SCHEMA.items() if name != "launch_key"}


def launch_regions(store: Store, launch_id: int) -> pl.DataFrame:
    """One launch's region instances, typed as `REGION_SCHEMA` without launch_key, in recorded order."""
    statement = (
        select(*[schema.regions.c[name] for name in COLUMNS])
        .where(schema.regions.c.launch_id == int(launch_id))
        .order_by(schema.regions.c.id)
    )
    with store.engine.connect() as connection:
        rows = connection.execute(statement).all()
    return pl.DataFrame([tuple(row) for row in rows], schema=COLUMNS, orient="row")


def region_counts(store: Store, launch_ids: list[int]) -> dict[int, int]:
    """Region instances stored per launch (launches without any are absent)."""
    with store.engine.connect() as connection:
        rows = connection.execute(
            select(schema.regions.c.launch_id, func.count())
            .where(schema.regions.c.launch_id.in_(launch_ids))
            .group_by(schema.regions.c.launch_id)
        ).all()
    return {launch_id: count for launch_id, count in rows}
