"""Whether a tenant holds anything: what tells a mistyped tenant id from a tenant with nothing
relevant, asked only when an answer is empty."""

from __future__ import annotations

from sqlalchemy import Engine

from retrieval.arguments import check_tenant
from retrieval.db.queries import execute, statement
from retrieval.errors import translate_database_errors


def tenant_holds(engine: Engine, schema: str, tenant_id: str) -> bool:
    """Whether ``tenant_id`` holds a memory (live or not), a decision, a tool call or a
    document in ``schema``: one statement of four indexed probes."""
    tenant_id = check_tenant(tenant_id)
    with translate_database_errors(str(engine.url)), engine.connect() as connection:
        query = statement("search.tenant_holds", schema)
        return bool(execute(connection, query, {"tenant_id": tenant_id}).scalar())


def unknown_tenant_note(tenant_id: str) -> str:
    """The note of an empty answer for a tenant that holds nothing at all."""
    return (
        f"tenant {tenant_id!r} holds nothing here (no memory, decision, tool call or "
        "document): check the tenant id and the database"
    )
