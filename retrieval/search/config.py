"""Everything retrieval can be told: :class:`RetrievalConfig`, its per-source
:class:`SourceConfig` and the :class:`Mode` presets, each field declared with its variable."""

from __future__ import annotations

import math
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Literal

from retrieval.db.config import (
    DEFAULT_TEXT_SEARCH_CONFIG,
    TEXT_SEARCH_CONFIG_HELP,
    require_text_search_config,
)
from retrieval.errors import ConfigurationError
from retrieval.memory.config import (
    DEFAULT_SESSION_GAP_MINUTES,
    SESSION_GAP_HELP,
    SESSION_GAP_RANGE,
)
from retrieval.search.defaults import (
    BM25_B,
    BM25_K1,
    DEFAULT_BM25_B,
    DEFAULT_BM25_K1,
    DEFAULT_CANDIDATE_POOL,
    DEFAULT_CONTEXT_LIFT,
    DEFAULT_CONTEXT_WINDOW,
    DEFAULT_EF_SEARCH,
    DEFAULT_EPISODIC_MIN_KEYWORD_SHARE,
    DEFAULT_EXACT_SCAN_FACTOR,
    DEFAULT_FALLBACK_RESULTS,
    DEFAULT_MAX_DISTANCE,
    DEFAULT_MAX_QUERY_WORDS,
    DEFAULT_MEMORY_BM25_ROWS,
    DEFAULT_MIN_FINAL_SCORE,
    DEFAULT_QUESTION_DISCOUNT,
    DEFAULT_TIME_HALF_LIFE_DAYS,
    DEFAULT_TIME_WEIGHT,
    DEFAULT_VERSION_SHARED_WORDS,
    DEFAULT_VERSION_SIMILARITY,
)
from retrieval.search.expansions import expansions_at
from retrieval.search.modes import DEFAULT_MODES, Mode
from retrieval.search.scoring import DEFAULT_MIN_KEYWORD_LENGTH, DEFAULT_STOP_WORDS
from retrieval.settings import (
    UNIT,
    Within,
    check_ranges,
    configurable,
    from_env,
    require_int,
    setting,
)

Fusion = Literal["rrf", "convex", "max", "cascade"]
FUSIONS: tuple[Fusion, ...] = typing.get_args(Fusion)
LexicalMatch = Literal["max", "weighted", "cascade"]
LexicalSource = Literal["semantic", "episodic", "working_state"]

DATABASE_SOURCES = ("semantic", "episodic", "documents")
SOURCES = ("working_state", *DATABASE_SOURCES)
# The signals a source's weights apply to, in the order its weighted sum adds them.
SIGNALS = ("relevance", "recency", "importance", "popularity", "entity")
_TOLERANCE = 1e-6


@configurable
@dataclass(frozen=True)
class SourceConfig:
    """How one source is scored: its weights (summing to 1), result limit, recency half-life
    (hours; the working state's recency is by position instead), on/off switch, and its own
    threshold (``None``: the config's ``min_final_score``)."""

    relevance: float = setting(
        env="RETRIEVAL_<SOURCE>_RELEVANCE", help="Relevance weight of a source.", within=UNIT
    )
    recency: float = setting(
        env="RETRIEVAL_<SOURCE>_RECENCY", help="Recency weight of a source.", within=UNIT
    )
    limit: int = setting(
        env="RETRIEVAL_<SOURCE>_LIMIT",
        help="Most results of a source.",
        within=Within(0, integer=True),
    )
    half_life_hours: float = setting(
        env="RETRIEVAL_<SOURCE>_HALF_LIFE_HOURS",
        help="Recency half-life of a source, in hours.",
        within=Within(0.0, open_low=True),
    )
    importance: float = setting(
        0.0,
        env="RETRIEVAL_<SOURCE>_IMPORTANCE",
        help="Weight of the stored importance.",
        within=UNIT,
    )
    popularity: float = setting(
        0.0,
        env="RETRIEVAL_<SOURCE>_POPULARITY",
        help="Weight of log10(access_count + 1) / log10(101).",
        within=UNIT,
    )
    entity: float = setting(
        0.0,
        env="RETRIEVAL_<SOURCE>_ENTITY",
        help="Weight of the entity overlap with the query.",
        within=UNIT,
    )
    enabled: bool = setting(
        True, env="RETRIEVAL_<SOURCE>_ENABLED", help="Switch a source off with false."
    )
    min_final_score: float | None = setting(
        None,
        env="RETRIEVAL_<SOURCE>_MIN_FINAL_SCORE",
        help="A source's own threshold (none: RETRIEVAL_MIN_FINAL_SCORE).",
        within=UNIT,
    )

    def __post_init__(self) -> None:
        check_ranges(self)
        total = sum(getattr(self, name) for name in SIGNALS)
        if not math.isclose(total, 1.0, abs_tol=_TOLERANCE):
            detail = ", ".join(f"{name}={getattr(self, name)}" for name in SIGNALS)
            raise ConfigurationError(f"weights must sum to 1, got {total:g} ({detail})")

    @property
    def weights(self) -> dict[str, float]:
        """The non-zero weights by signal name."""
        return {name: getattr(self, name) for name in SIGNALS if getattr(self, name)}


