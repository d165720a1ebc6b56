"""PostgreSQL column compression: cached analyses (26 kB of JSON each) compressed with lz4 instead of pglz, whose
compression was 0.29 s of the 0.39 s a 1,008-launch report spent writing its cache; Arrow IPC chunks, already
zstd-compressed, stored without another try (EXTERNAL). SQLite stores nothing compressed: no change there.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-27 05:00:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

CHUNK_TABLES = ("bulk_chunks", "host_event_chunks")


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        return
    for table in CHUNK_TABLES:
        op.execute(f"ALTER TABLE {table} ALTER COLUMN data SET STORAGE EXTERNAL")
    # lz4 exists where the server was built with it (PostgreSQL 14+, --with-lz4): else the column keeps pglz.
    available = bind.execute(
        sa.text("SELECT count(*) FROM pg_settings WHERE name = 'default_toast_compression' AND 'lz4' = ANY(enumvals)")
    ).scalar()
    if available:
        op.execute("ALTER TABLE analysis_results ALTER COLUMN result_json SET COMPRESSION lz4")


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        return
    for table in CHUNK_TABLES:
        op.execute(f"ALTER TABLE {table} ALTER COLUMN data SET STORAGE EXTENDED")
    op.execute("ALTER TABLE analysis_results ALTER COLUMN result_json SET COMPRESSION DEFAULT")
