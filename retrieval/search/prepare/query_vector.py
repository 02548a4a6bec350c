"""The query's vector, through the embedding cache: the last step of the prepare stage.

A read never writes: the vector is looked up in the in-process LRU, else embedded by the model
and kept in the LRU only. The cache table is not asked: it holds the texts stored, never a
question, so it could answer only a question written exactly as a memory, and asking costs a
connection and a round trip before every new question (:meth:`EmbeddingCache.question
<retrieval.embedding.cache.EmbeddingCache.question>`).
"""

from __future__ import annotations

from dataclasses import replace

from sqlalchemy import Engine

from retrieval.embedding.cache import DimensionCheck, EmbeddingCache
from retrieval.embedding.models import Embedder
from retrieval.errors import translate_database_errors
from retrieval.memory.config import WriteConfig
from retrieval.search.prepare.call import PreparedCall


class QueryVectors:
    """The query vectors of one retriever: its cache, on the primary ``engine``."""

    def __init__(self, cache: EmbeddingCache, engine: Engine) -> None:
        self.cache = cache
        self.engine = engine
        # Said by an error of the model's first call (rendering the URL costs a call 0.05 ms).
        self._url = str(engine.url)

    @classmethod
    def on(
        cls,
        engine: Engine,
        schema: str,
        *,
        cache: EmbeddingCache | None = None,
        embedder: Embedder | None = None,
    ) -> QueryVectors:
        """The query vectors of ``cache`` (a store's, to share vectors with the write path),
        else of a cache of its own for ``embedder`` (default: ``RETRIEVAL_EMBEDDING_MODEL``'s),
        whose first model call checks the model's dimensions against the schema's."""
        if cache is None:
            embedder = embedder or WriteConfig.from_env().embedder()
            check = DimensionCheck(engine, schema, embedder)
            cache = EmbeddingCache(embedder, schema, before_model_call=check)
        return cls(cache, engine)

    def with_vector(self, call: PreparedCall) -> PreparedCall:
        """``call`` with its query's vector, when a source of it reads one."""
        if not call.reads_vector:
            return call
        before = self.cache.stats.embedded
        # The model's first call checks its dimensions against the schema's, in the database.
        with translate_database_errors(self._url):
            vector = self.cache.question(call.tenant_id, call.query.text)
        return replace(call, vector=vector, vector_cached=self.cache.stats.embedded == before)
