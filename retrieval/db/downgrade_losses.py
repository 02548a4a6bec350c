"""What a downgrade would drop: the rows each revision's undoing loses, counted before it runs.

Some of what a downgrade drops is the user's (memories, documents, entity links, a memory's
thread); some is derived from it and made again by the next upgrade (BM25 statistics, word
postings). ``retrieval db downgrade`` asks for confirmation only for the first.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Engine

from retrieval.db.migrate import MigrationSettings, revisions_undone
from retrieval.db.queries import execute, quote_schema, statement
from retrieval.errors import translate_database_errors


@dataclass(frozen=True)
class Loss:
    """Rows of ``table`` (those matching ``where``) that undoing a revision drops."""

    what: str
    table: str
    where: str = "TRUE"
    # How a derived loss comes back (``None``: the user's data, gone for good).
    remade: str | None = None

    @property
    def derived(self) -> bool:
        """Whether the rows are made again from data that stays."""
        return self.remade is not None


_BY_UPGRADE = "made again by the next upgrade"


@dataclass(frozen=True)
class CountedLoss:
    """A :class:`Loss` of a given downgrade, with the rows it would drop now."""

    revision: str
    what: str
    rows: int
    remade: str | None

    @property
    def derived(self) -> bool:
        """Whether the rows are made again from data that stays."""
        return self.remade is not None

    def __str__(self) -> str:
        again = f"; {self.remade}" if self.remade else ""
        return f"{self.rows:,} {self.what} (undoing revision {self.revision}{again})"


# Revision -> what undoing it drops. Table and condition names are fixed here, never input.
LOSSES: dict[str, tuple[Loss, ...]] = {
    # Retired versions would come back as live memories: they go; expiry and seen counts too.
    "0016": (
        Loss(
            "memories retired by a correction (their history)", "memories", "retired_at IS NOT NULL"
        ),
        Loss("memories' expiry times", "memories", "expires_at IS NOT NULL"),
        Loss("memories' seen counts", "memories", "seen_count > 1"),
    ),
    # Without its key, a record ingested before is stored again by the next run of its file.
    "0012": (Loss("ingest keys of ingested records", "ingest_keys"),),
    "0010": (
        Loss(
            "memories' threads and positions",
            "memories",
            "thread_id IS NOT NULL OR position IS NOT NULL",
        ),
        Loss("document chunks' metadata", "document_chunks", "metadata <> '{}'::jsonb"),
        Loss("tenants' BM25 statistics of memories", "memory_corpus", remade=_BY_UPGRADE),
    ),
    "0007": (
        Loss("decisions' and tool calls' word postings", "episodic_postings", remade=_BY_UPGRADE),
    ),
    "0005": (Loss("memories' BM25 postings", "memory_terms", remade=_BY_UPGRADE),),
    "0004": (
        Loss("documents", "documents"),
        Loss("document chunks", "document_chunks"),
    ),
    "0002": (Loss("entity links of memories", "memory_entities"),),
    "0001": (
        Loss("memories", "memories"),
        Loss("decisions", "decisions"),
        Loss("tool calls", "tool_calls"),
        Loss(
            "embedding cache entries",
            "embedding_cache",
            remade="a cache, filled again as texts are embedded",
        ),
    ),
}


def downgrade_losses(engine: Engine, settings: MigrationSettings, target: str) -> list[CountedLoss]:
    """What a downgrade to ``target`` would drop, counted now; rows of 0 are left out."""
    schema = settings.schema
    counted = []
    with translate_database_errors(str(engine.url)), engine.connect() as connection:
        for revision in revisions_undone(engine, settings, target):
            for loss in LOSSES.get(revision, ()):
                relation = f"{quote_schema(schema)}.{loss.table}"
                exists = execute(
                    connection, statement("db.relation_exists"), {"relation": relation}
                ).scalar_one()
                if not exists:  # made and dropped by revisions above this one
                    continue
                count = statement("db.count_rows", schema, table=loss.table, where=loss.where)
                rows = execute(connection, count).scalar_one()
                if rows:
                    counted.append(CountedLoss(revision, loss.what, int(rows), loss.remade))
    return counted
