"""The inspector's web app (``retrieval ui``): Starlette routes over Jinja2 templates.

Server-rendered HTML with no script: every page works without JavaScript, and each answer says
so to the browser (``Content-Security-Policy: script-src 'none'``, no inline style or frame).
Jinja2 escapes every value it writes (autoescape on), so a stored ``<script>`` is shown as
text. A form that changes something (forget) is posted, and refused when the browser says it
came from another site (``Sec-Fetch-Site``, ``Origin``: the cookie is ``SameSite=Strict`` too).
A bad parameter is a 4xx page saying what to give instead, an outage a 503 page; no traceback
reaches the browser.
"""

from __future__ import annotations

import functools
import logging
from importlib import resources
from typing import Any
from urllib.parse import quote

from jinja2 import Environment, PackageLoader
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route
from starlette.templating import Jinja2Templates

from retrieval.counts import counted
from retrieval.errors import DatabaseError, EmbeddingError, ValidationError
from retrieval.memory.store import MemoryStore
from retrieval.observability.metrics import ServerMetrics
from retrieval.search.retriever import HybridRetriever
from retrieval.ui import pages
from retrieval.ui.access import Access
from retrieval.ui.forms import PageError
from retrieval.ui.pages import Inspector
from retrieval.ui.paths import segment
from retrieval.ui.reads import InspectorReads

logger = logging.getLogger(__name__)

SECURITY_HEADERS = {
    "content-security-policy": (
        "default-src 'none'; script-src 'none'; style-src 'self'; img-src 'self'; "
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",  # "no-referrer" would send a form's Origin as null
    "x-frame-options": "DENY",
    "cache-control": "no-store",
}
HEADINGS = {
    401: "Sign in first",
    403: "Not allowed here",
    404: "Not found",
    503: "Database unavailable",
}
UNAVAILABLE = (
    "The database is unavailable right now. This page works again by itself once it is back: "
    "reload it in a moment. (The server's log has the details.)"
)


def inspector_app(
    store: MemoryStore,
    retriever: HybridRetriever,
    *,
    access: Access,
    read_only: bool = False,
) -> Starlette:
    """The inspector over ``store`` and ``retriever`` (one database, one schema)."""
    environment = Environment(loader=PackageLoader("retrieval.ui", "templates"), autoescape=True)
    environment.filters["q"] = lambda value: quote(str(value), safe="")  # a query value
    environment.filters["seg"] = segment  # an id in a path
    environment.filters["counted"] = counted  # 1 result, 3 results
    inspector = Inspector(
        store=store,
        retriever=retriever,
        reads=InspectorReads(store.engine, store.schema),
        access=access,
        templates=Jinja2Templates(env=environment),
        metrics=ServerMetrics("retrieval_ui_page", "page", retriever.config.modes),
        read_only=read_only,
    )
    handlers: dict[Any, Any] = {
        PageError: functools.partial(_page_error, inspector),
        ValidationError: functools.partial(_bad_value, inspector),
        DatabaseError: functools.partial(_unavailable, inspector),
        EmbeddingError: functools.partial(_unavailable, inspector),
        HTTPException: functools.partial(_http_error, inspector),
        Exception: functools.partial(_internal_error, inspector),
    }
    return Starlette(
        routes=_routes(inspector),
        middleware=[Middleware(BaseHTTPMiddleware, dispatch=_guarded)],
        exception_handlers=handlers,
    )


def _routes(inspector: Inspector) -> list[BaseRoute]:
    def page(path: str, name: str, methods: tuple[str, ...] = ("GET",)) -> Route:
        handler = functools.partial(getattr(pages, name), inspector)
        return Route(path, pages.observed(name, inspector, handler), methods=list(methods))

    both = ("GET", "POST")
    return [
        page("/", "home"),
        page("/login", "login", both),
        page("/logout", "logout", ("POST",)),
        page("/tenants", "tenants"),
        page("/tenants/{tenant}", "timeline"),
        page("/tenants/{tenant}/search", "search"),
        page("/tenants/{tenant}/memories/{memory_id}", "memory"),
        page("/tenants/{tenant}/decisions/{decision_id}", "decision"),
        page("/tenants/{tenant}/tool-calls/{tool_call_id}", "tool_call"),
        page("/tenants/{tenant}/memories/{memory_id}/forget", "forget_memory", both),
        page("/tenants/{tenant}/tasks/{task_id}/forget", "forget_task", both),
        Route("/static/inspector.css", _stylesheet),
        Route("/metrics", inspector.metrics.endpoint),
    ]


async def _guarded(request: Request, call_next: RequestResponseEndpoint) -> Response:
    # A change must come from the inspector's own pages; every answer carries the headers.
    if request.method == "POST" and not _same_site(request):
        response: Response = Response(
            "refused: this form was sent from another site", status_code=403
        )
    else:
        response = await call_next(request)
    for name, value in SECURITY_HEADERS.items():
        response.headers.setdefault(name, value)
    return response


def _same_site(request: Request) -> bool:
    fetch_site = request.headers.get("sec-fetch-site")
    if fetch_site is not None and fetch_site not in ("same-origin", "none"):
        return False
    origin = request.headers.get("origin")
    own = f"{request.url.scheme}://{request.url.netloc}"
    return origin is None or origin == own


async def _stylesheet(_request: Request) -> Response:
    css = (resources.files("retrieval.ui") / "static" / "inspector.css").read_text("utf-8")
    return Response(css, media_type="text/css", headers={"cache-control": "max-age=3600"})


def _error_page(inspector: Inspector, request: Request, status: int, message: str) -> Response:
    request.state.viewer = getattr(request.state, "viewer", None)
    heading = HEADINGS.get(status, "This page cannot be shown")
    response = inspector.render(
        request, "error.html", status=status, message=message, heading=heading
    )
    # A 500 is answered outside the middleware that adds them to every other answer.
    response.headers.update(SECURITY_HEADERS)
    return response


async def _page_error(inspector: Inspector, request: Request, error: Exception) -> Response:
    assert isinstance(error, PageError)
    response = _error_page(inspector, request, error.status, error.message)
    if error.status == 401:
        response.headers["www-authenticate"] = 'Bearer realm="retrieval ui"'
    return response


async def _bad_value(inspector: Inspector, request: Request, error: Exception) -> Response:
    return _error_page(inspector, request, 400, str(error))


async def _unavailable(inspector: Inspector, request: Request, error: Exception) -> Response:
    logger.warning("a page failed: %s: %s", type(error).__name__, error)
    response = _error_page(inspector, request, 503, UNAVAILABLE)
    response.headers["retry-after"] = "5"
    return response


async def _http_error(inspector: Inspector, request: Request, error: Exception) -> Response:
    assert isinstance(error, HTTPException)
    messages = {404: "no such page", 405: "this page does not take that method"}
    message = messages.get(error.status_code, "this request cannot be answered")
    return _error_page(inspector, request, error.status_code, message)


async def _internal_error(inspector: Inspector, request: Request, error: Exception) -> Response:
    logger.error("a page failed", exc_info=error)
    return _error_page(
        inspector, request, 500, "something went wrong on the server (its log has the details)"
    )
