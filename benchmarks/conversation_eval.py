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
* ``defaults + neighbors N``: the same, each hit counting the turns ``neighbors=N`` returns
  around it (the context a caller receives);
* with ``--against REV``: the best configuration of revision REV (its memories' BM25 channel
  fused by ``convex``, relevance alone: recency weight 0, no threshold, no cut-off), run from
  a temporary ``git worktree`` of REV in its own process, on the same server, in the same run.

Usage: python benchmarks/conversation_eval.py DATA [--json PATH] [--against REV]
       [--neighbors 1] [--data-dir DIR]
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from _common import add_output, write_result

ROOT = Path(__file__).resolve().parents[1]
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
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--migrations", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    dialogues = load(args.data)
    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="rtv-conv-")) / "pg"

    if args.worker:  # run by --against, importing the other revision's package
        _use_migrations(args.migrations)
        print(json.dumps(run_baseline(dialogues, data_dir)))
        return

    from retrieval.db.embedded import start_embedded

    server = start_embedded(data_dir, delete_on_exit=args.data_dir is None)
    results: dict[str, Any] = {
        "data": str(args.data),
        "dialogues": len(dialogues),
        "turns": sum(len(d.turns) for d in dialogues),
        "questions": sum(len(d.questions) for d in dialogues),
    }
    results |= run_current(dialogues, server.url(), args.neighbors)
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


def run_current(dialogues: Sequence[Dialogue], url: str, neighbors: int) -> dict[str, Any]:
    """Store the dialogues and ask every question with the defaults (and neighbours)."""
    from retrieval.db.engine import make_engine
    from retrieval.db.migrate import MigrationSettings, upgrade
    from retrieval.search.config import RetrievalConfig
    from retrieval.search.retriever import HybridRetriever

    engine = make_engine(url)
    upgrade(engine, MigrationSettings(schema=SCHEMA, embedding_dim=384))
    engine.dispose()
    store = _store(engine, SCHEMA, bm25=False)
    started = time.perf_counter()
    store_dialogues(store, dialogues)
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


