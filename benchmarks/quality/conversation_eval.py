"""Evidence recall on long multi-session conversations (the LoCoMo layout), through the public API.

Each dialogue of DATA (``locomo-dev.json``: see ``../shared/data/locomo-dev/README.md``) is
stored as one tenant: every turn is a memory ``f'{speaker} said, "{text}"'`` (plus
``f' and shared {blip_caption}'`` when the turn shared an image), created at its session's
date, with its session as its thread and its place in the session as its position. Each
question is then asked "as of" the day after the dialogue's last session, and a question's
evidence recall@k is the share of its evidence turns among the first k results, averaged over
the questions with at least one evidence id that is a turn.

Configurations:

* ``defaults``: ``retrieve()`` as shipped, with only the number of results set per call
  (``limit=k``), for k = 5 and 10; for k = 25 and 50 "the limits opened" (the same call);
  recall@10 per question category too;
* ``defaults + neighbors N``: the same, each hit followed by the turns ``neighbors=N`` returns
  around it (the context a caller receives), counted at an equal budget: the first k distinct
  turns read, never more;
* with ``--ablations``: the defaults with one choice undone at a time (the thread's lift, the
  query's time, the turn context at write time, their parameters), each dialogue stored again
  where the write-time setting differs; the median ``retrieve()`` time at k = 10 of each;
* with ``--against REV``: the best configuration of revision REV (its memories' BM25 channel
  fused by ``convex``, relevance alone: recency weight 0, no threshold, no cut-off), run from
  a temporary ``git worktree`` of REV in its own process, on the same server, in the same run;
* with ``--copies N``: the defaults only, every dialogue stored N times over (a caller that
  writes a conversation again), in ``conversation-copies-N.json``; another revision's defaults
  by running this script with ``PYTHONPATH=`` its worktree and ``--migrations`` its folder;
* with ``--without-threads``: the turns stored without ``thread_id`` and ``position`` (each a
  message at its session's time, in order), the defaults against ``session_gap_minutes`` 0
  (no session inferred from time: each stored again), in
  ``conversation-without-threads.json``;
* with ``--backend NAME``: the defaults only, the dialogues and questions embedded by that
  backend of the model (``onnx-int8``: the model quantized to int8), in
  ``conversation-backend-NAME.json``;
* with ``--lift-cost``: what the thread lift costs a call, the dialogues stored with the
  defaults: every question at k = 10 with the defaults and with ``context_lift`` 0, the two
  alternating, ``--passes`` times (a question's time is its median), the statements each call
  sent, and a digest of the defaults' results (ids, final scores and what lifted them: equal
  digests from two revisions' runs say their results are identical), in
  ``conversation-lift-cost.json``; another revision's by ``PYTHONPATH`` and ``--migrations``
  as for ``--copies``.

Every configuration of this checkout also reports session-level recall, as published systems
report LoCoMo: the distinct sessions of the turns read, in the order read (from the call at
k = 50): ``session_hit@1`` (the first session read holds evidence), ``session_recall@3`` and
``@5`` (the share of the question's evidence sessions among the first 3 and 5); and recall
at each k of the questions whose evidence lies in several sessions.

Usage: python benchmarks/quality/conversation_eval.py DATA [--json PATH] [--against REV]
       [--neighbors 1] [--ablations] [--data-dir DIR] [--copies N [--migrations DIR]]
       [--without-threads] [--backend onnx|onnx-int8|torch] [--lift-cost [--passes 5]]
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import json
import re
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the shared _common, _scifact
from _common import add_output, write_result
from _revision import migrations_of, use_migrations, worker_result, worktree

ROOT = Path(__file__).resolve().parents[2]
KS = (5, 10, 25, 50)
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
SCHEMA = "conversation"
BASELINE_SCHEMA = "conversation_baseline"


@dataclass(frozen=True)
class Turn:
    dia_id: str
    text: str
    created_at: datetime
    thread: str
    position: int


@dataclass(frozen=True)
class Question:
    text: str
    evidence: tuple[str, ...]
    category: int


@dataclass(frozen=True)
class Dialogue:
    tenant: str
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]
    as_of: datetime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", type=Path, help="locomo-dev.json, or the folder holding it")
    add_output(parser)
    parser.add_argument("--against", help="a git revision whose best configuration to run too")
    parser.add_argument("--neighbors", type=int, default=1, help="turns around each hit")
    parser.add_argument("--data-dir", type=Path, help="keep the embedded server's data here")
    parser.add_argument(
        "--ablations", action="store_true", help="the defaults with one choice undone at a time"
    )
    parser.add_argument(
        "--copies",
        type=int,
        help="the defaults only, every dialogue stored this many times over (copies of each turn)",
    )
    parser.add_argument(
        "--migrations",
        type=Path,
        help="the migrations folder of the package on PYTHONPATH (to run another revision's "
        "defaults: PYTHONPATH=its worktree)",
    )
    parser.add_argument(
        "--without-threads",
        action="store_true",
        help="store the turns without thread and position: the defaults against no session "
        "inferred from time",
    )
    parser.add_argument(
        "--backend",
        choices=("onnx", "onnx-int8", "torch"),
        help="the defaults only, the dialogues embedded by this backend of the model (result "
        "variant backend-NAME)",
    )
    parser.add_argument(
        "--lift-cost",
        action="store_true",
        help="the defaults against context_lift 0, paired per question, with a digest of the "
        "defaults' results (result variant lift-cost)",
    )
    parser.add_argument("--passes", type=int, default=5, help="passes of --lift-cost")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    dialogues = load(args.data)
    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="rtv-conv-")) / "pg"

    if args.worker:  # run by --against, importing the other revision's package
        use_migrations(args.migrations)
        print(json.dumps(run_baseline(dialogues, data_dir)))
        return

    use_migrations(args.migrations)
    from retrieval.db.embedded import start_embedded

    server = start_embedded(data_dir, delete_on_exit=args.data_dir is None)
    if args.without_threads:  # turns without thread and position
        results = run_without_threads(dialogues, server.url())
        write_result("conversation", results, args, variant="without-threads")
        print_table({"ablations": results})
        return
    if args.copies is not None:  # the defaults only, on dialogues stored that many times over
        results = {"copies": args.copies} | run_current(
            dialogues, server.url(), 0, copies=args.copies
        )
        write_result("conversation", results, args, variant=f"copies-{args.copies}")
        return
    if args.lift_cost:  # the lift's cost per call, and the defaults' results digested
        results = run_lift_cost(dialogues, server.url(), args.passes)
        write_result("conversation", results, args, variant="lift-cost")
        return
    if args.backend is not None:  # the defaults only, embedded by another backend
        results = {"backend": args.backend} | run_current(
            dialogues, server.url(), 0, backend=args.backend
        )
        write_result("conversation", results, args, variant=f"backend-{args.backend}")
        return
    results: dict[str, Any] = {
        "data": str(args.data),
        "dialogues": len(dialogues),
        "turns": sum(len(d.turns) for d in dialogues),
        "questions": sum(len(d.questions) for d in dialogues),
    }
    results |= run_current(dialogues, server.url(), args.neighbors)
    results["plain_rrf"] = run_rrf(dialogues)
    if args.ablations:
        results["ablations"] = run_ablations(dialogues, server.url())
    if args.against:
        results["baseline"] = {"revision": args.against} | against(args, data_dir)
    write_result("conversation", results, args)
    print_table(results)


def load(path: Path) -> list[Dialogue]:
    """The dialogues of a LoCoMo-layout file (or of the ``locomo-dev.json`` in a folder)."""
    if path.is_dir():
        path = path / "locomo-dev.json"
    dialogues = []
    for sample in json.loads(path.read_text()):
        conversation = sample["conversation"]
        sessions = sorted(
            (int(key.split("_")[1]), key)
            for key in conversation
            if re.fullmatch(r"session_\d+", key)
        )
        turns = []
        for number, key in sessions:
            when = session_date(conversation[f"{key}_date_time"])
            for position, turn in enumerate(conversation[key]):
                text = f'{turn["speaker"]} said, "{turn["text"]}"'
                if turn.get("blip_caption"):
                    text += f" and shared {turn['blip_caption']}"
                turns.append(Turn(turn["dia_id"], text, when, f"session_{number}", position))
        known = {turn.dia_id for turn in turns}
        questions = []
        for qa in sample["qa"]:
            evidence = tuple(
                dict.fromkeys(
                    part for entry in qa["evidence"] for part in re.split(r"[;\s]+", entry) if part
                )
            )
            evidence = tuple(e for e in evidence if e in known)
            if evidence:
                questions.append(Question(qa["question"], evidence, int(qa["category"])))
        last = max(turn.created_at for turn in turns)
        as_of = (last + timedelta(days=1)).replace(hour=0, minute=0)
        dialogues.append(Dialogue(sample["sample_id"], tuple(turns), tuple(questions), as_of))
    return dialogues


def session_date(text: str) -> datetime:
    """``"1:56 pm on 8 May, 2023"`` as an aware datetime (UTC)."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


