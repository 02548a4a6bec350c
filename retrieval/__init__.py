"""retrieval: agent memory in PostgreSQL with hybrid retrieval.

The public API is re-exported here; each name lives in a module of its own.
"""

from retrieval.config import DatabaseConfig, Mode, RetrievalConfig, SourceConfig, WriteConfig
from retrieval.db import Database, check_embedding_dim, connect, stored_embedding_dim
from retrieval.embedded import EmbeddedServer, start_embedded
from retrieval.embedding import Embedder, SentenceTransformerEmbedder
from retrieval.migrate import MigrationSettings, current_revision, downgrade, upgrade
from retrieval.records import (
    Decision,
    DecisionInput,
    Forgotten,
    Memory,
    MemoryInput,
    ToolCall,
    ToolCallInput,
)
from retrieval.results import RetrievalResult
from retrieval.store import MemoryStore

__version__ = "0.1.0"

__all__ = [
    "Database",
    "DatabaseConfig",
    "Decision",
    "DecisionInput",
    "EmbeddedServer",
    "Embedder",
    "Forgotten",
    "Memory",
    "MemoryInput",
    "MemoryStore",
    "MigrationSettings",
    "Mode",
    "RetrievalConfig",
    "RetrievalResult",
    "SentenceTransformerEmbedder",
    "SourceConfig",
    "ToolCall",
    "ToolCallInput",
    "WriteConfig",
    "__version__",
    "check_embedding_dim",
    "connect",
    "current_revision",
    "downgrade",
    "start_embedded",
    "stored_embedding_dim",
    "upgrade",
]
