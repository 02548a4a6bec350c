"""Query preprocessing for the lexical channels: whitespace clean-up and an expansion map.

``expand("UAV crash", {"UAV": "unmanned aerial vehicle"})`` gives
``"UAV crash unmanned aerial vehicle"``: each key found in the query as a whole word
(case-insensitive) adds its expansion once, so BM25 (and the keywords of the episodic source
and the working state) also find the texts that spell the term out. The vector channels get
the query as the caller wrote it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path

from retrieval.errors import ConfigurationError


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


def load_expansions(path: Path) -> dict[str, str]:
    """An expansion map from a JSON object of strings (``{"UAV": "unmanned aerial vehicle"}``)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ConfigurationError(f"cannot read the expansion map {path}: {error}") from None
    if not isinstance(data, dict) or not all(
        isinstance(k, str) and k.strip() and isinstance(v, str) for k, v in data.items()
    ):
        raise ConfigurationError(
            f'{path} must hold a JSON object of strings, like {{"UAV": "unmanned aerial vehicle"}}'
        )
    return dict(data)