@configurable
@dataclass(frozen=True)
class RetrievalConfig:
    """Everything retrieval can be told. The defaults are the best configuration measured
    (docs/decisions/)."""

    # The working state and the episodic source keep the threshold their keyword scores were
    # calibrated with (0.4): below it, weak keyword matches of old rows pass and the episodic
    # source reads many more postings (docs/decisions/0003-memory-weights-and-threshold.md).
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
    # Chunks of files, where age matters little (a year's half-life); relevance is the fusion
    # of BM25 and vector (see ``fusion``).
    documents: SourceConfig = SourceConfig(
        relevance=0.9, recency=0.1, limit=5, half_life_hours=24.0 * 365
    )
    total_limit: int = setting(
        10, env="RETRIEVAL_TOTAL_LIMIT", help="Most results in all.", within=Within(1, integer=True)
    )
    min_final_score: float = setting(
        DEFAULT_MIN_FINAL_SCORE,
        env="RETRIEVAL_MIN_FINAL_SCORE",
        help="Results below this final score are dropped, unless their source has its own "
        "threshold (calibrated: about the relevance of a memory at the distance cut-off).",
        within=UNIT,
    )
    fallback_results: int = setting(
        DEFAULT_FALLBACK_RESULTS,
        env="RETRIEVAL_FALLBACK_RESULTS",
        help="When no result passes the thresholds, the best this many memories below them are "
        "returned, each marked below_threshold (0: an empty answer stays empty).",
        within=Within(0, integer=True),
    )
    max_distance: float | None = setting(
        DEFAULT_MAX_DISTANCE,
        env="RETRIEVAL_MAX_DISTANCE",
        help="Evidence gate of memories and documents: a result must lie within this L2 "
        "distance (calibrated for all-MiniLM-L6-v2; left at 1.2, another model's own gate "
        "applies: e5-small has none; none turns it off) or cover RETRIEVAL_BM25_MIN_COVERAGE of "
        "the query.",
        within=Within(0.0, open_low=True),
    )
    keyword_min_length: int = setting(
        DEFAULT_MIN_KEYWORD_LENGTH,
        env="RETRIEVAL_KEYWORD_MIN_LENGTH",
        help="Shortest keyword, in letters.",
        within=Within(1, integer=True),
    )
    stop_words: frozenset[str] = DEFAULT_STOP_WORDS
    modes: Mapping[str, Mode] = field(default_factory=lambda: DEFAULT_MODES)
    candidate_pool: int = setting(
        DEFAULT_CANDIDATE_POOL,
        env="RETRIEVAL_CANDIDATE_POOL",
        help="Least candidates each database source hands from SQL to the ranking (a larger "
        "source limit raises it).",
        within=Within(1, integer=True),
    )
    record_access: bool = setting(
        True,
        env="RETRIEVAL_RECORD_ACCESS",
        help="Count accesses of returned memories (access_count, last_accessed_at).",
    )
    fusion: Fusion = setting(
        "convex",
        env="RETRIEVAL_FUSION",
        help="How memories and documents fuse their BM25 and vector channels: convex, max, "
        "cascade or rrf (relative to the query).",
    )
    memory_bm25: bool = setting(
        True,
        env="RETRIEVAL_MEMORY_BM25",
        help="Fuse a BM25 channel over the memories' words with their vector channel.",
    )
    memory_bm25_rows: int = setting(
        DEFAULT_MEMORY_BM25_ROWS,
        env="RETRIEVAL_MEMORY_BM25_ROWS",
        help="Memories the rarest query terms may add to the BM25 channel of memories.",
        within=Within(0, integer=True),
    )
    rrf_k: int = setting(
        60,
        env="RETRIEVAL_RRF_K",
        help="The k of reciprocal rank fusion.",
        within=Within(0, integer=True),
    )
    bm25_k1: float = setting(
        DEFAULT_BM25_K1,
        env="RETRIEVAL_BM25_K1",
        help="Okapi BM25 k1 of the BM25 channels.",
        within=BM25_K1,
    )
    bm25_b: float = setting(
        DEFAULT_BM25_B,
        env="RETRIEVAL_BM25_B",
        help="Okapi BM25 b of the BM25 channels.",
        within=BM25_B,
    )
    bm25_common_share: float = setting(
        0.15,
        env="RETRIEVAL_BM25_COMMON_SHARE",
        help="BM25 channels: terms held by more than this share of the rows are scored only "
        "for the rows the rarer terms found, when that provably changes no result.",
        within=UNIT,
    )
    bm25_min_coverage: float = setting(
        0.9,
        env="RETRIEVAL_BM25_MIN_COVERAGE",
        help="A memory or chunk beyond the distance cut-off is still returned when its lexemes "
        "cover this share of the query's idf (an exact code or name).",
        within=UNIT,
    )
    bm25_weight: float = setting(
        0.5,
        env="RETRIEVAL_BM25_WEIGHT",
        help="Weight of the BM25 channel in convex and rrf fusion; the vector channel gets 1 "
        "minus it.",
        within=UNIT,
    )
    cascade_threshold: float = setting(
        0.7,
        env="RETRIEVAL_CASCADE_THRESHOLD",
        help="cascade fusion: the lexical relevance (BM25 over the query's idf) that wins over "
        "the vector channel's.",
        within=UNIT,
    )
    text_search_config: str = setting(
        DEFAULT_TEXT_SEARCH_CONFIG, env="RETRIEVAL_TEXT_SEARCH_CONFIG", help=TEXT_SEARCH_CONFIG_HELP
    )
    query_expansions: Mapping[str, str] = setting(
        env="RETRIEVAL_QUERY_EXPANSIONS",
        help="Path of a JSON object of expansions applied to the lexical channels (BM25, "
        'episodic and working-state keywords), e.g. {"UAV": "unmanned aerial vehicle"}.',
        default_factory=dict,
        parse=expansions_at,
    )
    lexical_match: LexicalMatch | None = setting(
        None,
        env="RETRIEVAL_LEXICAL_MATCH",
        help="Exact and fuzzy matching of short memories (questions, triggers, names) combined "
        "with the semantic relevance: max, weighted or cascade (none: off).",
    )
    lexical_sources: frozenset[LexicalSource] = setting(
        frozenset({"semantic"}),
        env="RETRIEVAL_LEXICAL_SOURCES",
        help="Sources the lexical match applies to, comma-separated: semantic (memories), "
        "episodic (a decision's content, a tool call's tool name), working_state (the "
        "caller's messages).",
    )
    lexical_weights: Mapping[str, float] = field(
        default_factory=lambda: {"exact": 0.25, "fuzzy": 0.25, "tokens": 0.25, "semantic": 0.25}
    )
    ef_search: int = setting(
        DEFAULT_EF_SEARCH,
        env="RETRIEVAL_EF_SEARCH",
        help="Candidates the HNSW graph search keeps while it walks (pgvector's hnsw.ef_search; "
        "at least the candidate pool): more finds more of the true nearest memories in a "
        "large tenant, at some latency.",
        within=Within(1, integer=True),
    )
    exact_scan_factor: float = setting(
        DEFAULT_EXACT_SCAN_FACTOR,
        env="RETRIEVAL_EXACT_SCAN_FACTOR",
        help="A tenant of n memories in a table of N is read exactly (its btree and a sort) when "
        "n^2 <= factor x candidate pool x N, else through the HNSW graph (the retriever learns "
        "n and N from its statements); 0 always takes the graph.",
        within=Within(0.0, 1e6, open_high=True),
    )

    context_lift: float = setting(
        DEFAULT_CONTEXT_LIFT,
        env="RETRIEVAL_CONTEXT_LIFT",
        help="Share of a conversation turn's relevance its thread's neighbouring turns take, "
        "per position away: they become candidates when that outranks their own relevance "
        "(0 turns it off).",
        within=UNIT,
    )
    context_window: int = setting(
        DEFAULT_CONTEXT_WINDOW,
        env="RETRIEVAL_CONTEXT_WINDOW",
        help="How many positions before and after a turn its relevance lifts.",
        within=Within(0, 20, integer=True),
    )
    session_gap_minutes: float = setting(
        DEFAULT_SESSION_GAP_MINUTES,
        env="RETRIEVAL_SESSION_GAP_MINUTES",
        help=SESSION_GAP_HELP,
        within=SESSION_GAP_RANGE,
    )
    time_weight: float = setting(
        DEFAULT_TIME_WEIGHT,
        env="RETRIEVAL_TIME_WEIGHT",
        help="Weight of how well a result's date fits a time the query names (on 1 February "
        "2023, in June, last week), taken from the source's other weights; 0 turns it off.",
        within=UNIT,
    )
    question_discount: float = setting(
        DEFAULT_QUESTION_DISCOUNT,
        env="RETRIEVAL_QUESTION_DISCOUNT",
        help="Share of its final score a conversation turn loses when it only asks (a question, "
        "besides reactions of at most five words such as 'Wow, that looks great!'), never under "
        "the threshold; 0 turns it off.",
        within=UNIT,
    )
    time_half_life_days: float = setting(
        DEFAULT_TIME_HALF_LIFE_DAYS,
        env="RETRIEVAL_TIME_HALF_LIFE_DAYS",
        help="Days outside the query's time after which a result's time fit halves.",
        within=Within(0.0, 36_500.0, open_low=True, open_high=True),
    )
    episodic_min_keyword_share: float = setting(
        DEFAULT_EPISODIC_MIN_KEYWORD_SHARE,
        env="RETRIEVAL_EPISODIC_MIN_KEYWORD_SHARE",
        help="Share of a query's keywords a decision or tool call must match (0: any one).",
        within=UNIT,
    )
    newer_versions_first: bool = setting(
        True,
        env="RETRIEVAL_NEWER_VERSIONS_FIRST",
        help="Rank a memory below a newer one of its kind that states the same fact (their "
        "vectors at version_similarity or more), for a query naming no time: its score is "
        "capped under the newer's, and its result names it (possibly_outdated_by).",
    )
    version_similarity: float = setting(
        DEFAULT_VERSION_SIMILARITY,
        env="RETRIEVAL_VERSION_SIMILARITY",
        help="Cosine similarity at or above which two memories of a kind are versions of one "
        "fact, for newer_versions_first (all-MiniLM-L6-v2's; left at 0.7, another model's own "
        "applies, e5-small's 0.92).",
        within=UNIT,
    )
    version_shared_words: float = setting(
        DEFAULT_VERSION_SHARED_WORDS,
        env="RETRIEVAL_VERSION_SHARED_WORDS",
        help="Share of their lexemes (of both texts' together) at or above which two memories "
        "of a kind at a cosine similarity of 0.5 or more (all-MiniLM-L6-v2's; e5-small's 0.847) "
        "are versions of one fact (the same sentence with another value), for "
        "newer_versions_first.",
        within=UNIT,
    )
    max_query_words: int = setting(
        DEFAULT_MAX_QUERY_WORDS,
        env="RETRIEVAL_MAX_QUERY_WORDS",
        help="Most distinct words of a query each keyword channel reads (episodic keywords, the "
        "BM25 terms of memories and documents): beyond it, the rarest in the tenant's "
        "statistics, so that a long query costs about what a short one does.",
        within=Within(1, integer=True),
    )

    def __post_init__(self) -> None:
        check_ranges(self)
        if self.lexical_match not in (None, "max", "weighted", "cascade"):
            raise ConfigurationError(
                f"lexical_match {self.lexical_match!r} is not one of max, weighted, cascade "
                "(or None: off)"
            )
        sources = self.lexical_sources
        if not isinstance(sources, frozenset) or not sources <= set(typing.get_args(LexicalSource)):
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
        require_text_search_config(self.text_search_config)
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
        require_int("limit", limit, minimum=1)
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
        """Build a config from ``RETRIEVAL_*`` variables (docs/configuration.md); unset ones
        keep their defaults."""
        return from_env(cls, environ)
