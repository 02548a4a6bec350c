"""The inspector's pages: tenants, a tenant's timeline, one memory, search, forget.

Each handler checks who asks (:mod:`retrieval.ui.access`) and its parameters
(:mod:`retrieval.ui.forms`) before it reads anything, runs the library's sync calls on a
worker thread, and renders a template. A tenant the viewer may not see is a 404, the same
page as a tenant that does not exist.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import groupby
from typing import Any
from urllib.parse import urlencode

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.templating import Jinja2Templates

from retrieval.counts import counted
from retrieval.memory.store import MemoryStore
from retrieval.observability.metrics import ServerMetrics
from retrieval.search.present.tenants import tenant_holds
from retrieval.search.results import RetrievalResult
from retrieval.search.retriever import HybridRetriever
from retrieval.search.timeline import TimelineCursor
from retrieval.search.timeline import timeline as read_timeline
from retrieval.ui import forms
from retrieval.ui.access import COOKIE, Access, Viewer
from retrieval.ui.forms import PageError
from retrieval.ui.paths import segment, tenant_url, unsegment
from retrieval.ui.reads import InspectorReads
from retrieval.ui.score_parts import (
    PARTS,
    Part,
    PartNumbers,
    found_label,
    fusion_note,
    lift_label,
    outdated_label,
    part_numbers,
    question_label,
    score_parts,
)

Handler = Callable[[Request], Coroutine[Any, Any, Response]]


@dataclass(frozen=True)
class ShownResult:
    """A result as the search page shows it: its parts, their numbers, how its relevance was
    fused, which turn lifted it, what ranked it lower and which memory it was found through, in
    words."""

    result: RetrievalResult
    parts: list[Part]
    numbers: list[PartNumbers]
    fusion: str | None
    lifted: str | None
    outdated: str | None = None
    asks: str | None = None
    found: str | None = None


BAR_WIDTH = 320  # pixels of a final score of 1


@dataclass(frozen=True)
class Inspector:
    """Everything the pages need: the library's objects, who sees what, and the options."""

    store: MemoryStore
    retriever: HybridRetriever
    reads: InspectorReads
    access: Access
    templates: Jinja2Templates
    metrics: ServerMetrics
    read_only: bool = False

    def render(self, request: Request, name: str, status: int = 200, **context: Any) -> Response:
        """The template ``name`` with ``context`` (and what every page shows)."""
        context.setdefault("viewer", getattr(request.state, "viewer", None))
        context["read_only"] = self.read_only
        return self.templates.TemplateResponse(request, name, context, status_code=status)

    def viewer(self, request: Request) -> Viewer:
        """The viewer of ``request`` (401 without a valid token)."""
        viewer = self.access.viewer(request)
        if viewer is None:
            raise PageError(401, "sign in with your token to see this page")
        request.state.viewer = viewer
        return viewer

    def tenant(self, request: Request) -> str:
        """The tenant the URL names, if the viewer may see it (else 404)."""
        viewer = self.viewer(request)
        tenant = unsegment(request.path_params["tenant"])
        if not viewer.sees(tenant):
            raise PageError(404, "no such tenant")
        return forms.tenant(tenant)

    async def held_tenant(self, request: Request) -> str:
        """The tenant the URL names, if the viewer may see it and it holds anything (else 404:
        a mistyped tenant is named as such, not shown as an empty page)."""
        tenant = self.tenant(request)
        reads = self.reads
        if not await run_in_threadpool(tenant_holds, reads.engine, reads.schema, tenant):
            raise PageError(
                404,
                f"tenant {tenant!r:.80} holds nothing here: check its name "
                "(the tenants page lists those you may see)",
            )
        return tenant

    def writable(self) -> None:
        """Refuse a change when the inspector is read-only."""
        if self.read_only:
            raise PageError(
                403, "this inspector is read-only (--read-only): nothing can be forgotten here"
            )

    def kinds(self) -> list[str]:
        """Every kind the timeline filters on."""
        memory_kinds = sorted(self.store.limits.kinds or ())
        return [*memory_kinds, *(k for k in ("decision", "tool_call") if k not in memory_kinds)]


def observed(operation: str, inspector: Inspector, page: Handler) -> Handler:
    """``page`` counted and timed as ``operation`` by the inspector's metrics."""

    async def handler(request: Request) -> Response:
        mode = request.query_params.get("mode", "semantic") if operation == "search" else None
        with inspector.metrics.observe(operation, mode):
            return await page(request)

    return handler


async def home(inspector: Inspector, request: Request) -> Response:
    """``/``: the tenants page, or the sign-in page for a visitor without a token."""
    if inspector.access.viewer(request) is None:
        return RedirectResponse("/login", status_code=303)
    return RedirectResponse("/tenants", status_code=303)


async def tenants(inspector: Inspector, request: Request) -> Response:
    """``/tenants``: each tenant the viewer sees, with what it holds."""
    viewer = inspector.viewer(request)
    held = await run_in_threadpool(inspector.reads.holdings, viewer.tenant)
    return inspector.render(request, "tenants.html", tenants=held)


