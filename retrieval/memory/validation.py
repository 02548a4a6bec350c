"""Checks that run before any write: a refused item raises ``ValidationError`` naming it.

Each ``valid_*`` function returns the cleaned values that the store writes, so nothing reaches
the database unchecked. The results are named tuples: a batch makes one per row, and tuples are
the cheapest records Python builds.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import MISSING, dataclass, fields
from datetime import UTC, datetime
from numbers import Real
from typing import NamedTuple, TypeVar

import numpy as np
import numpy.typing as npt

from retrieval import arguments
from retrieval.arguments import (
    MAX_NAME_CHARS,
    json_text_problem,
    storable_problem,
    surrogate_at,
    tenant_check,
    time_problem,
)
from retrieval.errors import ValidationError
from retrieval.memory.config import DEFAULT_MAX_ENTITIES, DEFAULT_MAX_METADATA_BYTES
from retrieval.memory.kinds import describe_kinds, nearest_kind
from retrieval.memory.records import DecisionInput, MemoryInput, ToolCallInput

# The most memories one memory may supersede.
MAX_SUPERSEDED = 1000
# The largest position PostgreSQL's integer column holds.
MAX_POSITION = 2**31 - 1


@dataclass(frozen=True)
class Limits:
    """What the store accepts: the longest text, the vector dimension of the database, the
    memory kinds (``None``: any name), the most entities of one memory and the largest
    metadata (or tool call params) as JSON."""

    max_text_chars: int
    dim: int
    kinds: frozenset[str] | None = None
    max_entities: int = DEFAULT_MAX_ENTITIES
    max_json_bytes: int = DEFAULT_MAX_METADATA_BYTES


class ValidMemory(NamedTuple):
    tenant_id: str
    text: str
    kind: str
    metadata_json: str
    importance: float | None
    created_at: datetime | None
    entities: tuple[str, ...]
    embedding: npt.NDArray[np.float32] | None
    embedding_model: str | None
    thread_id: str | None = None
    position: int | None = None
    expires_at: datetime | None = None
    supersedes: tuple[int, ...] = ()
    # A version stored already retired, with no newer version (a line of an export).
    retired_at: datetime | None = None
    namespace: tuple[str, ...] = ()
    key: str | None = None


class ValidDecision(NamedTuple):
    tenant_id: str
    task_id: str | None
    action_type: str
    content: str
    status: str
    created_at: datetime | None


class ValidToolCall(NamedTuple):
    tenant_id: str
    decision_id: int | None
    tool_name: str
    params_json: str
    result: str | None
    created_at: datetime | None


def valid_memory(
    item: MemoryInput,
    limits: Limits,
    index: int | None = None,
    *,
    checked_embedding: npt.NDArray[np.float32] | None = None,
) -> ValidMemory:
    """Check one memory; raise :class:`ValidationError` naming ``index`` and the field.

    ``checked_embedding`` is ``item.embedding`` already checked (with its whole batch).
    """
    check = _Checker(index)
    created_at = check.aware("created_at", item.created_at)
    valid = ValidMemory(
        tenant_id=check.tenant(item.tenant_id),
        text=check.text("text", item.text, limits.max_text_chars),
        kind=check.kind(item.kind, limits.kinds),
        metadata_json=check.json_object("metadata", item.metadata, limits.max_json_bytes),
        importance=check.unit_interval("importance", item.importance),
        created_at=created_at,
        entities=check.entities(item.entities, limits.max_entities),
        embedding=(
            checked_embedding
            if checked_embedding is not None
            else check.vector(item.embedding, limits.dim)
        ),
        embedding_model=check.optional_name("embedding_model", item.embedding_model),
        thread_id=check.optional_name("thread_id", item.thread_id),
        position=check.position(item.position, item.thread_id),
        expires_at=check.expiry(item.expires_at, created_at),
        supersedes=check.ids("supersedes", item.supersedes),
        namespace=check.namespace(item.namespace),
        key=check.optional_key(item.key),
    )
    check.indexed_names(valid)
    return valid


# The most UTF-8 bytes a memory's names take together (its tenant, kind, thread, key and
# namespace, each name of the namespace counted 4 bytes more): they lie in one entry of a
# B-tree index (the live rows' unique key, the keys' index), which holds at most 2,704 bytes
# with the text's hash, the position and the entry's headers.
MAX_INDEXED_BYTES = 2400


def indexed_bytes(memory: ValidMemory) -> int:
    """The UTF-8 bytes ``memory``'s names take in an index entry (:data:`MAX_INDEXED_BYTES`)."""
    names = (memory.tenant_id, memory.kind, memory.thread_id or "", memory.key or "")
    return sum(len(name.encode()) for name in names) + sum(
        len(name.encode()) + 4 for name in memory.namespace
    )


