"""The inspector's query parameters, read and checked: a bad one is a :class:`PageError` (400)
whose message says what was wrong and what to give instead."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from retrieval.arguments import (
    MAX_NAME_CHARS,
    MAX_SERVED_EVENTS,
    MAX_SERVED_RESULTS,
    namespace_text,
    storable_problem,
    tenant_problem,
)
from retrieval.errors import ValidationError
from retrieval.search.prepare.metadata_filter import metadata_filter as checked_filter
from retrieval.search.prepare.query import MAX_QUERY_CHARS
from retrieval.search.timeline import TimelineCursor

MAX_PAGE_EVENTS = MAX_SERVED_EVENTS  # a page; older events on the next one
ITEMS = ("memory", "decision", "tool_call")
MAX_SEARCH_RESULTS = MAX_SERVED_RESULTS


class PageError(Exception):
    """A request the inspector cannot answer: an HTTP status and a message for the page."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def whole_number(field: str, value: str | None, *, default: int, maximum: int) -> int:
    """``value`` as a whole number from 1 to ``maximum`` (``default`` when empty)."""
    if value is None or not value.strip():
        return default
    text = value.strip()
    if not (text.isascii() and text.isdigit() and len(text) <= 9) or not 1 <= int(text) <= maximum:
        raise PageError(
            400, f"{field} must be a whole number from 1 to {maximum}, got {_shown(value)}"
        )
    return int(text)


def moment(field: str, value: str | None, *, end_of_day: bool = False) -> datetime | None:
    """``value`` as an aware datetime: a date (``2026-11-20``: its start, or the next day's
    start with ``end_of_day``) or a date and time (``2026-11-20T14:30``, UTC unless it names
    its zone)."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        if len(text) == 10:
            start = datetime.combine(date.fromisoformat(text), time(), tzinfo=UTC)
            return _next_day(start, field) if end_of_day else start
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise PageError(
            400,
            f"{field} must be a date (2026-11-20) or a date and time (2026-11-20T14:30, UTC "
            f"unless a zone is given), got {_shown(value)}",
        ) from None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def kinds(values: Sequence[str], known: Sequence[str]) -> tuple[str, ...] | None:
    """The kinds chosen among ``known`` (memory kinds, ``decision``, ``tool_call``), or
    ``None`` for all."""
    chosen = tuple(dict.fromkeys(value for value in values if value))
    unknown = [kind for kind in chosen if kind not in known]
    if unknown:
        raise PageError(400, f"kind {_shown(unknown[0])} is not one of: {', '.join(known)}")
    return chosen or None


def name(field: str, value: str | None) -> str | None:
    """An optional name (a thread or a task id): stripped, ``None`` when empty."""
    if value is None or not value.strip():
        return None
    if len(value) > MAX_NAME_CHARS:
        raise PageError(
            400, f"{field} is {len(value)} characters long: give at most {MAX_NAME_CHARS}"
        )
    problem = storable_problem(value)
    if problem is not None:
        raise PageError(400, f"{field} {problem}")
    return value.strip()


def namespace(value: str | None) -> tuple[str, ...]:
    """An optional namespace, names joined by ``/`` (``users/u1``); ``()`` when empty."""
    if value is None or not value.strip():
        return ()
    try:
        return namespace_text("namespace", value)
    except ValidationError as error:
        raise PageError(400, error.reason) from None


MAX_FILTER_CHARS = 4_000


def metadata_filter(value: str | None) -> dict[str, Any] | None:
    """An optional metadata filter, as JSON (``{"category": "food"}``, ``{"$or": [...]}``),
    checked as retrieve() checks it."""
    if value is None or not value.strip():
        return None
    if len(value) > MAX_FILTER_CHARS:
        raise PageError(
            400, f"the filter is {len(value):,} characters long: give at most {MAX_FILTER_CHARS:,}"
        )
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError as error:
        raise PageError(
            400, f'the filter is not JSON ({error.msg}): write it as {{"category": "food"}}'
        ) from None
    if not isinstance(parsed, dict):
        raise PageError(400, 'the filter must be a JSON object, such as {"category": "food"}')
    try:
        checked_filter(parsed)
    except ValidationError as error:
        raise PageError(400, f"filter: {error.reason}") from None
    return parsed


def query(value: str | None) -> str | None:
    """The search's query text (``None`` when none was asked)."""
    if value is None or not value.strip():
        return None
    if len(value) > MAX_QUERY_CHARS:
        raise PageError(
            400,
            f"the query is {len(value):,} characters long: give at most {MAX_QUERY_CHARS:,}",
        )
    return value


def tenant(value: str) -> str:
    """A tenant id of a URL, checked as the library checks it."""
    problem = tenant_problem(value)
    if problem is not None:
        raise PageError(400, problem)
    return value


def row_id(field: str, value: str) -> int:
    """A row id of a URL (a positive whole number within bigint)."""
    if not _id(value):
        raise PageError(404, f"{field} {_shown(value)} is not a row id (a positive whole number)")
    return int(value)


def _id(value: str) -> bool:
    # ASCII digits only (str.isdigit also takes "²" and "٣"), at most bigint's 19 digits.
    return value.isascii() and value.isdigit() and len(value) <= 19 and 1 <= int(value) < 2**63


def cursor_text(cursor: TimelineCursor) -> str:
    """``cursor`` as a query parameter: ``TIME~ITEM~ID``."""
    return f"{cursor.created_at.isoformat()}~{cursor.item}~{cursor.id}"


def cursor(field: str, value: str | None) -> TimelineCursor | None:
    """A page's cursor (:func:`cursor_text`), or ``None`` for the first page."""
    if value is None or not value.strip():
        return None
    at, _, rest = value.strip().partition("~")
    item, _, row = rest.partition("~")
    try:
        created_at = datetime.fromisoformat(at)
    except ValueError:
        created_at = None
    if created_at is None or created_at.tzinfo is None or item not in ITEMS or not _id(row):
        raise PageError(
            400,
            f"{field} must be where a page ended, as the Older events link gives it "
            f"(TIME~ITEM~ID), got {_shown(value)}",
        )
    return TimelineCursor(created_at, item, int(row))


def _next_day(start: datetime, field: str) -> datetime:
    try:
        return start + timedelta(days=1)
    except OverflowError:
        raise PageError(400, f"{field} is past the last date that can be stored") from None


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
