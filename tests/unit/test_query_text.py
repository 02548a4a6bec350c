from __future__ import annotations

from pathlib import Path

import pytest

from retrieval.errors import ConfigurationError
from retrieval.search.config import RetrievalConfig
from retrieval.search.expansions import load_expansions
from retrieval.search.prepare.query import clean, expand

UAV = {"UAV": "unmanned aerial vehicle", "ML": "machine learning"}


def test_clean_and_expand() -> None:
    assert clean("  why\tdid\n the  deploy fail ") == "why did the deploy fail"
    assert expand("uav crash report", UAV) == "uav crash report unmanned aerial vehicle"
    assert expand("UAV and ML", UAV) == "UAV and ML unmanned aerial vehicle machine learning"
    # Whole words only: "HTML" holds no "ML".
    assert expand("HTML export", UAV) == "HTML export"
    assert expand("nothing here", {}) == "nothing here"


def test_expansions_load_from_a_json_file(tmp_path: Path) -> None:
    good = tmp_path / "expansions.json"
    good.write_text('{"UAV": "unmanned aerial vehicle"}')
    assert load_expansions(good) == {"UAV": "unmanned aerial vehicle"}
    config = RetrievalConfig.from_env({"RETRIEVAL_QUERY_EXPANSIONS": str(good)})
    assert config.query_expansions == {"UAV": "unmanned aerial vehicle"}
    bad = tmp_path / "bad.json"
    bad.write_text('["UAV"]')
    with pytest.raises(ConfigurationError, match="JSON object of strings"):
        load_expansions(bad)
    with pytest.raises(ConfigurationError, match="cannot read"):
        load_expansions(tmp_path / "missing.json")