# -- this checkout -----------------------------------------------------------------------


def run_current(
    dialogues: Sequence[Dialogue],
    url: str,
    neighbors: int,
    copies: int = 1,
    backend: str = "onnx",
) -> dict[str, Any]:
    """Store the dialogues (``copies`` times over, embedded by ``backend``) and ask every
    question with the defaults (and neighbours)."""
    from _server import reached

    from retrieval.db.migrate import MigrationSettings
    from retrieval.search.config import RetrievalConfig
    from retrieval.search.retriever import HybridRetriever

    engine = reached(url, MigrationSettings(schema=SCHEMA, embedding_dim=384)).engine
    store = _store(engine, SCHEMA, bm25=False, backend=backend)
    started = time.perf_counter()
    store_dialogues(store, dialogues, copies=copies)
    stored_seconds = time.perf_counter() - started
    config = RetrievalConfig(record_access=False)
    results: dict[str, Any] = {"store_seconds": round(stored_seconds, 2)}
    with HybridRetriever.from_store(store, config=config) as retriever:
        results["defaults"] = evaluate(retriever, dialogues, neighbors=0)
        if neighbors:
            results[f"defaults_neighbors_{neighbors}"] = evaluate(
                retriever, dialogues, neighbors=neighbors
            )
    return results


def run_lift_cost(dialogues: Sequence[Dialogue], url: str, passes: int) -> dict[str, Any]:
    """Every question at k = 10 with the defaults and with ``context_lift`` 0 alternately,
    ``passes`` times, on tables analyzed after the load; each question's median time, then
    the median over questions; the statements per call; a digest of the defaults' results."""
    import hashlib
    import statistics

    from _server import reached

    from retrieval.db.migrate import MigrationSettings
    from retrieval.search.config import RetrievalConfig
    from retrieval.search.retriever import HybridRetriever

    engine = reached(url, MigrationSettings(schema=SCHEMA, embedding_dim=384)).engine
    store = _store(engine, SCHEMA, bm25=False)
    store_dialogues(store, dialogues)
    # The statistics autovacuum leaves: a steady state. Not retrieval.db.planner_statistics:
    # the package on PYTHONPATH may be an earlier revision's, which has none.
    with engine.begin() as connection:
        for table in ("memories", "decisions", "tool_calls"):
            connection.exec_driver_sql(f"ANALYZE {SCHEMA}.{table}")
    defaults = RetrievalConfig(record_access=False)
    configs = {"defaults": defaults, "context_lift 0": replace(defaults, context_lift=0.0)}
    asked = [(d, q) for d in dialogues for q in d.questions]
    times: dict[str, list[list[float]]] = {name: [[] for _ in asked] for name in configs}
    statements: dict[str, list[int]] = {name: [] for name in configs}
    digest = hashlib.sha256()
    with HybridRetriever.from_store(store, config=defaults) as retriever:
        for dialogue, question in asked:  # warm: the query vectors, the tenants' shapes
            for config in configs.values():
                retriever.retrieve(question.text, tenant_id=dialogue.tenant,
                                   as_of=dialogue.as_of, limit=10, config=config)  # fmt: skip
        for number in range(passes):
            for index, (dialogue, question) in enumerate(asked):
                names = list(configs) if (index + number) % 2 == 0 else list(configs)[::-1]
                for name in names:
                    began = time.perf_counter()
                    response = retriever.retrieve(
                        question.text, tenant_id=dialogue.tenant, as_of=dialogue.as_of,
                        limit=10, config=configs[name],
                    )  # fmt: skip
                    times[name][index].append((time.perf_counter() - began) * 1000)
                    if number == 0:
                        statements[name].append(response.diagnostics.statements)
                        if name == "defaults":
                            for result in response.results:
                                lifted = result.metadata.get("lifted_by")
                                digest.update(
                                    f"{result.source}:{result.metadata['id']}:"
                                    f"{result.final_score:.12f}:{json.dumps(lifted)};".encode()
                                )
    medians = {
        name: statistics.median(statistics.median(per) for per in found)
        for name, found in times.items()
    }
    return {
        "questions": len(asked),
        "passes": passes,
        "median_ms_at_10": medians,
        "defaults_over_no_lift": medians["defaults"] / medians["context_lift 0"],
        "paired_ratio_median": statistics.median(
            statistics.median(d) / statistics.median(o)
            for d, o in zip(times["defaults"], times["context_lift 0"], strict=True)
        ),
        "statements_per_call": {
            name: {str(n): sent.count(n) for n in sorted(set(sent))}
            for name, sent in statements.items()
        },
        "defaults_results_digest": digest.hexdigest(),
    }