def valid_decision(item: DecisionInput, limits: Limits, index: int | None = None) -> ValidDecision:
    """Check one decision; raise :class:`ValidationError` naming ``index`` and the field."""
    check = _Checker(index)
    return ValidDecision(
        tenant_id=check.tenant(item.tenant_id),
        task_id=check.optional_name("task_id", item.task_id),
        action_type=check.name("action_type", item.action_type),
        content=check.text("content", item.content, limits.max_text_chars),
        status=check.name("status", item.status),
        created_at=check.aware("created_at", item.created_at),
    )


def valid_tool_call(item: ToolCallInput, limits: Limits, index: int | None = None) -> ValidToolCall:
    """Check one tool call; raise :class:`ValidationError` naming ``index`` and the field."""
    check = _Checker(index)
    result = None
    if item.result is not None:
        result = check.text("result", item.result, limits.max_text_chars, allow_blank=True)
    return ValidToolCall(
        tenant_id=check.tenant(item.tenant_id),
        decision_id=check.optional_id("decision_id", item.decision_id),
        tool_name=check.name("tool_name", item.tool_name),
        params_json=check.json_object("params", item.params, limits.max_json_bytes),
        result=result,
        created_at=check.aware("created_at", item.created_at),
    )


def known_kind(value: object, limits: Limits) -> str:
    """``value`` if it is a memory kind the store knows; else a :class:`ValidationError`
    naming the known kinds."""
    return _Checker(None).kind(value, limits.kinds)


