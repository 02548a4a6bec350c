"""A number of things, said as a person would: "1 memory", "3 memories", "1,204 rows"."""

from __future__ import annotations

# The plurals that are not the noun with an s.
_IRREGULAR = {"memory": "memories", "entry": "entries", "match": "matches"}


def counted(number: int, noun: str) -> str:
    """``number`` and ``noun``, plural unless ``number`` is 1 (``"tool call"``: its last word
    takes the plural), with thousands separated."""
    if number == 1:
        return f"1 {noun}"
    head, _, last = noun.rpartition(" ")
    plural = _IRREGULAR.get(last, f"{last}s")
    return f"{number:,} {head} {plural}" if head else f"{number:,} {plural}"