# Read-time choices undone one at a time (RetrievalConfig fields), and write-time ones (the
# WriteConfig's turn context, each stored again in a schema of its own).
READ_ABLATIONS: dict[str, dict[str, Any]] = {
    "no thread lift (context_lift 0)": {"context_lift": 0.0},
    "no query time (time_weight 0)": {"time_weight": 0.0},
    "neither lift nor time": {"context_lift": 0.0, "time_weight": 0.0},
    "context_window 1": {"context_window": 1},
    "context_lift 0.75": {"context_lift": 0.75},
    "context_lift 0.9": {"context_lift": 0.9},
    "time_weight 0.3": {"time_weight": 0.3},
    "time_half_life_days 30": {"time_half_life_days": 30.0},
    "questions do not yield (question_discount 0)": {"question_discount": 0.0},
}
TURN_CONTEXT_ABLATIONS = (0.0, 0.5)


def run_ablations(dialogues: Sequence[Dialogue], url: str) -> dict[str, Any]:
    """The defaults, then each of :data:`READ_ABLATIONS` and :data:`TURN_CONTEXT_ABLATIONS`."""
    from retrieval.db.engine import make_engine
    from retrieval.db.migrate import MigrationSettings, upgrade
    from retrieval.memory.config import WriteConfig
    from retrieval.memory.store import MemoryStore
    from retrieval.search.config import RetrievalConfig
    from retrieval.search.retriever import HybridRetriever

    engine = make_engine(url)
    defaults = RetrievalConfig(record_access=False)
    results: dict[str, Any] = {}
    store = MemoryStore(engine, schema=SCHEMA)
    for name, change in {"defaults": {}, **READ_ABLATIONS}.items():
        with HybridRetriever.from_store(store, config=replace(defaults, **change)) as retriever:
            results[name] = evaluate(retriever, dialogues, neighbors=0)
        print(f"{name}: {results[name]['recall@5']} / {results[name]['recall@10']}", flush=True)
    for weight in TURN_CONTEXT_ABLATIONS:
        schema = f"conversation_turn_context_{int(weight * 100)}"
        upgrade(engine, MigrationSettings(schema=schema, embedding_dim=384))
        other = MemoryStore(engine, schema=schema, config=WriteConfig(turn_context=weight))
        store_dialogues(other, dialogues)
        name = f"turn_context {weight}"
        with HybridRetriever.from_store(other, config=defaults) as retriever:
            results[name] = evaluate(retriever, dialogues, neighbors=0)
        print(f"{name}: {results[name]['recall@5']} / {results[name]['recall@10']}", flush=True)
    engine.dispose()
    return results