def evaluate(retriever: Any, dialogues: Sequence[Dialogue], *, neighbors: int) -> dict[str, Any]:
    """Recall@k (k in :data:`KS`) of ``retrieve(..., limit=k)``, and @10 per category."""
    recalls: dict[int, list[float]] = {k: [] for k in KS}
    by_category: dict[str, list[float]] = defaultdict(list)
    returned: list[int] = []
    times: list[float] = []
    for dialogue in dialogues:
        for question in dialogue.questions:
            for k in KS:
                began = time.perf_counter()
                response = retriever.retrieve(
                    question.text,
                    tenant_id=dialogue.tenant,
                    as_of=dialogue.as_of,
                    limit=k,
                    neighbors=neighbors,
                )
                found = set(_turn_ids(response.results, with_neighbors=neighbors > 0))
                recall = len(found & set(question.evidence)) / len(question.evidence)
                recalls[k].append(recall)
                if k == 10:
                    times.append((time.perf_counter() - began) * 1000)
                    by_category[CATEGORIES[question.category]].append(recall)
                if k == max(KS):
                    returned.append(len(response.results))
    return _summary(recalls, by_category) | {
        "mean_results_at_50": round(sum(returned) / len(returned), 2),
        "median_ms_at_10": round(sorted(times)[len(times) // 2], 2),
    }


def _turn_ids(results: Sequence[Any], *, with_neighbors: bool) -> Iterator[str]:
    for result in results:
        if result.source != "semantic":
            continue
        yield result.metadata["metadata"]["dia_id"]
        if with_neighbors:
            for neighbor in result.metadata.get("neighbors", ()):
                yield neighbor["metadata"]["dia_id"]


# -- storing -----------------------------------------------------------------------------


def _store(engine: Any, schema: str, *, bm25: bool) -> Any:
    from retrieval.memory.config import WriteConfig
    from retrieval.memory.store import MemoryStore

    names = {f.name for f in dataclasses.fields(WriteConfig)}
    config = WriteConfig(memory_bm25=True) if bm25 and "memory_bm25" in names else WriteConfig()
    return MemoryStore(engine, schema=schema, config=config)


def store_dialogues(store: Any, dialogues: Sequence[Dialogue]) -> None:
    """Each dialogue as one tenant (replacing what the tenant held), turn by turn."""
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
        store.remember_many(items)


# -- the other revision ------------------------------------------------------------------


def against(args: argparse.Namespace, data_dir: Path) -> dict[str, Any]:
    """Run :func:`run_baseline` with the package of ``args.against`` (a temporary worktree)."""
    worktree = Path(tempfile.mkdtemp(prefix="rtv-conv-rev-"))
    _git("worktree", "add", "--detach", str(worktree), args.against)
    try:
        environment = dict(os.environ, PYTHONPATH=str(worktree))
        command = [
            sys.executable,
            __file__,
            str(args.data.resolve()),
            "--worker",
            "--data-dir",
            str(data_dir.resolve()),
            "--migrations",
            str(_migrations_folder(worktree)),
        ]
        done = subprocess.run(
            command, env=environment, cwd=worktree, capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            raise RuntimeError(f"the run of {args.against} failed:\n{done.stderr[-3000:]}")
        return dict(json.loads(done.stdout.strip().splitlines()[-1]))
    finally:
        _git("worktree", "remove", "--force", str(worktree))


def _migrations_folder(worktree: Path) -> Path:
    """The revision's migrations: at the top level, or (commits of 2026-11-26 and 27) inside
    the package."""
    inside = worktree / "retrieval" / "migrations"
    return inside if inside.is_dir() else worktree / "migrations"


def _use_migrations(folder: Path | None) -> None:
    """Make ``retrieval.migrations`` the revision's own folder: an editable install of this
    checkout maps the name to this checkout's migrations, whatever ``PYTHONPATH`` says."""
    if folder is None:
        return
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "retrieval.migrations", folder / "__init__.py", submodule_search_locations=[str(folder)]
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["retrieval.migrations"] = module
    spec.loader.exec_module(module)


def run_baseline(dialogues: Sequence[Dialogue], data_dir: Path) -> dict[str, Any]:
    """The best configuration of the package on ``sys.path``: memories' BM25 channel fused by
    ``convex``, relevance alone, no threshold, no cut-off, the limits at k."""
    import retrieval
    from retrieval.db.embedded import start_embedded
    from retrieval.db.engine import make_engine
    from retrieval.db.migrate import MigrationSettings, upgrade
    from retrieval.search.config import RetrievalConfig, SourceConfig
    from retrieval.search.retriever import HybridRetriever

    engine = make_engine(start_embedded(data_dir).url())
    upgrade(engine, MigrationSettings(schema=BASELINE_SCHEMA, embedding_dim=384))
    engine.dispose()
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
    recalls: Mapping[int, Sequence[float]], by_category: Mapping[str, Sequence[float]]
) -> dict[str, Any]:
    return {
        "questions": len(recalls[KS[0]]),
        **{f"recall@{k}": round(100 * sum(v) / len(v), 1) for k, v in recalls.items()},
        "recall@10_by_category": {
            name: {"questions": len(v), "recall": round(100 * sum(v) / len(v), 1)}
            for name, v in sorted(by_category.items())
        },
    }


def print_table(results: Mapping[str, Any]) -> None:
    """The recall table, as Markdown."""
    print("\n| configuration | R@5 | R@10 | R@25 | R@50 |\n|---|---|---|---|---|")
    rows = [(name, value) for name, value in results.items() if name.startswith("defaults")]
    if "baseline" in results:
        rows.append((f"{results['baseline']['revision']}: memory_bm25 + convex, relevance alone",
                     results["baseline"]))  # fmt: skip
    for name, value in rows:
        cells = " | ".join(f"{value[f'recall@{k}']:.1f}" for k in KS)
        print(f"| {name} | {cells} |")


def _git(*arguments: str) -> str:
    return subprocess.run(
        ["git", *arguments], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout.strip()


if __name__ == "__main__":
    main()
