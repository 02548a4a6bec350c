"""Embedding batches that mix lengths: batches no text more than doubles in, against one padded
batch of 64.

The ONNX embedder sorts a call's texts by length and pads each batch to its longest text. With
batches of 64 texts (sentence-transformers' way, the embedder's before), one batch that holds a
few texts of the model's full 256 tokens pads every short text beside them to 256 as well. The
product now cuts a batch where a text has fewer than half the tokens of the batch's longest
(``retrieval.embedding.onnx_model.length_batches``). Both run here on one loaded model, the
same tokens and the same ONNX session, paired: each round runs the two ways one after the other,
in alternating order, on calls of 64 texts: SciFact titles with 0, 2, 8 or 32 whole abstracts
(most past 256 tokens, truncated alike) mixed in, and abstracts alone. Reports the median
milliseconds per call of each way, their ratio, and the largest difference of the vectors.

Usage: python benchmarks/writing/mixed_lengths.py [--rounds 7]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the shared _common, _scifact
from _common import add_output, timed_ms, write_result
from _scifact import CORPUS

from retrieval.embedding.models import SentenceTransformerEmbedder
from retrieval.embedding.onnx_model import OnnxSentenceModel

CALL = 64  # texts per call, the embedder's batch size
LONG = (0, 2, 8, 32)  # abstracts among the call's texts


def padded_by_64(model: OnnxSentenceModel, texts: list[str]) -> np.ndarray[Any, Any]:
    """The embedder's batches before: sorted by characters, longest first, 64 a batch, each
    padded to its longest text."""
    encodings = model._tokenizer.encode_batch(texts)
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
    vectors = np.empty((len(texts), model.dim), dtype=np.float32)
    for start in range(0, len(texts), CALL):
        chosen = order[start : start + CALL]
        vectors[chosen] = model._batch([encodings[i] for i in chosen])
    return vectors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7, help="paired rounds per workload")
    add_output(parser)
    args = parser.parse_args()
    docs = [json.loads(line) for line in CORPUS.open(encoding="utf-8")]
    rng = random.Random(7)
    titles = [doc["title"] for doc in docs]
    abstracts = [doc["text"] for doc in docs if len(doc["text"]) > 1500]
    embedder = SentenceTransformerEmbedder(backend="onnx")
    embedder.embed(["load"])
    model = embedder._loaded()
    assert isinstance(model, OnnxSentenceModel)
    workloads = {f"{CALL - n} titles, {n} abstracts": n for n in LONG}
    workloads[f"{CALL} abstracts"] = CALL
    results: dict[str, Any] = {}
    for name, long in workloads.items():
        times: dict[str, list[float]] = {"padded by 64": [], "length batches": []}
        difference = 0.0
        for round_ in range(args.rounds):
            texts = rng.sample(titles, CALL - long) + rng.sample(abstracts, long)
            rng.shuffle(texts)
            ways = [("padded by 64", padded_by_64), ("length batches", _product)]
            if round_ % 2:
                ways.reverse()
            vectors = {}
            for way, run in ways:
                vectors[way], ms = timed_ms(run, model, texts)
                times[way].append(ms)
            gap = np.abs(vectors["padded by 64"] - vectors["length batches"]).max()
            difference = max(difference, float(gap))
        before = statistics.median(times["padded by 64"])
        after = statistics.median(times["length batches"])
        results[name] = {
            "padded_by_64_ms": round(before, 1),
            "length_batches_ms": round(after, 1),
            "ratio": round(after / before, 3),
            "max_vector_difference": difference,
        }
        print(f"{name}: {before:.0f} ms -> {after:.0f} ms ({after / before:.2f}x), "
              f"vectors within {difference:.1e}", flush=True)  # fmt: skip
    write_result("mixed-lengths", results, args)


def _product(model: OnnxSentenceModel, texts: list[str]) -> np.ndarray[Any, Any]:
    return model.encode(texts, CALL)


if __name__ == "__main__":
    main()
