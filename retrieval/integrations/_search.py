"""What the framework retrievers share: one call's options, checked, and the call itself.

A framework retriever is made for one tenant, whose id is fixed when it is made; everything
else it holds (the library's retriever, the number of results, the options) is read at each
call, so that nothing a call depends on is bound once and kept stale.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from retrieval import arguments
from retrieval.aio import AsyncHybridRetriever
from retrieval.errors import ValidationError
from retrieval.integrations.records import record_key, result_record
from retrieval.search.results import RetrievalResponse
from retrieval.search.retriever import HybridRetriever

# The options of HybridRetriever.retrieve a framework call may give (the tenant is not one).
CALL_OPTIONS = (
    "limit",
    "mode",
    "task_id",
    "as_of",
    "neighbors",
    "entities",
    "fusion",
    "config",
    "working_state",
    "read_your_writes",
    "filter",
    "namespace",
)
Rows = list[tuple[str, str, dict[str, Any], float]]


def checked_options(options: Mapping[str, Any], *, count_name: str) -> dict[str, Any]:
    """``options`` if each names an option of ``retrieve`` (or ``count_name``, the framework's
    number of results); a tenant, or an unknown name, is a :class:`ValidationError`."""
    if "tenant_id" in options:
        raise ValidationError(
            "tenant_id is fixed when the retriever is made, not given per call: make one "
            "retriever per tenant (they share the HybridRetriever and cost nothing)",
            field="tenant_id",
        )
    unknown = sorted(set(options) - {*CALL_OPTIONS, count_name})
    if unknown:
        raise ValidationError(
            f"unknown search option {unknown[0]!r}: use {count_name} or one of "
            f"{', '.join(CALL_OPTIONS)}",
            field=unknown[0],
        )
    return dict(options)


def check_setting(name: str, value: Any, *, count_name: str) -> None:
    """A framework retriever's ``count_name`` (its number of results) or ``search_options``,
    checked as a call would check it, when it is set; any other field is not checked here."""
    if name == count_name:
        arguments.optional_count(count_name, value, maximum=arguments.MAX_RESULTS)
    elif name == "search_options":
        checked_options(value, count_name=count_name)


def call_options(
    defaults: Mapping[str, Any], count: int | None, given: Mapping[str, Any], *, count_name: str
) -> dict[str, Any]:
    """The options of one call: the retriever's ``defaults``, its number of results ``count``
    (as ``limit``), then the call's own ``given`` options (its ``count_name`` winning)."""
    given = checked_options(given, count_name=count_name)
    options = {**defaults, **given}
    chosen = given.get(count_name, count)
    options.pop(count_name, None)
    if chosen is not None:
        options["limit"] = arguments.count(count_name, chosen, maximum=arguments.MAX_RESULTS)
    return options


def run(retriever: HybridRetriever, tenant_id: str, query: str, options: dict[str, Any]) -> Rows:
    """The results of ``query``: (key, text, metadata, final score) each, best first."""
    return _rows(retriever.retrieve(query, tenant_id=tenant_id, **options))


class AsyncCalls:
    """A framework retriever's async path: the library's async retriever over its
    :class:`HybridRetriever`, made on first use (and made again if the retriever changes),
    whose bounded thread pool goes with the framework retriever."""

    def __init__(self) -> None:
        self._threaded: AsyncHybridRetriever | None = None

    async def run(
        self, retriever: HybridRetriever, tenant_id: str, query: str, options: dict[str, Any]
    ) -> Rows:
        """:func:`run` on the async retriever: the event loop never blocks."""
        if self._threaded is None or self._threaded.sync is not retriever:
            self._threaded = AsyncHybridRetriever(retriever)
        return _rows(await self._threaded.retrieve(query, tenant_id=tenant_id, **options))


def _rows(response: RetrievalResponse) -> Rows:
    rows = []
    for rank, result in enumerate(response, start=1):
        record = result_record(result, rank)
        content = record.pop("content")
        rows.append((record_key(record), content, record, result.final_score))
    return rows
