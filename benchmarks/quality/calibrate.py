"""Calibrate the dense relevance, the semantic cut-off and the threshold on labelled data.

For each (query, memory) pair of a labelled set, the L2 distance all-MiniLM-L6-v2 puts
between them; then, for a grid of L2 cut-offs, the share of relevant pairs kept and of
unrelated pairs dropped. Two labelled sets:

* ``tests/data/calibration.json``: an agent's memories and questions, labelled by hand, and
  pairs of paraphrases (texts saying the same thing in other words);
* BEIR SciFact test: each claim against its relevant abstracts and against abstracts drawn at
  random (``--scifact-negatives`` per claim); abstracts are embedded once and cached.

It also gives the model's dense-relevance calibration (``retrieval.embedding.calibration``): the
distance where relevance is 0 (the median of the unrelated pairs of both sets) and where it is
1 (the median of the paraphrase pairs), and the relevance each set's pairs get with it.

Questions (the fixture's queries, SciFact's claims, the first text of each paraphrase pair) are
embedded on a model's query side, stored texts on its passage side (the same for MiniLM). The
cut-offs are those of all-MiniLM-L6-v2 and, for another model, the distances at the same
relevance, so both models' gates can be compared at equal footing.

Usage: python benchmarks/quality/calibrate.py [--model e5-small] [--scifact-negatives 5]
       [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the shared _common, _scifact
from _common import add_output, write_result
from _scifact import DATA

from retrieval.embedding.calibration import CALIBRATIONS, DenseCalibration
from retrieval.embedding.models import DEFAULT_MODEL_ID, Embedder, embed_side, make_embedder

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "data" / "calibration.json"
CUT_OFFS = (1.10, 1.15, 1.18, 1.20, 1.22, 1.25, 1.30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="embedding model (default: MiniLM)")
    parser.add_argument("--scifact-negatives", type=int, default=5)
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()))
    add_output(parser)
    args = parser.parse_args()
    embedder = make_embedder(args.model)
    results: dict[str, Any] = {}
    fixture = fixture_pairs(embedder)
    scifact = scifact_pairs(embedder, args.scifact_negatives, args.cache)
    paraphrases = paraphrase_distances(embedder)
    unrelated = np.concatenate([fixture[1], scifact[1]])
    calibration = DenseCalibration(
        model_id=embedder.model_id,
        unrelated_distance=round(float(np.median(unrelated)), 3),
        paraphrase_distance=round(float(np.median(paraphrases)), 3),
    )
    results["dense_calibration"] = {
        "model_id": calibration.model_id,
        "unrelated_distance": calibration.unrelated_distance,
        "paraphrase_distance": calibration.paraphrase_distance,
        "unrelated_pairs": len(unrelated),
        "paraphrase_pairs": len(paraphrases),
        "paraphrase_relevance_percentiles_5_25_50_75_95": _percentiles(
            calibration.relevance(paraphrases)
        ),
    }
    cut_offs = _cut_offs(calibration)
    results["fixture"] = summarize(*fixture, calibration, cut_offs)
    results["scifact"] = summarize(*scifact, calibration, cut_offs)
    variant = (
        None
        if embedder.model_id == DEFAULT_MODEL_ID
        else embedder.model_id.split("/")[-1].split("@")[0]
    )
    write_result("calibration", results, args, variant=variant)


def _cut_offs(calibration: DenseCalibration) -> list[float]:
    """MiniLM's cut-offs, or the distances of the same relevance under ``calibration``."""
    minilm = CALIBRATIONS[DEFAULT_MODEL_ID]
    if calibration.model_id == DEFAULT_MODEL_ID:
        return list(CUT_OFFS)
    levels = minilm.relevance(np.array(CUT_OFFS))
    return [
        round(float(np.sqrt(calibration.zero_squared - level * calibration.span_squared)), 3)
        for level in levels
    ]


def fixture_pairs(embedder: Embedder) -> tuple[np.ndarray, np.ndarray]:
    data = json.loads(FIXTURE.read_text())
    memories = embedder.embed(data["memories"])
    queries = embed_side(embedder, [q["text"] for q in data["queries"]], "query")
    relevant, unrelated = [], []
    for query, vector in zip(data["queries"], queries, strict=True):
        distances = np.linalg.norm(memories - vector, axis=1)
        for index, distance in enumerate(distances):
            (relevant if index in query["relevant"] else unrelated).append(distance)
    return np.array(relevant), np.array(unrelated)


