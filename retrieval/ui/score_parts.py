"""A result's final score split into its weighted parts, for the inspector's stacked bars:
the parts the ranking recorded (:mod:`retrieval.search.rank.weighted_parts`), with their labels and
colours.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from retrieval.search.results import RetrievalResult

# The parts in the order the bars draw them, with their labels and colours.
PARTS: tuple[tuple[str, str, str], ...] = (
    ("meaning", "relevance: meaning", "#3b6fb6"),
    ("lexical", "relevance: lexical evidence", "#6aa84f"),
    ("context", "relevance: lifted by its thread", "#8e7cc3"),
    ("recency", "recency", "#e69138"),
    ("importance", "importance", "#c27ba0"),
    ("popularity", "popularity", "#76a5af"),
    ("entity", "entity overlap", "#a61c00"),
    ("time", "fits the time asked about", "#bf9000"),
    ("speaker", "said by the person asked about", "#45818e"),
)
LABELS = {name: label for name, label, _ in PARTS}
COLOURS = {name: colour for name, _, colour in PARTS}
TIMES = "\N{MULTIPLICATION SIGN}"
_ORDER = {name: place for place, (name, _, _) in enumerate(PARTS)}
# The parts that take from a final score, drawn as the other parts scaled down.
_CUTS = ("outdated", "question")


@dataclass(frozen=True)
class Part:
    """One weighted part of a final score: ``value = weight * signal``."""

    name: str
    value: float
    weight: float
    signal: float

    @property
    def label(self) -> str:
        """What the part measures, in words."""
        return LABELS[self.name]

    @property
    def colour(self) -> str:
        """The part's colour in the bars."""
        return COLOURS[self.name]


def score_parts(result: RetrievalResult) -> list[Part]:
    """The non-zero weighted parts of ``result``'s final score, in :data:`PARTS` order, as
    the ranking recorded them (``metadata["parts"]``). A result capped under a newer version
    of its fact (``outdated``, :mod:`retrieval.search.rank.versions`) or scaled down as a turn
    that only asks (``question``, :mod:`retrieval.search.rank.questions`) has its parts scaled
    to its final score, so that they still add up to it."""
    recorded: Mapping[str, Mapping[str, float]] = result.metadata.get("parts") or {}
    cap = sum(float((recorded.get(name) or {}).get("value", 0.0)) for name in _CUTS)
    own = result.final_score - cap
    scale = result.final_score / own if cap < 0.0 and own > 0.0 else 1.0
    parts = [
        Part(name, float(part["value"]) * scale, float(part["weight"]), float(part["signal"]))
        for name, part in recorded.items()
        if name in COLOURS
    ]
    return sorted((part for part in parts if part.value > 0.0), key=lambda part: _ORDER[part.name])


def outdated_label(metadata: Mapping[str, object]) -> str | None:
    """Which newer memory may replace a result, in words ("possibly outdated by memory #12, a
    newer version of the same fact: ranked under it, its score 0.912 capped to 0.874"), or
    None when no newer version of it was found."""
    newer = metadata.get("possibly_outdated_by")
    if not isinstance(newer, Mapping):
        return None
    label = f"possibly outdated by memory #{newer.get('id')}, a newer version of the same fact"
    parts = metadata.get("parts")
    outdated = parts.get("outdated") if isinstance(parts, Mapping) else None
    if isinstance(outdated, Mapping):
        own = float(newer.get("own_final_score", 0.0))
        label += f": ranked under it, its score {own:.3f} capped to {own + outdated['value']:.3f}"
    return label


def found_label(metadata: Mapping[str, object]) -> str | None:
    """Which memory a correction was found through, in words ("found through memory #12, an
    earlier version it replaced: the question found that memory"), or None for a result found
    by its own text. The earlier version may have been replaced by a correction this one
    corrected in turn."""
    through = metadata.get("found_through")
    if through is None:
        return None
    return (
        f"found through memory #{through}, an earlier version it replaced: the question found "
        "that memory"
    )