async def timeline(inspector: Inspector, request: Request) -> Response:
    """``/tenants/{tenant}``: the tenant's events by day, newest first, with filters."""
    params = request.query_params
    # After a forget that emptied the tenant, its page says what was forgotten.
    tenant = (
        inspector.tenant(request) if params.get("forgot") else await inspector.held_tenant(request)
    )
    known = inspector.kinds()
    chosen = forms.kinds(params.getlist("kind"), known)
    since = forms.moment("since", params.get("since"))
    until = forms.moment("until", params.get("until"), end_of_day=True)
    if since is not None and until is not None and since >= until:
        raise PageError(400, "since must be before until")
    thread_id = forms.name("thread", params.get("thread"))
    task_id = forms.name("task", params.get("task"))
    scope = forms.namespace(params.get("namespace"))
    limit = forms.whole_number(
        "limit", params.get("limit"), default=100, maximum=forms.MAX_PAGE_EVENTS
    )
    after = forms.cursor("after", params.get("after"))
    retired = params.get("retired") == "1"
    events = await run_in_threadpool(
        lambda: read_timeline(
            inspector.reads.engine,
            inspector.reads.schema,
            tenant,
            since=since,
            until=until,
            kinds=chosen,
            thread_id=thread_id,
            task_id=task_id,
            limit=limit,
            after=after,
            include_retired=retired,
            namespace=scope or None,
        )
    )
    older = None
    if len(events) == limit:  # the next page starts after the last event shown
        kept = [(key, value) for key, value in params.multi_items() if key != "after"]
        older = urlencode([*kept, ("after", forms.cursor_text(TimelineCursor.after(events[-1])))])
    # A thread reads as a conversation: oldest first (a page of its newest turns, in order).
    oldest_first = thread_id is not None
    shown = list(reversed(events)) if oldest_first else events
    days = [(day, list(items)) for day, items in groupby(shown, key=lambda e: e.created_at.date())]
    return inspector.render(
        request,
        "timeline.html",
        tenant=tenant,
        days=days,
        count=len(events),
        kinds=known,
        chosen=chosen or (),
        form=params,
        older=older,
        forgot=params.get("forgot"),
        retired=retired,
        now=datetime.now(UTC),
        oldest_first=oldest_first,
        max_events=forms.MAX_PAGE_EVENTS,
    )


async def memory(inspector: Inspector, request: Request) -> Response:
    """``/tenants/{tenant}/memories/{id}``: one memory, its thread's turns around it."""
    tenant = inspector.tenant(request)
    memory_id = forms.row_id("memory", request.path_params["memory_id"])
    found = await run_in_threadpool(inspector.store.get_memory, memory_id, tenant_id=tenant)
    if found is None:
        raise PageError(404, f"no memory #{memory_id} in this tenant")
    turns = []
    if found.thread_id is not None and found.position is not None:
        turns = await run_in_threadpool(
            inspector.reads.thread_turns, tenant, found.thread_id, found.position
        )
    versions = await run_in_threadpool(inspector.store.history, memory_id, tenant_id=tenant)
    now = datetime.now(UTC)
    return inspector.render(
        request,
        "memory.html",
        tenant=tenant,
        memory=found,
        metadata=json.dumps(found.metadata, indent=2, ensure_ascii=False, sort_keys=True),
        turns=turns,
        versions=versions if len(versions) > 1 else [],
        expired=found.expires_at is not None and found.expires_at <= now,
    )


async def decision(inspector: Inspector, request: Request) -> Response:
    """``/tenants/{tenant}/decisions/{id}``: one decision, its task and its tool calls."""
    tenant = inspector.tenant(request)
    decision_id = forms.row_id("decision", request.path_params["decision_id"])
    found = await run_in_threadpool(inspector.store.get_decision, decision_id, tenant_id=tenant)
    if found is None:
        raise PageError(404, f"no decision #{decision_id} in this tenant")
    calls = await run_in_threadpool(inspector.reads.decision_tool_calls, tenant, decision_id)
    return inspector.render(request, "decision.html", tenant=tenant, decision=found, calls=calls)


async def tool_call(inspector: Inspector, request: Request) -> Response:
    """``/tenants/{tenant}/tool-calls/{id}``: one tool call, its parameters, result and
    decision."""
    tenant = inspector.tenant(request)
    call_id = forms.row_id("tool call", request.path_params["tool_call_id"])
    found = await run_in_threadpool(inspector.store.get_tool_call, call_id, tenant_id=tenant)
    if found is None:
        raise PageError(404, f"no tool call #{call_id} in this tenant")
    params = json.dumps(found.params, indent=2, ensure_ascii=False, sort_keys=True)
    return inspector.render(request, "tool_call.html", tenant=tenant, call=found, params=params)


