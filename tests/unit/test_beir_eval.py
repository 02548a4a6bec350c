"""The evaluation harness's metrics and fusions, on rankings small enough to check by hand."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "quality" / "beir_eval.py"
sys.path.insert(0, str(_PATH.parents[1]))  # its shared modules (_common, _scifact)
_SPEC = importlib.util.spec_from_file_location("beir_eval", _PATH)
assert _SPEC is not None and _SPEC.loader is not None
beir_eval = importlib.util.module_from_spec(_SPEC)
sys.modules["beir_eval"] = beir_eval
_SPEC.loader.exec_module(beir_eval)


def test_ndcg_and_recall_follow_beirs_definitions() -> None:
    qrels = {"q1": {"a": 1, "b": 1}, "q2": {"c": 2}}
    run = {
        "q1": [("x", 3.0), ("a", 2.0), ("y", 1.0)],  # one of two relevant, at rank 2
        "q2": [("c", 1.0)],  # the only relevant one, first
    }
    metrics = beir_eval.evaluate(run, qrels)
    q1 = (1 / math.log2(3)) / (1 / math.log2(2) + 1 / math.log2(3))
    assert metrics["ndcg@10"] == pytest.approx((q1 + 1.0) / 2)
    assert metrics["recall@10"] == pytest.approx((0.5 + 1.0) / 2)
    assert metrics["recall@100"] == pytest.approx(0.75)


def test_fusions_rank_documents_both_channels_like() -> None:
    bm25 = [("a", 9.0), ("b", 5.0), ("c", 1.0)]
    dense = [("b", 0.6), ("d", 0.5), ("a", 0.4)]
    rrf = beir_eval.fuse_rrf(bm25, dense)
    assert [doc for doc, _ in rrf][:2] in (["a", "b"], ["b", "a"])
    assert all(0 <= score <= 1 for _, score in rrf)
    convex = dict(beir_eval.fuse_convex(bm25, dense))
    assert convex["a"] == pytest.approx(0.5 * 1.0 + 0.5 * 0.0)
    assert convex["b"] == pytest.approx(0.5 * 0.5 + 0.5 * 1.0)
    assert dict(beir_eval.fuse_max(bm25, dense))["d"] == pytest.approx(0.5)
    cascade = dict(beir_eval.fuse_cascade(bm25, dense))
    assert cascade["a"] == 1.0  # BM25 normalized 1.0 >= 0.7
    assert cascade["b"] == 1.0  # BM25 0.5 < 0.7: the dense score, 1.0
