"""columnar bulk: each launch's warps and full metric vector as Arrow IPC chunks (zstd) in `bulk_chunks`

An existing store is converted, not dropped: every launch's warp rows and metric rows are read in their stored
order, written as chunks, and removed from the row tables; `metrics` keeps the rows of the metrics the analysis
names (the relational catalog). Downgrade writes the chunks back as rows.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23 18:00:00
"""

import polars as pl
import sqlalchemy as sa
from alembic import op

from tracekit.store import columnar
from tracekit.store.bulk import bulk_insert

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

READ_ROWS = 500_000


def _rows_frame(connection, sql: str, columns: dict, params: dict) -> pl.DataFrame:
    """A query's rows as a frame, fetched in batches through the driver's own cursor."""
    frames = []
    result = connection.execute(sa.text(sql), params)
    while rows := result.fetchmany(READ_ROWS):
        frames.append(pl.DataFrame([tuple(r) for r in rows], schema=columns, orient="row"))
    return pl.concat(frames) if frames else pl.DataFrame(schema=columns)


def _table(name: str, *columns: str) -> sa.TableClause:
    return sa.table(name, *(sa.column(c) for c in columns))


def upgrade() -> None:
    op.create_table(
        "bulk_chunks",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("launch_id", sa.Integer(), nullable=False),
        sa.Column("last_launch_id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=20), nullable=False),
        sa.Column("chunk_index", sa.Integer(), nullable=False),
        sa.Column("row_count", sa.BigInteger(), nullable=False),
        sa.Column("encoding", sa.String(length=40), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_bulk_chunks_kind_launch", "bulk_chunks", ["kind", "launch_id", "last_launch_id"])
    connection = op.get_bind()
    warp_columns = {"launch_id": pl.Int64, **columnar.COLUMNS[columnar.WARPS]}
    for (launch_id,) in connection.execute(sa.text("SELECT DISTINCT launch_id FROM warps ORDER BY 1")).all():
        warps = _rows_frame(
            connection,
            f"SELECT launch_id, {', '.join(columnar.COLUMNS[columnar.WARPS])} FROM warps "
            "WHERE launch_id = :launch ORDER BY id",
            warp_columns,
            {"launch": launch_id},
        )
        columnar.write(connection, columnar.WARPS, warps)
    connection.execute(sa.text("DELETE FROM warps"))

    metric_columns = {"launch_id": pl.Int64, **columnar.COLUMNS[columnar.METRICS]}
    select_metrics = sa.text(
        f"SELECT m.launch_id, {', '.join('m.' + c for c in columnar.COLUMNS[columnar.METRICS])} FROM metrics m "
        "JOIN launches l ON l.id = m.launch_id WHERE l.import_id = :import_id ORDER BY m.id"
    )
    imports = [row[0] for row in connection.execute(sa.text("SELECT id FROM imports ORDER BY id"))]
    for import_id in imports:  # a metric chunk holds launches of one import (deleted with it)
        metrics = _rows_frame(connection, select_metrics.text, metric_columns, {"import_id": import_id})
        columnar.write(connection, columnar.METRICS, metrics)
    keep = sorted(columnar.CATALOG_METRICS)
    connection.execute(
        sa.text("DELETE FROM metrics WHERE name NOT IN :names").bindparams(sa.bindparam("names", expanding=True)),
        {"names": keep},
    )


def downgrade() -> None:
    connection = op.get_bind()
    connection.execute(sa.text("DELETE FROM metrics"))
    launches = connection.execute(sa.text("SELECT import_id, id FROM launches ORDER BY import_id, id")).all()
    by_import: dict[int, list[int]] = {}
    for import_id, launch_id in launches:
        by_import.setdefault(import_id, []).append(launch_id)
    for ids in by_import.values():  # rows back in the order they were imported
        metrics = columnar.read(connection, columnar.METRICS, ids, with_launch_id=True)
        bulk_insert(connection, _table("metrics", *metrics.columns), metrics)
        for launch_id in ids:
            warps = columnar.read(connection, columnar.WARPS, [launch_id], with_launch_id=True)
            bulk_insert(connection, _table("warps", *warps.columns), warps)
    op.drop_index("ix_bulk_chunks_kind_launch", table_name="bulk_chunks")
    op.drop_table("bulk_chunks")
