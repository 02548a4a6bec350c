"""What the versions rule's close-words condition keeps apart, and what would tell those apart.

A newer memory that states an update (``versions_asked.states_update``), names what it changes
and is not told apart by a name or a number may still be told apart by any content word the
question names (``tells_apart``). It then takes the older memory's place only when the two are
close (cosine at least the model's ``version_words_similarity``). Without that condition,
"How old is Leo?" would let "Leo has a new piano teacher, Mr Evans." take the place of "My son
Leo is 8 years old.".

This script reads every labelled question of ``tests/data/versions_for_a_question.jsonl`` (and
the ten other memories' questions) against every short update of the file, as one tenant would
hold them all. It lists the pairs the condition keeps apart: the true update of a question's
own pair (the newer should come first) and every other pair (a memory that changed something
else). For each it gives the cosine of the two memories, of the question to each, and whether
the memory asked about is the newer's nearest among all of the file's memories. A signal that
would lift the condition must separate the two groups.

No database: the embedder and the rule's functions alone.

Usage: python benchmarks/quality/versions_close_words.py [--json PATH]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the shared _common
sys.path.insert(0, str(Path(__file__).resolve().parent))  # versions_for_a_question
from _common import add_output, write_result
from versions_for_a_question import OTHER_QUESTIONS, OTHERS, load

from retrieval.embedding.calibration import MINILM_THRESHOLDS
from retrieval.embedding.models import SentenceTransformerEmbedder
from retrieval.search.rank import versions_asked


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_output(parser)
    args = parser.parse_args()
    pairs = load()
    # Each question with the memory it asks about (a pair's older; each other memory).
    asked = [(pair.query, pair.older, pair) for pair in pairs]
    asked += [(query, text, None) for query, text in zip(OTHER_QUESTIONS, OTHERS, strict=True)]
    memories = [pair.older for pair in pairs] + [pair.newer for pair in pairs] + list(OTHERS)
    texts = sorted(set(memories) | {query for query, _, _ in asked})
    vectors = np.asarray(SentenceTransformerEmbedder().embed(texts), dtype=np.float64)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    row = {text: number for number, text in enumerate(texts)}

    def cosine(a: str, b: str) -> float:
        return float(vectors[row[a]] @ vectors[row[b]])

    close = MINILM_THRESHOLDS.version_words_similarity
    distinct = list(dict.fromkeys(memories))

    def nearest(newer: str) -> str:
        return max((text for text in distinct if text != newer), key=lambda t: cosine(t, newer))

    updates = [text for text in dict.fromkeys(memories) if versions_asked.states_update(text)]
    kept_apart: dict[str, list[dict[str, Any]]] = {"true updates": [], "other pairs": []}
    for query, fact, pair in asked:
        for newer in updates:
            if newer == fact or cosine(fact, newer) >= close:
                continue
            if not versions_asked.shares_a_word(fact, newer):
                continue
            if versions_asked.names_apart(query, fact, newer):
                continue
            if not versions_asked.tells_apart(query, fact, newer):
                continue
            true = pair is not None and pair.relation == "update" and newer == pair.newer
            kept_apart["true updates" if true else "other pairs"].append({
                "pair": pair.id if pair else None,
                "half": pair.half if pair else "others",
                "query": query,
                "newer": newer,
                "memories": round(cosine(fact, newer), 3),
                "query_to_fact": round(cosine(query, fact), 3),
                "query_to_newer": round(cosine(query, newer), 3),
                "nearest_is_fact": nearest(newer) == fact,
            })  # fmt: skip
    summary = {
        name: {
            "pairs": len(found),
            "query_to_newer": _span([item["query_to_newer"] for item in found]),
            "memories": _span([item["memories"] for item in found]),
            "nearest_is_fact": sum(item["nearest_is_fact"] for item in found),
        }
        for name, found in kept_apart.items()
    }
    for item in kept_apart["true updates"]:
        print("true update", item)
    print({"close": close, **summary})
    write_result("versions-close-words", {"close": close, **summary, **kept_apart}, args)


def _span(values: list[float]) -> list[float] | None:
    return [min(values), max(values)] if values else None


if __name__ == "__main__":
    main()
