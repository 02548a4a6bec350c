"""The prepare stage: a call's arguments checked, its config resolved, its query prepared.

:func:`prepare_call` turns what the caller passed into a :class:`PreparedCall` (no SQL): the
config of the call (``fusion`` and ``limit`` applied, the mode chosen), the query's words
and keywords (:mod:`~retrieval.search.prepare.query`), the time it names
(:mod:`~retrieval.search.prepare.query_time`), the moment it is read at; the query's vector is
added by :mod:`~retrieval.search.prepare.query_vector`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from retrieval import arguments
from retrieval.arguments import aware_datetime, check_tenant
from retrieval.embedding.models import Vectors
from retrieval.errors import ValidationError
from retrieval.search.config import Fusion, RetrievalConfig
from retrieval.search.modes import Mode
from retrieval.search.prepare.metadata_filter import (
    KEYED,
    NAMESPACE,
    MetadataFilter,
    metadata_filter,
)
from retrieval.search.prepare.query import PreparedQuery, prepare_query
from retrieval.search.prepare.query_time import TimeWindow, query_window

MAX_NEIGHBORS = 20  # turns before and after each hit, at most


@dataclass(frozen=True)
class PreparedCall:
    """One call, checked and prepared: what every later stage reads of it."""

    config: RetrievalConfig
    tenant_id: str
    query: PreparedQuery
    mode_name: str
    mode: Mode
    as_of: datetime  # the moment the memory is read as it stood (now, when not given)
    known_at: datetime | None  # the past moment the call asks about (as_of given), else None
    task_id: str | None
    entities: tuple[str, ...]
    neighbors: int
    read_your_writes: bool
    working_state: Sequence[Mapping[str, Any]] | None
    window: TimeWindow | None  # the time the query names, when time_weight is on
    metadata_filter: MetadataFilter | None = None  # the rows' metadata must meet it
    namespace: tuple[str, ...] = ()  # the memories read lie in it or below it (): all
    keyed: bool = False  # only memories stored under a key are read
    vector: Vectors | None = None  # the query's vector (prepare.query_vector), when read
    vector_cached: bool = True  # whether the embedding cache had it

    @property
    def filter_operators(self) -> tuple[str, ...]:
        """The conditions on the rows read, part of the statement's shape: ``namespace``
        first when the call names one, ``keyed`` when it reads only memories under a key, then
        the operators of its metadata filter, in order (``()``: no condition)."""
        scope = ((NAMESPACE,) if self.namespace else ()) + ((KEYED,) if self.keyed else ())
        if self.metadata_filter is None:
            return scope
        return scope + self.metadata_filter.operators

    @property
    def reads_vector(self) -> bool:
        """Whether a source of the call reads the query's vector (memories or documents)."""
        config = self.config
        return (config.semantic.enabled and config.semantic.limit > 0) or (
            config.documents.enabled and config.documents.limit > 0
        )


def prepare_call(
    query: object,
    *,
    tenant_id: object,
    config: object,
    default: RetrievalConfig,
    working_state: object = None,
    task_id: object = None,
    mode: object = "semantic",
    as_of: datetime | None = None,
    entities: object = (),
    fusion: Fusion | None = None,
    limit: object = None,
    neighbors: object = 0,
    read_your_writes: object = False,
    filter: object = None,
    namespace: object = None,
    keyed: object = False,
) -> PreparedCall:
    """The call, checked (a :class:`ValidationError` naming what is wrong) and prepared;
    ``config`` is the call's (``None``: ``default``, the retriever's)."""
    read_your_writes = arguments.flag("read_your_writes", read_your_writes)
    messages = arguments.messages("working_state", working_state)
    if config is not None and not isinstance(config, RetrievalConfig):
        raise ValidationError(
            f"config must be a RetrievalConfig or None, got {type(config).__name__}",
            field="config",
        )
    chosen_config = config or default
    prepared = prepare_query(query, chosen_config)
    tenant = check_tenant(tenant_id)
    aware_datetime("as_of", as_of)
    turns_around = _checked_neighbors(neighbors)
    checked_task = arguments.optional_name("task_id", task_id)
    checked_entities = arguments.names("entities", entities)
    checked_limit = arguments.optional_count("limit", limit, maximum=arguments.MAX_RESULTS)
    checked_filter = metadata_filter(filter)
    checked_namespace = arguments.namespace("namespace", namespace)
    checked_keyed = arguments.flag("keyed", keyed)
    if fusion is not None:
        chosen_config = replace(chosen_config, fusion=fusion)
    if checked_limit is not None:
        chosen_config = chosen_config.with_limit(checked_limit)
    if not isinstance(mode, str):
        raise ValidationError(
            f"mode must be the name of a mode, got {type(mode).__name__}", field="mode"
        )
    moment = as_of or datetime.now(UTC)
    return PreparedCall(
        config=chosen_config,
        tenant_id=tenant,
        query=prepared,
        mode_name=mode,
        mode=chosen_config.mode(mode),
        as_of=moment,
        known_at=as_of,
        task_id=checked_task,
        entities=checked_entities,
        neighbors=turns_around,
        read_your_writes=read_your_writes,
        working_state=messages,
        window=(query_window(prepared.text, moment) if chosen_config.time_weight > 0 else None),
        metadata_filter=checked_filter,
        namespace=checked_namespace,
        keyed=checked_keyed,
    )


def _checked_neighbors(neighbors: object) -> int:
    if (
        isinstance(neighbors, int)
        and not isinstance(neighbors, bool)
        and 0 <= neighbors <= MAX_NEIGHBORS
    ):
        return neighbors
    raise ValidationError(
        f"neighbors must be an integer from 0 to {MAX_NEIGHBORS} (turns before and after "
        f"each hit), got {neighbors!r:.40}",
        field="neighbors",
    )
