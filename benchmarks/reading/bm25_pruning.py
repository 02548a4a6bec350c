"""How the pruned BM25 channel would fare with other splits of the query's terms (a simulation).

The documents source scores the query's rare terms from all their postings and bounds the
common ones (:func:`retrieval.search.statement.bm25.bm25_ctes`): a term is common when more than
``bm25_common_share`` of the chunks hold it, and a common term can add at most
``idf * (k1 + 1)`` to a chunk (its term frequency taken as unbounded). On the 100,000 chunks of
``documents.py`` (schema ``bench_docs``, loaded there first) the rare terms' postings are most
of a query's time. This replays the channel's tiers in numpy on the real postings of the
SciFact claims' terms, for other splits:

* ``share S``: the channel as built, common above ``S`` of the chunks;
* ``share S, tf split``: as well, the common terms' postings with a term frequency of 2 or more
  are summed with the rare terms, so that a common term's bound covers only its postings with
  a term frequency of 1: ``idf * (k1 + 1) / (1 + k1 * (1 - b) + k1 * b * L / avgdl)``, ``L``
  the shortest chunk among them (a tighter bound, what an impact-split index would give).

Per split: how many claims each tier answers (1: the seed's top is proven; 2: the rows that
can still reach it are probed; 3: every posting is scored), the postings summed per claim, and
an estimated time from measured unit costs: summing a posting (``--sum-us``, 0.5 µs: read,
hash-aggregate and top-N, ``read_anatomy.py --parts postings``) and probing one chunk's
postings of one term, measured here (a seed's worth of chunks per common term, best of 3).

Usage: python benchmarks/reading/bm25_pruning.py --data-dir DIR [--queries 150] [--json PATH]
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the shared _common, _scifact
from _common import add_output, write_result
from _scifact import DOCUMENTS, TENANT, read_queries
from _server import add_data_dir, embedded

from retrieval.search.config import RetrievalConfig
from retrieval.search.statement.bm25 import PROBE_LIMIT, SEED

SCHEMA = DOCUMENTS.schema
Split = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray | None, float]]


@dataclass(frozen=True)
class Term:
    """One query term's postings: chunk ids, term frequencies, chunk lengths."""

    chunks: np.ndarray
    frequencies: np.ndarray
    lengths: np.ndarray


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_dir(parser, required=True, what="the data of a documents.py run")
    parser.add_argument("--queries", type=int, default=150)
    parser.add_argument("--sum-us", type=float, default=0.5, help="µs to sum one posting")
    add_output(parser)
    args = parser.parse_args()

    url = embedded(args.data_dir).psycopg_url
    config = RetrievalConfig()
    with psycopg.connect(url, autocommit=True) as connection:
        chunks, total = connection.execute(
            f"SELECT chunks, total_terms FROM {SCHEMA}.document_corpus WHERE tenant_id = %s",
            (TENANT,),
        ).fetchone() or (0, 0)
        if not chunks:
            raise SystemExit(f"no chunks in {SCHEMA}: run benchmarks/reading/documents.py first")
        claims = [_terms(connection, q, config) for q in read_queries()[: args.queries]]
        probe_us = _probe_cost(connection, config.candidate_pool * SEED)
    model = _Model(chunks, total / chunks, config, args.sum_us, probe_us)
    splits: dict[str, tuple[float, Split]] = {}
    for share in (0.15, 0.10, 0.05, 0.02):
        splits[f"share {share}"] = (share, _unsplit)
        splits[f"share {share}, tf split"] = (share, model.tf_split)
    results: dict[str, Any] = {
        "claims": len(claims),
        "chunks": chunks,
        "sum_us": args.sum_us,
        "probe_us": probe_us,
        "splits": {},
    }
    for name, (share, split) in splits.items():
        outcome = [model.replay(terms, share, split) for terms in claims if terms]
        tiers = {tier: sum(1 for o in outcome if o["tier"] == tier) for tier in (1, 2, 3)}
        results["splits"][name] = {
            "tiers": tiers,
            "postings_summed_p50": statistics.median(o["summed"] for o in outcome),
            "estimated_ms_p50": statistics.median(o["ms"] for o in outcome),
            "estimated_ms_mean": statistics.mean(o["ms"] for o in outcome),
        }
        row = results["splits"][name]
        print(
            f"{name:24} tiers {tiers[1]:3} / {tiers[2]:3} / {tiers[3]:3}   postings summed p50 "
            f"{row['postings_summed_p50']:8.0f}   estimated p50 {row['estimated_ms_p50']:5.1f} ms"
            f"   mean {row['estimated_ms_mean']:5.1f} ms"
        )
    print(f"probe of one chunk's postings of one term: {probe_us:.2f} µs")
    write_result("bm25-pruning", results, args)


