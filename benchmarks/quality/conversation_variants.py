"""Ways a thread could lift its turns, and ideas for the weakest categories, on LoCoMo dev.

The options table of docs/decisions/0017-lift-from-the-leading-hits.md: each variant is either
a setting of this checkout (``context_lift``, ``context_window``, ``candidate_pool``, ...) or a
change patched into its read pipeline for the run (which hits lift, a cap on lifted places, a
thread penalty, questions that ask for several things, the query's hypothetical frame, the
turns of the speaker a question names). The
dialogues are stored once as ``conversation_eval.py`` stores them (schema ``conversation``);
every question is asked at k = 5 and 10 through ``retrieve()``, counted at an equal budget.
Reports R@5 / R@10 overall, by category, and of the questions whose evidence lies in several
sessions.

``--as-messages`` stores each turn as the short messages people send in a chat: one per
sentence (and one for a shared photo), each ``NAME: text`` as ``retrieval ingest`` stores a
transcript's line, in the turn's session and order; the budget is then k messages read, and a
question's evidence turn counts as found when one of its messages is among them
(``--turn-budget``: messages are read until k distinct turns are, of 3k asked;
``--strict-evidence``: a message that only asks or only reacts finds nothing, as in a chat
whose evidence is labelled message by message). The group "not adversarial" leaves out the
questions that name the other speaker on purpose.

Usage: python benchmarks/quality/conversation_variants.py DATA [--data-dir DIR] [--only NAME ...]
       [--as-messages [--turn-budget] [--strict-evidence]] [--turn-context W] [--run-weight W]
       [--context-just-before | --context-other-run | --own-previous W] [--question-share W]
       [--without-threads] [--full-names] [--lowercase-questions]
       [--json PATH]

``--turn-context`` and ``--run-weight`` store the turns with those shares of the turn before
(``turn_context``; ``run_turn_context``, for a message that continues its speaker's run);
``--context-just-before`` stores each turn with the context of the turn just before it, not
the turn before its speaker's run (the writer before that rule); ``--context-other-run``, with
the other speaker's whole run before it; ``--own-previous``, plus a share of a run's own
previous message (an experiment, vectors given); ``--question-share``, the turn after a turn
that only asks with at least that share of it (an experiment); ``--without-threads`` stores
the turns without thread and position (sessions inferred from time); ``--full-names`` writes
each speaker with a family name, the questions naming the first name.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import replace
from itertools import pairwise
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the shared _common
sys.path.insert(0, str(Path(__file__).resolve().parent))  # conversation_eval's loading
from _common import add_output, write_result
from _server import add_data_dir, embedded
from conversation_eval import (
    CATEGORIES,
    SCHEMA,
    Dialogue,
    Turn,
    first_turns,
    load,
    store_dialogues,
)

from retrieval.memory.speakers import speaker_of

KS = (5, 10)
ADVERSARIAL = 5  # questions that name the other speaker on purpose (none in real chats)
# Questions that ask for several things, and a question's hypothetical frame.
SEVERAL = re.compile(
    r"\b(all|both|in common|kinds? of|types? of|how many|ever|some)\b"
    r"|^(what|which|where|who)\s+(\w+s)\b",
    re.IGNORECASE,
)
NOT_PLURAL = {"is", "was", "does", "has", "kids'", "this", "status"}
HYPOTHETICAL = re.compile(r"\b(would|likely|might|probably|possibly|could|still)\b\s*", re.I)


def asks_for_several(question: str) -> bool:
    """Whether a question asks for several things (the rule the variants below measure)."""
    match = SEVERAL.search(question)
    return bool(match) and not (match.group(3) and match.group(3).lower() in NOT_PLURAL)


# -- the patched variants ---------------------------------------------------------------------


class Patch:
    """One variant's changes to the retriever: which hits lift, and how results are chosen."""

    def __init__(
        self,
        *,
        top: int | None = None,
        margin: float | None = None,
        cap: int | None = None,
        penalty: float | None = None,
        lifted_only: bool = False,
        several_only: bool = False,
        rewrite: Callable[[str], str] | None = None,
        speaker: float | None = None,
        spread: tuple[int, int, float] | None = None,
        agreed: int = 0,
        feedback: tuple[int, float] | None = None,
        other_speaker: bool = False,
        asks: Callable[[str], bool] | None = None,
        runs: int | None = None,
        vector_text: Callable[[str], str] | None = None,
    ) -> None:
        self.top, self.margin, self.cap, self.penalty = top, margin, cap, penalty
        self.lifted_only, self.several_only, self.rewrite = lifted_only, several_only, rewrite
        self.speaker = speaker  # added to the final score of a turn said by the one named
        # (n, s, y): when the n leading hits lie in s sessions or more, the lift is scaled by y
        self.spread = spread
        self.agreed = agreed  # the bonus only when most of the best ``agreed`` results are theirs
        # (n, a): a second read whose vector is the query's plus a times the mean of the n
        # leading semantic results' stored vectors (normalised), its results returned
        self.feedback = feedback
        self.other_speaker = other_speaker  # a hit lifts only the turns another person said
        self.asks = asks  # which turns only ask (the rank stage's questions.only_asks)
        # a hit's offset to a turn counted in runs (speaker changes), the turns up to this many
        # runs away lifted (with a context_window that reads far enough)
        self.runs = runs
        self.vector_text = vector_text  # the text the query's vector is made of


