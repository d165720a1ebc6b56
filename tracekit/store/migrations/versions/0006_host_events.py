"""host events: a trace's host timeline (GPU activities, API calls, CPU ranges) per import, as Arrow IPC chunks,
for the step analysis (`tracekit step IMPORT`, the steps page)

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-26 07:00:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "host_event_chunks",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("import_id", sa.Integer(), nullable=False),
        sa.Column("frame", sa.String(length=20), nullable=False),
        sa.Column("chunk_index", sa.Integer(), nullable=False),
        sa.Column("row_count", sa.BigInteger(), nullable=False),
        sa.Column("rank", sa.Integer(), nullable=True),
        sa.Column("encoding", sa.String(length=40), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(["import_id"], ["imports.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_host_event_chunks_import", "host_event_chunks", ["import_id", "frame", "chunk_index"])


def downgrade() -> None:
    op.drop_index("ix_host_event_chunks_import", table_name="host_event_chunks")
    op.drop_table("host_event_chunks")
