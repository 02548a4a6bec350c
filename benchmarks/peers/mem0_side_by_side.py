"""Mem0 side by side: the same data through Mem0's open-source ``Memory`` and through this library's
Mem0 interface (``retrieval.integrations.mem0.Memory``), the same calls, model and server.

* the chat proxy (the development dialogues as a chat's ``NAME: text`` messages): each dialogue
  ``add``-ed as a list of user messages under its own ``user_id`` (``infer=False`` for Mem0: no
  LLM; the library stores what it is told in any case); each question searched with
  ``filters={"user_id": ...}`` and ``top_k`` three times the budget, and recall of the evidence
  turns in the first 5 and 10 distinct turns read, per half (as ``quality/paths.py`` counts it);
* SciFact through memories: each abstract ``add``-ed as one string under ``user_id`` ``scifact``;
  the 300 test claims searched with ``top_k=10``: nDCG@10 and recall@10;
* each search's time (p50, p95), and the time of the adds.

Mem0 runs in a virtual environment of its own (``--mem0-python``: its pins of SQLAlchemy, pydantic
and openai are not this library's), with its pgvector store (HNSW) on the same embedded server
and its Hugging Face embedder given all-MiniLM-L6-v2's local files (the library's default model),
at its defaults and at ``threshold=0`` (its best recall: nothing cut). Make that environment
with ``python -m venv ENV && ENV/bin/pip install --constraint constraints.txt mem0ai
'psycopg[binary]' psycopg2-binary pgvector torch==2.13.0 sentence-transformers``.

Usage: python benchmarks/peers/mem0_side_by_side.py --mem0-python ENV/bin/python [--data-dir DIR]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the shared modules
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "quality"))
from _common import add_output, summary_ms, write_result
from _paths import Found, first_refs
from _scifact import DATA, abstract_text, evaluate, read_qrels
from paths import Tally, conversations

WORKER = Path(__file__).with_name("_mem0_worker.py")
BUDGETS = (5, 10)


def chat_data() -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, dict[str, str]]]:
    """The chat proxy's dialogues, its questions (with the half and evidence), and each
    dialogue's turn texts mapped to their references (a text told twice: its first)."""
    dialogues, questions = conversations(chat=True)
    refs: dict[str, dict[str, str]] = {}
    stored = []
    for dialogue in dialogues:
        texts = [turn.text for turn in dialogue.turns]
        refs[dialogue.tenant] = {}
        for turn in dialogue.turns:
            refs[dialogue.tenant].setdefault(turn.text, turn.ref)
        stored.append({"tenant": dialogue.tenant, "texts": texts})
    asked = [
        {"tenant": tenant, "text": q.text, "k": 3 * max(BUDGETS), "half": half,
         "evidence": list(q.evidence)}
        for tenant, q, half in questions
    ]  # fmt: skip
    return stored, asked, refs


def scifact_data() -> tuple[list[str], list[dict[str, Any]], dict[str, str]]:
    """SciFact's abstracts as texts, its test claims, and each text's document id."""
    docs = [json.loads(line) for line in (DATA / "corpus.jsonl").open(encoding="utf-8")]
    qrels = read_qrels(DATA / "qrels" / "test.tsv")
    claims = {q["_id"]: q["text"] for q in map(json.loads, (DATA / "queries.jsonl").open())}
    texts = [abstract_text(doc) for doc in docs]
    ids = {text: str(doc["_id"]) for text, doc in zip(texts, docs, strict=True)}
    asked = [{"tenant": "scifact", "text": claims[q], "k": 10, "id": q} for q in sorted(qrels)]
    return texts, asked, ids


def ours(engine: Any, data: dict[str, Any]) -> dict[str, Any]:
    """The library's Mem0 interface, the same calls."""
    from retrieval.integrations.mem0 import Memory
    from retrieval.memory.store import MemoryStore

    store = MemoryStore(engine)
    found: dict[str, Any] = {}
    with Memory(store, tenant_id="side-by-side") as memory:
        began = time.perf_counter()
        for dialogue in data["dialogues"]:
            messages = [{"role": "user", "content": text} for text in dialogue["texts"]]
            memory.add(messages, user_id=dialogue["tenant"])
        found["chat_add_s"] = time.perf_counter() - began
        found["chat"] = _searched(memory, data["questions"])
        began = time.perf_counter()
        for text in data["abstracts"]:
            memory.add(text, user_id="scifact")
        found["scifact_add_s"] = time.perf_counter() - began
        found["scifact"] = _searched(memory, data["claims"])
    return found