@contextmanager
def patched(patch: Patch | None) -> Iterator[None]:
    """The read pipeline with ``patch`` in place for the block: the rank stage's lift
    (``context_candidates``) and selection (``ranking.select``), the query it ranks for, and
    the query ``retrieve()`` is given."""
    from retrieval.search import retriever as module
    from retrieval.search.prepare.query_vector import QueryVectors
    from retrieval.search.rank import questions, ranking
    from retrieval.search.rank import rank as stage

    if patch is None:
        yield
        return
    lift, select, rank, retrieve = (
        stage.context_candidates,
        ranking.select,
        module.rank,
        module.HybridRetriever.retrieve,
    )
    asked: dict[str, str] = {}

    def hits_that_lift(hits: Sequence[Any], candidates: Any, **options: Any) -> Any:
        chosen = list(hits)[: patch.top] if patch.top is not None else list(hits)
        if patch.margin is not None and chosen:
            best = max(hit.relevance for hit in chosen)
            chosen = [hit for hit in chosen if hit.relevance >= best - patch.margin]
        if patch.spread is not None:
            n, sessions, scale = patch.spread
            threads = {json.loads(hit.details).get("thread_id") for hit in list(hits)[:n]}
            if len(threads) >= sessions:
                options["lift"] = options["lift"] * scale
        ids = {hit.id for hit in chosen}  # the turns around the hits that still lift
        options["rows"] = [row for row in options["rows"] if row[0] in ids]
        if patch.runs is not None:
            options["rows"] = _offsets_in_runs(chosen, options["rows"], patch.runs)
        if patch.other_speaker:
            said = {hit.id: speaker_of(hit.content) for hit in hits}
            options["rows"] = [
                row for row in options["rows"] if speaker_of(row[5]) != said.get(row[0])
            ]
        return lift(chosen, candidates, **options)

    def chosen_results(scored: Mapping[str, Sequence[Any]], config: Any) -> Any:
        if patch.speaker is not None:
            scored = {name: _named_speaker(asked.get("query", ""), results, patch.speaker,
                                           agreed=patch.agreed)
                      for name, results in scored.items()}  # fmt: skip
            if patch.cap is None and patch.penalty is None:
                return select(scored, config)
        if patch.several_only and not asks_for_several(asked.get("query", "")):
            return select(scored, config)
        kept = {
            name: _greedy(
                [r for r in results if r.final_score >= config.threshold(name)],
                config.source(name).limit,
                config.threshold(name),
                patch,
            )
            for name, results in scored.items()
        }
        return select(kept, config)

    def ranked(plan: Any, read: Any) -> Any:
        asked["query"] = plan.call.query.text
        return rank(plan, read)

    def rewritten(self: Any, query: str, **options: Any) -> Any:
        text = patch.rewrite(query) if patch.rewrite is not None else query
        if patch.feedback is None:
            return retrieve(self, text or query, **options)
        first = retrieve(self, text or query, **options)
        leading, weight = patch.feedback
        ids = [r.metadata["id"] for r in first if r.source == "semantic"][:leading]
        if not ids:
            return first
        return _read_again(self, retrieve, query, options, _stored_vectors(self, ids), weight)

    with_vector = QueryVectors.with_vector

    def vector_of(self: Any, call: Any) -> Any:
        text = patch.vector_text(call.query.text) if patch.vector_text else call.query.text
        if text == call.query.text or not text.strip():
            return with_vector(self, call)
        done = with_vector(self, replace(call, query=replace(call.query, text=text)))
        return replace(done, query=call.query)

    if patch.vector_text is not None:
        QueryVectors.with_vector = vector_of  # type: ignore[method-assign]
    only_asks = questions.only_asks
    if patch.asks is not None:
        questions.only_asks = patch.asks
    stage.context_candidates = hits_that_lift
    if patch.cap is not None or patch.penalty is not None or patch.speaker is not None:
        ranking.select = chosen_results  # type: ignore[assignment]
        module.rank = ranked
    module.HybridRetriever.retrieve = rewritten  # type: ignore[method-assign]
    try:
        yield
    finally:
        questions.only_asks = only_asks
        QueryVectors.with_vector = with_vector  # type: ignore[method-assign]
        stage.context_candidates = lift
        ranking.select = select  # type: ignore[assignment]
        module.rank = rank
        module.HybridRetriever.retrieve = retrieve  # type: ignore[method-assign]


