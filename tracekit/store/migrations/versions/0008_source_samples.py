"""source samples: Nsight Compute's Source page per launch (one row per SASS instruction with its file, line and
counters) and the source text the report embedded, for `tracekit lines` (issue 45)

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-29 08:00:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

BIG_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "source_samples",
        sa.Column("id", BIG_ID, nullable=False),
        sa.Column("launch_id", sa.Integer(), nullable=False),
        sa.Column("function", sa.Text(), nullable=True),
        sa.Column("pc_offset", sa.BigInteger(), nullable=True),
        sa.Column("sass", sa.Text(), nullable=True),
        sa.Column("file", sa.Text(), nullable=True),
        sa.Column("line", sa.Integer(), nullable=True),
        sa.Column("inline_chain", sa.Text(), nullable=True),
        sa.Column("samples", sa.BigInteger(), nullable=True),
        sa.Column("stall_samples", sa.Text(), nullable=True),
        sa.Column("inst_executed", sa.BigInteger(), nullable=True),
        sa.Column("thread_inst_executed", sa.BigInteger(), nullable=True),
        sa.Column("thread_inst_executed_true", sa.BigInteger(), nullable=True),
        sa.Column("l2_sectors_global", sa.BigInteger(), nullable=True),
        sa.Column("l2_sectors_global_ideal", sa.BigInteger(), nullable=True),
        sa.Column("l2_sectors_global_excess", sa.BigInteger(), nullable=True),
        sa.Column("l1_requests_global", sa.BigInteger(), nullable=True),
        sa.Column("shared_wavefronts", sa.BigInteger(), nullable=True),
        sa.Column("shared_wavefronts_ideal", sa.BigInteger(), nullable=True),
        sa.Column("shared_wavefronts_excess", sa.BigInteger(), nullable=True),
        sa.Column("shared_conflicts_nway", sa.Float(), nullable=True),
        sa.Column("divergent_branches", sa.BigInteger(), nullable=True),
        sa.Column("address_space", sa.String(length=20), nullable=True),
        sa.Column("operation", sa.String(length=40), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_source_samples_launch_id", "source_samples", ["launch_id"])
    op.create_table(
        "source_files",
        sa.Column("id", BIG_ID, nullable=False),
        sa.Column("launch_id", sa.Integer(), nullable=False),
        sa.Column("path", sa.Text(), nullable=False),
        sa.Column("text", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_source_files_launch_id", "source_files", ["launch_id"])


def downgrade() -> None:
    op.drop_index("ix_source_files_launch_id", table_name="source_files")
    op.drop_table("source_files")
    op.drop_index("ix_source_samples_launch_id", table_name="source_samples")
    op.drop_table("source_samples")
