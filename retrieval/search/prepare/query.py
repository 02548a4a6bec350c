"""The query, prepared once for every channel of a call.

The vector channels read the query as the caller wrote it (its vector is looked up in the
embedding cache under that text). The lexical channels read it cleaned and expanded:
``expand("UAV crash", {"UAV": "unmanned aerial vehicle"})`` gives ``"UAV crash unmanned
aerial vehicle"`` (each key found in the query as a whole word, case-insensitive, adds its
expansion once), so BM25 and the keywords of the episodic source and the working state also
find the texts that spell the term out. The keywords are the expanded query's distinct words
of at least ``keyword_min_length`` letters, stop words left out.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from retrieval.arguments import check_storable
from retrieval.errors import ValidationError
from retrieval.search import lexical_match, scoring
from retrieval.search.config import RetrievalConfig

# The longest query: the model reads about 1,000 characters of it, the lexical channels all of
# it, word by word.
MAX_QUERY_CHARS = 10_000


def check_query_length(query: str) -> None:
    """A :class:`ValidationError` if ``query`` is longer than :data:`MAX_QUERY_CHARS`."""
    if len(query) > MAX_QUERY_CHARS:
        raise ValidationError(
            f"query has {len(query):,} characters, over the limit of {MAX_QUERY_CHARS:,}: the "
            "model reads only its first 256 tokens (about 1,000 characters); give the question, "
            "not a document",
            field="query",
        )


@dataclass(frozen=True)
class PreparedQuery:
    """``text`` as written; ``lexical``, cleaned and with its expansions; its ``keywords``."""

    text: str
    lexical: str
    keywords: tuple[str, ...]
    # The lexical text's distinct words: a BM25 channel reads at most about as many lexemes.
    words: int = 0

    @property
    def cleaned(self) -> str:
        """The text with runs of whitespace made single spaces (the lexical match reads it)."""
        return clean(self.text)


def prepare_query(query: object, config: RetrievalConfig) -> PreparedQuery:
    """Check ``query`` and prepare it for every channel (a clear error for an empty one)."""
    if not isinstance(query, str) or not query.strip():
        raise ValidationError(
            f"query is empty ({query!r}): give the text to find context for", field="query"
        )
    check_query_length(query)
    check_storable("query", query)
    lexical = expand(query, config.query_expansions)
    keywords = scoring.extract_keywords(
        lexical, min_length=config.keyword_min_length, stop_words=config.stop_words
    )
    words = len(set(lexical_match.words(lexical)))
    return PreparedQuery(text=query, lexical=lexical, keywords=keywords, words=words)


def clean(query: str) -> str:
    """The query with runs of whitespace (newlines, tabs) made single spaces, ends trimmed."""
    return " ".join(query.split())


def expand(query: str, expansions: Mapping[str, str]) -> str:
    """``query`` (cleaned) followed by the expansion of every key it contains as a word."""
    text = clean(query)
    added = [
        expansion
        for key, expansion in expansions.items()
        if re.search(rf"(?<!\w){re.escape(key)}(?!\w)", text, flags=re.IGNORECASE)
    ]
    return " ".join([text, *dict.fromkeys(added)]) if added else text
