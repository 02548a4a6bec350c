"""Context formatting: a response as chat messages, or as a markdown block for a prompt."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from retrieval.search.results import RetrievalResponse, RetrievalResult

WORKING_STATE = "working_state"


def to_messages(
    response: RetrievalResponse, working_state: Sequence[Mapping[str, Any]] | None = None
) -> list[Mapping[str, Any]]:
    """Chat messages: the retrieved context, best first, then the conversation.

    Each stored result becomes an ``assistant`` message whose content starts with its date
    (``[2026-11-20 09:30 UTC]``) and holds, for a memory returned with its ``neighbors``, the
    turns around it in order; its ``metadata`` carries its source, scores and ids (strip it if
    your chat API refuses extra keys); there is never a synthetic ``system`` message. The
    conversation is ``working_state`` itself, every dict the caller's
    own object, unchanged and in order; without it, the working-state messages the response
    kept, in conversation order.
    """
    bodies = _bodies(response)
    context: list[Mapping[str, Any]] = [
        _assistant(result, body)
        for result, body in zip(response, bodies, strict=True)
        if result.source != WORKING_STATE
    ]
    if working_state is not None:
        return context + list(working_state)
    kept = sorted(
        (r for r in response if r.source == WORKING_STATE),
        key=lambda r: int(r.metadata["position"]),
    )
    return context + [r.metadata["message"] for r in kept]


def to_markdown(response: RetrievalResponse, *, title: str = "Previous context") -> str:
    """A markdown block for a prompt: one entry per stored result with source, date, scores
    and text (a memory returned with its ``neighbors``: the turns around it, in order, each
    dated). The caller's own messages (the working state) are not previous context: as in
    :func:`to_messages`, they are not listed among it (the prompt holds the conversation)."""
    lines = [f"## {title}", ""]
    shown = [
        (result, body)
        for result, body in zip(response, _bodies(response), strict=True)
        if result.source != WORKING_STATE
    ]
    if not shown:
        lines.append("(nothing relevant found)")
    for result, body in shown:
        lines.append(f"- **{_label(result)}** · {_when(result)} · {_scores(result)}")
        lines.extend(f"  {line}" if line else "" for line in body.splitlines())
    return "\n".join(lines) + "\n"


def _bodies(response: RetrievalResponse) -> list[str]:
    """Each result's text; with neighbours, the turns of its thread in order, the hit marked.
    A turn is shown once: not as a neighbour when it is a result itself, nor again when an
    earlier result's window showed it (overlapping windows of nearby hits)."""
    memories = {r.metadata.get("id") for r in response if r.source == "semantic"}
    shown: set[Any] = set()
    bodies = []
    for result in response:
        neighbors = [
            n
            for n in result.metadata.get("neighbors") or ()
            if n["id"] not in memories and n["id"] not in shown
        ]
        shown.update(n["id"] for n in neighbors)
        if not neighbors:
            bodies.append(result.content)
            continue
        position = result.metadata.get("position")
        turns = [(n["position"], f"[{_date(n['created_at'])}] {n['content']}") for n in neighbors]
        turns.append((position, f"» {result.content}"))
        bodies.append("\n".join(text for _, text in sorted(turns, key=lambda turn: turn[0])))
    return bodies


def _assistant(result: RetrievalResult, body: str) -> dict[str, Any]:
    metadata = {
        "source": result.source,
        "final_score": result.final_score,
        "relevance_score": result.relevance_score,
        "recency_score": result.recency_score,
    }
    keys = ("item", "id", "kind", "created_at", "distance", "matched_keywords", "thread_id",
            "below_threshold")  # fmt: skip
    for key in keys:
        if key in result.metadata:
            metadata[key] = result.metadata[key]
    return {
        "role": "assistant",
        "content": f"[{_when(result)}] {body}",
        "metadata": metadata,
    }


def _label(result: RetrievalResult) -> str:
    item = result.metadata.get("kind") or result.metadata.get("item")
    if result.source == WORKING_STATE:
        item = result.metadata.get("message", {}).get("role", "message")
    return f"{result.source}/{item}" if item else result.source


def _when(result: RetrievalResult) -> str:
    created = result.metadata.get("created_at")
    if created is None:
        position = result.metadata.get("position", 0)
        count = result.metadata.get("of_messages", 0)
        return f"message {int(position) + 1} of {count}"
    return _date(str(created))


def _date(created: str) -> str:
    # An ISO 8601 UTC timestamp as "2026-11-20 09:30 UTC".
    return created.replace("T", " ")[:16] + " UTC"


def _scores(result: RetrievalResult) -> str:
    weak = ", below the threshold: a weak match" if result.metadata.get("below_threshold") else ""
    return (
        f"final {result.final_score:.2f} (relevance {result.relevance_score:.2f}, "
        f"recency {result.recency_score:.2f}{weak})"
    )


# What the columns of :func:`to_table` mean, under it.
TABLE_LEGEND = (
    "final: the score, 0 to 1, higher is better; rel: how well it matches the question; rec: "
    "how recent (1: now); source/kind: semantic a memory, episodic a decision or tool call, "
    "documents a chunk; id: the row within its source"
)


# What a correction's text opens with in :func:`to_table`, said under it when one is listed.
THROUGH_LEGEND = (
    "found through memory N: a correction, found by an earlier version that the question matched"
)


def to_table(response: RetrievalResponse, *, text_width: int = 70, legend: bool = True) -> str:
    """A plain-text table of the results: rank, source, id (of the memory, decision, tool call
    or chunk, named with it: ``memory 12``, to give in ``supersedes`` or ``forget``), final,
    relevance, recency, text (a weak match below the threshold, which fills an answer, opens
    with ``(weak)``; a correction found through the memory it replaced, with ``(found through
    memory N)``); then, with ``legend``, a line saying what the columns mean."""
    header = f"{'#':>2}  {'source':<30} {'id':<16} {'final':>5} {'rel':>5} {'rec':>5}  text"
    lines = [header, "-" * len(header)]
    for rank, result in enumerate(response, start=1):
        text = " ".join(result.content.split())
        if result.metadata.get("found_through") is not None:
            text = f"(found through memory {result.metadata['found_through']}) {text}"
        if result.metadata.get("below_threshold"):
            text = f"(weak) {text}"
        if len(text) > text_width:
            text = text[: text_width - 1] + "…"
        lines.append(
            f"{rank:>2}  {_label(result):<30} {_row_name(result):<16} "
            f"{result.final_score:>5.2f} {result.relevance_score:>5.2f} "
            f"{result.recency_score:>5.2f}  {text}"
        )
    if not response.results:
        lines.append("(no result above the threshold)")
    elif legend:
        lines.append(f"({TABLE_LEGEND})")
        if any(result.metadata.get("found_through") is not None for result in response):
            lines.append(f"({THROUGH_LEGEND})")
    return "\n".join(lines)


def _row_name(result: RetrievalResult) -> str:
    # A row's id with what it is ("memory 12", "decision 6", "tool call 4", "chunk 3"): ids
    # repeat across sources.
    row_id = result.metadata.get("id")
    if row_id is None:
        return "-"
    item = str(result.metadata.get("item") or result.source).replace("_", " ")
    return f"{item} {row_id}"
