"""SQLite: imports and launches never reuse an id (AUTOINCREMENT), so an old link or script cannot point at
other data after `tracekit rm`. The tables are rebuilt (SQLite cannot add AUTOINCREMENT in place) with foreign
keys off, so that dropping the old tables cascades nothing. PostgreSQL sequences never reuse ids: no change.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-23 17:45:00
"""

from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

TABLES = ("imports", "launches")


def upgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    # Takes effect outside a transaction (an existing store). In a fresh store's first upgrade a transaction may
    # be open already, and the pragma is ignored: the tables are empty then, so a cascade deletes nothing.
    op.execute("PRAGMA foreign_keys=OFF")
    for table in TABLES:
        # An empty batch with recreate="always" is Alembic's way to rebuild a SQLite table with new table options.
        with op.batch_alter_table(table, recreate="always", table_kwargs={"sqlite_autoincrement": True}):
            pass


def downgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    op.execute("PRAGMA foreign_keys=OFF")
    for table in reversed(TABLES):
        with op.batch_alter_table(table, recreate="always", table_kwargs={"sqlite_autoincrement": False}):
            pass