def question_label(metadata: Mapping[str, object]) -> str | None:
    """Why a turn that only asks ranks under the turns that tell, in words ("a question, not
    an answer: its score 0.512 scaled to 0.358"), or None when it is not one."""
    asked = metadata.get("only_asks")
    if not isinstance(asked, Mapping):
        return None
    own = float(asked.get("own_final_score", 0.0))
    parts = metadata.get("parts")
    cut = parts.get("question") if isinstance(parts, Mapping) else None
    scaled = own + float(cut["value"]) if isinstance(cut, Mapping) else own
    return f"a question, not an answer: its score {own:.3f} scaled to {scaled:.3f}"


@dataclass(frozen=True)
class PartNumbers:
    """A row of a result's "parts in numbers": the part's own score (a channel's own relevance
    where the relevance fuses two), the channel's weight in that fusion, the part's weight in
    the final score and what it adds to it."""

    part: Part
    own: float
    channel_weight: float | None
    weight: float
    value: float


def part_numbers(
    result: RetrievalResult, parts: list[Part], bm25_weight: float
) -> list[PartNumbers]:
    """The rows of ``result``'s numbers table, one per part of ``parts``. ``bm25_weight`` is the
    lexical channel's weight in convex and rank fusion (the vector channel has 1 minus it)."""
    meta = result.metadata
    fused = _fused(meta)
    own_of = {"meaning": meta.get("dense_relevance"), "lexical": meta.get("bm25_relevance")}
    weighted = fused and meta.get("fusion") in ("convex", "rrf")
    channel = {"meaning": 1.0 - bm25_weight, "lexical": bm25_weight}
    rows = []
    for part in parts:
        own = own_of.get(part.name) if fused else None
        rows.append(
            PartNumbers(
                part,
                own=part.signal if own is None else float(own),
                channel_weight=channel.get(part.name) if weighted else None,
                weight=part.weight,
                value=part.value,
            )
        )
    return rows


def fusion_note(result: RetrievalResult, bm25_weight: float) -> str | None:
    """How ``result``'s relevance came from its two channels, in words (None when it has one)."""
    meta = result.metadata
    if not _fused(meta):
        return None
    fusion = meta.get("fusion")
    meaning = f"meaning {float(meta.get('dense_relevance') or 0.0):.3f}"
    lexical = f"lexical {float(meta.get('bm25_relevance') or 0.0):.3f}"
    relevance = f"relevance {result.relevance_score:.3f}"
    if fusion == "convex":
        return (
            f"{relevance} = min(1, {1 - bm25_weight:.2f} {TIMES} {meaning} "
            f"+ {bm25_weight:.2f} {TIMES} {lexical})"
        )
    if fusion == "max":
        return f"{relevance}: the larger of {meaning} and {lexical}"
    if fusion == "cascade":
        return f"{relevance}: {lexical} when it reaches the cascade threshold, else {meaning}"
    return (
        f"{relevance}: reciprocal rank fusion of meaning (rank {meta.get('dense_rank')}) and "
        f"lexical (rank {meta.get('bm25_rank')}), weighted {1 - bm25_weight:.2f} and "
        f"{bm25_weight:.2f}"
    )


def _fused(meta: Mapping[str, object]) -> bool:
    # The relevance fused a dense and a lexical channel (not lifted by a turn of its thread).
    return "lexical_share" in meta and "lifted_by" not in meta


def lift_label(metadata: Mapping[str, object]) -> str | None:
    """Which turn lifted a result and where it stands from it, in words ("lifted by turn #19 of
    its thread, 1 turn later"), or None for a result found by itself."""
    lifted = metadata.get("lifted_by")
    if not isinstance(lifted, Mapping):
        return None
    offset = int(lifted.get("offset", 0))
    steps = abs(offset)
    where = "later" if offset < 0 else "earlier"  # the lifting turn, seen from this one
    within = "its thread" if metadata.get("thread_id") else "its session"
    turns = "turn" if steps == 1 else "turns"
    return f"lifted by turn #{lifted.get('id')} of {within}, {steps} {turns} {where}"
