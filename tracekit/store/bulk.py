"""Fast paths for many rows: executemany on SQLite, COPY on PostgreSQL, inside the caller's transaction."""

from __future__ import annotations

import io

import polars as pl
from sqlalchemy import Connection, TableClause

COPY_CHUNK_ROWS = 500_000


def bulk_insert(connection: Connection, table: TableClause, frame: pl.DataFrame) -> None:
    """Insert every row of `frame` (columns named as the table's) into `table` on `connection`'s transaction."""
    if frame.height == 0:
        return
    columns = frame.columns
    dbapi = connection.connection.driver_connection
    assert dbapi is not None, "bulk_insert needs an open connection"
    if connection.dialect.name == "postgresql":
        statement = f"COPY {table.name} ({', '.join(columns)}) FROM STDIN (FORMAT csv)"
        with dbapi.cursor() as cursor, cursor.copy(statement) as copy:
            for chunk in frame.iter_slices(COPY_CHUNK_ROWS):
                buffer = io.BytesIO()
                chunk.write_csv(buffer, include_header=False, null_value="")
                copy.write(buffer.getvalue())
    else:
        placeholders = ", ".join("?" for _ in columns)
        statement = f"INSERT INTO {table.name} ({', '.join(columns)}) VALUES ({placeholders})"
        cursor = dbapi.cursor()
        try:
            cursor.executemany(statement, frame.iter_rows())
        finally:
            cursor.close()