def _offsets_in_runs(hits: Sequence[Any], rows: Sequence[Any], most: int) -> list[Any]:
    # ``rows`` (hit id, offset, a turn's columns) with each offset counted in runs: the
    # speaker changes between the hit and the turn (positions where a speaker is unknown).
    from retrieval.search.candidate import Candidate

    said = {(hit.id, 0): speaker_of(hit.content) for hit in hits}
    for hit_id, offset, *columns in rows:
        said[hit_id, offset] = speaker_of(Candidate(*columns).content)
    counted = []
    for hit_id, offset, *columns in rows:
        step = 1 if offset >= 0 else -1
        spoken = [said.get((hit_id, at)) for at in range(0, offset + step, step)]
        runs = abs(offset) if None in spoken else sum(a != b for a, b in pairwise(spoken))
        if runs == 0 or runs <= most:  # a turn of the hit's own run is left as it was
            counted.append((hit_id, step * runs if runs else offset, *columns))
    return counted


def _asks_beside_reactions(words: int, *, exclaimed: bool = True) -> Callable[[str], bool]:
    # A turn only asks: a question, beside sentences of at most ``words`` words (exclamations
    # only, with ``exclaimed``).
    def asks(text: str) -> bool:
        sentences = [s for s in SENTENCE_END.split(text) if re.search(r"\w", s)]
        asked = [s for s in sentences if s.rstrip(" \"')").endswith("?")]
        short = [
            s for s in sentences
            if s not in asked and len(re.findall(r"\w+", s)) <= words
            and (s.rstrip(" \"')").endswith("!") or not exclaimed)
        ]  # fmt: skip
        return bool(asked) and len(asked) + len(short) == len(sentences)

    return asks


INTERROGATIVE = re.compile(
    r"^(what|when|where|who|whose|why|how|which|do|does|did|are|is|was|were|can|could|would|"
    r"will|should|have|has|had|any|anyone|anything)\b",
    re.IGNORECASE,
)


def _unmarked_questions() -> Callable[[str], bool]:
    # The product's turns that only ask, a sentence opening with a question's word and ending
    # with no mark taken for a question too.
    from retrieval.search.rank.questions import only_asks

    def asks(text: str) -> bool:
        sentences = [s for s in SENTENCE_END.split(text) if s]
        return only_asks(" ".join(
            s + "?" if INTERROGATIVE.match(s) and not s.rstrip(" \"')").endswith((".", "!", "?"))
            else s
            for s in sentences
        ))  # fmt: skip

    return asks


def _reactions_too(words: int) -> Callable[[str], bool]:
    # The product's turns that only ask, and the turns of reactions alone (exclamations of at
    # most ``words`` words).
    from retrieval.search.rank.questions import only_asks

    def asks(text: str) -> bool:
        sentences = [s for s in SENTENCE_END.split(text) if re.search(r"\w", s)]
        reactions = all(
            s.rstrip(" \"')").endswith("!") and len(re.findall(r"\w+", s)) <= words
            for s in sentences
        )
        return only_asks(text) or (bool(sentences) and reactions)

    return asks


def tells_nothing(content: str) -> bool:
    """Whether a chat's message (``NAME: text``) can hold no evidence: it only asks (the
    product's rule) or holds reactions alone, exclamations of at most three words ("Wow!",
    "Hey Mel!", "That's great!"). In the proxy every message of an evidence turn carries the
    turn's label, where a real chat labels the messages that tell."""
    from retrieval.memory.speakers import said_text

    return _reactions_too(3)(said_text(content))


def _found_by(turns: Sequence[str], said: Sequence[str]) -> list[str]:
    # The turns the messages read find: a message that tells nothing finds none of its own.
    return [
        f"nothing {n}" if tells_nothing(text) else turn
        for n, (turn, text) in enumerate(zip(turns, said, strict=True))
    ]


def _greedy(results: Sequence[Any], limit: int, threshold: float, patch: Patch) -> list[Any]:
    # The results one at a time, best first: a lifted turn past the cap competes with its own
    # relevance; a thread's n-th result is scaled by the penalty to the power n.
    from retrieval.search.rank import ranking

    pool, chosen, lifted, per_thread = list(results), [], 0, defaultdict(int)
    while pool and len(chosen) < limit:
        best, best_key, best_index = None, None, -1
        for index, result in enumerate(pool):
            candidate = result
            if patch.cap is not None and _lifted(result) and lifted >= patch.cap:
                candidate = _own(result)
                if candidate.final_score < threshold:
                    continue
            thread = _thread(candidate)
            penalised = _lifted(candidate) or not patch.lifted_only
            if patch.penalty is not None and thread is not None and penalised:
                scaled = candidate.final_score * patch.penalty ** per_thread[thread]
                candidate = candidate._replace(final_score=scaled)
            key = ranking.rank_key(candidate)
            if best_key is None or key < best_key:
                best, best_key, best_index = candidate, key, index
        if best is None:
            break
        pool.pop(best_index)
        chosen.append(best)
        lifted += _lifted(best)
        per_thread[_thread(best)] += 1
    return chosen