def run_without_threads(dialogues: Sequence[Dialogue], url: str) -> dict[str, Any]:
    """The turns stored without thread and position: the defaults (sessions inferred from
    the time between messages), then with ``session_gap_minutes`` 0 at write and read."""
    from retrieval.db.engine import make_engine
    from retrieval.db.migrate import MigrationSettings, upgrade
    from retrieval.memory.config import WriteConfig
    from retrieval.memory.store import MemoryStore
    from retrieval.search.config import RetrievalConfig
    from retrieval.search.retriever import HybridRetriever

    engine = make_engine(url)
    untold = [
        replace(d, turns=tuple(replace(t, thread=None, position=None) for t in d.turns))
        for d in dialogues
    ]
    results: dict[str, Any] = {}
    for name, gap in (("defaults", None), ("session_gap_minutes 0", 0.0)):
        schema = "conversation_without_threads" + ("" if gap is None else "_gap_0")
        upgrade(engine, MigrationSettings(schema=schema, embedding_dim=384))
        write = WriteConfig() if gap is None else WriteConfig(session_gap_minutes=gap)
        store = MemoryStore(engine, schema=schema, config=write)
        store_dialogues(store, untold)
        read = RetrievalConfig(record_access=False)
        if gap is not None:
            read = replace(read, session_gap_minutes=gap)
        with HybridRetriever.from_store(store, config=read) as retriever:
            results[name] = evaluate(retriever, dialogues, neighbors=0)
        print(f"{name}: {results[name]['recall@5']} / {results[name]['recall@10']}", flush=True)
    engine.dispose()
    return results


