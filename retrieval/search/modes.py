"""The named filter presets on memory kinds (:class:`Mode`) and the default ones."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType


@dataclass(frozen=True)
class Mode:
    """A named filter preset on memory kinds, applied in SQL, and what its results carry.

    ``include_kinds`` keeps only those kinds (``None``: all); ``exclude_kinds`` drops kinds.
    ``metadata``: whether a memory's result carries the memory's own metadata
    (``result.metadata["metadata"]``); a caller that reads what it needs of the returned
    memories itself (LangGraph's store reads its items' values) leaves it out, and the statement
    then builds and sends none for any of its candidates. Modes are named by strings, not a
    fixed list: :meth:`RetrievalConfig.with_modes` adds a user's own.
    """

    include_kinds: frozenset[str] | None = None
    exclude_kinds: frozenset[str] = frozenset()
    metadata: bool = True


DEFAULT_MODES: Mapping[str, Mode] = MappingProxyType(
    {
        "semantic": Mode(),
        # Recovering "what was I working on": the agent's own syntheses are not evidence.
        "session_recovery": Mode(exclude_kinds=frozenset({"synthesized_insight"})),
        "knowledge_lookup": Mode(
            include_kinds=frozenset(
                {"episteme", "techne", "critique", "decision", "directive", "proposal"}
            )
        ),
    }
)
