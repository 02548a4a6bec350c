"""Calibrate similar()'s threshold on labelled pairs of memories.

``tests/data/near_duplicates.jsonl`` holds 320 pairs built from 80 facts of a team's memory
(infrastructure, schedules, people, preferences): each fact against a paraphrase and against an
update of its value (both "near": the caller should see them, to leave or to supersede), against
a related but different fact of the same subject and against another fact of the set (both
"not near"). For each pair, the cosine similarity of the two texts' vectors, as ``similar()``
computes it (``1 - (a <=> b)`` in pgvector; the same numbers here with numpy).

For each threshold of a grid: precision and recall of "near" (shown when similarity >=
threshold), by relation too. Two-fold: the threshold that maximises F1 on facts 0-39 is scored
on facts 40-79 and the other way round (held-out figures); the default is the threshold that
maximises F1 on all 80.

Versions (``newer_versions_first``): which pairs the read path would take for two versions of
one fact, ranking the older under the newer. A pair is taken at cosine similarity
``version_similarity`` or more, or from 0.5 on when the texts share ``version_shared_words`` of
their lexemes (PostgreSQL's ``to_tsvector``, as the statement reads them, on an embedded server):
the share of each relation taken, for a grid of both settings, on all the facts and on each half.
A related pair taken is a cost (a different fact ranked under another); the defaults are the rule
that takes the most updates while taking at most 5% of the related pairs.

``--model`` measures another embedding model (``e5-small``): its versions grid is MiniLM's carried
to the same relevance (``retrieval.embedding.calibration``) and on by 0.01 steps, "from 0.5 on"
its own ``version_words_similarity``.

Usage: python benchmarks/quality/near_duplicates.py [--model NAME] [--json PATH] [--no-save]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the shared _common
from _common import add_output, write_result

from retrieval.embedding.calibration import CALIBRATIONS, DEFAULT_MODEL_ID, calibration_for
from retrieval.embedding.models import Embedder, make_embedder

ROOT = Path(__file__).resolve().parents[2]
PAIRS = ROOT / "tests" / "data" / "near_duplicates.jsonl"
# Facts from this one on have updates written as people write them ("moved to", "is X now",
# "no longer", a new value with a new place), terser than the first 80's.
WRITTEN_AS_PEOPLE_DO = 80
GRID = tuple(round(0.40 + 0.01 * step, 2) for step in range(59))  # 0.40 .. 0.98
VERSION_GRID = (0.60, 0.65, 0.70, 0.75)  # MiniLM's


def similarities(pairs: Sequence[dict[str, Any]], embedder: Embedder) -> np.ndarray:
    """The cosine similarity of each pair's texts (both stored texts)."""
    texts = sorted({p["a"] for p in pairs} | {p["b"] for p in pairs})
    vectors = dict(zip(texts, embedder.embed(texts), strict=True))

    def cosine(a: str, b: str) -> float:
        x, y = vectors[a], vectors[b]
        return float(np.dot(x, y) / (np.linalg.norm(x) * np.linalg.norm(y)))

    return np.array([cosine(p["a"], p["b"]) for p in pairs])


def scored(pairs: Sequence[dict[str, Any]], sims: np.ndarray, threshold: float) -> dict[str, Any]:
    """Precision, recall and F1 of "near" at ``threshold``, and the share shown per relation."""
    near = np.array([p["near"] for p in pairs])
    shown = sims >= threshold
    true_positive = int(np.sum(shown & near))
    precision = true_positive / max(int(np.sum(shown)), 1)
    recall = true_positive / max(int(np.sum(near)), 1)
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    relations = sorted({p["relation"] for p in pairs})
    shown_by = {
        relation: round(
            float(
                np.mean([s for p, s in zip(pairs, shown, strict=True) if p["relation"] == relation])
            ),
            3,
        )
        for relation in relations
    }
    return {
        "threshold": threshold,
        "precision": round(precision, 3),
        "recall": round(recall, 3),
        "f1": round(f1, 3),
        "shown_by_relation": shown_by,
    }


def best(pairs: Sequence[dict[str, Any]], sims: np.ndarray) -> dict[str, Any]:
    """The grid's threshold with the highest F1 (the higher threshold on a tie)."""
    return max(
        (scored(pairs, sims, threshold) for threshold in GRID),
        key=lambda row: (row["f1"], row["threshold"]),
    )


def logistic_fit(sims: np.ndarray, near: np.ndarray) -> tuple[float, float]:
    """``(intercept, slope)`` of the logistic curve of "near" against similarity, by maximum
    likelihood (Newton's method): how likely a pair at a similarity is the same fact."""
    x = np.column_stack([np.ones_like(sims), sims])
    weights = np.zeros(2)
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-x @ weights))
        gradient = x.T @ (near - p)
        hessian = x.T @ (x * (p * (1.0 - p))[:, None])
        step = np.linalg.solve(hessian, gradient)
        weights += step
        if np.max(np.abs(step)) < 1e-10:
            break
    return float(weights[0]), float(weights[1])


def likelihood_check(
    pairs: Sequence[dict[str, Any]], sims: np.ndarray, fit: tuple[float, float]
) -> list[dict[str, Any]]:
    """By band of similarity: the pairs, the share of them that are near, and the curve's mean
    likelihood (a curve that says what it means agrees with the share)."""
    near = np.array([p["near"] for p in pairs], dtype=float)
    likely = 1.0 / (1.0 + np.exp(-(fit[0] + fit[1] * sims)))
    bands = []
    for low in (0.3, 0.4, 0.5, 0.6, 0.7, 0.8):
        inside = (sims >= low) & (sims < low + 0.1)
        if inside.any():
            bands.append(
                {
                    "similarity": f"{low:.1f}-{low + 0.1:.1f}",
                    "pairs": int(inside.sum()),
                    "near_share": round(float(near[inside].mean()), 3),
                    "mean_likelihood": round(float(likely[inside].mean()), 3),
                }
            )
    return bands