def evaluate(retriever: Any, dialogues: Sequence[Dialogue], *, neighbors: int) -> dict[str, Any]:
    """Recall@k (k in :data:`KS`) of ``retrieve(..., limit=k)``, and @10 per category."""
    recalls: dict[int, list[float]] = {k: [] for k in KS}
    by_category: dict[str, list[float]] = defaultdict(list)
    by_category_at_5: dict[str, list[float]] = defaultdict(list)
    returned: list[int] = []
    times: list[float] = []
    sessions: dict[str, list[float]] = defaultdict(list)
    spread: dict[int, list[float]] = {k: [] for k in KS}  # evidence in several sessions
    for dialogue in dialogues:
        session_of = {turn.dia_id: turn.thread for turn in dialogue.turns}
        for question in dialogue.questions:
            several = len({session_of[turn] for turn in question.evidence}) > 1
            for k in KS:
                began = time.perf_counter()
                response = retriever.retrieve(
                    question.text,
                    tenant_id=dialogue.tenant,
                    as_of=dialogue.as_of,
                    limit=k,
                    neighbors=neighbors,
                )
                # At an equal budget: the first k distinct turns a caller reads (each hit, then
                # the turns around it), never more.
                found = set(
                    first_turns(_turn_ids(response.results, with_neighbors=neighbors > 0), k)
                )
                recall = len(found & set(question.evidence)) / len(question.evidence)
                recalls[k].append(recall)
                if several:
                    spread[k].append(recall)
                if k == 5:
                    by_category_at_5[CATEGORIES[question.category]].append(recall)
                if k == 10:
                    times.append((time.perf_counter() - began) * 1000)
                    by_category[CATEGORIES[question.category]].append(recall)
                if k == max(KS):
                    returned.append(len(response.results))
                    read = first_turns(_turn_ids(response.results, with_neighbors=neighbors > 0), k)
                    for name, value in session_recall(read, question.evidence, session_of).items():
                        sessions[name].append(value)
    return _summary(recalls, by_category, by_category_at_5) | {
        **{name: round(100 * sum(v) / len(v), 1) for name, v in sessions.items()},
        "evidence_in_several_sessions": {
            "questions": len(spread[5]),
            **{f"recall@{k}": round(100 * sum(v) / max(1, len(v)), 1) for k, v in spread.items()},
        },
        "mean_results_at_50": round(sum(returned) / len(returned), 2),
        "median_ms_at_10": round(sorted(times)[len(times) // 2], 2),
    }


def session_recall(
    read: Sequence[str], evidence: Sequence[str], session_of: Mapping[str, str]
) -> dict[str, float]:
    """Session-level recall of the turns ``read`` (in order): whether the first distinct
    session read holds evidence, and the share of the evidence's sessions among the first 3
    and 5 distinct sessions read."""
    order = list(dict.fromkeys(session_of[turn] for turn in read))
    wanted = {session_of[turn] for turn in evidence}
    return {
        "session_hit@1": float(bool(order[:1]) and order[0] in wanted),
        "session_recall@3": len(set(order[:3]) & wanted) / len(wanted),
        "session_recall@5": len(set(order[:5]) & wanted) / len(wanted),
    }


def first_turns(turns: Iterable[str], budget: int) -> list[str]:
    """The first ``budget`` distinct turns of ``turns``, in the order they are read."""
    read: dict[str, None] = {}
    for turn in turns:
        read.setdefault(turn, None)
        if len(read) == budget:
            break
    return list(read)


def _turn_ids(results: Sequence[Any], *, with_neighbors: bool) -> Iterator[str]:
    for result in results:
        if result.source != "semantic":
            continue
        yield result.metadata["metadata"]["dia_id"]
        if with_neighbors:
            for neighbor in result.metadata.get("neighbors", ()):
                yield neighbor["metadata"]["dia_id"]


# -- the plain baseline --------------------------------------------------------------------


def run_rrf(dialogues: Sequence[Dialogue]) -> dict[str, Any]:
    """Plain reciprocal rank fusion (k = 60) of all-MiniLM-L6-v2 (cosine) and BM25 (Okapi,
    k1 1.5, b 0.75, lower-cased ``\\w+`` tokens) over each dialogue's turns, in numpy: the
    baseline of ``../shared/data/locomo-dev/README.md``, per category in the same run."""
    import numpy as np

    from retrieval.embedding.models import SentenceTransformerEmbedder

    embedder = SentenceTransformerEmbedder()
    recalls: dict[int, list[float]] = {k: [] for k in KS}
    by_category: dict[str, list[float]] = defaultdict(list)
    by_category_at_5: dict[str, list[float]] = defaultdict(list)
    for dialogue in dialogues:
        texts = [turn.text for turn in dialogue.turns]
        turns = embedder.embed(texts)
        questions = embedder.embed([question.text for question in dialogue.questions])
        bm25 = _Bm25(texts)
        for question, vector in zip(dialogue.questions, questions, strict=True):
            fused: dict[int, float] = defaultdict(float)
            for rank, row in enumerate(np.argsort(-(turns @ vector), kind="stable")):
                fused[int(row)] += 1.0 / (60 + rank + 1)
            lexical = bm25.scores(question.text)
            order = [int(row) for row in np.argsort(-lexical, kind="stable") if lexical[row] > 0]
            for rank, row in enumerate(order):
                fused[row] += 1.0 / (60 + rank + 1)
            ranked = [dialogue.turns[row].dia_id for row, _ in
                      sorted(fused.items(), key=lambda item: (-item[1], item[0]))]  # fmt: skip
            for k in KS:
                found = set(ranked[:k])
                recall = len(found & set(question.evidence)) / len(question.evidence)
                recalls[k].append(recall)
                if k == 5:
                    by_category_at_5[CATEGORIES[question.category]].append(recall)
                if k == 10:
                    by_category[CATEGORIES[question.category]].append(recall)
    return _summary(recalls, by_category, by_category_at_5)


class _Bm25:
    """Okapi BM25 over lower-cased ``\\w+`` tokens (k1 1.5, b 0.75; idf ``log(1 + (N - df + 0.5)
    / (df + 0.5))``)."""

    def __init__(self, texts: Sequence[str]) -> None:
        from collections import Counter

        self.documents = [Counter(_tokens(text)) for text in texts]
        self.lengths = [sum(document.values()) for document in self.documents]
        self.average = sum(self.lengths) / len(self.lengths)
        self.frequency = Counter(term for document in self.documents for term in document)

    def scores(self, query: str) -> Any:
        import math

        import numpy as np

        total = np.zeros(len(self.documents))
        n = len(self.documents)
        for term in set(_tokens(query)):
            df = self.frequency.get(term)
            if not df:
                continue
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            for row, document in enumerate(self.documents):
                tf = document.get(term)
                if tf:
                    norm = 1.5 * (1 - 0.75 + 0.75 * self.lengths[row] / self.average)
                    total[row] += idf * tf * 2.5 / (tf + norm)
        return total


def _tokens(text: str) -> list[str]:
    return [token.lower() for token in re.findall(r"\w+", text)]


# -- storing -----------------------------------------------------------------------------


def _store(engine: Any, schema: str, *, bm25: bool, backend: str = "onnx") -> Any:
    from retrieval.memory.config import WriteConfig
    from retrieval.memory.store import MemoryStore

    names = {f.name for f in dataclasses.fields(WriteConfig)}
    config = WriteConfig(memory_bm25=True) if bm25 and "memory_bm25" in names else WriteConfig()
    if backend != "onnx":  # an older revision's config may have no backend
        config = dataclasses.replace(config, embedder_backend=backend)
    return MemoryStore(engine, schema=schema, config=config)


def store_dialogues(store: Any, dialogues: Sequence[Dialogue], copies: int = 1) -> None:
    """Each dialogue as one tenant (replacing what the tenant held), turn by turn (each turn
    ``copies`` times: the whole dialogue stored again)."""
    from retrieval.memory.records import MemoryInput

    fields = {f.name for f in dataclasses.fields(MemoryInput)}
    for dialogue in dialogues:
        store.forget(tenant_id=dialogue.tenant, everything=True)
        items = []
        for turn in dialogue.turns:
            extra: dict[str, Any] = {}
            if "thread_id" in fields:
                extra = {"thread_id": turn.thread, "position": turn.position}
            items.append(
                MemoryInput(
                    text=turn.text,
                    tenant_id=dialogue.tenant,
                    kind="message",
                    metadata={"dia_id": turn.dia_id, "session": turn.thread},
                    created_at=turn.created_at,
                    **extra,
                )
            )
        for _ in range(copies):
            store.remember_many(items)


# -- the other revision ------------------------------------------------------------------


def against(args: argparse.Namespace, data_dir: Path) -> dict[str, Any]:
    """Run :func:`run_baseline` with the package of ``args.against`` (a temporary worktree)."""
    with worktree(args.against) as tree:
        command = [sys.executable, __file__, str(args.data.resolve()), "--worker"]
        command += ["--data-dir", str(data_dir.resolve()), "--migrations", str(migrations_of(tree))]
        return worker_result(tree, command, args.against)


def run_baseline(dialogues: Sequence[Dialogue], data_dir: Path) -> dict[str, Any]:
    """The best configuration of the package on ``sys.path``: memories' BM25 channel fused by
    ``convex``, relevance alone, no threshold, no cut-off, the limits at k."""
    from _server import embedded

    import retrieval
    from retrieval.db.migrate import MigrationSettings
    from retrieval.search.config import RetrievalConfig, SourceConfig
    from retrieval.search.retriever import HybridRetriever

    schema = MigrationSettings(schema=BASELINE_SCHEMA, embedding_dim=384)
    engine = embedded(data_dir, schema).engine
    store = _store(engine, BASELINE_SCHEMA, bm25=True)
    store_dialogues(store, dialogues)
    recalls: dict[int, list[float]] = {k: [] for k in KS}
    by_category: dict[str, list[float]] = defaultdict(list)
    for k in KS:
        config = RetrievalConfig(
            semantic=SourceConfig(relevance=1.0, recency=0.0, limit=k, half_life_hours=720),
            episodic=replace(RetrievalConfig().episodic, enabled=False),
            documents=replace(RetrievalConfig().documents, enabled=False),
            total_limit=k,
            candidate_pool=max(k, 40),
            min_final_score=0.0,
            max_distance=None,
            memory_bm25=True,
            fusion="convex",
            record_access=False,
        )
        with HybridRetriever.from_store(store, config=config) as retriever:
            for dialogue in dialogues:
                for question in dialogue.questions:
                    response = retriever.retrieve(
                        question.text, tenant_id=dialogue.tenant, as_of=dialogue.as_of
                    )
                    found = set(_turn_ids(response.results, with_neighbors=False))
                    recall = len(found & set(question.evidence)) / len(question.evidence)
                    recalls[k].append(recall)
                    if k == 10:
                        by_category[CATEGORIES[question.category]].append(recall)
    source = inspect.getsourcefile(retrieval)
    return {"package": str(source)} | _summary(recalls, by_category)


# -- reporting ---------------------------------------------------------------------------


def _summary(
    recalls: Mapping[int, Sequence[float]],
    by_category: Mapping[str, Sequence[float]],
    by_category_at_5: Mapping[str, Sequence[float]] | None = None,
) -> dict[str, Any]:
    summary: dict[str, Any] = {
        "questions": len(recalls[KS[0]]),
        **{f"recall@{k}": round(100 * sum(v) / len(v), 1) for k, v in recalls.items()},
        "recall@10_by_category": {
            name: {"questions": len(v), "recall": round(100 * sum(v) / len(v), 1)}
            for name, v in sorted(by_category.items())
        },
    }
    if by_category_at_5 is not None:
        summary["recall@5_by_category"] = {
            name: {"questions": len(v), "recall": round(100 * sum(v) / len(v), 1)}
            for name, v in sorted(by_category_at_5.items())
        }
    return summary


def print_table(results: Mapping[str, Any]) -> None:
    """The recall table, as Markdown."""
    print("\n| configuration | R@5 | R@10 | R@25 | R@50 |\n|---|---|---|---|---|")
    rows = [
        (name, value)
        for name, value in results.items()
        if name.startswith("defaults") or name == "plain_rrf"
    ]
    if "baseline" in results:
        rows.append((f"{results['baseline']['revision']}: memory_bm25 + convex, relevance alone",
                     results["baseline"]))  # fmt: skip
    for name, value in rows:
        cells = " | ".join(f"{value[f'recall@{k}']:.1f}" for k in KS)
        print(f"| {name} | {cells} |")
    sessions = [(name, value) for name, value in rows if "session_hit@1" in value]
    if sessions:
        print("\n| configuration | session Hit@1 | session R@3 | session R@5 |\n|---|---|---|---|")
        for name, value in sessions:
            print(f"| {name} | {value['session_hit@1']:.1f} | {value['session_recall@3']:.1f} | "
                  f"{value['session_recall@5']:.1f} |")  # fmt: skip
    if "ablations" in results:
        categories = sorted(results["ablations"]["defaults"]["recall@10_by_category"])
        print(
            "\n| ablation | R@5 | R@10 | "
            + " | ".join(f"{name} R@5/10" for name in categories)
            + " | session Hit@1 / R@5 | median ms @10 |\n|---|---|---|"
            + "---|" * (len(categories) + 2)
        )
        for name, value in results["ablations"].items():
            by = [
                f"{value['recall@5_by_category'][c]['recall']:.1f} / "
                f"{value['recall@10_by_category'][c]['recall']:.1f}"
                for c in categories
            ]
            print(
                f"| {name} | {value['recall@5']:.1f} | {value['recall@10']:.1f} | "
                + " | ".join(by)
                + f" | {value['session_hit@1']:.1f} / {value['session_recall@5']:.1f}"
                + f" | {value['median_ms_at_10']:.2f} |"
            )


if __name__ == "__main__":
    main()