def _named_speaker(
    query: str, results: Sequence[Any], bonus: float, *, agreed: int = 0
) -> list[Any]:
    # The turns said by the one speaker the question names (a speaker: a name opening a turn
    # of the candidates, 'NAME said, "' or 'NAME: '), their final score raised by ``bonus``.
    said = {
        r.identity: name
        for r in results
        if r.candidate and (name := speaker_of(r.candidate.content))
    }
    named = {name for name in said.values() if re.search(rf"\b{re.escape(name)}\b", query)}
    if len(named) != 1:
        return list(results)
    if agreed and results:
        from retrieval.search.rank import ranking

        best = sorted(results, key=ranking.rank_key)[:agreed]
        if 2 * sum(said.get(r.identity) in named for r in best) <= len(best):
            return list(results)
    return [
        r._replace(final_score=min(1.0, r.final_score + bonus))
        if said.get(r.identity) in named
        else r
        for r in results
    ]


def _stored_vectors(retriever: Any, ids: Sequence[int]) -> Any:
    import numpy as np
    from sqlalchemy import text

    engine = retriever._vectors.engine
    with engine.connect() as connection:
        rows = connection.execute(
            text(
                f"SELECT embedding::text FROM {SCHEMA}.memories"
                " WHERE id = ANY(CAST(:ids AS bigint[]))"
            ),
            {"ids": list(ids)},
        ).scalars()
        return np.array([json.loads(row) for row in rows], dtype=np.float32)


def _read_again(
    retriever: Any, retrieve: Any, query: str, options: Any, vectors: Any, weight: float
) -> Any:
    # ``retrieve`` once more, the query's vector moved towards the mean of ``vectors``.
    import numpy as np

    vectors_of = retriever._vectors
    with_vector = vectors_of.with_vector

    def moved(call: Any) -> Any:
        call = with_vector(call)
        vector = call.vector + weight * vectors.mean(axis=0)
        return replace(call, vector=(vector / np.linalg.norm(vector)).astype(np.float32))

    vectors_of.with_vector = moved
    try:
        return retrieve(retriever, query, **options)
    finally:
        del vectors_of.with_vector


def _lifted(scored: Any) -> bool:
    return scored.candidate is not None and '"lifted_by"' in scored.candidate.details


def _thread(scored: Any) -> str | None:
    if scored.candidate is None:
        return None
    thread = json.loads(scored.candidate.details).get("thread_id")
    return thread if isinstance(thread, str) else None


def _own(scored: Any) -> Any:
    # A lifted result scored with its own relevance instead.
    candidate = scored.candidate
    own = json.loads(candidate.details)["lifted_by"]["own_relevance"]
    weight = scored.weights.get("relevance", 0.0)
    return scored._replace(
        final_score=scored.final_score - weight * (candidate.relevance - own),
        relevance_score=own,
        candidate=candidate._replace(relevance=own),
    )


SPEAKERS: set[str] = set()  # the dialogues' speakers, once loaded


def _named_out(replacement: str, possessive: str) -> Callable[[str], str]:
    # A query with the speakers it names taken out of the text its vector is made of (the
    # named person's signal still reads the query as asked).
    def taken_out(query: str) -> str:
        for name in SPEAKERS:
            query = re.sub(rf"\b{re.escape(name)}'s\b", possessive, query)
            query = re.sub(rf"\b{re.escape(name)}\b", replacement, query)
        return re.sub(r"\s+", " ", query).strip()

    return taken_out


