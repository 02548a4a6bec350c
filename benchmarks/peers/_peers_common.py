"""What the peers benchmarks (``peers.py``, ``curves.py``) share: the rows, tenants and claims
they measure on (SciFact's sentences and their noisy copies as memories, spread over the
tenants of ``_scifact.TENANTS``, SciFact's test claims as queries, and each claim's exact 10
nearest rows of each measured tenant, what recall@10 is counted against); the peers' workers,
run in the peers' own Python (``_peers_worker.py``), and the summary of what they measured."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the shared _scifact
from _common import ROOT, claim_timing, recall
from _scifact import (
    DATA,
    TENANTS,
    cached_vectors,
    evaluate,
    exact_nearest,
    load_corpus,
    memory_vectors,
    read_qrels,
    tenant_of,
)

from retrieval.embedding.models import SentenceTransformerEmbedder

PEERS_DATABASE = "peers"
PASSES = 3


@dataclass(frozen=True)
class PeersData:
    rows: list[dict[str, Any]]  # {"row", "text", "tenant"}
    vectors: np.ndarray
    claims: list[str]
    claim_vectors: np.ndarray
    exact: dict[str, list[list[int]]]  # each measured tenant's exact 10 nearest rows per claim
    tenant_rows: dict[str, int]
    qrels: dict[str, dict[str, int]]
    query_ids: list[str]


def peers_data(embedder: SentenceTransformerEmbedder, count: int, cache: Path) -> PeersData:
    """``count`` rows and the claims, the model's vectors cached in the folder ``cache``."""
    corpus = load_corpus(embedder, cache / "scifact-title-vectors.npy")
    base = cached_vectors(embedder, corpus.sentences, cache / "scifact-sentence-vectors.npy")
    vectors = memory_vectors(base, count)
    tenants = [tenant_of(i) for i in range(count)]
    rows = [
        {"row": i, "text": f"{corpus.sentences[i % len(corpus.sentences)]} (note {i})",
         "tenant": tenants[i]}
        for i in range(count)
    ]  # fmt: skip
    qrels = read_qrels(DATA / "qrels" / "test.tsv")
    queries = {q["_id"]: q["text"] for q in map(json.loads, (DATA / "queries.jsonl").open())}
    query_ids = sorted(qrels)
    claims = [queries[q] for q in query_ids]
    claim_vectors = embedder.embed(claims)
    owners = np.array(tenants)
    return PeersData(
        rows=rows,
        vectors=vectors,
        claims=claims,
        claim_vectors=claim_vectors,
        exact={
            tenant: exact_nearest(vectors, np.flatnonzero(owners == tenant), claim_vectors)
            for tenant in TENANTS
        },
        tenant_rows={tenant: int((owners == tenant).sum()) for tenant in TENANTS},
        qrels=qrels,
        query_ids=query_ids,
    )


def peer_work(  # type: ignore[no-untyped-def]
    plan, rows, vectors, claim_vectors, scifact_data=None
) -> Path:
    """A directory holding the data and the plan the peers' workers read (written once for
    all of them)."""
    work = Path(tempfile.mkdtemp(prefix="rtv-peers-work-"))
    abstracts, abstract_vectors = scifact_data or ([], np.zeros((0, vectors.shape[1])))
    (work / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    np.save(work / "vectors.npy", vectors)
    (work / "abstracts.jsonl").write_text("".join(json.dumps(a) + "\n" for a in abstracts))
    np.save(work / "abstract_vectors.npy", abstract_vectors)
    (work / "queries.json").write_text(json.dumps(plan))
    np.save(work / "query_vectors.npy", claim_vectors)
    return work


def run_peer(python: Path, library: str, url: str, work: Path) -> dict[str, Any]:
    """One library's worker, in the peers' Python, on the data and plan of ``work``."""
    subprocess.run(
        [str(python), str(ROOT / "benchmarks" / "peers" / "_peers_worker.py"), library,
         "--url", url, "--work", str(work)],
        check=True,
    )  # fmt: skip
    return dict(json.loads((work / f"{library}.json").read_text()))


def searched(
    found: list[list[int]], times: list[list[float]], nearest: list[list[int]]
) -> dict[str, Any]:
    """A tenant's filtered searches summed up: p50 and p95 ms, recall@10, rows per query."""
    return {
        **claim_timing(times),
        "recall_at_10": recall(found, nearest),
        "rows_per_query": statistics.mean(len(ids) for ids in found),
    }


def floor_search(
    connection: Any, query: str, vectors: list[Any], tenant: str, pool: int,
    row_of: dict[int, int],
) -> Callable[[int], list[int]]:  # fmt: skip
    """The floor's search of claim ``index`` (the bare statement ``query`` of
    ``_scifact.floor_statement``, prepared, bound in binary): the row numbers of the 10
    nearest of the ``pool`` rows it returns."""

    def search(index: int) -> list[int]:
        values = (vectors[index], tenant, pool)
        rows = connection.execute(query, values, prepare=True, binary=True).fetchall()
        rows.sort(key=lambda row: row[1])  # an iterative scan's order is relaxed
        return [row_of[memory_id] for memory_id, _ in rows[:10]]

    return search


def peer_summary(
    raw: dict[str, Any],
    exact: dict[str, list[list[int]]],
    qrels: dict[str, dict[str, int]],
    query_ids: list[str],
) -> dict[str, Any]:
    loading = ("ingest_rows_per_s", "load_rows_per_s", "index_build_s")
    summary: dict[str, Any] = {key: raw[key] for key in loading if key in raw}
    for setting, searches in raw["filtered"].items():
        summary[setting] = {
            tenant: searched(found["ids"], found["times_ms"], exact[tenant])
            for tenant, found in searches.items()
        }
    for name, ranked in raw.get("scifact", {}).items():
        run = {
            query_id: [(doc, 1.0 / (rank + 1)) for rank, doc in enumerate(found)]
            for query_id, found in zip(query_ids, ranked, strict=True)
        }
        summary[name] = evaluate(run, qrels)["ndcg@10"]
    return summary
