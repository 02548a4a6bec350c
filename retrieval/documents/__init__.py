"""Documents: files and texts split into chunks, kept with their metadata, searched as a source."""

from retrieval.documents.store import ChunkInput, DocumentInput, DocumentStore

__all__ = ["ChunkInput", "DocumentInput", "DocumentStore"]
