"""retrieval: agent memory in PostgreSQL with hybrid retrieval.

The public API is re-exported here; each name lives in a module of its own.
"""

from retrieval.aio import AsyncHybridRetriever, AsyncMemoryStore
from retrieval.aio.agent_context import abuild_context
from retrieval.db.config import DatabaseConfig
from retrieval.db.embedded import EmbeddedServer, start_embedded
from retrieval.db.engine import Database, check_embedding_dim, connect, stored_embedding_dim
from retrieval.db.migrate import MigrationSettings, current_revision, downgrade, upgrade
from retrieval.embedding.models import Embedder, SentenceTransformerEmbedder
from retrieval.memory.config import WriteConfig
from retrieval.memory.records import (
    Decision,
    DecisionInput,
    Forgotten,
    Memory,
    MemoryInput,
    ToolCall,
    ToolCallInput,
)
from retrieval.memory.store import MemoryStore
from retrieval.search.agent_context import (
    AgentContext,
    ContextConfig,
    ContextMetrics,
    build_context,
)
from retrieval.search.config import RetrievalConfig, SourceConfig
from retrieval.search.context import to_markdown, to_messages
from retrieval.search.modes import Mode
from retrieval.search.results import (
    Diagnostics,
    RetrievalResponse,
    RetrievalResult,
    SourceDiagnostics,
)
from retrieval.search.retriever import HybridRetriever
from retrieval.search.timeline import TimelineEvent
from retrieval.version import __version__

__all__ = [
    "AgentContext",
    "AsyncHybridRetriever",
    "AsyncMemoryStore",
    "ContextConfig",
    "ContextMetrics",
    "Database",
    "DatabaseConfig",
    "Decision",
    "DecisionInput",
    "Diagnostics",
    "EmbeddedServer",
    "Embedder",
    "Forgotten",
    "HybridRetriever",
    "Memory",
    "MemoryInput",
    "MemoryStore",
    "MigrationSettings",
    "Mode",
    "RetrievalConfig",
    "RetrievalResponse",
    "RetrievalResult",
    "SentenceTransformerEmbedder",
    "SourceConfig",
    "SourceDiagnostics",
    "TimelineEvent",
    "ToolCall",
    "ToolCallInput",
    "WriteConfig",
    "__version__",
    "abuild_context",
    "build_context",
    "check_embedding_dim",
    "connect",
    "current_revision",
    "downgrade",
    "start_embedded",
    "stored_embedding_dim",
    "to_markdown",
    "to_messages",
    "upgrade",
]
