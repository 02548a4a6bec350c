"""Before/after of a whole ``retrieve()`` call: this checkout against another git revision.

``statement_ab.py`` compares one source's SQL; this compares everything a caller waits for
(the statement, the driver, the fusion in Python), so it measures changes on the client side
too. Each version runs in its own worker process (the revision from a temporary
``git worktree``, this checkout as it is), on the same embedded server and benchmark data of
``retrieve.py`` (schema ``bench_one``, loaded there first; with ``--sources documents``, the
100,000 chunks of ``documents.py`` in schema ``bench_docs`` and only the documents source on),
with the default config and access recording off. The parent sends the SciFact claims to both
workers in turn, claim by claim (the order alternating), so that both see the same machine at
the same moment: on this machine separate runs differ by up to 30%. Each worker asks every
claim once first (query vectors cached, connections warm) and times ``retrieve()`` inside its
own process. Reports p50 / p95 / mean of each claim's fastest of ``--repeat`` calls, and
whether both versions returned the same results (content, source and scores) for every claim.
Comparing a revision with itself gives differences of up to about 0.3 ms at the p50.
``--filter`` scopes every call by a metadata filter, ``--bound`` reads as a role bound by
row-level security: either way each call is planned for its values (a custom plan), where the
calls on this data otherwise run on the generic plan.

Usage: python benchmarks/reading/retrieve_ab.py --data-dir DIR --against REV
       [--sources all|semantic|episodic|documents] [--tenants one|spread] [--filter JSON]
       [--bound] [--queries 300] [--repeat 3] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the shared _common, _scifact
from _common import add_output, write_result
from _scifact import AS_OF, DOCUMENTS, ONE, SPREAD, TENANT
from _server import APPLICATION_ROLE, bound_role

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = Path(__file__).resolve().parents[1]
_DATASETS = json.dumps(
    {
        "one": ONE.schema,
        "spread": SPREAD.schema,
        "documents": DOCUMENTS.schema,
        "tenant": TENANT,
        "as_of": AS_OF.isoformat(),
    }
)


# The worker: runs retrieve() for each claim read from stdin, answers with the time and a
# digest of the results. It imports ``retrieval`` from the first entry of its PYTHONPATH.
_WORKER = r"""
import json, sys, time
from dataclasses import replace
from datetime import datetime
from pathlib import Path
# The stored datasets' names come as arguments: the worker imports nothing of this checkout.
schemas = json.loads(sys.argv[2])
AS_OF = datetime.fromisoformat(schemas["as_of"])
try:  # the package's layout since 2026-11-27
    from retrieval.search.config import RetrievalConfig
    from retrieval.db.engine import make_engine
    from retrieval.db.embedded import start_embedded
    from retrieval.embedding.models import SentenceTransformerEmbedder
    from retrieval.search.retriever import HybridRetriever
    from retrieval.memory.store import MemoryStore
except ImportError:  # a revision before it: one flat package
    from retrieval.config import RetrievalConfig
    from retrieval.db import make_engine
    from retrieval.embedded import start_embedded
    from retrieval.embedding import SentenceTransformerEmbedder
    from retrieval.retriever import HybridRetriever
    from retrieval.store import MemoryStore

server = start_embedded(Path(sys.argv[1]))
config = RetrievalConfig(record_access=False)
if sys.argv[3] == "semantic":
    config = replace(config, episodic=replace(config.episodic, enabled=False),
                     documents=replace(config.documents, enabled=False))
elif sys.argv[3] == "episodic":
    config = replace(config, semantic=replace(config.semantic, enabled=False),
                     documents=replace(config.documents, enabled=False))
elif sys.argv[3] == "documents":
    config = replace(config, semantic=replace(config.semantic, enabled=False),
                     episodic=replace(config.episodic, enabled=False))
schema = schemas["documents"] if sys.argv[3] == "documents" else schemas["one"]
tenant = schemas["tenant"]
if sys.argv[4] == "spread":  # retrieve.py's 100 tenants of 1,000 memories, nothing else
    schema, tenant = schemas["spread"], "t07"
scope = json.loads(sys.argv[5])  # a metadata filter of every call, or None
role = sys.argv[6]  # a role bound by row-level security to read as, or ""
url = server.url().replace("postgres@", f"{role}@", 1) if role else server.url()
store = MemoryStore(make_engine(url), schema=schema,
                    embedder=SentenceTransformerEmbedder())