class _Checker:
    """Field checks for one item; every failure names the item and the field."""

    def __init__(self, index: int | None) -> None:
        self.index = index

    def fail(self, field: str, message: str) -> ValidationError:
        return ValidationError(f"{field}: {message}", item=self.index, field=field)

    def text(self, field: str, value: object, limit: int, *, allow_blank: bool = False) -> str:
        # The common case first, without allocating: a non-blank str within the limit, no NUL,
        # nothing UTF-8 cannot encode.
        if (
            type(value) is str
            and len(value) <= limit
            and (allow_blank or (value and not value.isspace()))
            and "\x00" not in value
            and surrogate_at(value) is None
        ):
            return value
        if not isinstance(value, str):
            raise self.fail(field, f"must be a string, got {type(value).__name__}")
        if not allow_blank and not value.strip():
            raise self.fail(field, f"is empty or only whitespace: give a non-empty {field}")
        problem = storable_problem(value)
        if problem is not None:
            raise self.fail(field, problem)
        if len(value) > limit:
            raise self.fail(
                field,
                f"has {len(value):,} characters, over the limit of {limit:,}: split it into "
                "smaller pieces or raise RETRIEVAL_MAX_TEXT_CHARS",
            )
        return value

    def name(self, field: str, value: object) -> str:
        if type(value) is str and len(value) <= MAX_NAME_CHARS:
            clean = _clean_name(value)
            if clean is not None:
                return clean
        return self.text(field, value, MAX_NAME_CHARS).strip()  # raises with the reason

    def kind(self, value: object, known: frozenset[str] | None) -> str:
        kind = self.name("kind", value)
        if known is None or kind in known:
            return kind
        near = nearest_kind(kind, known)
        hint = f"did you mean {near!r}? " if near else ""
        raise self.fail(
            "kind",
            f"{kind!r} is not a memory kind; {hint}known: {describe_kinds(known)}. Declare your "
            "own in WriteConfig(extra_kinds=...) or RETRIEVAL_MEMORY_KINDS",
        )

    def tenant(self, value: object) -> str:
        problem = tenant_check(value)
        if problem is None:
            return value  # type: ignore[return-value]
        raise self.fail("tenant_id", problem)

    def optional_name(self, field: str, value: object) -> str | None:
        return None if value is None else self.name(field, value)

    def required_id(self, field: str, value: object) -> int:
        found = self.optional_id(field, value)
        if found is None:
            raise self.fail(field, "must be a positive integer id (a bigint), got None")
        return found

    def optional_id(self, field: str, value: object) -> int | None:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value < 2**63:
            raise self.fail(field, f"must be a positive integer id (a bigint), got {value!r:.40}")
        return value

    def position(self, value: object, thread_id: object) -> int | None:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise self.fail(
                "position",
                f"must be a non-negative integer (a turn's place in its thread, from 0), got "
                f"{value!r:.40}",
            )
        if value > MAX_POSITION:
            raise self.fail(
                "position", f"is over the largest position, {MAX_POSITION:,} (2**31 - 1)"
            )
        if thread_id is None:
            raise self.fail(
                "position",
                "is a turn's place in its thread, and this memory has no thread_id: give the "
                "thread_id too, or leave position out",
            )
        return value

    def json_object(self, field: str, value: object, max_bytes: int) -> str:
        if value is None:
            return "{}"
        if not isinstance(value, Mapping):
            raise self.fail(field, f"must be a JSON object (a dict), got {type(value).__name__}")
        try:
            encoded = json.dumps(value, allow_nan=False, ensure_ascii=False, sort_keys=True)
        except RecursionError:
            raise self.fail(field, "is nested too deeply to be stored: flatten it") from None
        except (TypeError, ValueError) as error:
            raise self.fail(
                field,
                f"is not JSON-serializable ({error}): use only str, int, float, bool, None, "
                "lists and dicts with string keys, and no NaN or infinity",
            ) from None
        problem = json_text_problem(encoded)
        if problem is not None:
            raise self.fail(field, problem)
        if len(encoded) > max_bytes // 4 and len(encoded.encode("utf-8")) > max_bytes:
            raise self.fail(
                field,
                f"is {len(encoded.encode('utf-8')):,} bytes as JSON, over the limit of "
                f"{max_bytes:,}: keep large content in the text (or a document), or raise "
                "RETRIEVAL_MAX_METADATA_BYTES",
            )
        return encoded

    def unit_interval(self, field: str, value: object) -> float | None:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, Real):
            raise self.fail(field, f"must be a number in [0, 1], got {value!r}")
        try:
            number = float(value)
        except OverflowError:
            raise self.fail(
                field, f"must be in [0, 1], got a number of {len(str(value))} digits"
            ) from None
        if not (math.isfinite(number) and 0.0 <= number <= 1.0):
            raise self.fail(field, f"must be in [0, 1], got {number!r}")
        return number

    def expiry(self, value: object, created_at: datetime | None) -> datetime | None:
        expires_at = self.aware("expires_at", value)
        if expires_at is None:
            return None
        if created_at is None:  # the memory is told now: it must outlive this moment
            now = datetime.now(UTC)
            if expires_at <= now:
                raise self.fail(
                    "expires_at",
                    f"{expires_at.isoformat()} has passed (it is now {now.isoformat()}): a "
                    "memory must live for some time; give a later expires_at, or the "
                    "created_at it was told at",
                )
        elif expires_at <= created_at:
            raise self.fail(
                "expires_at",
                f"{expires_at.isoformat()} is not after created_at {created_at.isoformat()}: "
                "a memory must live for some time",
            )
        return expires_at

    def optional_key(self, value: object) -> str | None:
        # A key is kept exactly as given (not stripped): it names an item.
        if value is None:
            return None
        if not isinstance(value, str) or not value.strip():
            raise self.fail("key", f"must be a string not only white space, got {value!r:.40}")
        return self.text("key", value, MAX_NAME_CHARS, allow_blank=True)

    def indexed_names(self, memory: ValidMemory) -> None:
        size = indexed_bytes(memory)
        if size > MAX_INDEXED_BYTES:
            field = "namespace" if memory.namespace else "key" if memory.key else "thread_id"
            raise self.fail(
                field,
                f"the tenant, kind, thread, key and namespace together take {size:,} bytes in "
                f"UTF-8 (each name of the namespace 4 more), over the limit of "
                f"{MAX_INDEXED_BYTES:,} (one entry of an index holds them): use shorter or "
                "fewer names",
            )

    def namespace(self, value: object) -> tuple[str, ...]:
        try:
            return arguments.namespace("namespace", value)
        except ValidationError as error:
            raise self.fail("namespace", str(error).removeprefix("namespace ")) from None

    def ids(self, field: str, value: object) -> tuple[int, ...]:
        if value is None:
            return ()
        values = [value] if isinstance(value, int) and not isinstance(value, bool) else value
        if isinstance(values, str | bytes | Mapping | set | frozenset) or not isinstance(
            values, Iterable
        ):
            raise self.fail(field, f"must be a memory id or a list of ids, got {value!r:.40}")
        ids = tuple(self.required_id(field, one) for one in values)
        if len(ids) > MAX_SUPERSEDED:
            raise self.fail(field, f"names {len(ids)} memories: at most {MAX_SUPERSEDED}")
        if len(set(ids)) != len(ids):
            raise self.fail(field, f"names a memory twice: {list(ids)}")
        return ids

    def aware(self, field: str, value: object) -> datetime | None:
        problem = time_problem(value)
        if problem is not None:
            raise self.fail(field, problem)
        return value  # type: ignore[return-value]

    def entities(self, value: object, most: int) -> tuple[str, ...]:
        if value == ():
            return ()
        if isinstance(value, str) or not isinstance(value, Sequence | set | frozenset):
            raise self.fail("entities", f"must be a list of entity ids, got {type(value).__name__}")
        if len(value) > most:
            raise self.fail(
                "entities",
                f"has {len(value):,} entity ids, over the limit of {most:,}: name the people and "
                "things the memory is about, or raise RETRIEVAL_MAX_ENTITIES",
            )
        return tuple(dict.fromkeys(self.name("entities", entity) for entity in value))

    def vector(self, value: object, dim: int) -> npt.NDArray[np.float32] | None:
        if value is None:
            return None
        # Fast path for the usual float32 row. A sum is NaN or infinite when any value is; only
        # then look closer (a finite vector may overflow the sum).
        if (
            type(value) is np.ndarray
            and value.dtype == np.float32
            and value.shape == (dim,)
            and (math.isfinite(float(value.sum())) or np.isfinite(value).all())
        ):
            return value
        try:
            array = np.asarray(value, dtype=np.float32)
        except (TypeError, ValueError):
            raise self.fail("embedding", "must be a sequence of numbers") from None
        if array.ndim != 1 or array.shape[0] != dim:
            raise self.fail(
                "embedding",
                f"has shape {array.shape}, but the database stores vectors of {dim} "
                "dimensions: embed with the database's model",
            )
        if not np.isfinite(array).all():
            raise self.fail("embedding", "contains NaN or infinity")
        return array


