"""What forgetting a memory erases besides its row: the cached vector of its text.

The embedding cache keeps a tenant's vector of a text under ``sha256(model_id, text)``: a
vector that can be inverted towards the text, under a key that confirms a guessed text. When a
memory is forgotten, its entry goes in the same transaction, unless a live memory of the tenant
still has that text (then it is still that memory's vector). The in-process LRU of the store
that forgot drops it too; another process's LRU holds it until it is evicted or that process
ends (docs/privacy.md).
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Connection

from retrieval.db.queries import execute, statement
from retrieval.embedding.cache import cache_key
from retrieval.memory.text_key import text_key


def erase_cached_texts(
    connection: Connection,
    schema: str,
    tenant_id: str,
    texts: Sequence[str],
    models: Sequence[str],
) -> tuple[list[bytes], int]:
    """Remove the tenant's cache entries of ``texts`` (each embedded by the model of the same
    index of ``models``) that no live memory of the tenant still holds; return their keys and
    how many entries there were."""
    if not texts:
        return [], 0
    live = set(
        execute(
            connection,
            statement("memory.live_texts", schema),
            {
                "tenant_id": tenant_id,
                "keys": sorted({text_key(text) for text in texts}),
                "texts": sorted(set(texts)),
            },
        ).scalars()
    )
    keys = sorted(
        {
            cache_key(model, text)
            for text, model in zip(texts, models, strict=True)
            if text not in live
        }
    )
    if not keys:
        return [], 0
    params = {"tenant_id": tenant_id, "keys": keys}
    removed = execute(connection, statement("memory.forget_cache_entries", schema), params)
    return keys, max(removed.rowcount, 0)