retriever = HybridRetriever.from_store(store, config=config)
print("ready", flush=True)
for line in sys.stdin:
    query = json.loads(line)
    started = time.perf_counter()
    response = retriever.retrieve(query, tenant_id=tenant, as_of=AS_OF, filter=scope)
    elapsed = (time.perf_counter() - started) * 1000
    digest = [[r.source, r.content, round(r.final_score, 9), round(r.relevance_score, 9),
               round(r.recency_score, 9)] for r in response.results]
    print(json.dumps({"ms": elapsed, "results": digest}), flush=True)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, required=True, help="retrieve.py's data")
    parser.add_argument("--against", required=True, help="git revision to compare with")
    parser.add_argument(
        "--sources", choices=("all", "semantic", "episodic", "documents"), default="all"
    )
    parser.add_argument(
        "--tenants",
        choices=("one", "spread"),
        default="one",
        help="spread: retrieve.py's 100 tenants holding 1,000 memories each and no decisions, "
        "tool calls or documents (tenant t07)",
    )
    parser.add_argument(
        "--filter",
        type=json.loads,
        default=None,
        help='a metadata filter (JSON) of every call, such as \'{"id": {"$exists": true}}\': '
        "each call planned for its values, the episodic source left out",
    )
    parser.add_argument(
        "--bound",
        action="store_true",
        help=f"read as a role bound by row-level security ({APPLICATION_ROLE}, created and granted "
        "first): each call planned for its values",
    )
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=3)
    add_output(parser)
    args = parser.parse_args()

    sys.path.insert(0, str(BENCHMARKS))
    from _common import summary_ms
    from _revision import worktree
    from _scifact import read_queries

    queries = read_queries()[: args.queries]
    role = _bound_role(args) if args.bound else ""
    with worktree(args.against) as tree:
        workers = {
            name: _start(where, args.data_dir, args.sources, args.tenants, args.filter, role)
            for name, where in (("before", tree), ("after", ROOT))
        }
        for worker in workers.values():
            for query in queries:  # warm: query vectors cached, connections open
                _ask(worker, query)
        best: dict[str, list[float]] = {name: [] for name in workers}
        same = 0
        for index, query in enumerate(queries):
            order = list(workers) if index % 2 == 0 else list(reversed(workers))
            times = dict.fromkeys(workers, float("inf"))
            answers: dict[str, Any] = {}
            for _ in range(args.repeat):
                for name in order:
                    answer = _ask(workers[name], query)
                    times[name] = min(times[name], answer["ms"])
                    answers[name] = answer["results"]
            same += answers["before"] == answers["after"]
            for name in workers:
                best[name].append(times[name])
        for worker in workers.values():
            worker.stdin.close()  # type: ignore[union-attr]
            worker.wait()
    summary = {
        "against": args.against,
        "sources": args.sources,
        "tenants": args.tenants,
        "filter": args.filter,
        "bound": args.bound,
        "queries": len(queries),
        "repeat": args.repeat,
        "identical_results": same,
        **{name: summary_ms(values) for name, values in best.items()},
    }
    write_result("retrieve-ab", summary, args)


def _bound_role(args: argparse.Namespace) -> str:
    # The role the workers read as, bound by row-level security on the benchmark's schema.
    from retrieval.db.embedded import start_embedded
    from retrieval.db.engine import make_engine

    schema = {"documents": DOCUMENTS.schema}.get(args.sources, ONE.schema)
    if args.tenants == "spread":
        schema = SPREAD.schema
    engine = make_engine(start_embedded(args.data_dir).url())
    bound_role(engine, schema)
    engine.dispose()
    return APPLICATION_ROLE


def _start(
    tree: Path, data_dir: Path, sources: str, tenants: str, scope: Any, role: str
) -> subprocess.Popen[str]:
    environment = dict(os.environ, PYTHONPATH=str(tree), HF_HUB_OFFLINE="1")
    worker = subprocess.Popen(
        [sys.executable, "-c", _WORKER, str(data_dir), _DATASETS, sources, tenants,
         json.dumps(scope), role],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=environment, cwd=tree,
    )  # fmt: skip
    assert worker.stdout is not None
    for line in worker.stdout:  # skip anything printed while loading
        if line.strip() == "ready":
            return worker
    raise SystemExit(f"the worker for {tree} stopped before it was ready")


def _ask(worker: subprocess.Popen[str], query: str) -> dict[str, Any]:
    assert worker.stdin is not None and worker.stdout is not None
    worker.stdin.write(json.dumps(query) + "\n")
    worker.stdin.flush()
    return json.loads(worker.stdout.readline())  # type: ignore[no-any-return]


if __name__ == "__main__":
    main()
