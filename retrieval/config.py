"""Deprecated location of the config classes, kept for one release.

Import them from :mod:`retrieval` (or their flows: :mod:`retrieval.db.config`,
:mod:`retrieval.memory.config`, :mod:`retrieval.search.config`).
"""

from __future__ import annotations

import warnings

from retrieval.db.config import DatabaseConfig, default_data_dir, require_schema
from retrieval.memory.config import WriteConfig
from retrieval.search.config import FUSIONS, SOURCES, Mode, RetrievalConfig, SourceConfig
from retrieval.settings import known_variables

warnings.warn(
    "retrieval.config is deprecated: import the configs from retrieval (or retrieval.db.config, "
    "retrieval.memory.config, retrieval.search.config)",
    DeprecationWarning,
    stacklevel=2,
)

__all__ = [
    "FUSIONS",
    "SOURCES",
    "DatabaseConfig",
    "Mode",
    "RetrievalConfig",
    "SourceConfig",
    "WriteConfig",
    "default_data_dir",
    "known_variables",
    "require_schema",
]
