"""A call's arguments, checked before any SQL: tenants, counts, row ids, names, switches,
times and text PostgreSQL can hold.

Records (a memory, a decision, a document) are checked field by field by
:mod:`retrieval.memory.validation`, which uses these checks; these are also the other arguments
of the public calls (``tenant_id=``, ``limit=``, ``memory_id``, ``task_id=``, ``as_of=``,
``everything=``). Each check raises :class:`~retrieval.errors.ValidationError` naming the
argument and what it accepts, so that a bad value never reaches PostgreSQL (where it would
come back as a :class:`~retrieval.errors.DatabaseError`, which callers treat as an outage).

Names (``task_id``, ``thread_id``, entity ids, kinds) follow one rule on every path, read,
write and forget alike: a string, stripped of surrounding whitespace, not empty, at most
:data:`MAX_NAME_CHARS` characters, and storable in PostgreSQL text.
"""

from __future__ import annotations

import functools
import json
import re
import unicodedata
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from retrieval.db import schema
from retrieval.errors import ValidationError

# The longest name (a task, a thread, an entity, a kind).
MAX_NAME_CHARS = 256
# The longest tenant id: far below what a B-tree entry holds (about 2,700 bytes).
MAX_TENANT_CHARS = 256
# The times a row may hold (the CHECKs of revision 0014).
EARLIEST_TIME = datetime.fromisoformat(schema.EARLIEST_TIME)
LATEST_TIME = datetime.fromisoformat(schema.LATEST_TIME)
# Code points UTF-8 cannot encode: halves of surrogate pairs, alone in a Python str.
_SURROGATE = re.compile("[\ud800-\udfff]")

# The largest row id: PostgreSQL's bigint.
MAX_ROW_ID = 2**63 - 1
# The most results of one search: pgvector's hnsw.ef_search takes at most 1,000, and a search
# keeps at least as many candidates as it may return.
MAX_RESULTS = 1000
# The most near duplicates one similar() call shows.
MAX_SIMILAR = 100
# The most events of one timeline call.
MAX_TIMELINE_EVENTS = 10_000
# What a server (the MCP server, the inspector) gives one request, below the limits above: its
# answer goes over the network into a model's context or a page, and one client must not make
# a server shared by others build an answer of hundreds of megabytes (10,000 events of 32,000
# characters). The API and the CLI run in the caller's own process and take the limits above.
MAX_SERVED_RESULTS = 100
MAX_SERVED_EVENTS = 1000
_MISSING = object()


def count(field: str, value: object, *, maximum: int, minimum: int = 1) -> int:
    """``value`` if it is an integer (not a bool) from ``minimum`` to ``maximum``."""
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
        raise ValidationError(
            f"{field} must be an integer from {minimum} to {maximum:,}, got {value!r:.40}",
            field=field,
        )
    return value


def unit_number(field: str, value: object) -> float:
    """``value`` if it is a number in [0, 1] (not a bool, not NaN)."""
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if not number or not 0.0 <= float(value) <= 1.0:  # type: ignore[arg-type]
        raise ValidationError(f"{field} must be a number in [0, 1], got {value!r:.40}", field=field)
    return float(value)  # type: ignore[arg-type]


def optional_count(field: str, value: object, *, maximum: int) -> int | None:
    """:func:`count`, or ``None``."""
    return None if value is None else count(field, value, maximum=maximum)


