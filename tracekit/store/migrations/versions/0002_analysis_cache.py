"""analysis results cached per launch

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-23 17:10:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "analysis_results",
        sa.Column("launch_id", sa.Integer(), nullable=False),
        sa.Column("engine_version", sa.String(length=40), nullable=False),
        sa.Column("context_digest", sa.String(length=64), nullable=False),
        sa.Column("result_json", sa.Text(), nullable=False),
        sa.Column("computed_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["launch_id"], ["launches.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("launch_id"),
    )


def downgrade() -> None:
    op.drop_table("analysis_results")
