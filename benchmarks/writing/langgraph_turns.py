"""A conversation put in LangGraph's store turn by turn: what a put costs when the store keeps a
turn as a message (its default for an item whose text opens with who said it: placed in its
conversation, the turn before it read and embedded with it) against a store told to keep every
item a fact (``kind="fact"``), in the same run.

The first ``--turns`` turns of the first development dialogue (``../shared/data/locomo-dev``),
each written ``NAME said, "text"`` as the paths matrix writes them, one ``put`` each under a
namespace of their own; the two stores alternate run by run, each run into a new namespace (the
texts' vectors come from the embedding cache after the first run, so the model is out of the
timing but for the first). Reported: each store's put p50 over the later runs and the ratio.

Usage: python benchmarks/writing/langgraph_turns.py [--turns 200] [--runs 6]
       [--database-url URL] [--json PATH]
Without --database-url it runs on a throw-away embedded server.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the shared _common
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "quality"))  # the dialogues
from _common import ROOT, add_output, write_result
from _server import add_database_url, reached
from conversation_eval import load

from retrieval.db.migrate import MigrationSettings
from retrieval.embedding.models import SentenceTransformerEmbedder
from retrieval.integrations.langgraph import RetrievalStore
from retrieval.memory.store import MemoryStore

SETTINGS = MigrationSettings(schema="bench", embedding_dim=384)
LOCOMO = ROOT.parent / "shared" / "data" / "locomo-dev"
STORES = {"turns as messages (the default)": None, 'every item a fact (kind="fact")': "fact"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200, help="turns put per run and store")
    parser.add_argument("--runs", type=int, default=6, help="runs per store (the first warms)")
    add_database_url(parser)
    add_output(parser)
    args = parser.parse_args()
    engine = reached(args.database_url, SETTINGS).engine
    store = MemoryStore(engine, schema="bench", embedder=SentenceTransformerEmbedder())
    texts = [turn.text for turn in load(LOCOMO)[0].turns[: args.turns]]
    times: dict[str, list[float]] = {name: [] for name in STORES}
    for run in range(args.runs):
        for name, kind in STORES.items():
            namespace = ("chats", f"{run}-{kind or 'default'}")
            with RetrievalStore(store, tenant_id="bench", index={"fields": ["text"]},
                                kind=kind) as items:  # fmt: skip
                for n, text in enumerate(texts):
                    started = time.perf_counter()
                    items.put(namespace, f"t{n}", {"text": text})
                    if run > 0:
                        times[name].append((time.perf_counter() - started) * 1000)
        print(f"run {run + 1} of {args.runs}", file=sys.stderr, flush=True)
    p50 = {name: round(statistics.median(values), 3) for name, values in times.items()}
    default, facts = (p50[name] for name in STORES)
    results = {
        "put p50 ms": p50,
        "ratio (messages / facts)": round(default / facts, 2),
        "puts timed per store": len(times[next(iter(STORES))]),
    }
    write_result("langgraph-turns", results, args)


if __name__ == "__main__":
    main()
