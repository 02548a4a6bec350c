"""An agent's memory over MCP: search, remember, record, list and forget, for one tenant.

:func:`memory_server` builds an MCP server (the official SDK's ``MCPServer``) whose tools call
the async store and retriever. The tenant is never a tool argument: a model must not choose
whose memory it reads. Over stdio it is the one ``--tenant`` the server was started with
(:func:`fixed_tenant`); over HTTP it is the tenant of the request's bearer token
(:func:`tenant_from_token`), and a request without a valid token is refused with 401 before any
tool runs. A bad argument returns a tool error naming the field, never a traceback.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Annotated, Any

import uvicorn
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import AnyHttpUrl, Field, Strict
from starlette.routing import Route

from retrieval.aio import AsyncHybridRetriever, AsyncMemoryStore
from retrieval.arguments import MAX_SERVED_EVENTS, MAX_SERVED_RESULTS
from retrieval.integrations.mcp_arguments import (
    MEMORY_KEY,
    SEARCHED_NAMESPACE,
    STORED_NAMESPACE,
    Count,
    Flag,
    Ids,
    MemoryServer,
    Names,
    Text,
    Time,
)
from retrieval.integrations.mcp_calls import ToolCalls
from retrieval.integrations.mcp_config import (
    DEFAULT_CALLS_AT_ONCE,
    DEFAULT_CALLS_PER_TOKEN,
    DEFAULT_MAX_REQUEST_BYTES,
)
from retrieval.integrations.mcp_fairness import FairShares, TurnTaking
from retrieval.integrations.mcp_tokens import TokenTable, token_hash
from retrieval.integrations.records import event_record, search_record
from retrieval.memory.kinds import MEMORY_KINDS
from retrieval.memory.records import MemoryInput
from retrieval.observability.metrics import ServerMetrics
from retrieval.observability.tracing import Tracing
from retrieval.search.prepare.call import MAX_NEIGHBORS

logger = logging.getLogger(__name__)

TenantOf = Callable[[Context], str]
TENANT_CLAIM = "tenant_id"

INSTRUCTIONS = """\
This server is your long-term memory. Before answering from scratch, call search_memory with \
what you need to know; results are ranked, best first, each with a final_score in [0, 1] \
(relevance and recency combined) and its date. Store what is worth keeping across sessions with \
remember (facts, preferences, procedures, conclusions), and your own actions with \
record_decision and record_tool_call. timeline lists what happened in a window of time. forget \
deletes memories by id. You only ever see one user's memory."""

_MODES = (
    "semantic (default: memories by meaning, plus decisions, tool calls and documents by "
    "keywords), session_recovery (what was being worked on: leaves out the agent's own "
    "syntheses), knowledge_lookup (knowledge kinds only: episteme, techne, critique, decision, "
    "directive, proposal)"
)
_KINDS = ", ".join(MEMORY_KINDS)


def fixed_tenant(tenant_id: str) -> TenantOf:
    """Every call reads and writes ``tenant_id`` (the stdio transport: one user per process)."""

    def tenant(_context: Context) -> str:
        return tenant_id

    return tenant


def tenant_from_token(context: Context) -> str:
    """The tenant of the HTTP request's bearer token (checked by :class:`HashedTokens`)."""
    request = context.request_context.request
    user = getattr(request, "scope", {}).get("user") if request is not None else None
    if isinstance(user, AuthenticatedUser):
        tenant = (user.access_token.claims or {}).get(TENANT_CLAIM)
        if isinstance(tenant, str):
            return tenant
    raise ToolError("this request carries no valid bearer token: nothing was read or written")


class HashedTokens:
    """The SDK's token verifier over a :class:`TokenTable`: a known token's hash gives its
    tenant, anything else is refused (the SDK answers 401)."""

    def __init__(self, table: TokenTable) -> None:
        self.table = table

    async def verify_token(self, token: str) -> AccessToken | None:
        """An access token naming the tenant, or ``None`` for an unknown token."""
        tenant = self.table.tenant_of(token)
        if tenant is None:
            return None
        return AccessToken(
            token=token_hash(token),  # the secret itself is not kept past this call
            client_id=f"tenant:{tenant}",
            scopes=[],
            claims={TENANT_CLAIM: tenant},
        )


