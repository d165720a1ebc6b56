"""named regions recorded inside kernels (intra-kernel profilers), one row per region instance of a warp

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23 17:30:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "regions",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("launch_id", sa.Integer(), nullable=False),
        sa.Column("sm_id", sa.Integer(), nullable=True),
        sa.Column("block_id", sa.BigInteger(), nullable=False),
        sa.Column("warp_in_block", sa.Integer(), nullable=False),
        sa.Column("region", sa.Text(), nullable=False),
        sa.Column("depth", sa.Integer(), nullable=False),
        sa.Column("start_ns", sa.BigInteger(), nullable=True),
        sa.Column("end_ns", sa.BigInteger(), nullable=True),
        sa.Column("start_cycles", sa.BigInteger(), nullable=True),
        sa.Column("end_cycles", sa.BigInteger(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_regions_launch_id", "regions", ["launch_id"])


def downgrade() -> None:
    op.drop_index("ix_regions_launch_id", table_name="regions")
    op.drop_table("regions")
