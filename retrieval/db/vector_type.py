"""The type of the stored embeddings: pgvector's ``vector`` (4-byte floats) or ``halfvec``
(2-byte floats), chosen when the schema is migrated (``RETRIEVAL_VECTOR_TYPE``).

A ``halfvec`` takes half the bytes in the table and in the HNSW graph, so twice the memories fit
in the same shared buffers; distances are computed on the rounded values. Queries need no change:
a ``vector`` parameter converts implicitly to ``halfvec`` where the column is one, and the HNSW
index answers either. What does change is the binary ``COPY`` format of the column
(:func:`retrieval.db.copy_rows.encode_vectors`) and the index's operator class.
"""

from __future__ import annotations

from typing import Literal, get_args

from retrieval.errors import ConfigurationError

VectorType = Literal["vector", "halfvec"]
VECTOR_TYPES: tuple[VectorType, ...] = get_args(VectorType)


def require_vector_type(name: object) -> VectorType:
    """``name`` if it is a vector type this library stores, else a :class:`ConfigurationError`."""
    if name not in VECTOR_TYPES:
        raise ConfigurationError(
            f"vector_type {name!r} is not one of {', '.join(VECTOR_TYPES)} (RETRIEVAL_VECTOR_TYPE)"
        )
    return name


def operator_class(vector_type: VectorType) -> str:
    """The HNSW operator class of L2 distance for ``vector_type``."""
    return f"{vector_type}_l2_ops"
