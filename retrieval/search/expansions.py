"""The query expansions a caller can give (:attr:`RetrievalConfig.query_expansions
<retrieval.search.config.RetrievalConfig.query_expansions>`): a JSON object of strings read
from a file, applied to the lexical channels' query (:mod:`retrieval.search.prepare.query`)."""

from __future__ import annotations

import json
from pathlib import Path

from retrieval.errors import ConfigurationError


def load_expansions(path: Path) -> dict[str, str]:
    """An expansion map from a JSON object of strings (``{"UAV": "unmanned aerial vehicle"}``),
    for :attr:`RetrievalConfig.query_expansions` (see :mod:`retrieval.search.prepare.query`)."""
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


def expansions_at(raw: str) -> dict[str, str]:
    """The expansion map in the file at ``raw`` (``~`` expanded), as a setting's value."""
    return load_expansions(Path(raw).expanduser())