def paraphrase_distances(embedder: Embedder) -> np.ndarray:
    pairs = json.loads(FIXTURE.read_text())["paraphrases"]
    left = embed_side(embedder, [a for a, _ in pairs], "query")
    right = embedder.embed([b for _, b in pairs])
    return np.asarray(np.linalg.norm(left - right, axis=1))


def scifact_pairs(embedder: Embedder, negatives: int, cache: Path) -> tuple[np.ndarray, np.ndarray]:
    docs = {d["_id"]: d for d in map(json.loads, (DATA / "corpus.jsonl").open())}
    claims = {q["_id"]: q["text"] for q in map(json.loads, (DATA / "queries.jsonl").open())}
    qrels: dict[str, set[str]] = {}
    for line in list((DATA / "qrels" / "test.tsv").open())[1:]:
        query_id, doc_id, _score = line.split("\t")
        qrels.setdefault(query_id, set()).add(doc_id)
    rng = random.Random(5)
    ids = sorted(docs)
    pairs = [
        (query_id, doc_id, doc_id in relevant)
        for query_id, relevant in sorted(qrels.items())
        for doc_id in sorted(relevant)
        + rng.sample([i for i in ids if i not in relevant], negatives)
    ]
    wanted = sorted({doc_id for _, doc_id, _ in pairs})
    vectors = _cached_vectors(embedder, [_doc_text(docs[i]) for i in wanted], cache)
    doc_vector = dict(zip(wanted, vectors, strict=True))
    query_ids = sorted(qrels)
    claim_vectors = embed_side(embedder, [claims[q] for q in query_ids], "query")
    query_vector = dict(zip(query_ids, claim_vectors, strict=True))
    relevant_d, unrelated_d = [], []
    for query_id, doc_id, is_relevant in pairs:
        distance = float(np.linalg.norm(doc_vector[doc_id] - query_vector[query_id]))
        (relevant_d if is_relevant else unrelated_d).append(distance)
    return np.array(relevant_d), np.array(unrelated_d)


def _doc_text(doc: dict[str, Any]) -> str:
    return f"{doc['title']}. {doc['text']}"


def _cached_vectors(embedder: Embedder, texts: list[str], cache: Path) -> Any:
    import hashlib

    key = hashlib.sha256("\n".join([embedder.model_id, *texts]).encode()).hexdigest()[:16]
    path = cache / f"calibrate-scifact-{key}.npy"
    if path.exists():
        return np.load(path)
    print(f"embedding {len(texts)} SciFact abstracts once (cached in {path})", flush=True)
    vectors = embedder.embed(texts)
    np.save(path, vectors)
    return vectors


def _percentiles(values: np.ndarray) -> list[float]:
    return [round(float(v), 3) for v in np.percentile(values, [5, 25, 50, 75, 95])]


def summarize(
    relevant: np.ndarray,
    unrelated: np.ndarray,
    calibration: DenseCalibration,
    cut_offs: list[float],
) -> dict[str, Any]:
    return {
        "relevant_pairs": len(relevant),
        "unrelated_pairs": len(unrelated),
        "distance_percentiles_5_25_50_75_95": {
            "relevant": _percentiles(relevant),
            "unrelated": _percentiles(unrelated),
        },
        "inverse_distance_percentiles_5_25_50_75_95": {
            "relevant": _percentiles(1.0 / (1.0 + relevant)),
            "unrelated": _percentiles(1.0 / (1.0 + unrelated)),
        },
        "relevance_percentiles_5_25_50_75_95": {
            "relevant": _percentiles(calibration.relevance(relevant)),
            "unrelated": _percentiles(calibration.relevance(unrelated)),
        },
        "cut_offs": {
            f"{cut:.3f}": {
                "inverse_distance_at_cut": round(1 / (1 + cut), 4),
                "relevance_at_cut": round(float(calibration.relevance(np.array([cut]))[0]), 4),
                "relevant_kept": round(float(np.mean(relevant <= cut)), 3),
                "unrelated_dropped": round(float(np.mean(unrelated > cut)), 3),
            }
            for cut in cut_offs
        },
    }


if __name__ == "__main__":
    main()
