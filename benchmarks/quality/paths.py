"""The paths matrix: every quality corpus through every documented way of storing, by half.

Each corpus is stored through each way of ``_paths.py`` that can carry it (a tenant per way and
corpus tenant, on one embedded server) and asked through the same surface, with the defaults
(or the configuration ``--set`` gives). Reported per corpus, way and half (``tuning``,
``validation``, ``all``):

* ``dialogues``: the development dialogues (``../shared/data/locomo-dev``), a turn a memory
  written ``NAME said, "text"``: evidence recall at 5 and 10 turns read (the first k distinct
  turns a caller reads);
* ``chat``: the same dialogues as a chat's messages (a sentence each, ``NAME: text``, as
  ``conversation_variants.py --as-messages`` writes them): recall at 5 and 10 distinct turns
  read, of 3k messages asked;
* ``updates``: the knowledge updates of ``knowledge_updates.py`` (every value a memory of its
  own): the right version first, now and in the past (past: the ways that keep times);
* ``keywords``: the agent history of ``keyword_matches.py`` (its decisions and tool calls
  stored as ``retrieval ingest`` stores them, its memories through the way): memory answers
  first and in the first 3, keyword-only rows above a memory answer;
* ``versions``: ``versions_for_a_question.py``'s pairs: the fact asked about first (distinct
  facts) and the newer first (updates);
* ``vague``: ``vague_questions.py``'s questions: the answer among the results;
* ``scifact``: BEIR SciFact test, each abstract a memory: nDCG@10 (the first 100 results).

The dialogues split by dialogue and by session (``_paths.halves_of_dialogues``), the other
corpora every other question (or fact, or pair). A ranking rule is tuned on ``tuning`` and kept
when it wins on ``validation`` (docs/development.md, "Changing the ranking").

With ``--ablations``, the defaults and then each ranking rule or setting undone (``ABLATIONS``:
a read-time change, or a write-time one for which the corpora are stored again), each on the
corpora it can move, every way; the table gives, per rule and corpus metric on the validation
half, the defaults' figure less the ablation's averaged over the ways, and the way where the
rule costs the most.

Usage: python benchmarks/quality/paths.py [--corpus NAME ...] [--way NAME ...]
       [--set FIELD=VALUE ...] [--write-set FIELD=VALUE ...] [--ablations [NAME ...]]
       [--json PATH] [--no-save]
       python benchmarks/quality/paths.py --compare BEFORE.json AFTER.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the shared modules
sys.path.insert(0, str(Path(__file__).resolve().parent))  # the other quality scripts' data
from _common import add_output, write_result
from _paths import (
    COMMON_WAYS,
    CONVERSATION_WAYS,
    MEMORY_BASE,
    TOLD_NOW,
    Dialogue,
    Memo,
    MemoEmbedder,
    Turn,
    Way,
    by_parity,
    first_refs,
    halves_of_dialogues,
    mean,
)

ROOT = Path(__file__).resolve().parents[2]
LOCOMO = ROOT.parent / "shared" / "data" / "locomo-dev"
SCIFACT = ROOT.parent / "shared" / "data" / "scifact"
SCHEMA = "paths"
CONVERSATIONS = ("dialogues", "chat")
CORPORA = ("dialogues", "chat", "updates", "keywords", "versions", "vague", "scifact")
HALVES = ("tuning", "validation")
# The labelled versions' parts written after their rule was tuned and its validation misses read
# (each after the misses of the one before were read).
HELD_OUT = (
    "held-out",
    "held-out-2",
    "held-out-3",
    "held-out-4",
    "held-out-5",
    "held-out-6",
    "held-out-7",
    "held-out-8",
    "held-out-9",
    "held-out-10",
    "held-out-11",
)


def ways_of(corpus: str, named: Sequence[str] | None = None) -> tuple[str, ...]:
    """The ways that can carry ``corpus`` (``named``: only those, and a conversation's
    ``thread, told now`` when it is named)."""
    if corpus in CONVERSATIONS:
        told_now = (TOLD_NOW,) if named and TOLD_NOW in named else ()
        ways = CONVERSATION_WAYS + COMMON_WAYS + told_now
    else:
        ways = (MEMORY_BASE, *COMMON_WAYS)
    return tuple(w for w in ways if named is None or w in named)


class Tally:
    """Values per half and metric, averaged."""

    def __init__(self) -> None:
        self.values: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))

    def add(self, half: str, metric: str, value: float) -> None:
        for name in (half, "all"):
            self.values[name][metric].append(value)

    def summary(self, scale: float = 100.0, digits: int = 1) -> dict[str, Any]:
        return {
            half: {m: round(scale * mean(v), digits) for m, v in sorted(metrics.items())}
            | {"n": max(len(v) for v in metrics.values())}
            for half, metrics in self.values.items()
        }


# -- the conversation corpora ---------------------------------------------------------------------


def conversations(chat: bool) -> tuple[list[Dialogue], list[tuple[str, Any, str]]]:
    """The development dialogues (as a chat's messages when ``chat``) and their questions,
    each with its tenant and half."""
    from conversation_eval import load
    from conversation_variants import as_messages

    loaded = load(LOCOMO)
    half = halves_of_dialogues(loaded)
    dialogues = []
    for d in loaded:
        source = as_messages(d) if chat else d
        turns = tuple(Turn(t.dia_id, t.text, t.created_at, t.thread, t.position)
                      for t in source.turns)  # fmt: skip
        dialogues.append(Dialogue(d.tenant, turns, d.as_of))
    questions = [(d.tenant, q, half(d.tenant, q)) for d in loaded for q in d.questions]
    return dialogues, questions


def run_conversation(way: Way, chat: bool) -> dict[str, Any]:
    """Recall at 5 and 10 turns read, per half."""
    dialogues, questions = conversations(chat)
    for dialogue in dialogues:
        way.store_dialogue(dialogue)
    as_of = {d.tenant: d.as_of for d in dialogues}
    tally = Tally()
    with way.asker() as ask:
        for tenant, question, half in questions:
            for k in (5, 10):
                found = ask(tenant, question.text, 3 * k if chat else k, as_of[tenant])
                read = set(first_refs(found, k))
                recall = len(read & set(question.evidence)) / len(question.evidence)
                tally.add(half, f"R@{k}", recall)
    return tally.summary()


# -- the memory corpora ---------------------------------------------------------------------------


def run_updates(way: Way) -> dict[str, Any]:
    """The right version first, now and in the past, per half of the facts."""
    from knowledge_updates import ASKED, CHANGED, FACTS, distractors

    memos = [Memo(f"d{n}", text, CHANGED[0] - timedelta(days=30), "updates")
             for n, text in enumerate(distractors())]  # fmt: skip
    for fact, (statement, _, values) in enumerate(FACTS):
        memos += [Memo(f"f{fact}v{n}", statement.format(v=value), when, "updates", f"fact-{fact}")
                  for n, (value, when) in enumerate(zip(values, CHANGED, strict=True))]  # fmt: skip
    if not way.timed:  # told in time order, now
        memos.sort(key=lambda m: m.created_at or CHANGED[0])
    way.store_memos(memos)
    tally = Tally()
    with way.asker() as ask:
        for fact, (_, question, _) in enumerate(FACTS):
            for as_of, expected in ASKED:
                if as_of is not None and not way.asks_as_of:
                    continue
                found = ask("updates", question, 10, as_of)
                right = bool(found) and found[0].ref == f"f{fact}v{expected}"
                tally.add(by_parity(fact), "now" if as_of is None else "past", float(right))
    return tally.summary(scale=1.0, digits=3)


def run_keywords(way: Way) -> dict[str, Any]:
    """Memory answers first and in the first 3, and keyword-only rows above a memory answer
    (episodic rows are the ways' own results only where the way returns them)."""
    from retrieval.memory.file_ingest import ingest
    from retrieval.memory.file_lines import read_file

    data = ROOT / "tests" / "data"
    lines = [json.loads(line) for line in (data / "keyword_matches.jsonl").read_text().splitlines()]
    fixture = json.loads((data / "keyword_matches_questions.json").read_text("utf-8"))
    as_of = datetime.fromisoformat(fixture["as_of"])
    memos = [
        Memo(line["text"], line["text"], datetime.fromisoformat(line["created_at"]), "agent")
        for line in lines
        if line["type"] == "memory"
    ]
    way.store_memos(memos)
    episodic = [line | {"tenant_id": way.tenant("agent")} for line in lines
                if line["type"] != "memory"]  # fmt: skip
    path = Path(f"/tmp/rtv-paths-episodic-{time.monotonic_ns()}.jsonl")
    path.write_text("".join(json.dumps(line) + "\n" for line in episodic))
    try:
        ingest(way.store, read_file(path, way.store))
    finally:
        path.unlink()
    tally = Tally()
    with way.asker() as ask:
        for n, question in enumerate(q for q in fixture["questions"] if q["source"] == "semantic"):
            found = ask("agent", question["query"], 10, as_of)
            refs = [f.ref for f in found]
            tally.add(by_parity(n), "at 1", float(refs[:1] == [question["answer"]]))
            tally.add(by_parity(n), "at 3", float(question["answer"] in refs[:3]))
    return tally.summary(scale=1.0, digits=3)


def run_versions(way: Way) -> dict[str, Any]:
    """The fact asked about first, the newer of an update, and one of the tenant's other
    memories asked about first, per half of the pairs; and the first two with every pair in one
    tenant, told one a day (``one tenant``)."""
    from versions_for_a_question import ASKED_AT, OTHER_QUESTIONS, OTHERS, load, one_tenant_order

    pairs = load()
    earlier = ASKED_AT - timedelta(days=30)
    memos: list[Memo] = []
    # Every pair in one tenant too, as one user's memory grows (one a day; keyed as below).
    updates = {pair.id for pair in pairs if pair.relation == "update"}
    memos += [
        Memo(f"{role}-{pair_id}", text, told_at, "pairs-one",
             f"pair-{pair_id}" if pair_id in updates else f"{role}-{pair_id}-{day}")
        for day, (pair_id, role, text, told_at) in enumerate(one_tenant_order(pairs))
    ]  # fmt: skip
    for pair in pairs:
        tenant = f"pair-{pair.id}"
        memos += [Memo(f"o{n}", text, earlier, tenant, f"other-{n}")
                  for n, text in enumerate(OTHERS)]  # fmt: skip
        # Keyed, an update shares its fact's key; two true facts have a key each.
        update = pair.relation == "update"
        keys = (f"pair-{pair.id}",) * 2 if update else (f"older-{pair.id}", f"newer-{pair.id}")
        memos += [
            Memo("older", pair.older, ASKED_AT - timedelta(days=2), tenant, keys[0]),
            Memo("newer", pair.newer, ASKED_AT - timedelta(days=1), tenant, keys[1]),
        ]
    way.store_memos(memos)
    tally = Tally()
    with way.asker() as ask:
        for pair in pairs:
            found = ask(f"pair-{pair.id}", pair.query, 10, ASKED_AT)
            first = next((f.ref for f in found if f.ref in ("older", "newer")), None)
            tally.add(pair.half, pair.relation, float(first == pair.first))
            # One of the team's other memories, in turn: asked about, it comes first.
            other = pair.id % len(OTHERS)
            found = ask(f"pair-{pair.id}", OTHER_QUESTIONS[other], 10, ASKED_AT)
            tally.add(pair.half, "others", float([f.ref for f in found[:1]] == [f"o{other}"]))
            # In the one tenant, the expected memory first among all the results.
            found = ask("pairs-one", pair.query, 10, ASKED_AT)
            expected = f"{pair.first}-{pair.id}"
            tally.add(pair.half, f"one tenant {pair.relation}",
                      float([f.ref for f in found[:1]] == [expected]))  # fmt: skip
    return tally.summary(scale=1.0, digits=3)


def run_vague(way: Way) -> dict[str, Any]:
    """The answer among the results, per half of the answerable questions."""
    from vague_questions import DATA

    data = json.loads(DATA.read_text("utf-8"))
    memos = [Memo(text, text, None, tenant) for tenant, texts in data["tenants"].items()
             for text in texts]  # fmt: skip
    way.store_memos(memos)
    tally = Tally()
    with way.asker() as ask:
        answerable = [q for q in data["questions"] if q["answer"] is not None]
        for n, question in enumerate(answerable):
            found = ask(question["tenant"], question["query"], 10)
            tally.add(by_parity(n), "found", float(question["answer"] in [f.ref for f in found]))
    return tally.summary(scale=1.0, digits=3)


def run_scifact(way: Way) -> dict[str, Any]:
    """nDCG@10 of the first 100 results, per half of the queries (sorted by id)."""
    from _scifact import abstract_text, evaluate

    as_of = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
    corpus = [json.loads(line) for line in (SCIFACT / "corpus.jsonl").open()]
    queries = {q["_id"]: q["text"] for q in map(json.loads, (SCIFACT / "queries.jsonl").open())}
    qrels: dict[str, dict[str, int]] = {}
    for line in (SCIFACT / "qrels" / "test.tsv").open():
        query_id, doc_id, score = line.rstrip("\n").split("\t")
        if query_id != "query-id" and int(score) > 0:
            qrels.setdefault(query_id, {})[doc_id] = int(score)
    way.store_memos([Memo(doc["_id"], abstract_text(doc), as_of, "scifact") for doc in corpus])
    runs: dict[str, dict[str, list[tuple[str, float]]]] = {half: {} for half in HALVES}
    with way.asker() as ask:
        for n, query_id in enumerate(sorted(qrels)):
            found = ask("scifact", queries[query_id], 100, as_of)
            ranked = [(f.ref or "", 1.0 / (rank + 1)) for rank, f in enumerate(found)]
            runs[by_parity(n)][query_id] = ranked
    summary: dict[str, Any] = {}
    for half, run in runs.items():
        summary[half] = {"nDCG@10": round(evaluate(run, {q: qrels[q] for q in run})["ndcg@10"], 4),
                         "n": len(run)}  # fmt: skip
    both = {**runs["tuning"], **runs["validation"]}
    summary["all"] = {"nDCG@10": round(evaluate(both, qrels)["ndcg@10"], 4), "n": len(both)}
    return summary


RUNNERS: dict[str, Callable[[Way], dict[str, Any]]] = {
    "dialogues": lambda way: run_conversation(way, chat=False),
    "chat": lambda way: run_conversation(way, chat=True),
    "updates": run_updates,
    "keywords": run_keywords,
    "versions": run_versions,
    "vague": run_vague,
    "scifact": run_scifact,
}


# -- running and reporting ------------------------------------------------------------------------


def run_matrix(
    store: Any,
    config: Any,
    corpora: Sequence[str],
    ways: Sequence[str] | None,
    progress: Callable[[str], None] = print,
) -> dict[str, dict[str, Any]]:
    """Each corpus through each way that carries it (``ways``: only those), with ``config``."""
    matrix: dict[str, dict[str, Any]] = {}
    for corpus in corpora:
        matrix[corpus] = {}
        for name in ways_of(corpus, ways):
            began = time.perf_counter()
            way = Way(name, store, config)
            try:
                found = RUNNERS[corpus](way)
            finally:
                way.close()
            found["seconds"] = round(time.perf_counter() - began, 1)
            matrix[corpus][name] = found
            progress(f"{corpus} / {name}: {json.dumps(found.get('validation'))} "
                     f"({found['seconds']} s)")  # fmt: skip
    return matrix


def table(matrix: Mapping[str, Mapping[str, Any]], half: str = "validation") -> str:
    """The matrix as Markdown: a row per corpus and metric, a column per way."""
    ways: list[str] = []
    for by_way in matrix.values():
        ways += [w for w in by_way if w not in ways]
    lines = [f"| corpus ({half}) | " + " | ".join(ways) + " |", "|---|" + "---|" * len(ways)]
    for corpus, by_way in matrix.items():
        metrics = sorted({m for r in by_way.values() for m in r.get(half, {}) if m != "n"})
        for metric in metrics:
            cells = [
                str(by_way[w][half].get(metric, "")) if w in by_way and half in by_way[w] else "-"
                for w in ways
            ]
            lines.append(f"| {corpus} {metric} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def compared(before: Mapping[str, Any], after: Mapping[str, Any], half: str) -> str:
    """Two matrices as one Markdown table, each cell ``before → after``."""
    ways: list[str] = []
    for by_way in after.values():
        ways += [w for w in by_way if w not in ways]
    lines = [f"| corpus ({half}) | " + " | ".join(ways) + " |", "|---|" + "---|" * len(ways)]
    for corpus, by_way in after.items():
        metrics = sorted({m for r in by_way.values() for m in r.get(half, {}) if m != "n"})
        for metric in metrics:
            cells = []
            for way in ways:
                now = by_way.get(way, {}).get(half, {}).get(metric)
                then = before.get(corpus, {}).get(way, {}).get(half, {}).get(metric)
                cells.append("-" if now is None else f"{then} → {now}" if then != now else f"{now}")
            lines.append(f"| {corpus} {metric} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _halves(matrix: Mapping[str, Mapping[str, Any]], halves: Sequence[str]) -> list[str]:
    # The halves some corpus of ``matrix`` reports (only the labelled versions hold a part
    # held out of tuning and validation both).
    found = {h for by_way in matrix.values() for result in by_way.values() for h in result}
    return [h for h in halves if h in found]


def parse_setting(text: str) -> tuple[str, Any]:
    """``FIELD=VALUE`` as a config field and its JSON value (a bare word: a string)."""
    name, _, value = text.partition("=")
    try:
        return name, json.loads(value)
    except json.JSONDecodeError:
        return name, value


def open_store(
    data_dir: Path | None,
    write: Mapping[str, Any] | None = None,
    embedder: MemoEmbedder | None = None,
    engine: Any = None,
) -> Any:
    """A store on the embedded server (``data_dir``, else a throw-away one; ``engine``: the
    server of another store), schema :data:`SCHEMA`, its ``WriteConfig`` changed by ``write``,
    its embedder shared by every way (and every store made with the same ``embedder``)."""
    from _server import embedded

    from retrieval.db.migrate import MigrationSettings
    from retrieval.memory.config import WriteConfig
    from retrieval.memory.store import MemoryStore

    config = replace(WriteConfig(), **(write or {}))
    if engine is None:
        engine = embedded(data_dir, MigrationSettings(schema=SCHEMA, embedding_dim=384),
                          prefix="rtv-paths-").engine  # fmt: skip
    return MemoryStore(
        engine,
        schema=SCHEMA,
        config=config,
        embedder=embedder or MemoEmbedder(config.embedder()),
    )


# Each ranking rule and setting undone (a RetrievalConfig change, or with "write:" a WriteConfig
# change: the corpora stored again), and the corpora whose figures it can move.
CONVERSATION_RULES = ("dialogues", "chat")
ABLATIONS: dict[str, tuple[dict[str, Any], tuple[str, ...]]] = {
    "no thread lift (context_lift 0)": ({"context_lift": 0.0}, CONVERSATION_RULES),
    "context_window 1": ({"context_window": 1}, CONVERSATION_RULES),
    "questions do not yield (question_discount 0)": (
        {"question_discount": 0.0},
        CONVERSATION_RULES,
    ),
    "no query time (time_weight 0)": ({"time_weight": 0.0}, CONVERSATION_RULES),
    "time_half_life_days 30": ({"time_half_life_days": 30.0}, CONVERSATION_RULES),
    "no sessions by time (session_gap_minutes 0)": (
        {"session_gap_minutes": 0.0, "write:session_gap_minutes": 0.0},
        CONVERSATION_RULES,
    ),
    "no turn context (write: turn_context 0, run_turn_context 0)": (
        {"write:turn_context": 0.0, "write:run_turn_context": 0.0},
        CONVERSATION_RULES,
    ),
    "a run's messages as any turn (write: run_turn_context 0.3)": (
        {"write:run_turn_context": 0.3},
        CONVERSATION_RULES,
    ),
    "no newer versions first": (
        {"newer_versions_first": False},
        ("dialogues", "chat", "updates", "versions"),
    ),
    "no memory BM25 (memory_bm25 false)": (
        {"memory_bm25": False},
        ("dialogues", "chat", "updates", "keywords", "versions", "vague", "scifact"),
    ),
    "no weak matches (fallback_results 0)": ({"fallback_results": 0}, ("vague", "scifact")),
    "any keyword carries a decision (episodic_min_keyword_share 0)": (
        {"episodic_min_keyword_share": 0.0},
        ("keywords",),
    ),
    "no memory recency (semantic recency 0)": (
        {"semantic": {"relevance": 1.0, "recency": 0.0}},
        ("dialogues", "chat", "updates", "versions", "scifact"),
    ),
    "no evidence gate (max_distance none)": (
        {"max_distance": None},
        ("dialogues", "chat", "vague", "scifact"),
    ),
    "less turn context (write: turn_context 0.15, run_turn_context 0.25)": (
        {"write:turn_context": 0.15, "write:run_turn_context": 0.25},
        CONVERSATION_RULES,
    ),
    "more turn context (write: turn_context 0.45, run_turn_context 0.65)": (
        {"write:turn_context": 0.45, "write:run_turn_context": 0.65},
        CONVERSATION_RULES,
    ),
    "versions only when an update says so (version_similarity 1)": (
        {"version_similarity": 1.0, "version_shared_words": 1.0},
        ("updates", "versions", "scifact"),
    ),
}


def run_ablations(
    embedder: MemoEmbedder,
    names: Sequence[str] | None,
    ways: Sequence[str] | None,
    only: Sequence[str] | None = None,
    tries: Mapping[str, tuple[dict[str, Any], tuple[str, ...]]] | None = None,
) -> dict[str, Any]:
    """The defaults on every corpus an ablation can move (``only``: of those), then each
    ablation of :data:`ABLATIONS` (``names``: only those, with ``tries`` besides) on its
    corpora."""
    from retrieval.search.config import RetrievalConfig

    chosen = {n: a for n, a in ABLATIONS.items() if names is None or n in names}
    chosen |= dict(tries or {})
    if only is not None:
        chosen = {n: (a[0], tuple(c for c in a[1] if c in only)) for n, a in chosen.items()}
    corpora = [c for c in CORPORA if any(c in a[1] for a in chosen.values())]
    defaults = RetrievalConfig(record_access=False)
    first = open_store(None, embedder=embedder)
    results: dict[str, Any] = {"defaults": run_matrix(first, defaults, corpora, ways)}
    for name, (changes, moved) in chosen.items():
        read = {k: v for k, v in changes.items() if not k.startswith("write:")}
        write = {k.removeprefix("write:"): v for k, v in changes.items() if k.startswith("write:")}
        store = open_store(None, write, embedder, engine=first.engine)
        print(f"\n== {name}", flush=True)
        sources = {
            k: replace(defaults.source(k), **v) for k, v in read.items() if isinstance(v, dict)
        }
        results[name] = run_matrix(store, replace(defaults, **(read | sources)), moved, ways)
    return results


def ablation_table(results: Mapping[str, Any], half: str = "validation") -> str:
    """Per ablation and corpus metric: the defaults' figure less the ablation's, averaged over
    the ways, and the way where the rule costs the most (a negative difference)."""
    defaults = results["defaults"]
    lines = ["| ablation | corpus metric | defaults - ablation, mean of the ways | "
             "the way the rule costs most |", "|---|---|---|---|"]  # fmt: skip
    for name, matrix in results.items():
        if name == "defaults":
            continue
        for corpus, by_way in matrix.items():
            metrics = sorted({m for r in by_way.values() for m in r.get(half, {}) if m != "n"})
            for metric in metrics:
                gains = {
                    way: defaults[corpus][way][half][metric] - found[half][metric]
                    for way, found in by_way.items()
                    if metric in found.get(half, {})
                    and metric in defaults[corpus].get(way, {}).get(half, {})
                }
                if not gains:
                    continue
                worst = min(gains, key=lambda way: gains[way])
                lines.append(
                    f"| {name} | {corpus} {metric} | {mean(list(gains.values())):+.2f} | "
                    f"{worst} {gains[worst]:+.2f} |"
                )
    return "\n".join(lines)


def _matrix_of(record: Mapping[str, Any]) -> Mapping[str, Any]:
    # The matrix of a result file: a run's, or an ablation run's defaults.
    results = record["results"]
    return results["matrix"] if "matrix" in results else results["defaults"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", nargs="*", choices=CORPORA, help="only these corpora")
    parser.add_argument(
        "--way", nargs="*",
        help="only these ways of storing ('thread, told now', a conversation's turns stored "
        "without their times, runs only when named)",
    )  # fmt: skip
    parser.add_argument(
        "--set", action="append", default=[], metavar="FIELD=VALUE",
        help="a RetrievalConfig field of the measured configuration (repeatable)",
    )  # fmt: skip
    parser.add_argument(
        "--write-set", action="append", default=[], metavar="FIELD=VALUE",
        help="a WriteConfig field of the stores (repeatable): the corpora are stored so",
    )  # fmt: skip
    parser.add_argument(
        "--ablations", nargs="*",
        help="the defaults, then each ranking rule undone (all, or those named), each on the "
        "corpora it can move (result variant ablations)",
    )  # fmt: skip
    parser.add_argument(
        "--try", dest="tries", nargs="*", metavar="FIELD=VALUE[;FIELD=VALUE]",
        help="settings to try (beside --ablations if given), each a variant of the defaults "
        "('write:' before a WriteConfig field) on the corpora of --corpus",
    )  # fmt: skip
    parser.add_argument(
        "--compare", nargs=2, metavar=("BEFORE", "AFTER"),
        help="print two result files' matrices as one table (before -> after) and stop",
    )  # fmt: skip
    parser.add_argument("--data-dir", type=Path, help="keep the embedded server's data here")
    add_output(parser)
    args = parser.parse_args()

    if args.compare:
        before, after = (_matrix_of(json.loads(Path(f).read_text())) for f in args.compare)
        for half in _halves(after, ("validation", "tuning", *HELD_OUT, "all")):
            print(f"\n{compared(before, after, half)}")
        return

    from retrieval.memory.config import WriteConfig
    from retrieval.search.config import RetrievalConfig

    write = dict(parse_setting(text) for text in args.write_set)
    if args.ablations is not None or args.tries:
        model = write.get("embedding_model")
        embedder = MemoEmbedder(replace(WriteConfig(), embedding_model=model).embedder())
        tries = {
            spec: (
                dict(parse_setting(part) for part in spec.split(";")),
                tuple(args.corpus or CORPORA),
            )
            for spec in args.tries or ()
        }
        names = None if args.ablations == [] else (args.ablations or [])
        found = run_ablations(embedder, names, args.way, args.corpus, tries)
        named = "ablations" if model is None else f"ablations-{model}"
        write_result("paths", found, args, variant=named)
        print("\n" + ablation_table(found))
        return
    store = open_store(args.data_dir, write)
    changes = dict(parse_setting(text) for text in args.set)
    config = replace(RetrievalConfig(record_access=False), **changes)
    matrix = run_matrix(store, config, args.corpus or CORPORA, args.way)
    variant = "-".join(f"{k}-{v}" for k, v in (changes | write).items()) or None
    record = {"changes": changes, "write_changes": write, "matrix": matrix}
    write_result("paths", record, args, variant=variant)
    for half in _halves(matrix, ("validation", "tuning", *HELD_OUT)):
        print(f"\n{table(matrix, half)}")


if __name__ == "__main__":
    main()