async def search(inspector: Inspector, request: Request) -> Response:
    """``/tenants/{tenant}/search?q=...``: the ranked results with their scores' parts."""
    tenant = await inspector.held_tenant(request)
    params = request.query_params
    text = forms.query(params.get("q"))
    modes = sorted(inspector.retriever.config.modes)
    mode = params.get("mode") or "semantic"
    if mode not in modes:
        raise PageError(400, f"mode {mode!r:.60} is not one of: {', '.join(modes)}")
    as_of = forms.moment("as_of", params.get("as_of"))
    limit = forms.whole_number(
        "limit", params.get("limit"), default=10, maximum=forms.MAX_SEARCH_RESULTS
    )
    scope = forms.namespace(params.get("namespace"))
    wanted = forms.metadata_filter(params.get("filter"))
    context: dict[str, Any] = {
        "tenant": tenant,
        "form": params,
        "modes": modes,
        "mode": mode,
        "limit": limit,
        "response": None,
        "max_results": forms.MAX_SEARCH_RESULTS,
    }
    if text is not None:
        response = await run_in_threadpool(
            lambda: inspector.retriever.retrieve(
                text,
                tenant_id=tenant,
                mode=mode,
                as_of=as_of,
                limit=limit,
                namespace=scope,
                filter=wanted,
            )
        )
        config = inspector.retriever.config
        context["response"] = response
        rows = [(result, score_parts(result)) for result in response]
        context["rows"] = [
            ShownResult(
                result,
                split,
                part_numbers(result, split, config.bm25_weight),
                fusion_note(result, config.bm25_weight),
                lift_label(result.metadata),
                outdated_label(result.metadata),
                question_label(result.metadata),
                found_label(result.metadata),
            )
            for result, split in rows
        ]
        present = {part.name for _, split in rows for part in split}
        context["parts"] = [part for part in PARTS if part[0] in present]  # the legend
        context["thresholds"] = {
            name: config.threshold(name) for name in response.diagnostics.sources
        }
    context["bar_width"] = BAR_WIDTH
    return inspector.render(request, "search.html", **context)


async def forget_memory(inspector: Inspector, request: Request) -> Response:
    """``/tenants/{tenant}/memories/{id}/forget``: asks first (GET), then forgets (POST)."""
    tenant = inspector.tenant(request)
    inspector.writable()
    memory_id = forms.row_id("memory", request.path_params["memory_id"])
    found = await run_in_threadpool(inspector.store.get_memory, memory_id, tenant_id=tenant)
    if found is None:
        raise PageError(404, f"no memory #{memory_id} in this tenant")
    if request.method == "GET":
        return inspector.render(
            request,
            "confirm.html",
            tenant=tenant,
            what=f"memory #{memory_id}",
            text=found.content,
            action=f"{tenant_url(tenant)}/memories/{memory_id}/forget",
        )
    await run_in_threadpool(
        lambda: inspector.store.forget(tenant_id=tenant, memory_ids=[memory_id])
    )
    return RedirectResponse(
        f"{tenant_url(tenant)}?{urlencode({'forgot': f'memory #{memory_id}'})}", status_code=303
    )


async def forget_task(inspector: Inspector, request: Request) -> Response:
    """``/tenants/{tenant}/tasks/{task}/forget``: a task's decisions and their tool calls."""
    tenant = inspector.tenant(request)
    inspector.writable()
    task_id = forms.name("task", unsegment(request.path_params["task_id"]))
    if task_id is None:
        raise PageError(404, "no task")
    decisions, calls = await run_in_threadpool(inspector.reads.task_size, tenant, task_id)
    if decisions == 0:
        raise PageError(404, f"no task {task_id!r:.80} in this tenant")
    if request.method == "GET":
        return inspector.render(
            request,
            "confirm.html",
            tenant=tenant,
            what=f"task {task_id!r}",
            text=f"{counted(decisions, 'decision')} and {counted(calls, 'tool call')}",
            action=f"{tenant_url(tenant)}/tasks/{segment(task_id)}/forget",
        )
    await run_in_threadpool(lambda: inspector.store.forget(tenant_id=tenant, task_id=task_id))
    return RedirectResponse(
        f"{tenant_url(tenant)}?{urlencode({'forgot': f'task {task_id!r}'})}", status_code=303
    )


async def login(inspector: Inspector, request: Request) -> Response:
    """``/login``: a form for the token (GET); sets the cookie when it is valid (POST)."""
    if inspector.access.tokens is None:
        return RedirectResponse("/tenants", status_code=303)
    if request.method == "GET":
        return inspector.render(request, "login.html", viewer=None)
    form = await request.form()
    token = form.get("token")
    tenant = inspector.access.tenant_of(token) if isinstance(token, str) else None
    if tenant is None or not isinstance(token, str):
        return inspector.render(
            request, "login.html", status=401, viewer=None, failed="that token is not valid here"
        )
    response = RedirectResponse(tenant_url(tenant), status_code=303)
    response.set_cookie(
        COOKIE,
        token,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
        path="/",
    )
    return response


async def logout(inspector: Inspector, request: Request) -> Response:
    """``/logout``: forgets the cookie."""
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(COOKIE, path="/")
    return response