EVERY_HIT: dict[str, Any] = {}  # every hit lifts alike (the default since 2026-12-05)
VARIANTS: dict[str, tuple[dict[str, Any], Patch | None]] = {
    "defaults (every hit lifts alike)": (EVERY_HIT, None),
    "no lift": ({"context_lift": 0.0}, None),
    "only the best hit lifts": (EVERY_HIT, Patch(top=1)),
    "only the best 3 hits lift": (EVERY_HIT, Patch(top=3)),
    "hits within 0.05 of the best lift": (EVERY_HIT, Patch(margin=0.05)),
    "hits within 0.1 of the best lift": (EVERY_HIT, Patch(margin=0.1)),
    "at most 2 lifted turns": (EVERY_HIT, Patch(cap=2)),
    "at most 4 lifted turns": (EVERY_HIT, Patch(cap=4)),
    "a thread's n-th result scaled 0.9^n": (EVERY_HIT, Patch(penalty=0.9)),
    "lifted turns scaled 0.8^n per thread": (EVERY_HIT, Patch(penalty=0.8, lifted_only=True)),
    "context_lift 0.75": ({"context_lift": 0.75}, None),
    "context_lift 0.6": ({"context_lift": 0.6}, None),
    "context_window 1": ({"context_window": 1}, None),
    "context_window 3": ({"context_window": 3}, None),
    "context_window 4": ({"context_window": 4}, None),
    "a hit lifts the other person's turns only": ({}, Patch(other_speaker=True)),
    "several asked: a session's n-th result 0.8^n": ({}, Patch(penalty=0.8, several_only=True)),
    "several asked: 0.9^n": ({}, Patch(penalty=0.9, several_only=True)),
    "several asked: no lift": ({}, Patch(cap=0, several_only=True)),
    "the hypothetical frame taken out": ({}, Patch(rewrite=lambda q: HYPOTHETICAL.sub("", q))),
    # The named speaker: a bonus added to the final score of the turns of the one speaker the
    # question names (the product has no such signal: it did not hold on the validation half).
    "the named speaker's turns +0.05": (EVERY_HIT, Patch(speaker=0.05)),
    "the named speaker's turns +0.1": (EVERY_HIT, Patch(speaker=0.1)),
    "speaker +0.03 if the best is theirs": (EVERY_HIT, Patch(speaker=0.03, agreed=1)),
    "speaker +0.05 if the best is theirs": (EVERY_HIT, Patch(speaker=0.05, agreed=1)),
    "speaker +0.07 if the best is theirs": (EVERY_HIT, Patch(speaker=0.07, agreed=1)),
    "speaker +0.1 if the best is theirs": (EVERY_HIT, Patch(speaker=0.1, agreed=1)),
    "speaker +0.05 if 2 of the best 3 are": (EVERY_HIT, Patch(speaker=0.05, agreed=3)),
    "speaker +0.1 if 2 of the best 3 are": (EVERY_HIT, Patch(speaker=0.1, agreed=3)),
    "3 leading hits in 3 sessions: no lift": ({}, Patch(spread=(3, 3, 0.0))),
    "3 leading hits in 2+ sessions: no lift": ({}, Patch(spread=(3, 2, 0.0))),
    "5 leading hits in 4+ sessions: no lift": ({}, Patch(spread=(5, 4, 0.0))),
    "5 leading hits in 3+ sessions: lift 0.8x": ({}, Patch(spread=(5, 3, 0.8))),
    "feedback: the best 3 hits, 0.2": ({}, Patch(feedback=(3, 0.2))),
    "feedback: the best 3 hits, 0.35": ({}, Patch(feedback=(3, 0.35))),
    "feedback: the best 3 hits, 0.5": ({}, Patch(feedback=(3, 0.5))),
    "feedback: the best hit, 0.35": ({}, Patch(feedback=(1, 0.35))),
    "a pool of 80": ({"candidate_pool": 80}, None),
    "a pool of 60": ({"candidate_pool": 60}, None),
    "a pool of 120": ({"candidate_pool": 120}, None),
    "questions do not yield (question_discount 0)": ({"question_discount": 0.0}, None),
    "question_discount 0.2": ({"question_discount": 0.2}, None),
    "question_discount 0.4": ({"question_discount": 0.4}, None),
    "question_discount 1 (a question scores the threshold)": ({"question_discount": 1.0}, None),
    "only questions ask (no reactions beside)": ({}, Patch(asks=_asks_beside_reactions(0))),
    "a question beside reactions of 3 words": ({}, Patch(asks=_asks_beside_reactions(3))),
    "a question beside reactions of 7 words": ({}, Patch(asks=_asks_beside_reactions(7))),
    "a question beside any sentence of 5 words": (
        {},
        Patch(asks=_asks_beside_reactions(5, exclaimed=False)),
    ),
    "reactions alone yield too (5 words)": ({}, Patch(asks=_reactions_too(5))),
    "a question's words ask without a mark": ({}, Patch(asks=_unmarked_questions())),
    "reactions alone yield too (3 words)": ({}, Patch(asks=_reactions_too(3))),
    "offsets in runs: 1 run, read 6": ({"context_window": 6}, Patch(runs=1)),
    "offsets in runs: 2 runs, read 6": ({"context_window": 6}, Patch(runs=2)),
    "offsets in runs: 2 runs, read 4": ({"context_window": 4}, Patch(runs=2)),
    "the named person out of the query's vector": ({}, Patch(vector_text=_named_out("", ""))),
    "the named person as they in the query's vector": (
        {},
        Patch(vector_text=_named_out("they", "their")),
    ),
    "bm25_weight 0.35": ({"bm25_weight": 0.35}, None),
    "bm25_weight 0.65": ({"bm25_weight": 0.65}, None),
}  # fmt: skip


