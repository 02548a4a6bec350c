"""retrieval: agent memory in PostgreSQL with hybrid retrieval.

The public API is re-exported here; each name lives in a module of its own.
"""

from retrieval.config import DatabaseConfig
from retrieval.db import Database, check_embedding_dim, connect, stored_embedding_dim
from retrieval.embedded import EmbeddedServer, start_embedded
from retrieval.migrate import MigrationSettings, current_revision, downgrade, upgrade

__version__ = "0.1.0"

__all__ = [
    "Database",
    "DatabaseConfig",
    "EmbeddedServer",
    "MigrationSettings",
    "__version__",
    "check_embedding_dim",
    "connect",
    "current_revision",
    "downgrade",
    "start_embedded",
    "stored_embedding_dim",
    "upgrade",
]
