"""The ONNX Runtime backend gives PyTorch's vectors; what it cannot run, PyTorch runs."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from retrieval.embedding.models import (
    DEFAULT_MODEL_ID,
    SentenceTransformerEmbedder,
    default_model_path,
)
from retrieval.embedding.onnx_model import (
    OnnxPlan,
    default_cache_dir,
    exported_model,
    model_digest,
    onnx_support,
    quantized_model,
)
from retrieval.errors import ConfigurationError
from retrieval.memory.config import WriteConfig

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "scifact_sample.json"


def _texts() -> list[str]:
    sample = json.loads(SAMPLE.read_text(encoding="utf-8"))
    titles, claims = sample["titles"][:60], sample["claims"]
    # Titles, claims, texts past the model's 256 tokens (truncated alike), and odd inputs: an
    # empty string, one character, non-Latin text.
    long_texts = [" ".join(sample["titles"][start : start + 25]) for start in range(100, 225, 25)]
    return [*titles, *claims, *long_texts, "", "x", "Größenordnung 数据库 база данных"]


def _embed_by_torch(
    embedder: SentenceTransformerEmbedder, texts: list[str]
) -> np.ndarray[Any, Any]:
    """``texts`` embedded by sentence-transformers in two calls, those past the model's 256
    tokens apart: its batches of 64 are padded to their longest text, and one of both would
    pad every title to 256 tokens (the same vectors, several times the time). The ONNX
    embedder cuts its batches by length itself (``length_batches``)."""
    long = [len(text) > 1000 for text in texts]
    vectors = np.empty((len(texts), 384), dtype=np.float32)
    for wanted in (False, True):
        rows = [row for row, is_long in enumerate(long) if is_long is wanted]
        vectors[rows] = embedder.embed([texts[row] for row in rows])
    return vectors


def test_onnx_and_pytorch_give_the_same_vectors(embedder: SentenceTransformerEmbedder) -> None:
    texts = _texts()
    onnx = embedder.embed(texts)  # one call: titles, claims and long texts mixed
    assert embedder.backend == "onnx"
    torch = SentenceTransformerEmbedder(backend="torch")
    reference = _embed_by_torch(torch, texts)
    assert torch.backend == "torch"
    cosine = (onnx * reference).sum(axis=1)
    assert cosine.min() >= 0.999, texts[int(cosine.argmin())]
    assert np.allclose(np.linalg.norm(onnx, axis=1), 1.0, atol=1e-5)
    assert embedder.model_id == torch.model_id == DEFAULT_MODEL_ID  # interchangeable rows
    # The order of the output is the order of the input, whatever the batches were.
    single = np.vstack([embedder.embed([text]) for text in texts[:5]])
    assert np.allclose(single, onnx[:5], atol=1e-5)


def test_the_export_is_made_once_and_reused(embedder: SentenceTransformerEmbedder) -> None:
    embedder.embed(["warm"])
    plan = onnx_support(default_model_path())
    assert isinstance(plan, OnnxPlan)
    path = exported_model(plan, default_cache_dir())
    made = path.stat().st_mtime_ns
    again = SentenceTransformerEmbedder()
    again.embed(["another process would find the same file"])
    assert exported_model(plan, default_cache_dir()) == path
    assert path.stat().st_mtime_ns == made


def test_every_environment_with_the_model_shares_one_export(tmp_path: Path) -> None:
    # The model's files installed elsewhere (another virtual environment, a later mtime) name
    # the same file; other weights, or another configuration, another.
    installed = default_model_path()
    elsewhere = tmp_path / "venv2" / "model"
    shutil.copytree(installed, elsewhere)
    assert model_digest(elsewhere) == model_digest(installed)
    config = elsewhere / "config.json"
    config.write_text(config.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    assert model_digest(elsewhere) != model_digest(installed)


def test_the_int8_model_is_made_once_quietly_and_gives_vectors_close_to_the_model(
    embedder: SentenceTransformerEmbedder,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    texts = _texts()
    reference = embedder.embed(texts)
    plan = onnx_support(default_model_path())
    assert isinstance(plan, OnnxPlan)
    exported = exported_model(plan, default_cache_dir())
    # A cache of this test's own that holds the export: the int8 model is made in it.
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    copied = default_cache_dir() / "onnx" / exported.name
    copied.parent.mkdir(parents=True)
    shutil.copyfile(exported, copied)
    root = logging.getLogger()
    handlers, filters = list(root.handlers), list(root.filters)
    int8 = SentenceTransformerEmbedder(backend="onnx-int8")
    with caplog.at_level(logging.INFO):
        vectors = int8.embed(texts)
    said = [record.getMessage() for record in caplog.records if record.levelno >= logging.WARNING]
    assert len(said) == 1 and said[0].startswith("quantizing"), said
    assert root.handlers == handlers and root.filters == filters  # the app's logging as it was
    quantized = quantized_model(copied)
    assert quantized == copied.with_suffix(".int8.onnx")
    assert quantized.stat().st_size < exported.stat().st_size / 3
    assert int8.backend == "onnx-int8" and int8.model_id == embedder.model_id
    cosine = (vectors * reference).sum(axis=1)
    # On SciFact's abstracts: mean 0.993 (benchmarks/writing/int8_embedder.py). Close to the
    # model's vectors, not equal to them: the weights are quantized.
    assert cosine.min() >= 0.95, texts[int(cosine.argmin())]
    assert 0.985 <= cosine.mean() < 0.9999
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    made = quantized.stat().st_mtime_ns
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        SentenceTransformerEmbedder(backend="onnx-int8").embed(["found, not made again"])
    assert quantized.stat().st_mtime_ns == made and not caplog.records


def test_a_model_the_backend_cannot_run_is_named_and_run_by_pytorch(tmp_path: Path) -> None:
    model = tmp_path / "model"
    shutil.copytree(
        default_model_path(), model, ignore=shutil.ignore_patterns("*.safetensors", "*.bin")
    )
    assert isinstance(onnx_support(model), OnnxPlan)
    pooling = model / "1_Pooling" / "config.json"
    settings = json.loads(pooling.read_text())
    pooling.write_text(
        json.dumps({**settings, "pooling_mode_mean_tokens": False, "pooling_mode_cls_token": True})
    )
    assert onnx_support(model) == "its pooling is not the mean of the tokens"
    (model / "tokenizer.json").unlink()
    pooling.write_text(json.dumps(settings))
    assert "tokenizer.json" in str(onnx_support(model))
    assert "could not be read" in str(onnx_support(tmp_path))
    # A named (not local) model goes to PyTorch; so does the torch setting.
    assert WriteConfig.from_env({"RETRIEVAL_EMBEDDER_BACKEND": "torch"}).embedder_backend == (
        "torch"
    )
    with pytest.raises(ConfigurationError, match="'tf' is not one of onnx, onnx-int8, torch"):
        WriteConfig.from_env({"RETRIEVAL_EMBEDDER_BACKEND": "tf"})
    with pytest.raises(ConfigurationError, match="backend must be one of"):
        SentenceTransformerEmbedder(backend="tf")  # type: ignore[arg-type]


@pytest.mark.slow
def test_the_first_export_says_one_line_and_shows_no_progress_bar(tmp_path: Path) -> None:
    script = (
        "import logging; logging.basicConfig(format='%(levelname)s %(name)s: %(message)s')\n"
        "from retrieval.embedding.models import SentenceTransformerEmbedder\n"
        "SentenceTransformerEmbedder().embed(['first use'])\n"
    )
    ran = subprocess.run(
        [sys.executable, "-c", script],
        env={**os.environ, "XDG_CACHE_HOME": str(tmp_path), "HF_HUB_OFFLINE": "1"},
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert ran.returncode == 0, ran.stderr
    lines = [line for line in ran.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "exporting" in lines[0], ran.stderr
    assert "Loading weights" not in ran.stderr
