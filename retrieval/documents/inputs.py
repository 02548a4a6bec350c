"""A document as it is given to :class:`~retrieval.documents.store.DocumentStore`: its chunks,
what a write of it did, and the checks that refuse a bad one before anything is written."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from retrieval.arguments import aware_datetime, check_storable, check_tenant, json_text_problem
from retrieval.errors import ValidationError
from retrieval.memory.validation import checked_vector
from retrieval.search.prepare.query import check_query_length

# The longest document id (a path relative to its root, or the caller's own id).
MAX_DOC_ID_CHARS = 1024


@dataclass(frozen=True)
class ChunkInput:
    """One chunk of a document: its text, and where it sits (section, pages).

    ``embedding`` is optional: without it the store embeds ``text`` (through the hashed cache);
    with it, the vector must have the database's dimension and be finite. ``metadata`` (a JSON
    object) is the chunk's own, shown beside the document's; ``created_at`` (aware) is when its
    content was written, from which its recency counts (default: the document's).
    """

    text: str
    section_title: str | None = None
    page_start: int | None = None
    page_end: int | None = None
    embedding: Sequence[float] | npt.NDArray[Any] | None = field(
        default=None, repr=False, compare=False
    )
    metadata: Mapping[str, Any] = field(default_factory=dict)
    created_at: datetime | None = None


@dataclass(frozen=True)
class DocumentInput:
    """A document to store: its id in the tenant, its chunks in order, and what to keep of it.

    ``created_at`` (aware) is when the document was written, from which its chunks' recency
    counts (default: now, when it is stored).
    """

    tenant_id: str
    doc_id: str
    chunks: Sequence[ChunkInput]
    filename: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    created_at: datetime | None = None


@dataclass(frozen=True)
class DocumentWrite:
    """What :meth:`DocumentStore.add` did: ``added``, ``replaced`` or ``unchanged``."""

    document_id: int
    chunk_ids: tuple[int, ...]
    status: Literal["added", "replaced", "unchanged"]


def content_digest(document: DocumentInput) -> bytes:
    """SHA-256 of what the chunks hold (texts, sections, pages, given embeddings), the filename
    and metadata."""
    payload = {
        "chunks": [
            [
                c.text,
                c.section_title,
                c.page_start,
                c.page_end,
                None if c.embedding is None else _vector_digest(c.embedding),
            ]
            for c in document.chunks
        ],
        "chunk_details": [[c.metadata, c.created_at] for c in document.chunks],
        "filename": document.filename,
        "metadata": document.metadata,
        "created_at": document.created_at,
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).digest()


def _vector_digest(vector: Sequence[float] | npt.NDArray[Any]) -> str:
    return hashlib.sha256(np.asarray(vector, dtype=np.float32).tobytes()).hexdigest()


def validate_document(document: DocumentInput, max_chars: int, dim: int | None = None) -> None:
    """Raise :class:`ValidationError` if ``document`` cannot be stored as it is.

    ``dim`` is the database's vector dimension, to check given chunk embeddings against.
    """
    check_tenant(document.tenant_id)
    check_doc_id(document.doc_id)
    _check_storable("filename", document.filename, None)
    if not document.chunks:
        raise ValidationError(
            f"document {document.doc_id!r} has no chunk: give at least one", field="chunks"
        )
    for index, chunk in enumerate(document.chunks):
        if not isinstance(chunk.text, str) or not chunk.text.strip():
            raise ValidationError(f"chunk {index} is empty", item=index, field="text")
        _check_storable("text", chunk.text, index)
        _check_storable("section_title", chunk.section_title, index)
        if len(chunk.text) > max_chars:
            raise ValidationError(
                f"chunk {index} has {len(chunk.text)} characters, over the limit of {max_chars}",
                item=index,
                field="text",
            )
        if (chunk.page_start is None) != (chunk.page_end is None) or (
            chunk.page_start is not None
            and chunk.page_end is not None
            and chunk.page_end < chunk.page_start
        ):
            raise ValidationError(
                f"chunk {index} has pages {chunk.page_start}..{chunk.page_end}: give both, "
                "start <= end",
                item=index,
                field="pages",
            )
        if chunk.embedding is not None:
            if dim is None:
                raise ValidationError(
                    f"chunk {index} has an embedding but the database's dimension is unknown",
                    item=index,
                    field="embedding",
                )
            checked_vector(index, chunk.embedding, dim)
    _check_metadata(document.metadata, document.doc_id, None)
    aware_datetime("created_at", document.created_at)
    for index, chunk in enumerate(document.chunks):
        _check_metadata(chunk.metadata, document.doc_id, index)
        try:
            aware_datetime("created_at", chunk.created_at)
        except ValidationError as error:
            raise ValidationError(
                f"chunk {index}: {error.reason}", item=index, field="created_at"
            ) from None


def _check_metadata(metadata: object, doc_id: str, chunk: int | None) -> None:
    # A JSON object PostgreSQL jsonb can hold (the document's, or chunk ``chunk``'s).
    prefix = "" if chunk is None else f"chunk {chunk}: "
    if not isinstance(metadata, Mapping):
        raise ValidationError(
            f"{prefix}metadata must be a JSON object (a dict), got {type(metadata).__name__}",
            item=chunk,
            field="metadata",
        )
    try:
        encoded = json.dumps(dict(metadata), ensure_ascii=False, allow_nan=False)
    except RecursionError:
        raise ValidationError(
            f"{prefix}metadata is nested too deeply to be stored: flatten it",
            item=chunk,
            field="metadata",
        ) from None
    except (TypeError, ValueError) as error:
        raise ValidationError(
            f"{prefix}metadata of document {doc_id!r} is not JSON: {error}",
            item=chunk,
            field="metadata",
        ) from None
    problem = json_text_problem(encoded)
    if problem is not None:
        raise ValidationError(f"{prefix}metadata {problem}", item=chunk, field="metadata")


def _check_storable(field: str, value: object, chunk: int | None) -> None:
    # A string PostgreSQL text cannot hold is refused before any write or query.
    prefix = "" if chunk is None else f"chunk {chunk}: "
    check_storable(field, value, item=chunk, prefix=prefix)


def check_doc_id(doc_id: object) -> str:
    """``doc_id`` if it names a document: a non-blank string of at most
    :data:`MAX_DOC_ID_CHARS` characters that PostgreSQL text holds (kept as given, not
    stripped: a path may end in a space)."""
    if not isinstance(doc_id, str) or not doc_id.strip():
        raise ValidationError(f"doc_id is empty ({doc_id!r:.40})", field="doc_id")
    if len(doc_id) > MAX_DOC_ID_CHARS:
        raise ValidationError(
            f"doc_id has {len(doc_id):,} characters, over the limit of {MAX_DOC_ID_CHARS:,}: "
            "use a shorter id (a path relative to a root, or a hash)",
            field="doc_id",
        )
    _check_storable("doc_id", doc_id, None)
    return doc_id


def check_query(query: object) -> None:
    if not isinstance(query, str) or not query.strip():
        raise ValidationError("query is empty: give the text to search for", field="query")
    check_query_length(query)
    _check_storable("query", query, None)