def _terms(connection: psycopg.Connection[Any], query: str, config: RetrievalConfig) -> list[Term]:
    lexemes = [
        row[0]
        for row in connection.execute(
            "SELECT DISTINCT lexeme FROM unnest(to_tsvector(%s::regconfig, %s))",
            (config.text_search_config, query),
        )
    ]
    terms = []
    for lexeme in lexemes:
        rows = connection.execute(
            f"SELECT chunk_id, term_frequency, chunk_length FROM {SCHEMA}.document_terms "
            "WHERE tenant_id = %s AND term = %s",
            (TENANT, lexeme),
        ).fetchall()
        if rows:
            postings = np.array(rows, dtype=np.int64)
            terms.append(Term(postings[:, 0], postings[:, 1], postings[:, 2]))
    return terms


def _probe_cost(connection: psycopg.Connection[Any], seed: int) -> float:
    # µs per (chunk, term) of probing a seed's chunks for a common term, as the channel does
    # (one index scan per term with ``chunk_id = ANY(...)``), over the 20 most frequent terms.
    terms = connection.execute(
        f"SELECT term FROM {SCHEMA}.document_term_stats WHERE tenant_id = %s "
        "ORDER BY document_frequency DESC LIMIT 20",
        (TENANT,),
    ).fetchall()
    ids = [row[0] for row in connection.execute(f"SELECT id FROM {SCHEMA}.document_chunks")]
    random.seed(7)
    costs = []
    for (term,) in terms:
        chosen = sorted(random.sample(ids, seed))
        best = math.inf
        for _ in range(3):
            started = time.perf_counter()
            connection.execute(
                f"SELECT count(*) FROM {SCHEMA}.document_terms WHERE tenant_id = %s "
                "AND term = %s AND chunk_id = ANY(%s)",
                (TENANT, term, chosen),
            ).fetchone()
            best = min(best, time.perf_counter() - started)
        costs.append(best * 1e6 / seed)
    return statistics.median(costs)


def _unsplit(frequencies: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray | None, float]:
    return None, 1.0


class _Model:
    """The channel's tiers (``bm25_ctes``) replayed on one claim's postings."""

    def __init__(
        self, chunks: int, average: float, config: RetrievalConfig, sum_us: float, probe_us: float
    ) -> None:
        self.chunks, self.k1, self.b = chunks, config.bm25_k1, config.bm25_b
        self.base = self.k1 * (1.0 - self.b)
        self.per_length = self.k1 * self.b / average
        self.candidates = config.candidate_pool
        self.sum_us, self.probe_us = sum_us, probe_us

    def tf_split(self, frequencies: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, float]:
        summed = frequencies >= 2
        single = lengths[~summed]
        shortest = float(single.min()) if single.size else 0.0
        return summed, 1.0 / (1.0 + self.base + self.per_length * shortest)

    def replay(self, terms: list[Term], share: float, split: Split) -> dict[str, float]:
        size = 1 + max(int(t.chunks.max()) for t in terms)
        exact, partial = np.zeros(size), np.zeros(size)
        found = np.zeros(size, dtype=bool)
        rest, common, summed, postings = 0.0, 0, 0, 0
        for term in terms:
            frequency = len(term.chunks)
            idf_k1 = math.log(1.0 + (self.chunks - frequency + 0.5) / (frequency + 0.5)) * (
                self.k1 + 1.0
            )
            tf = term.frequencies.astype(float)
            contribution = idf_k1 * tf / (tf + self.base + self.per_length * term.lengths)
            np.add.at(exact, term.chunks, contribution)
            postings += frequency
            if frequency <= share * self.chunks:
                mask: np.ndarray | None = np.ones(frequency, dtype=bool)
                bound = 0.0
            else:
                common += 1
                mask, factor = split(term.frequencies, term.lengths)
                bound = idf_k1 * factor
            rest += bound
            if mask is not None:
                np.add.at(partial, term.chunks[mask], contribution[mask])
                found[term.chunks[mask]] = True
                summed += int(mask.sum())
        seed_size = SEED * self.candidates
        rows = np.nonzero(found)[0]
        ranked = rows[np.lexsort((rows, -partial[rows]))]
        seed = ranked[:seed_size]
        best = np.sort(exact[seed])[::-1]
        theta = float(best[self.candidates - 1]) if len(best) >= self.candidates else -math.inf
        outside = float(partial[ranked[seed_size]]) if len(ranked) > seed_size else None
        probes = len(seed) * common
        if (rest == 0.0 and outside is None) or (
            theta > rest and (outside is None or outside + rest < theta)
        ):
            tier = 1
        else:
            reach = int((partial[rows] + rest >= theta).sum())
            if theta > rest and reach <= PROBE_LIMIT:
                tier, probes = 2, probes + reach * common
            else:
                tier, summed = 3, summed + postings
        return {
            "tier": tier,
            "summed": summed,
            "ms": (summed * self.sum_us + probes * self.probe_us) / 1000.0,
        }


if __name__ == "__main__":
    main()