_READING = ToolAnnotations(read_only_hint=True, open_world_hint=False)
_WRITING = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)


def memory_server(
    store: AsyncMemoryStore,
    retriever: AsyncHybridRetriever,
    tenant_of: TenantOf,
    *,
    tokens: TokenTable | None = None,
    url: str | None = None,
    metrics: ServerMetrics | None = None,
    tracer_provider: Any = None,
) -> MCPServer:
    """The MCP server of ``store`` and ``retriever``; ``tenant_of`` names each call's tenant.

    For HTTP give ``tokens`` (the accepted bearer tokens) and ``url`` (where the server is
    reached, e.g. ``http://127.0.0.1:8765``), with ``tenant_of=tenant_from_token``. Each tool
    call is counted by ``metrics`` (see :func:`tool_metrics`) and traced as a span
    ``retrieval.mcp.<tool>`` of ``tracer_provider`` (default: the global one).
    """
    auth: dict[str, Any] = {}
    if tokens is not None:
        if url is None:
            raise ValueError("an HTTP server with tokens needs its url")
        auth = {
            "token_verifier": HashedTokens(tokens),
            "auth": AuthSettings(
                issuer_url=AnyHttpUrl(url),
                resource_server_url=AnyHttpUrl(f"{url}/mcp"),
                validate_token_resource=False,  # opaque tokens, valid for this server only
            ),
        }

    @asynccontextmanager
    async def warm_model(_server: MCPServer) -> AsyncIterator[None]:
        # Load the embedding model while the client initializes, not in its first search.
        warming = asyncio.create_task(store.check_embedder())
        warming.add_done_callback(_log_model_failure)
        try:
            yield
        finally:
            warming.cancel()

    server = MemoryServer(
        "retrieval",
        instructions=INSTRUCTIONS,
        lifespan=warm_model,
        log_level="WARNING",
        **auth,
    )
    calls = ToolCalls(Tracing(tracer_provider), metrics)
    _add_tools(server, _Tools(store, retriever, tenant_of, calls))
    return server


def tool_metrics(retriever: AsyncHybridRetriever) -> ServerMetrics:
    """The metrics of the tool calls (``retrieval_mcp_tool_*``), by tool and the modes of
    ``retriever``'s config."""
    return ServerMetrics("retrieval_mcp_tool", "tool", retriever.config.modes)


def http_server(
    server: MCPServer,
    *,
    host: str,
    port: int,
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
    metrics: ServerMetrics | None = None,
    tokens: TokenTable | None = None,
    calls_per_token: int = DEFAULT_CALLS_PER_TOKEN,
    calls_at_once: int = DEFAULT_CALLS_AT_ONCE,
) -> uvicorn.Server:
    """A uvicorn server of ``server``'s streamable HTTP app at ``http://host:port/mcp``
    (``await http.serve()`` runs it; ``http.should_exit = True`` stops it).

    The app is stateless: each request is answered on its own, with its bearer token's tenant,
    and the server keeps no session between requests, so no client can fill a table of
    sessions and lock the others out (the SDK's sessions are shared by every token, 10,000 in
    all). The tools need no session: each call names everything it needs. A request body over
    ``max_request_bytes`` is refused (413) before it is read whole. With ``metrics`` (the
    server's, see :func:`tool_metrics`), ``/metrics`` serves them to Prometheus. With
    ``tokens`` (the server's), each token gets its fair share
    (:mod:`retrieval.integrations.mcp_fairness`): at most ``calls_per_token`` requests in
    flight (429 beyond), and ``calls_at_once`` running, given out to the tokens in turn."""
    app = server.streamable_http_app(
        host=host, stateless_http=True, max_request_body_size=max_request_bytes
    )
    if metrics is not None:
        app.router.routes.append(Route("/metrics", metrics.endpoint))
    served: Any = app
    if tokens is not None:
        turns = TurnTaking(at_once=calls_at_once, per_token=calls_per_token)
        served = FairShares(app, tokens, turns)
    return uvicorn.Server(uvicorn.Config(served, host=host, port=port, log_level="warning"))


