"""Documents: files and texts split into chunks, kept with their metadata, searched as a source."""

from retrieval.documents.inputs import ChunkInput, DocumentInput
from retrieval.documents.store import DocumentStore

__all__ = ["ChunkInput", "DocumentInput", "DocumentStore"]
