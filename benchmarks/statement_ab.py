"""Before/after of one source's SQL: this checkout's CTEs against another revision's.

Loads the source's modules as they are at ``--against`` (a git revision), builds the
statement of that source alone with each version's CTEs through the retriever's own statement
builder, and runs both on the SciFact claims interleaved, claim by claim (each one's fastest of
``--repeat``), on the benchmark data of ``retrieve.py`` (``--source episodic``: schema
``bench_one``) or ``documents.py`` (``--source documents``: schema ``bench_docs``), loaded there
first. Each version runs with its own default config. Checks that both return the same rows
for every claim (``identical_results``), and the same rows among those that pass the default
threshold (``identical_passing``: a version that prunes rows which cannot pass returns other
rows below it), and prints p50 / p95 / mean. Interleaving matters on this machine: separate
runs differ by up to 20-30%.

Usage: python benchmarks/statement_ab.py --data-dir DIR --against REV
       [--source episodic|documents] [--queries 100] [--repeat 3]
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

from documents import SETTINGS as DOCUMENTS
from documents import read_queries
from retrieve import AS_OF, ONE, TENANT, summary_ms

from retrieval.db.embedded import start_embedded
from retrieval.db.engine import make_engine
from retrieval.db.read_pool import ReadConnections
from retrieval.embedding.models import SentenceTransformerEmbedder
from retrieval.search import retriever, scoring
from retrieval.search.config import RetrievalConfig

ROOT = Path(__file__).resolve().parents[1]
Params = Callable[[str, Any], dict[str, Any] | None]  # None: nothing to ask


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, required=True, help="the benchmarks' data")
    parser.add_argument("--against", required=True, help="git revision to compare with")
    parser.add_argument("--source", choices=("episodic", "documents"), default="episodic")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    queries = read_queries()[: args.queries]
    if args.source == "episodic":
        before = _modules_at(args.against, ["episodic"])["episodic"]
        statements = {
            "before": _episodic_statement(before.episodic_ctes),
            "after": _episodic_statement(retriever.episodic_ctes),
        }
        config = RetrievalConfig()
        params = {name: _episodic_params(config) for name in statements}
        vectors: list[Any] = [None] * len(queries)
    else:
        modules = _modules_at(args.against, ["fusion", "documents"])
        statements = {
            "before": _documents_statement(modules["documents"].documents_ctes),
            "after": _documents_statement(retriever.documents_ctes),
        }
        # Each version with its own default share of common terms (session 4 changed it).
        old_share = _default_at(args.against, "bm25_common_share")
        params = {
            "before": _documents_params(replace(RetrievalConfig(), bm25_common_share=old_share)),
            "after": _documents_params(RetrievalConfig()),
        }
        vectors = list(SentenceTransformerEmbedder().embed(list(queries)))

    server = start_embedded(args.data_dir)
    # The retriever's own session settings (its plan cache mode matters: a prepared statement
    # under PostgreSQL's default mode may switch to a generic plan).
    connections = ReadConnections(
        make_engine(server.url()), list(retriever.read_settings(RetrievalConfig()).items())
    )
    times: dict[str, list[float]] = {name: [] for name in statements}
    same = passing = 0
    passes = _passes(RetrievalConfig(), args.source)
    for query, vector in zip(queries, vectors, strict=True):
        bound = {}
        for name in statements:
            values = params[name](query, vector)
            if values is not None:
                bound[name] = values
        if len(bound) < len(statements):
            continue  # no keywords
        best = dict.fromkeys(statements, float("inf"))
        rows = {}
        for _ in range(args.repeat):
            for name, statement in statements.items():
                started = time.perf_counter()
                rows[name] = connections.execute(statement, bound[name])
                best[name] = min(best[name], (time.perf_counter() - started) * 1000)
        same += _comparable(rows["before"]) == _comparable(rows["after"])
        passing += [r for r in _comparable(rows["before"]) if passes(r)] == [
            r for r in _comparable(rows["after"]) if passes(r)
        ]
        for name in statements:
            times[name].append(best[name])
    connections.close()
    summary = {
        "source": args.source,
        "against": args.against,
        "queries": len(times["after"]),
        "identical_results": same,
        "identical_passing": passing,
        **{name: summary_ms(values) for name, values in times.items()},
    }
    print(json.dumps(summary, indent=2))


def _episodic_statement(ctes: Any) -> str:
    original = retriever.episodic_ctes
    retriever.episodic_ctes = ctes
    try:
        return retriever.build_statement(ONE.schema, False, None, True, False, True, True, False)
    finally:
        retriever.episodic_ctes = original


def _documents_statement(ctes: Any) -> str:
    original = retriever.documents_ctes
    retriever.documents_ctes = ctes
    try:
        return retriever.build_statement(
            DOCUMENTS.schema, False, None, True, False, False, False, False, True
        )
    finally:
        retriever.documents_ctes = original


def _episodic_params(config: RetrievalConfig) -> Params:
    def bind(query: str, _vector: Any) -> dict[str, Any] | None:
        keywords = scoring.extract_keywords(query)
        if not keywords:
            return None
        bound = retriever._parameters(config, TENANT, None, keywords, AS_OF, None, ())
        bound.update(retriever._mode_parameters(config.mode("semantic")))
        return bound

    return bind


def _documents_params(config: RetrievalConfig) -> Params:
    def bind(query: str, vector: Any) -> dict[str, Any] | None:
        bound = retriever._parameters(config, TENANT, vector, [], AS_OF, None, ())
        bound.update(retriever._document_parameters(config, query))
        bound.update(retriever._mode_parameters(config.mode("semantic")))
        return bound

    return bind


def _passes(config: RetrievalConfig, source: str) -> Callable[[tuple[Any, ...]], bool]:
    # Whether a row's final score (its source's relevance and recency weights; the episodic
    # and documents rows carry no other signal) reaches the threshold.
    weights = config.source(source)

    def passes(row: tuple[Any, ...]) -> bool:
        relevance, recency = row[6], row[7]
        final = weights.relevance * relevance + weights.recency * recency
        return bool(final >= config.min_final_score)

    return passes


def _comparable(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    # The rows without their evidence column (a newer version may add keys to it).
    return [row[:-1] for row in rows]


def _modules_at(revision: str, names: list[str]) -> dict[str, ModuleType]:
    """``retrieval/search/sources/<name>.py`` of ``revision``, loaded as ``<name>_before`` modules
    that import each other (in the order given) instead of today's."""
    folder = Path(tempfile.mkdtemp(prefix="statement-ab-"))
    modules = {}
    for name in names:
        text = _show(revision, f"retrieval/search/sources/{name}.py")
        for other in names:
            today = f"from retrieval.search.sources.{other} import"
            text = text.replace(today, f"from {other}_before import")
        path = folder / f"{name}_before.py"
        path.write_text(text)
        spec = importlib.util.spec_from_file_location(f"{name}_before", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[f"{name}_before"] = module  # dataclasses and imports look it up
        spec.loader.exec_module(module)
        modules[name] = module
    return modules


def _default_at(revision: str, field: str) -> Any:
    # A RetrievalConfig field's default as written in retrieval/config.py at ``revision``.
    tree = ast.parse(_show(revision, "retrieval/config.py"))
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and node.target.id == field
            and node.value is not None
        ):
            return ast.literal_eval(node.value)
    raise SystemExit(f"{field} has no literal default in retrieval/config.py at {revision}")


def _show(revision: str, path: str) -> str:
    return subprocess.run(
        ["git", "show", f"{revision}:{path}"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout


if __name__ == "__main__":
    main()