def _log_model_failure(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        # Each tool call that needs the model will say the same to the client.
        logger.error("the embedding model did not load: %s", task.exception())


@dataclass(frozen=True)
class _Tools:
    """What the tools of one server use: the store, the retriever, who a call's tenant is,
    and the calls' spans and metrics."""

    store: AsyncMemoryStore
    retriever: AsyncHybridRetriever
    tenant_of: TenantOf
    calls: ToolCalls


def _add_tools(server: MCPServer, tools: _Tools) -> None:
    _add_search(server, tools)
    _add_remember(server, tools)
    _add_episodic(server, tools)
    _add_timeline(server, tools)
    _add_forget(server, tools)


def _add_search(server: MCPServer, tools: _Tools) -> None:
    """search_memory: the ranked context for a query."""

    @server.tool(annotations=_READING, structured_output=True)
    async def search_memory(
        query: Annotated[Text, Field(description="what you need to know, in plain words")],
        context: Context,
        mode: Annotated[Text, Field(description=f"filter preset: {_MODES}")] = "semantic",
        task_id: Annotated[
            Text | None, Field(description="only this task's decisions and tool calls")
        ] = None,
        limit: Annotated[
            Count | None,
            Field(ge=1, le=MAX_SERVED_RESULTS, description="most results (default 10)"),
        ] = None,
        neighbors: Annotated[
            Count,
            Field(
                ge=0,
                le=MAX_NEIGHBORS,
                description="with each memory of a conversation, this many turns before and "
                "after it",
            ),
        ] = 0,
        filter: Annotated[
            dict[str, Any] | None,
            Strict(),
            Field(
                description='only memories and documents whose metadata meets it: {"key": '
                'value} (the value at the key equals it) or {"key": {"$gte": 3}}, with $eq, $ne, '
                "$gt, $gte, $lt, $lte, $in, $nin, $all (a list holds these), $exists, $contains, "
                '$icontains (text holds it), "*" (any value); every key '
                'must hold, or group them: {"$or": [{...}, {...}]}, {"$not": {...}} (no '
                "decisions or tool calls then)"
            ),
        ] = None,
        namespace: Annotated[Names, SEARCHED_NAMESPACE] = None,
        as_of: Annotated[
            Time,
            Field(
                description="ask as the memory stood then (ISO 8601 with a zone): the memories "
                "live at that time, recency counted from it; default now"
            ),
        ] = None,
    ) -> dict[str, Any]:
        """Find the most useful memories, past decisions, tool calls and documents for a
        query, ranked best first. Each result has its text, source (semantic: a memory;
        episodic: a decision or tool call; documents: a chunk), final_score in [0, 1]
        (relevance and recency combined, higher is better), relevance_score, recency_score,
        created_at and id."""
        tenant = tools.tenant_of(context)
        with tools.calls.call("search_memory", tenant, mode):
            response = await tools.retriever.retrieve(
                query,
                tenant_id=tenant,
                mode=mode,
                task_id=task_id,
                limit=limit,
                neighbors=neighbors,
                filter=filter,
                namespace=namespace,
                as_of=as_of,
            )
        return search_record(response)


def _add_remember(server: MCPServer, tools: _Tools) -> None:
    """remember: a memory stored, with the live memories most like it."""

    @server.tool(annotations=_WRITING, structured_output=True)
    async def remember(
        text: Annotated[Text, Field(description="the memory, one self-contained statement")],
        context: Context,
        kind: Annotated[Text, Field(description=f"one of: {_KINDS}")] = "fact",
        importance: Annotated[
            float | None, Strict(), Field(ge=0, le=1, description="0 to 1 (default 0.5)")
        ] = None,
        entities: Annotated[
            list[Text] | None,
            Strict(),
            Field(description="ids of the people or things it is about"),
        ] = None,
        metadata: Annotated[
            dict[str, Any] | None, Strict(), Field(description="any JSON object kept with it")
        ] = None,
        supersedes: Annotated[
            Ids,
            Field(
                description="ids of memories this one corrects (an older value, a mistake): "
                "they leave search results and stay in its history, and a question that finds "
                "them finds this one in their place"
            ),
        ] = None,
        expires_at: Annotated[
            Time,
            Field(description="when it stops being true, ISO 8601 with a time zone"),
        ] = None,
        namespace: Annotated[Names, STORED_NAMESPACE] = None,
        key: Annotated[Text | None, MEMORY_KEY] = None,
        thread_id: Annotated[
            Text | None,
            Field(
                description="the conversation a turn of it belongs to (give position too): "
                "a turn found brings the turns around it"
            ),
        ] = None,
        position: Annotated[
            int | None,
            Strict(),
            Field(ge=0, description="the turn's place in its thread (0, 1, 2, ...)"),
        ] = None,
        created_at: Annotated[
            Time,
            Field(
                description="when it was said or learnt, ISO 8601 with a time zone (default: "
                "now): a conversation stored afterwards keeps its own times"
            ),
        ] = None,
    ) -> dict[str, Any]:
        """Store a memory worth keeping across sessions (a fact, a preference, a procedure
        that worked, a conclusion). Returns its id, whether it was already stored (a
        duplicate: the stored memory is refreshed), and the live memories most like it
        ("similar", with their similarity and "same_fact", how likely from 0 to 1 each states
        the same fact): if one of them says the same thing, or an older value of it, call
        remember again with supersedes, or forget it."""
        tenant = tools.tenant_of(context)
        with tools.calls.call("remember", tenant):
            stored = await tools.store.remember_many(
                [
                    MemoryInput(
                        text,
                        tenant_id=tenant,
                        kind=kind,
                        importance=importance,
                        entities=entities or (),
                        metadata=metadata,
                        supersedes=supersedes,
                        expires_at=expires_at,
                        namespace=namespace,
                        key=key,
                        thread_id=thread_id,
                        position=position,
                        created_at=created_at,
                    )
                ]
            )
            near = await tools.store.similar(
                text, tenant_id=tenant, exclude=list(stored), namespace=namespace or ()
            )
        return {
            "id": stored[0],
            "duplicate": stored.duplicates > 0,
            "similar": [
                {
                    "id": one.memory.id,
                    "content": one.memory.content,
                    "kind": one.memory.kind,
                    "similarity": round(one.similarity, 4),
                    "same_fact": round(one.same_fact, 2),
                    "created_at": one.memory.created_at.isoformat(),
                }
                for one in near
            ],
        }


def _add_episodic(server: MCPServer, tools: _Tools) -> None:
    """record_decision, record_tool_call: the agent's own actions."""

    @server.tool(annotations=_WRITING, structured_output=True)
    async def record_decision(
        action_type: Annotated[
            Text, Field(description="what kind of action, e.g. plan, fix, deploy, answer")
        ],
        content: Annotated[Text, Field(description="what was decided and why")],
        status: Annotated[Text, Field(description="e.g. proposed, done, failed, abandoned")],
        context: Context,
        task_id: Annotated[Text | None, Field(description="the task it belongs to")] = None,
    ) -> dict[str, Any]:
        """Record a decision you took, within a task. Returns its id (give it to
        record_tool_call as decision_id)."""
        tenant = tools.tenant_of(context)
        with tools.calls.call("record_decision", tenant):
            decision_id = await tools.store.record_decision(
                tenant_id=tenant,
                task_id=task_id,
                action_type=action_type,
                content=content,
                status=status,
            )
        return {"id": decision_id}

    @server.tool(annotations=_WRITING, structured_output=True)
    async def record_tool_call(
        tool_name: Annotated[Text, Field(description="the tool that was called")],
        context: Context,
        params: Annotated[
            dict[str, Any] | None, Strict(), Field(description="its arguments, a JSON object")
        ] = None,
        result: Annotated[Text | None, Field(description="what it returned, as text")] = None,
        decision_id: Annotated[
            Count | None,
            Field(description="the decision it carried out (record_decision's id)"),
        ] = None,
    ) -> dict[str, Any]:
        """Record a tool call you made and its result. Returns its id."""
        tenant = tools.tenant_of(context)
        with tools.calls.call("record_tool_call", tenant):
            call_id = await tools.store.record_tool_call(
                tenant_id=tenant,
                decision_id=decision_id,
                tool_name=tool_name,
                params=params or {},
                result=result,
            )
        return {"id": call_id}


def _add_timeline(server: MCPServer, tools: _Tools) -> None:
    """timeline: what happened in a window, newest first."""

    @server.tool(annotations=_READING, structured_output=True)
    async def timeline(
        context: Context,
        since: Annotated[
            Time,
            Field(description="ISO 8601 time with a zone, e.g. 2026-11-20T00:00:00Z"),
        ] = None,
        until: Annotated[Time, Field(description="ISO 8601 time with a zone")] = None,
        kinds: Annotated[
            list[Text] | None,
            Strict(),
            Field(description=f"only these: memory kinds ({_KINDS}), decision, tool_call"),
        ] = None,
        limit: Annotated[Count, Field(ge=1, le=MAX_SERVED_EVENTS, description="most events")] = 50,
        as_of: Annotated[
            Time,
            Field(
                description="the memory as it stood then (ISO 8601 with a zone): the memories "
                "live at that time; default now"
            ),
        ] = None,
        namespace: Annotated[Names, SEARCHED_NAMESPACE] = None,
    ) -> dict[str, Any]:
        """What happened between since and until, newest first: memories stored, decisions
        taken, tool calls made (as the memory stood at as_of, if given; in a namespace, its
        memories alone)."""
        tenant = tools.tenant_of(context)
        with tools.calls.call("timeline", tenant):
            events = await tools.retriever.timeline(
                tenant, since=since, until=until, kinds=kinds, limit=limit, as_of=as_of,
                namespace=namespace,
            )  # fmt: skip
        return {"events": [event_record(event) for event in events]}


def _add_forget(server: MCPServer, tools: _Tools) -> None:
    """forget: memories deleted by id."""

    @server.tool(
        annotations=ToolAnnotations(
            read_only_hint=False, destructive_hint=True, idempotent_hint=True
        ),
        structured_output=True,
    )
    async def forget(
        context: Context,
        memory_ids: Annotated[Ids, Field(description="ids of the memories to delete")] = None,
        expired: Annotated[
            Flag, Field(description="also delete every memory whose expires_at has passed")
        ] = False,
        namespace: Annotated[
            Names,
            Field(
                description="also delete every memory in this namespace and below it, such as "
                '["users", "alice"] (their past versions too)'
            ),
        ] = None,
    ) -> dict[str, Any]:
        """Delete memories for good (their text, vector and cached vector): by id, the
        expired ones, or those of a namespace. Returns the ids that were deleted, the ids of
        the memories that a deleted correction had superseded, live again, and the ids given
        that were not found (never stored, already deleted, or not yours)."""
        tenant = tools.tenant_of(context)
        if not memory_ids and not expired and not namespace:
            raise ToolError(
                "give memory_ids (at least one id), expired: true, or a namespace such as "
                '["users", "alice"]'
            )
        with tools.calls.call("forget", tenant):
            forgotten = await tools.store.forget(
                tenant_id=tenant, memory_ids=memory_ids or (), expired=expired,
                namespace=namespace or None,
            )  # fmt: skip
        return {
            "forgotten": list(forgotten.memory_ids),
            "revived": list(forgotten.revived_ids),
            "not_found": list(forgotten.missing_memory_ids),
        }
