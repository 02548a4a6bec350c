"""An agent's context for one turn from asyncio code: :func:`abuild_context`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from retrieval.aio.retriever import AsyncHybridRetriever
from retrieval.search.agent_context import AgentContext, ContextConfig, build_context


async def abuild_context(
    retriever: AsyncHybridRetriever,
    query: str,
    working_state: Sequence[Mapping[str, Any]],
    *,
    tenant_id: str,
    config: ContextConfig | None = None,
    **options: Any,
) -> AgentContext:
    """:func:`~retrieval.search.agent_context.build_context` for an
    :class:`~retrieval.aio.AsyncHybridRetriever`, run on the retriever's threads: the same
    messages, metrics and outage handling, awaited."""
    return await retriever.threads.run(
        build_context,
        retriever.sync,
        query,
        working_state,
        tenant_id=tenant_id,
        config=config,
        **options,
    )
