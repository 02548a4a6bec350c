"""The names the README and docs/api.md show import as written."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
IMPORT = re.compile(r"^from (retrieval[\w.]*) import ([\w, ]+)$", re.MULTILINE)


def _imports() -> list[tuple[str, str]]:
    found = []
    for page in (ROOT / "README.md", ROOT / "docs" / "api.md"):
        for module, names in IMPORT.findall(page.read_text("utf-8")):
            found += [(module, name.strip()) for name in names.split(",")]
    return found


@pytest.mark.parametrize(("module", "name"), _imports())
def test_a_documented_import_works(module: str, name: str) -> None:
    assert hasattr(importlib.import_module(module), name)


def test_the_documents_show_the_main_names() -> None:
    shown = {name for _, name in _imports()}
    assert {"MemoryStore", "HybridRetriever", "connect", "DocumentStore"} <= shown
