"""Lower-cased search text for the episodic source, trigram-indexed.

The episodic source matches each query keyword with ``ILIKE '%keyword%'`` on a decision's
content and on a tool call's name and parameters. The trigram index only narrows the rows, so
every candidate row is re-checked, and ``ILIKE`` lower-cases the whole text first on each check
(in a multibyte encoding it calls ``lower()`` on text and pattern). This revision stores that
lower-cased text once, as a generated column, and indexes it instead: the source compares with
``LIKE lower(pattern)``, the same result as ``ILIKE`` without lower-casing a row per keyword.

* ``decisions.search_text = lower(content)``;
* ``tool_calls.search_text = lower(tool_name) || E'\\n' || lower(params::text)``: one index
  for both fields (a keyword is a run of word characters, so it never spans the line break).

The trigram indexes on ``content``, ``tool_name`` and ``params::text`` are replaced. Adding a
stored generated column rewrites each table (about 8 s for 100,000 decisions here).

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-26
"""

from __future__ import annotations

from alembic import op

from retrieval.db.migrate import current_settings

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

UPGRADE = """
ALTER TABLE {schema}.decisions
    ADD COLUMN search_text text GENERATED ALWAYS AS (lower(content)) STORED;
CREATE INDEX decisions_search_text_trgm_idx ON {schema}.decisions
    USING gin (search_text gin_trgm_ops);
DROP INDEX {schema}.decisions_content_trgm_idx;

ALTER TABLE {schema}.tool_calls
    ADD COLUMN search_text text
    GENERATED ALWAYS AS (lower(tool_name) || E'\\n' || lower(params::text)) STORED;
CREATE INDEX tool_calls_search_text_trgm_idx ON {schema}.tool_calls
    USING gin (search_text gin_trgm_ops);
DROP INDEX {schema}.tool_calls_tool_name_trgm_idx;
DROP INDEX {schema}.tool_calls_params_trgm_idx;
"""

DOWNGRADE = """
CREATE INDEX tool_calls_tool_name_trgm_idx ON {schema}.tool_calls
    USING gin (tool_name gin_trgm_ops);
CREATE INDEX tool_calls_params_trgm_idx ON {schema}.tool_calls
    USING gin ((params::text) gin_trgm_ops);
ALTER TABLE {schema}.tool_calls DROP COLUMN search_text;

CREATE INDEX decisions_content_trgm_idx ON {schema}.decisions USING gin (content gin_trgm_ops);
ALTER TABLE {schema}.decisions DROP COLUMN search_text;
"""


def upgrade() -> None:
    op.execute(UPGRADE.format(schema=f'"{current_settings().schema}"'))


def downgrade() -> None:
    op.execute(DOWNGRADE.format(schema=f'"{current_settings().schema}"'))