def _searched(memory: Any, questions: list[dict[str, Any]]) -> dict[str, Any]:
    results, times = [], []
    for question in questions:
        began = time.perf_counter()
        answer = memory.search(
            question["text"], filters={"user_id": question["tenant"]}, top_k=question["k"]
        )
        times.append((time.perf_counter() - began) * 1000)
        results.append([item["memory"] for item in answer["results"]])
    return {"found": results, "ms": times}


def scored(found: dict[str, Any], data: dict[str, Any], refs: Any, ids: Any) -> dict[str, Any]:
    """Recall of the chat proxy, SciFact's nDCG@10, the searches' times."""
    tally = Tally()
    for question, texts in zip(data["questions"], found["chat"]["found"], strict=True):
        read_all = [Found(refs[question["tenant"]].get(text), text) for text in texts]
        for k in BUDGETS:
            read = set(first_refs(read_all, k))
            evidence = set(question["evidence"])
            tally.add(question["half"], f"R@{k}", len(read & evidence) / len(evidence))
    qrels = read_qrels(DATA / "qrels" / "test.tsv")
    run = {
        claim["id"]: [(ids[text], 1.0) for text in texts if text in ids]
        for claim, texts in zip(data["claims"], found["scifact"]["found"], strict=True)
    }
    return {
        "chat": tally.summary(),
        "scifact": {k: round(v, 4) for k, v in evaluate(run, qrels).items()},
        "chat_search_ms": summary_ms(found["chat"]["ms"]),
        "scifact_search_ms": summary_ms(found["scifact"]["ms"]),
        "chat_add_s": round(found["chat_add_s"], 1),
        "scifact_add_s": round(found["scifact_add_s"], 1),
        "empty_searches": sum(not t for t in found["chat"]["found"] + found["scifact"]["found"]),
    }


def _full(found: dict[str, Any], data: dict[str, Any]) -> float:
    """The share of searches that returned every memory asked for (``top_k``)."""
    asked = [q["k"] for q in data["questions"]] + [c["k"] for c in data["claims"]]
    lists = found["chat"]["found"] + found["scifact"]["found"]
    return round(sum(len(got) >= k for got, k in zip(lists, asked, strict=True)) / len(asked), 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mem0-python", required=True, help="the Python of mem0ai's venv")
    parser.add_argument("--data-dir", type=Path, help="keep the embedded server's data here")
    parser.add_argument(
        "--mem0-found", type=Path,
        help="a Mem0 run's answers already made (the worker's mem0.json, on the same data): "
        "scored as Mem0 at its defaults instead of running it again",
    )  # fmt: skip
    parser.add_argument(
        "--no-threshold-zero", action="store_true",
        help="leave out Mem0 at threshold 0 (its best recall; the same as its defaults when "
        "every search of the defaults returns top_k memories)",
    )  # fmt: skip
    add_output(parser)
    args = parser.parse_args()

    from _server import embedded

    from retrieval.db.migrate import MigrationSettings
    from retrieval.embedding.models import default_model_path

    bench = embedded(args.data_dir, MigrationSettings(schema="retrieval", embedding_dim=384))
    dialogues, questions, refs = chat_data()
    abstracts, claims, ids = scifact_data()
    data = {"dialogues": dialogues, "questions": questions, "abstracts": abstracts,
            "claims": claims}  # fmt: skip
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="rtv-mem0-") as work:
        (Path(work) / "data.json").write_text(json.dumps(data), "utf-8")
        runs = [("mem0, defaults", None)]
        if not args.no_threshold_zero:
            runs.append(("mem0, threshold 0", 0.0))
        for name, threshold in runs:
            if name == "mem0, defaults" and args.mem0_found is not None:
                found = json.loads(args.mem0_found.read_text("utf-8"))
                results[name] = scored(found, data, refs, ids) | {"full_lists": _full(found, data)}
                print(name, json.dumps(results[name]), flush=True)
                continue
            command = [args.mem0_python, str(WORKER), work, "--url", bench.psycopg_url,
                       "--model", str(default_model_path())]  # fmt: skip
            if threshold is not None:
                command += ["--threshold", str(threshold)]
            subprocess.run(command, check=True)
            found = json.loads((Path(work) / "mem0.json").read_text("utf-8"))
            results[name] = scored(found, data, refs, ids) | {"full_lists": _full(found, data)}
            with bench.engine.begin() as connection:  # each run stores afresh
                for table in ("mem0_chat", "mem0_scifact"):
                    connection.exec_driver_sql(f"DROP TABLE IF EXISTS {table}")
            print(name, json.dumps(results[name]), flush=True)
    results["retrieval (its Mem0 interface), defaults"] = scored(
        ours(bench.engine, data), data, refs, ids
    )
    write_result("mem0-side-by-side", results, args)


if __name__ == "__main__":
    main()