def checked_vector(index: int | None, value: object, dim: int) -> npt.NDArray[np.float32]:
    """``value`` as a finite float32 ``dim``-vector, else a :class:`ValidationError` naming item
    ``index``."""
    vector = _Checker(index).vector(value, dim)
    if vector is None:
        raise ValidationError("embedding: is missing", item=index, field="embedding")
    return vector


def checked_embeddings(items: Sequence[MemoryInput], dim: int) -> npt.NDArray[np.float32] | None:
    """The embeddings of ``items`` as one matrix, if every one is a finite ``dim``-vector.

    ``None`` otherwise: then check the items one by one to name the first bad one.
    """
    try:
        matrix = np.asarray([item.embedding for item in items], dtype=np.float32)
    except (TypeError, ValueError):
        return None
    if matrix.ndim != 2 or matrix.shape[1] != dim or not np.isfinite(matrix).all():
        return None
    return matrix


@functools.lru_cache(maxsize=4096)
def _clean_name(value: str) -> str | None:
    # Kinds and model ids repeat across a batch: check each distinct one once (callers pass
    # only strings within MAX_NAME_CHARS, so the cache never keeps a huge key).
    clean = value.strip()
    if (
        not clean
        or len(value) > MAX_NAME_CHARS
        or "\x00" in value
        or surrogate_at(value) is not None
    ):
        return None
    return clean


Input = TypeVar("Input", MemoryInput, DecisionInput, ToolCallInput)


_FIELD_NAMES: dict[type, frozenset[str]] = {
    kind: frozenset(field.name for field in fields(kind))
    for kind in (MemoryInput, DecisionInput, ToolCallInput)
}


_REQUIRED_FIELDS: dict[type, tuple[str, ...]] = {
    kind: tuple(
        field.name
        for field in fields(kind)
        if field.default is MISSING and field.default_factory is MISSING
    )
    for kind in (MemoryInput, DecisionInput, ToolCallInput)
}
_INPUT_NAMES = {MemoryInput: "memory", DecisionInput: "decision", ToolCallInput: "tool call"}


def batch_items(items: object, what: str) -> list[object]:
    """``items`` as a list, else a :class:`ValidationError` saying a batch is an iterable."""
    if isinstance(items, str | bytes | Mapping) or not isinstance(items, Iterable):
        raise ValidationError(
            f"{what} takes an iterable of items (a list of dicts or inputs), got "
            f"{type(items).__name__}"
        )
    return list(items)


def as_input(item: object, kind: type[Input], index: int | None = None) -> Input:
    """``item`` as a ``kind`` input: passed through, or built from a dict of its fields."""
    if isinstance(item, kind):
        return item
    if not isinstance(item, Mapping):
        raise ValidationError(
            f"must be a {kind.__name__} or a dict, got {type(item).__name__}", item=index
        )
    known = _FIELD_NAMES[kind]
    unknown = sorted(set(item) - known)
    if unknown:
        raise ValidationError(
            f"unknown field(s) {', '.join(map(repr, unknown))}; known: {', '.join(sorted(known))}",
            item=index,
            field=unknown[0],
        )
    missing = [name for name in _REQUIRED_FIELDS[kind] if name not in item]
    if missing:
        raise ValidationError(
            f"{' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} missing: "
            f"a {_INPUT_NAMES[kind]} needs {', '.join(_REQUIRED_FIELDS[kind])}",
            item=index,
            field=missing[0],
        )
    return kind(**item)
