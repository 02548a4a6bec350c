"""The named filter presets on memory kinds (:class:`Mode`) and the default ones."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType


@dataclass(frozen=True)
class Mode:
    """A named filter preset on memory kinds, applied in SQL.

    ``include_kinds`` keeps only those kinds (``None``: all); ``exclude_kinds`` drops kinds.
    Modes are named by strings, not a fixed list: :meth:`RetrievalConfig.with_modes` adds a
    user's own.
    """

    include_kinds: frozenset[str] | None = None
    exclude_kinds: frozenset[str] = frozenset()


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
