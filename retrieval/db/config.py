"""Where the data lives: :class:`DatabaseConfig`, each field declared with its variable."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import platformdirs

from retrieval.db.embedded_sizing import memory_size_kb
from retrieval.db.vector_type import VectorType, require_vector_type
from retrieval.errors import ConfigurationError, mask_url
from retrieval.settings import Within, check_ranges, configurable, from_env, setting

DEFAULT_SCHEMA = "retrieval"
DEFAULT_EMBEDDING_DIM = 384
DEFAULT_TEXT_SEARCH_CONFIG = "english"
DEFAULT_VECTOR_TYPE: VectorType = "halfvec"
# Seconds a connection attempt may take before it fails (a host that drops packets would
# otherwise hang for the operating system's TCP timeout, minutes).
DEFAULT_CONNECT_TIMEOUT = 10
# pgvector's HNSW index accepts vectors of at most 2,000 dimensions.
MAX_INDEXED_DIM = 2000

_IDENTIFIER = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")

TEXT_SEARCH_CONFIG_HELP = (
    "PostgreSQL text search configuration of the BM25 channels: the memories' is fixed when "
    "the tables are migrated, the documents' must be the one they were stored with."
)


def require_schema(schema: object) -> str:
    """``schema`` if it is a plain PostgreSQL identifier (it is written into SQL, quoted), else a
    :class:`ConfigurationError`."""
    if not isinstance(schema, str) or not _IDENTIFIER.match(schema):
        raise ConfigurationError(
            f"schema {schema!r} is not a plain PostgreSQL identifier: use lower-case "
            "letters, digits and underscores, starting with a letter (at most 63 characters)"
        )
    return schema


def require_unambiguous_url(url: str, *, variable: str = "RETRIEVAL_DATABASE_URL") -> str:
    """``url`` unless its user or password holds a character that ends that part of a URL
    (``@``, ``/``, ``?``, ``#``) unencoded: the driver would read part of the password as the
    host and quote it in its errors. The error shows the URL masked, never the password."""
    _scheme, separator, rest = url.partition("://")
    if not separator:
        return url
    ends = [rest.find(mark) for mark in "/?#" if mark in rest]
    authority_end = min(ends) if ends else len(rest)
    last_at = rest.rfind("@")
    if rest.count("@") > 1 or last_at > authority_end:
        raise ConfigurationError(
            f"{variable} ({mask_url(url)}) has an '@', '/', '?' or '#' in its user or password "
            "(or an '@' elsewhere) that is not percent-encoded, so the driver cannot tell where "
            "the password ends. Encode the password with urllib.parse.quote(password, safe='') "
            "(p@ss/word becomes p%40ss%2Fword) and set the URL again"
        )
    return url


def require_text_search_config(name: str) -> None:
    """A :class:`ConfigurationError` unless ``name`` looks like a text search configuration."""
    if not re.match(r"^[a-z_][a-z0-9_.]*$", name):
        raise ConfigurationError(
            f"text_search_config {name!r} is not a configuration name "
            "(for example english or simple)"
        )


def default_data_dir() -> Path:
    """The per-user directory where the embedded server keeps its data."""
    return Path(platformdirs.user_data_dir("retrieval")) / "pg"


@configurable
@dataclass(frozen=True)
class DatabaseConfig:
    """Where the data lives.

    ``url`` is an existing PostgreSQL; ``None`` means the embedded server in ``data_dir``, started
    with ``shared_buffers`` (a PostgreSQL memory size; ``None``: sized to the machine, see
    :mod:`retrieval.db.embedded_sizing`). ``schema`` is the PostgreSQL schema of the tables and
    ``embedding_dim`` the vector dimension that a migration creates (later the database itself
    records it); ``text_search_config`` the PostgreSQL text search configuration of the
    memories' lexemes, likewise fixed when a migration makes their column.
    ``connect_timeout`` is how many seconds a connection attempt may take (libpq's
    ``connect_timeout``; a ``connect_timeout`` in the URL wins). ``vector_type`` is the type of
    the stored embeddings (``vector`` or ``halfvec``), fixed by a migration; ``read_url`` a
    read-only replica of ``url`` that searches read (see docs/scale-out.md).
    """

    url: str | None = setting(
        None,
        env="RETRIEVAL_DATABASE_URL",
        help="URL of an existing PostgreSQL (postgresql://user:pass@host:5432/db). Unset: the "
        "embedded PostgreSQL is started (or reused) in RETRIEVAL_DATA_DIR.",
    )
    data_dir: Path = setting(
        env="RETRIEVAL_DATA_DIR",
        help="Directory of the embedded server's data. Keep it short: its socket lives there.",
        default_factory=default_data_dir,
        default_text="the user's data directory (platformdirs), then `retrieval/pg`",
    )
    schema: str = setting(
        DEFAULT_SCHEMA, env="RETRIEVAL_SCHEMA", help="PostgreSQL schema holding the tables."
    )
    embedding_dim: int = setting(
        DEFAULT_EMBEDDING_DIM,
        env="RETRIEVAL_EMBEDDING_DIM",
        help="Embedding dimension, fixed at migration time (384: all-MiniLM-L6-v2).",
    )
    shared_buffers: str | None = setting(
        None,
        env="RETRIEVAL_EMBEDDED_SHARED_BUFFERS",
        help="shared_buffers of the embedded server, set when it starts (none: a quarter of the "
        "machine's memory or of its container's limit, between 128MB and 2GB).",
    )
    text_search_config: str = setting(
        DEFAULT_TEXT_SEARCH_CONFIG, env="RETRIEVAL_TEXT_SEARCH_CONFIG", help=TEXT_SEARCH_CONFIG_HELP
    )
    connect_timeout: int = setting(
        DEFAULT_CONNECT_TIMEOUT,
        env="RETRIEVAL_CONNECT_TIMEOUT",
        help="Seconds a connection attempt may take (at least 2); a connect_timeout in the "
        "URL wins.",
        # libpq takes whole seconds and treats 1 as 2 (its minimum); 0 would wait forever.
        within=Within(2, integer=True),
    )
    vector_type: VectorType = setting(
        DEFAULT_VECTOR_TYPE,
        env="RETRIEVAL_VECTOR_TYPE",
        help="Type of the stored embeddings, fixed at migration time: vector (4-byte floats) or "
        "halfvec (2-byte floats: half the disk and buffer memory per memory).",
    )
    read_url: str | None = setting(
        None,
        env="RETRIEVAL_READ_DATABASE_URL",
        help="URL of a read-only replica of RETRIEVAL_DATABASE_URL (a streaming standby): "
        "searches and timelines read there, writes go to the primary. Unset: everything "
        "reads the primary.",
    )

    def __repr__(self) -> str:
        url = None if self.url is None else mask_url(self.url)
        read_url = None if self.read_url is None else mask_url(self.read_url)
        return (
            f"DatabaseConfig(url={url!r}, read_url={read_url!r}, "
            f"data_dir={str(self.data_dir)!r}, "
            f"schema={self.schema!r}, embedding_dim={self.embedding_dim}, "
            f"shared_buffers={self.shared_buffers!r}, "
            f"text_search_config={self.text_search_config!r}, "
            f"vector_type={self.vector_type!r}, connect_timeout={self.connect_timeout})"
        )

    def __post_init__(self) -> None:
        check_ranges(self)
        if isinstance(self.data_dir, str):  # a path given as text is a path
            object.__setattr__(self, "data_dir", Path(self.data_dir))
        if not isinstance(self.data_dir, Path):
            raise ConfigurationError(
                f"data_dir must be a path (pathlib.Path or str), got {self.data_dir!r}"
            )
        require_text_search_config(self.text_search_config)
        require_vector_type(self.vector_type)
        if self.url is not None and not self.url.strip():
            raise ConfigurationError(
                "database url is empty: give a postgresql:// URL or None for the embedded server"
            )
        if self.url is not None:
            require_unambiguous_url(self.url)
        if self.read_url is not None:
            require_unambiguous_url(self.read_url, variable="RETRIEVAL_READ_DATABASE_URL")
        if self.read_url is not None and (self.url is None or not self.read_url.strip()):
            raise ConfigurationError(
                "read_url (RETRIEVAL_READ_DATABASE_URL) names a replica of the primary: set "
                "the primary's url (RETRIEVAL_DATABASE_URL) too, and give a postgresql:// URL"
            )
        require_schema(self.schema)
        if isinstance(self.embedding_dim, bool) or not isinstance(self.embedding_dim, int):
            raise ConfigurationError(
                f"embedding_dim must be an integer, got {self.embedding_dim!r}"
            )
        if not 1 <= self.embedding_dim <= MAX_INDEXED_DIM:
            raise ConfigurationError(
                f"embedding_dim={self.embedding_dim} is out of range: pgvector's HNSW index takes "
                f"1 to {MAX_INDEXED_DIM} dimensions"
            )
        if self.shared_buffers is not None:
            memory_size_kb(self.shared_buffers)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> DatabaseConfig:
        """Build a config from ``RETRIEVAL_*`` variables (docs/configuration.md)."""
        return from_env(cls, environ)


def schema_or_env(schema: str | None) -> str:
    """``schema`` checked, or, when it is ``None``, ``RETRIEVAL_SCHEMA`` (default
    ``retrieval``): what a store or retriever made without one uses."""
    return require_schema(DatabaseConfig.from_env().schema if schema is None else schema)