SAID = re.compile(r'^(\w+) said, "(.*)"(?: and shared (.*))?$', re.DOTALL)
SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def as_messages(dialogue: Dialogue, *, question_marks: bool = True) -> Dialogue:
    """``dialogue`` with each turn split into the messages of a chat: a sentence each (and one
    for a shared photo), ``NAME: text``, the turn's id kept in each; without ``question_marks``
    a question's mark is left out, as people often leave it out in a chat."""
    turns, position = [], 0
    for turn in dialogue.turns:
        said = SAID.match(turn.text)
        if said is None:
            raise ValueError(f"not a LoCoMo turn: {turn.text[:60]}")
        speaker, text, photo = said.groups()
        parts = [part for part in SENTENCE_END.split(text.strip()) if part]
        if not question_marks:
            parts = [part.rstrip("?") or part for part in parts]
        parts += [f"[a photo: {photo}]"] if photo else []
        if position and turn.position == 0:
            position = 0  # a new session
        for part in parts:
            turns.append(Turn(turn.dia_id, f"{speaker}: {part}", turn.created_at, turn.thread,
                              position))  # fmt: skip
            position += 1
    return replace(dialogue, turns=tuple(turns))


FAMILY_NAMES = ("Walker", "Okafor", "Lindqvist", "Moreau", "Tanaka", "Rossi", "Novak", "Silva")
OPENING_NAME = re.compile(r'^(\w+)(?=: | said, ")')


def with_full_names(dialogues: Sequence[Dialogue]) -> list[Dialogue]:
    """``dialogues`` with each turn's speaker written with a family name ("Caroline Walker:
    ...", as a chat's export names people), the questions as they were (naming the first
    name)."""
    names = sorted({speaker_of(turn.text) or "" for d in dialogues for turn in d.turns} - {""})
    full = {name: f"{name} {FAMILY_NAMES[n % len(FAMILY_NAMES)]}" for n, name in enumerate(names)}
    return [
        replace(d, turns=tuple(
            replace(t, text=OPENING_NAME.sub(lambda m: full.get(m[1], m[1]), t.text, count=1))
            for t in d.turns
        ))
        for d in dialogues
    ]  # fmt: skip


@contextmanager
def context_just_before() -> Iterator[None]:
    """The writer embeds every turn with the turn just before it, as before it followed a
    message's run back (no text has a speaker while writing)."""
    from retrieval.memory import turn_context

    names = ("speaker_of",)
    originals = [getattr(turn_context, name) for name in names]
    for name in names:
        setattr(turn_context, name, lambda *_: None)
    try:
        yield
    finally:
        for name, original in zip(names, originals, strict=True):
            setattr(turn_context, name, original)


@contextmanager
def question_share(share: float) -> Iterator[None]:
    """The writer embeds the turn after a turn that only asks with at least ``share`` of it
    (the answer carrying more of the question)."""
    from retrieval.memory import turn_context
    from retrieval.memory.speakers import said_text
    from retrieval.search.rank.questions import only_asks

    share_of = turn_context.Mixing.share

    def larger(self: Any, before: Any) -> float:
        own = share_of(self, before)
        return max(own, share) if only_asks(said_text(before.text)) else own

    turn_context.Mixing.share = larger  # type: ignore[method-assign]
    try:
        yield
    finally:
        turn_context.Mixing.share = share_of  # type: ignore[method-assign]


@contextmanager
def context_other_run(most: int = 5) -> Iterator[None]:
    """The writer embeds a message with the whole run before its own (the other speaker's
    messages up to ``most``, as one text), not only that run's last message: an experiment
    on the messages of a batch."""
    from retrieval.memory import turn_context

    original = turn_context.turn_before_run

    def whole_run(place: Any, speaker: Any, turn_at: Any) -> Any:
        before, stopped = original(place, speaker, turn_at)
        if before is None:
            return before, stopped
        text = before.text
        tenant, thread, position = place
        earlier = position - 1
        while (turn := turn_at((tenant, thread, earlier))) is not None and turn.text != text:
            earlier -= 1  # the turn the walk found
        other = turn.speaker if turn is not None else None
        texts = [text]
        while other is not None and len(texts) < most:
            earlier -= 1
            turn = turn_at((tenant, thread, earlier)) if earlier >= 0 else None
            if turn is None or turn.speaker != other:
                break
            texts.append(turn.text)
        return before._replace(text="\n".join(reversed(texts))), stopped

    turn_context.turn_before_run = whole_run
    try:
        yield
    finally:
        turn_context.turn_before_run = original