def lexeme_shares(pairs: Sequence[dict[str, Any]]) -> np.ndarray:
    """The share of their lexemes (of both texts' together) each pair's texts hold in common,
    as the read path's ``mem_newer`` counts it (``to_tsvector('english', text)``)."""
    from _server import embedded
    from sqlalchemy import create_engine, text

    server = embedded(None, prefix="rtv-near-")
    engine = create_engine(server.url)
    texts = sorted({p["a"] for p in pairs} | {p["b"] for p in pairs})
    with engine.connect() as connection:
        lexemes = {
            t: set(
                connection.execute(
                    text("SELECT tsvector_to_array(to_tsvector('english', :t))"), {"t": t}
                ).scalar_one()
            )
            for t in texts
        }
    engine.dispose()
    return np.array(
        [
            len(lexemes[p["a"]] & lexemes[p["b"]]) / max(1, len(lexemes[p["a"]] | lexemes[p["b"]]))
            for p in pairs
        ]
    )


def versions_taken(
    pairs: Sequence[dict[str, Any]], sims: np.ndarray, shares: np.ndarray, model_id: str
) -> list[dict[str, Any]]:
    """For each rule of the grid: the share of each relation's pairs taken for versions, on all
    the facts, the even and the odd ones."""
    relation = np.array([p["relation"] for p in pairs])
    even = np.array([p["fact"] % 2 == 0 for p in pairs])
    calibration, minilm = calibration_for(model_id), CALIBRATIONS[DEFAULT_MODEL_ID]
    floor = calibration.thresholds.version_words_similarity
    grid = [round(calibration.cosine_at(minilm.level(v)), 3) for v in VERSION_GRID]
    if model_id != DEFAULT_MODEL_ID:  # and on to where it takes few related pairs
        grid += [round(grid[-1] + 0.01 * step, 3) for step in range(1, 9)]
    rows = []
    for similarity in grid:
        for words in (None, 0.4, 0.5, 0.6):
            taken = sims >= similarity
            if words is not None:
                taken |= (sims >= floor) & (shares >= words)
            row: dict[str, Any] = {"version_similarity": similarity, "version_shared_words": words}
            for name, part in (("all", np.ones_like(even)), ("even", even), ("odd", ~even)):
                row[name] = {
                    r: round(float(taken[part & (relation == r)].mean()), 3)
                    for r in ("paraphrase", "update", "related", "unrelated")
                }
            rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="embedding model (default: MiniLM)")
    add_output(parser)
    args = parser.parse_args()
    pairs = [json.loads(line) for line in PAIRS.read_text("utf-8").splitlines() if line.strip()]
    embedder = make_embedder(args.model)
    sims = similarities(pairs, embedder)
    folds = []
    for name, parity in (("even", 0), ("odd", 1)):  # calibrated on one half, scored on the other
        pick = [i for i, p in enumerate(pairs) if p["fact"] % 2 == parity]
        held = [i for i, p in enumerate(pairs) if p["fact"] % 2 != parity]
        chosen = best([pairs[i] for i in pick], sims[pick])["threshold"]
        folds.append(
            {
                "calibrated_on": f"the {name} facts",
                "threshold": chosen,
                "held_out": scored([pairs[i] for i in held], sims[held], chosen),
            }
        )
    written = [i for i, p in enumerate(pairs) if p["fact"] >= WRITTEN_AS_PEOPLE_DO]
    near = np.array([p["near"] for p in pairs], dtype=float)
    fit = logistic_fit(sims, near)
    held_fits = []
    for parity in (0, 1):  # the curve fitted on one half, checked on the other
        pick = np.array([p["fact"] % 2 == parity for p in pairs])
        half = logistic_fit(sims[pick], near[pick])
        held = [p for p, keep in zip(pairs, ~pick, strict=True) if keep]
        held_fits.append(likelihood_check(held, sims[~pick], half))
    by_relation = {
        relation: {
            "median": round(float(np.median([s for p, s in zip(pairs, sims, strict=True)
                                             if p["relation"] == relation])), 3),
            "min": round(float(min(s for p, s in zip(pairs, sims, strict=True)
                                   if p["relation"] == relation)), 3),
            "max": round(float(max(s for p, s in zip(pairs, sims, strict=True)
                                   if p["relation"] == relation)), 3),
        }
        for relation in ("paraphrase", "update", "related", "unrelated")
    }  # fmt: skip
    results = {
        "pairs": len(pairs),
        "similarity_by_relation": by_relation,
        "two_fold": folds,
        "chosen": best(pairs, sims),
        "grid": [scored(pairs, sims, threshold) for threshold in GRID[::5]],
        "written_as_people_do": best([pairs[i] for i in written], sims[written]),
        "same_fact_curve": {
            "intercept": round(fit[0], 3),
            "slope": round(fit[1], 3),
            "by_band": likelihood_check(pairs, sims, fit),
            "held_out_by_band": held_fits,
        },
    }
    results["versions"] = versions_taken(pairs, sims, lexeme_shares(pairs), embedder.model_id)
    model = embedder.model_id
    variant = None if model == DEFAULT_MODEL_ID else model.split("/")[-1].split("@")[0]
    write_result("near-duplicates", results, args, variant=variant)


if __name__ == "__main__":
    main()
