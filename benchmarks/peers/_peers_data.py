"""The rows, tenants and claims every peers benchmark measures on (``peers.py``, ``curves.py``):
SciFact's sentences and their noisy copies as memories, spread over the tenants of
``_scifact.TENANTS``, SciFact's test claims as queries, and each claim's exact 10 nearest rows
of each measured tenant (what recall@10 is counted against)."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the shared _scifact
from _scifact import (
    DATA,
    TENANTS,
    cached_vectors,
    exact_nearest,
    load_corpus,
    memory_vectors,
    read_qrels,
    tenant_of,
)

from retrieval.embedding.models import SentenceTransformerEmbedder


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
