"""${message}

Revision ID: ${up_revision}
Revises: ${down_revision | comma,n}
Create Date: ${create_date}
"""

from __future__ import annotations

from alembic import op

from retrieval.db.migrate import current_settings

revision = ${repr(up_revision)}
down_revision = ${repr(down_revision)}
branch_labels = ${repr(branch_labels)}
depends_on = ${repr(depends_on)}


def upgrade() -> None:
    settings = current_settings()
    ${upgrades if upgrades else "pass"}


def downgrade() -> None:
    settings = current_settings()
    ${downgrades if downgrades else "pass"}