def store_with_own_previous(store: Any, dialogues: Sequence[Dialogue], share: float) -> None:
    """``store_dialogues`` with the vectors given: each turn's vector as the writer makes it,
    plus, for a message that continues its speaker's run, ``share`` of its own previous
    message (the run's topic besides the turn it answers); an experiment on threads stored
    whole."""
    import numpy as np

    from retrieval.memory.records import MemoryInput
    from retrieval.memory.turn_context import Said, mixing_of, turn_before_run

    mixing = mixing_of(store.config, store.embedder.model_id)
    for dialogue in dialogues:
        store.forget(tenant_id=dialogue.tenant, everything=True)
        texts = [turn.text for turn in dialogue.turns]
        own = dict(zip(texts, store.embedder.embed(texts), strict=True))
        places = {(dialogue.tenant, turn.thread, turn.position):
                  Said(turn.text, speaker_of(turn.text)) for turn in dialogue.turns}  # fmt: skip
        items = []
        for place, turn in zip(places, dialogue.turns, strict=True):
            before, _ = turn_before_run(place, places[place].speaker, places.get)
            vector = own[turn.text]
            if before is not None:
                vector = vector + mixing.share(before) * own[before.text]
                if before.run:
                    previous = places[(place[0], place[1], place[2] - 1)]
                    vector = vector + share * own[previous.text]
                vector = vector / float(np.linalg.norm(vector))
            items.append(MemoryInput(
                text=turn.text, tenant_id=dialogue.tenant, kind="message",
                metadata={"dia_id": turn.dia_id, "session": turn.thread},
                created_at=turn.created_at, thread_id=turn.thread, position=turn.position,
                embedding=vector.astype(np.float32), embedding_model=store.embedder.model_id,
            ))  # fmt: skip
        store.remember_many(items)


def _retrieve(retriever: Any, question: str, **options: Any) -> Any:
    return retriever.retrieve(question, **options)