def row_id(field: str, value: object) -> int:
    """``value`` if it is an integer id PostgreSQL's bigint holds (an id that was never
    given out simply finds nothing)."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or not -MAX_ROW_ID - 1 <= value <= MAX_ROW_ID
    ):
        raise ValidationError(
            f"{field} must be an integer id (PostgreSQL bigint), got {value!r:.40}", field=field
        )
    return value


def row_ids(field: str, ids: object) -> list[int]:
    """``ids`` as a list of row ids: a list, tuple or set of integers (a string is not a
    sequence of ids: ``"12"`` is not [1, 2])."""
    if isinstance(ids, str | bytes) or not isinstance(ids, Sequence | set | frozenset):
        raise ValidationError(
            f"{field} must be a list of integer ids, got {type(ids).__name__} {ids!r:.40}",
            field=field,
        )
    bad = next((i for i in ids if isinstance(i, bool) or not isinstance(i, int)), _MISSING)
    if bad is not _MISSING:
        raise ValidationError(f"{field} must hold integer ids, got {bad!r:.40}", field=field)
    if any(not -MAX_ROW_ID - 1 <= i <= MAX_ROW_ID for i in ids):
        raise ValidationError(f"{field} holds an id outside PostgreSQL's bigint", field=field)
    return list(ids)


def flag(field: str, value: object) -> bool:
    """``value`` if it is ``True`` or ``False`` (``"yes"`` or ``1`` is not a switch)."""
    if not isinstance(value, bool):
        raise ValidationError(f"{field} must be True or False, got {value!r:.40}", field=field)
    return value


def name(field: str, value: object, *, maximum: int = MAX_NAME_CHARS) -> str:
    """``value`` stripped, if it is a non-empty string of at most ``maximum`` characters that
    PostgreSQL text can hold."""
    if not isinstance(value, str):
        raise ValidationError(
            f"{field} must be a string, got {type(value).__name__} {value!r:.40}", field=field
        )
    clean = value.strip()
    if not clean:
        raise ValidationError(f"{field} is empty or only whitespace", field=field)
    if len(value) > maximum:
        raise ValidationError(
            f"{field} has {len(value):,} characters, over the limit of {maximum:,}", field=field
        )
    problem = storable_problem(clean)
    if problem is not None:
        raise ValidationError(f"{field} {problem}", field=field)
    return clean


def optional_name(field: str, value: object) -> str | None:
    """:func:`name`, or ``None``."""
    return None if value is None else name(field, value)


def names(field: str, value: object) -> tuple[str, ...]:
    """``value`` as a tuple of :func:`name` s: a list, tuple or set of strings (one string is
    not a list of names)."""
    if isinstance(value, str | bytes) or not isinstance(value, Sequence | set | frozenset):
        raise ValidationError(
            f"{field} must be a list of strings, got {type(value).__name__} {value!r:.40}",
            field=field,
        )
    return tuple(name(field, item) for item in value)


# The most names a namespace holds (a path such as ("users", "u1", "preferences")).
MAX_NAMESPACE_DEPTH = 32


def namespace(field: str, value: object) -> tuple[str, ...]:
    """``value`` as a namespace: ``None`` or ``()`` (the tenant's top), or a list or tuple of
    at most :data:`MAX_NAMESPACE_DEPTH` names, each a non-empty string of at most
    :data:`MAX_NAME_CHARS` characters that PostgreSQL text can hold, kept exactly as given."""
    if value is None:
        return ()
    if isinstance(value, str | bytes) or not isinstance(value, list | tuple):
        raise ValidationError(
            f"{field} must be a list or tuple of names, such as ('users', 'u1'), got "
            f"{type(value).__name__} {value!r:.40}",
            field=field,
        )
    if len(value) > MAX_NAMESPACE_DEPTH:
        raise ValidationError(
            f"{field} has {len(value)} names, over the limit of {MAX_NAMESPACE_DEPTH}",
            field=field,
        )
    for label in value:
        if not isinstance(label, str) or not label:
            raise ValidationError(
                f"{field} must hold non-empty strings, got {label!r:.40}", field=field
            )
        if not label.strip():
            raise ValidationError(
                f"{field} holds a name of white space only, {label!r:.40}: give a name that is "
                "not only white space",
                field=field,
            )
        problem = storable_problem(label)
        if problem is not None or len(label) > MAX_NAME_CHARS:
            raise ValidationError(
                f"{field} holds a name {label!r:.40} that "
                + (problem or f"is over the limit of {MAX_NAME_CHARS:,} characters"),
                field=field,
            )
    return tuple(value)


def namespace_text(field: str, text: str) -> tuple[str, ...]:
    """A namespace written as text: names joined by ``/`` (``users/u1/preferences``), or a JSON
    list of names (``["a/b", "c"]``) for names that hold a ``/``; checked as :func:`namespace`."""
    stripped = text.strip()
    if stripped.startswith("["):
        try:
            names: object = json.loads(stripped)
        except json.JSONDecodeError:
            raise ValidationError(
                f"{field} {text[:40]!r} is not a JSON list of names", field=field
            ) from None
    else:
        names = [name.strip() for name in stripped.split("/")]  # "users / u1": users, u1
        if not stripped or "" in names:
            raise ValidationError(
                f"{field} {text[:40]!r} is not a namespace: names joined by /, such as users/u1",
                field=field,
            )
    return namespace(field, names)


def messages(field: str, value: object) -> Sequence[Mapping[str, Any]] | None:
    """``value`` if it is ``None`` or a list of message mappings (``{"role", "content"}``)."""
    if value is None:
        return None
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Sequence):
        raise ValidationError(
            f"{field} must be a list of messages ({{'role': ..., 'content': ...}}), got "
            f"{type(value).__name__}",
            field=field,
        )
    bad = next((item for item in value if not isinstance(item, Mapping)), _MISSING)
    if bad is not _MISSING:
        raise ValidationError(
            f"{field} must hold messages as mappings, got {type(bad).__name__} {bad!r:.40}",
            field=field,
        )
    return value


def check_storable(field: str, value: object, *, item: int | None = None, prefix: str = "") -> None:
    """Raise :class:`ValidationError` if ``value`` is a string PostgreSQL text cannot hold (see
    :func:`storable_problem`)."""
    problem = storable_problem(value) if isinstance(value, str) else None
    if problem is not None:
        raise ValidationError(f"{prefix}{field} {problem}", item=item, field=field)


def storable_problem(value: str) -> str | None:
    """Why PostgreSQL text cannot hold ``value`` (a NUL byte, or an unpaired surrogate, which
    UTF-8 cannot encode) and what to do; None when it can."""
    if "\x00" in value:
        return (
            f"contains a NUL byte at position {value.index(chr(0))}; PostgreSQL text cannot "
            "hold NUL bytes: remove them (for example value.replace('\\x00', ''))"
        )
    position = surrogate_at(value)
    if position is not None:
        return surrogate_problem(value[position], f" at position {position}")
    return None


def json_text_problem(encoded: str) -> str | None:
    """Why PostgreSQL jsonb cannot hold the JSON text ``encoded`` (made with
    ``ensure_ascii=False``) and what to do; None when it can."""
    if "\\u0000" in encoded:
        return "contains a NUL character, which PostgreSQL jsonb cannot hold"
    position = surrogate_at(encoded)
    if position is not None:
        return surrogate_problem(encoded[position], " in a string")
    return None


def check_tenant(tenant_id: object) -> str:
    """``tenant_id`` if it names a tenant, else a :class:`ValidationError` saying why.

    One rule for every read and write: a non-empty string of at most ``MAX_TENANT_CHARS``
    characters, without leading or trailing whitespace (a tenant id is never stripped: "beta "
    is not "beta") and without control characters, NUL bytes or unpaired surrogates.
    """
    problem = tenant_check(tenant_id)
    if problem is None:
        return tenant_id  # type: ignore[return-value]
    raise ValidationError(f"tenant_id {problem}", field="tenant_id")


def tenant_problem(tenant_id: object) -> str | None:
    """What is wrong with ``tenant_id`` as a tenant id, and what to do; None when nothing."""
    if not isinstance(tenant_id, str):
        return f"must be a string, got {type(tenant_id).__name__}"
    if not tenant_id.strip():
        return f"is empty ({tenant_id!r}): every row and every read names its tenant"
    if len(tenant_id) > MAX_TENANT_CHARS:
        return (
            f"has {len(tenant_id):,} characters, over the limit of {MAX_TENANT_CHARS}: use a "
            "shorter id (a UUID or a hash of a longer one)"
        )
    if tenant_id != tenant_id.strip():
        return (
            f"{tenant_id!r} has leading or trailing whitespace: tenant ids are compared exactly, "
            "so remove it"
        )
    problem = storable_problem(tenant_id)
    if problem is not None:
        return problem
    control = next((c for c in tenant_id if unicodedata.category(c) == "Cc"), None)
    if control is not None:
        return (
            f"contains a control character (U+{ord(control):04X}) at position "
            f"{tenant_id.index(control)}: remove it"
        )
    return None


def tenant_check(tenant_id: object) -> str | None:
    """:func:`tenant_problem`, remembered for the 4,096 latest short tenant ids: tenants repeat
    across a batch, so each distinct one is checked once (a long one is refused uncached)."""
    if type(tenant_id) is str and len(tenant_id) <= MAX_TENANT_CHARS:
        return _cached_tenant_problem(tenant_id)
    return tenant_problem(tenant_id)


@functools.lru_cache(maxsize=4096)
def _cached_tenant_problem(tenant_id: str) -> str | None:
    return tenant_problem(tenant_id)


def surrogate_at(value: str) -> int | None:
    """Where ``value`` first holds a code point UTF-8 (and so PostgreSQL) cannot encode: half
    of a surrogate pair, alone. None when it holds none."""
    if value.isascii():
        return None
    found = _SURROGATE.search(value)
    return None if found is None else found.start()


def surrogate_problem(character: str, where: str) -> str:
    """What is wrong with an unpaired surrogate ``character`` found ``where``, and what to do."""
    return (
        f"contains an unpaired surrogate (U+{ord(character):04X}){where}, which UTF-8 and "
        "PostgreSQL text cannot hold (text decoded with errors='surrogateescape' or a JSON "
        "'\\ud800' escape makes one): decode the source with errors='replace', or remove it"
    )


def time_problem(value: object) -> str | None:
    """What is wrong with ``value`` as a stored time (not a datetime, no time zone, or outside
    what the database holds) and what to do; None when it is None or fits."""
    if value is None:
        return None
    if not isinstance(value, datetime):
        return f"must be a datetime, got {type(value).__name__}"
    if value.tzinfo is None or value.utcoffset() is None:
        return (
            f"{value.isoformat()} has no time zone: pass an aware datetime, for example "
            "datetime.now(timezone.utc) or value.replace(tzinfo=timezone.utc)"
        )
    try:
        within = EARLIEST_TIME <= value.astimezone(UTC) <= LATEST_TIME
    except OverflowError:
        within = False
    if not within:
        return (
            f"{value.isoformat()} is outside the years 1 to 9999 in UTC (from "
            f"{EARLIEST_TIME:%Y-%m-%d} to {LATEST_TIME:%Y-%m-%d}, so that any time zone "
            "reads it back): give a time within them"
        )
    return None


def aware_datetime(field: str, value: object) -> datetime | None:
    """``value`` if it is None or a datetime with a time zone, else a :class:`ValidationError`."""
    problem = time_problem(value)
    if problem is not None:
        raise ValidationError(f"{field}: {problem}", field=field)
    return value  # type: ignore[return-value]
