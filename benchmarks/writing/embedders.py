"""The embedder's two backends side by side: ONNX Runtime against PyTorch, same model, same run.

all-MiniLM-L6-v2 from its bundled files, both backends loaded in this process. Quality: the
cosine similarity of the two backends' vectors for SciFact's 5,183 titles and ``--abstracts``
whole abstracts (long ones truncated to 256 tokens by both). Speed, paired so that both see
the same machine at the same moment (this machine's speed swings by 3x from one minute to the
next): each of the 300 claims embedded alone by one backend then the other (the order
alternating), and calls of 64 texts of similar length alternately (each backend batches them
its own way), for titles and for abstracts. Reports p50 of single queries, the sum and the
median per-batch ratio of the batches, and the time to load each model (the first ONNX load
exports the model once: run the script twice to see the load from the cache).

Usage: python benchmarks/writing/embedders.py [--abstracts 1000] [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the shared _common, _scifact
from _common import add_output, timed_ms, write_result
from _scifact import CORPUS, read_queries

from retrieval.embedding.models import SentenceTransformerEmbedder


def _embed_ms(embedder: SentenceTransformerEmbedder, texts: list[str]) -> float:
    return timed_ms(embedder.embed, texts)[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--abstracts", type=int, default=1000, help="abstracts compared")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of the paired timings")
    add_output(parser)
    args = parser.parse_args()
    docs = [json.loads(line) for line in CORPUS.open(encoding="utf-8")]
    titles = [doc["title"] for doc in docs]
    abstracts = [doc["text"] for doc in docs[: args.abstracts]]
    onnx = SentenceTransformerEmbedder(backend="onnx")
    torch = SentenceTransformerEmbedder(backend="torch")
    load_ms = {"onnx": _embed_ms(onnx, ["load"]), "torch": _embed_ms(torch, ["load"])}
    assert onnx.backend == "onnx" and torch.backend == "torch"

    quality: dict[str, Any] = {}
    for name, texts in (("titles", titles), ("abstracts", abstracts)):
        cosine = (onnx.embed(texts) * torch.embed(texts)).sum(axis=1)
        quality[name] = {
            "texts": len(texts),
            "cosine_min": float(cosine.min()),
            "cosine_mean": float(cosine.mean()),
        }

    queries = read_queries()
    single: dict[str, list[float]] = {"onnx": [], "torch": []}
    batches: dict[str, dict[str, list[float]]] = {}
    for round_ in range(args.rounds):
        for number, query in enumerate(queries):
            order = (onnx, torch) if (number + round_) % 2 == 0 else (torch, onnx)
            for embedder in order:
                single[embedder.backend].append(_embed_ms(embedder, [query]))
        for name, texts in (("titles", titles[:2048]), ("abstracts", abstracts[:512])):
            ordered = sorted(texts, key=len)
            found = batches.setdefault(name, {"onnx": [], "torch": []})
            for start in range(0, len(ordered), 64):
                batch = ordered[start : start + 64]
                for embedder in (onnx, torch) if start % 128 == 0 else (torch, onnx):
                    found[embedder.backend].append(_embed_ms(embedder, batch))

    results: dict[str, Any] = {
        "model": onnx.model_id,
        "load_ms": {name: round(value, 1) for name, value in load_ms.items()},
        "quality": quality,
        "single_query_ms": {
            name: {"p50": statistics.median(times), "p95": float(np.percentile(times, 95))}
            for name, times in single.items()
        },
        "single_query_speedup_p50": statistics.median(single["torch"])
        / statistics.median(single["onnx"]),
        "batches_of_64": {
            name: {
                "onnx_s": sum(times["onnx"]) / 1000,
                "torch_s": sum(times["torch"]) / 1000,
                "median_batch_speedup": statistics.median(
                    t / o for t, o in zip(times["torch"], times["onnx"], strict=True)
                ),
            }
            for name, times in batches.items()
        },
    }
    write_result("embedders", results, args)


if __name__ == "__main__":
    main()