def evaluate(
    store: Any,
    dialogues: Sequence[Dialogue],
    change: Mapping[str, Any],
    *,
    messages: bool = False,
    turn_budget: bool = False,
    strict: bool = False,
    asked: Callable[[Dialogue, str, Any], Any] | None = None,
    reader: Callable[..., Sequence[Any]] | None = None,
) -> dict[str, Any]:
    """R@5 / R@10 of the defaults with ``change``, overall, by category and for the questions
    whose evidence lies in several sessions (``messages``: at a budget of k messages, each
    naming its turn; with ``turn_budget``, at k distinct turns read from 3k messages; with
    ``strict``, a message that only asks or only reacts finds no turn: see
    :func:`tells_nothing`; ``asked(dialogue, question, config)``: the configuration a question
    is asked with, else the retriever's; ``reader(retriever, question, **options)``: the results
    a question gets, else ``retriever.retrieve``'s)."""
    from retrieval.search.config import RetrievalConfig
    from retrieval.search.retriever import HybridRetriever

    config = replace(RetrievalConfig(record_access=False), **change)
    recalls: dict[str, dict[int, list[float]]] = defaultdict(lambda: {k: [] for k in KS})
    with HybridRetriever.from_store(store, config=config) as retriever:
        for dialogue in dialogues:
            session_of = {turn.dia_id: turn.thread for turn in dialogue.turns}
            for question in dialogue.questions:
                several = len({session_of[turn] for turn in question.evidence}) > 1
                groups = ["all", CATEGORIES[question.category]] + (["several"] if several else [])
                groups += ["not adversarial"] if question.category != ADVERSARIAL else []
                options = (
                    {} if asked is None else {"config": asked(dialogue, question.text, config)}
                )
                for k in KS:
                    limit = 3 * k if turn_budget else k
                    response = (reader or _retrieve)(
                        retriever, question.text, tenant_id=dialogue.tenant,
                        as_of=dialogue.as_of, limit=limit, **options,
                    )  # fmt: skip
                    turns = [r.metadata["metadata"]["dia_id"] for r in response
                             if r.source == "semantic"]  # fmt: skip
                    if strict:  # a bare message takes its place in the budget, finding nothing
                        said = [r.content for r in response if r.source == "semantic"]
                        turns = _found_by(turns, said)
                    whole = messages and not turn_budget
                    read = list(dict.fromkeys(turns[:k])) if whole else first_turns(turns, k)
                    recall = len(set(read) & set(question.evidence)) / len(question.evidence)
                    for group in groups:
                        recalls[group][k].append(recall)
    return {
        group: {f"recall@{k}": round(100 * sum(v) / len(v), 1) for k, v in by_k.items()}
        | {"questions": len(by_k[5])}
        for group, by_k in recalls.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", type=Path, help="locomo-dev.json, or the folder holding it")
    add_data_dir(parser)
    parser.add_argument("--only", nargs="*", help="run only the variants named (default: all)")
    parser.add_argument(
        "--as-messages",
        action="store_true",
        help="store each turn as a chat's messages, a sentence each (NAME: text), read k of them",
    )
    parser.add_argument(
        "--turn-context",
        type=float,
        help="store the turns with this turn context (default: the write defaults')",
    )
    parser.add_argument(
        "--no-question-marks",
        action="store_true",
        help="with --as-messages: leave out each message's question mark, as chats often do",
    )
    parser.add_argument(
        "--turn-budget",
        action="store_true",
        help="with --as-messages: read messages until k distinct turns are read (of 3k asked)",
    )
    parser.add_argument(
        "--context-just-before",
        action="store_true",
        help="embed each turn with the turn just before it, not the turn before its run",
    )
    parser.add_argument(
        "--context-other-run",
        action="store_true",
        help="embed each message with the whole run before its own (up to 5 messages, one text)",
    )
    parser.add_argument(
        "--run-weight",
        type=float,
        help="store the messages that continue a run with this share of the turn before it "
        "(run_turn_context; default: the write defaults')",
    )
    parser.add_argument(
        "--own-previous",
        type=float,
        help="an experiment: a message that continues its run also takes this share of its "
        "own previous message (vectors given; threads only)",
    )
    parser.add_argument(
        "--question-share",
        type=float,
        help="an experiment: the turn after a turn that only asks takes at least this share of "
        "it (the answer carrying more of the question)",
    )
    parser.add_argument(
        "--without-threads",
        action="store_true",
        help="store the turns without thread and position (sessions inferred from time)",
    )
    parser.add_argument(
        "--strict-evidence",
        action="store_true",
        help="with --as-messages: a message that only asks or only reacts (exclamations of at "
        "most 3 words) finds no turn, though it takes its place in the budget",
    )
    parser.add_argument(
        "--full-names",
        action="store_true",
        help="store each speaker with a family name (Caroline Walker: ...), the questions "
        "naming the first name, as a chat's export names people",
    )
    parser.add_argument(
        "--lowercase-questions",
        action="store_true",
        help="ask each question all in lower case, as people type to a chat",
    )
    add_output(parser)
    args = parser.parse_args()
    unknown = sorted(set(args.only or ()) - set(VARIANTS))
    if unknown:
        parser.error(f"no variant named {', '.join(map(repr, unknown))}; the variants: "
                     + "; ".join(map(repr, VARIANTS)))  # fmt: skip
    from retrieval.db.migrate import MigrationSettings
    from retrieval.memory.config import WriteConfig
    from retrieval.memory.store import MemoryStore

    dialogues = load(args.data)
    if args.lowercase_questions:
        dialogues = [
            replace(d, questions=tuple(replace(q, text=q.text.lower()) for q in d.questions))
            for d in dialogues
        ]
    SPEAKERS.update(
        name for dialogue in dialogues for turn in dialogue.turns if (name := speaker_of(turn.text))
    )
    if args.as_messages:
        marks = not args.no_question_marks
        dialogues = [as_messages(dialogue, question_marks=marks) for dialogue in dialogues]
    schema = MigrationSettings(schema=SCHEMA, embedding_dim=384)
    engine = embedded(args.data_dir, schema, prefix="rtv-variants-").engine
    write = WriteConfig.from_env()
    if args.turn_context is not None:
        write = replace(write, turn_context=args.turn_context)
    if args.run_weight is not None:
        write = replace(write, run_turn_context=args.run_weight)
    store = MemoryStore(engine, schema=SCHEMA, config=write)
    stored = with_full_names(dialogues) if args.full_names else dialogues
    if args.without_threads:  # the sessions kept for the questions' groups
        stored = [
            replace(d, turns=tuple(replace(t, thread=None, position=None) for t in d.turns))
            for d in stored
        ]
    with (
        context_just_before() if args.context_just_before else nullcontext(),
        context_other_run() if args.context_other_run else nullcontext(),
        question_share(args.question_share) if args.question_share is not None else nullcontext(),
    ):
        if args.own_previous is not None:
            store_with_own_previous(store, stored, args.own_previous)
        else:
            store_dialogues(store, stored)
    results: dict[str, Any] = {}
    print(TABLE_HEAD)
    for name, (change, patch) in VARIANTS.items():
        if args.only and name not in args.only:
            continue
        with patched(patch):
            results[name] = found = evaluate(
                store,
                dialogues,
                change,
                messages=args.as_messages,
                turn_budget=args.turn_budget,
                strict=args.strict_evidence,
            )
        print(table_row(name, found), flush=True)
    engine.dispose()
    write_result("conversation-variants", results, args)


TABLE_HEAD = (
    "| variant | R@5 | R@10 | " + " | ".join(CATEGORIES.values())
    + " | several R@10 | not adversarial |"
)  # fmt: skip


def table_row(name: str, found: Mapping[str, Any]) -> str:
    """A line of the printed table: ``found`` (one variant's recall by group) as R@5 / R@10."""
    by = " | ".join(
        f"{found[c]['recall@5']:.1f} / {found[c]['recall@10']:.1f}" for c in CATEGORIES.values()
    )
    answerable = found["not adversarial"]
    return (f"| {name} | {found['all']['recall@5']:.1f} | {found['all']['recall@10']:.1f} | "
            f"{by} | {found['several']['recall@10']:.1f} | {answerable['recall@5']:.1f}"
            f" / {answerable['recall@10']:.1f} |")  # fmt: skip


if __name__ == "__main__":
    main()
