"""docs/development.md's code map names every module of the package where it lives, and
nothing that is not there."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "retrieval"
ROW = re.compile(r"^\| `([\w/]+/)` \| (.+) \|$", re.MULTILINE)
NAMED = re.compile(r"`([\w.]+/?)`")
SKIPPED = {"__init__.py", "__pycache__/"}


def _rows() -> dict[Path, set[str]]:
    page = (ROOT / "docs" / "development.md").read_text("utf-8")
    rows = {}
    for folder, text in ROW.findall(page):
        where = PACKAGE if folder == "retrieval/" else PACKAGE / folder
        rows[where] = set(NAMED.findall(text))
    return rows


def _entries(folder: Path) -> set[str]:
    """The folder's modules, SQL files and subfolders (``name/``)."""
    found = set()
    for entry in folder.iterdir():
        name = f"{entry.name}/" if entry.is_dir() else entry.name
        if entry.is_dir() or entry.suffix in (".py", ".sql", ".typed"):
            found.add(name)
    return found - SKIPPED


def test_every_folder_of_the_package_has_a_row() -> None:
    folders = {path.parent for path in PACKAGE.rglob("*.py") if "__pycache__" not in path.parts}
    folders |= {PACKAGE / "sql"}
    assert folders <= set(_rows()), sorted(str(f.relative_to(ROOT)) for f in folders - set(_rows()))


def test_each_row_names_what_its_folder_holds() -> None:
    rows = _rows()
    for folder, named in rows.items():
        entries = _entries(folder)
        with_rows = {f"{entry.name}/" for entry in rows if entry.parent == folder}
        missing = entries - named - with_rows
        assert not missing, f"{folder.relative_to(ROOT)}: the code map does not name {missing}"
        files = {name for name in named if re.fullmatch(r"\w+\.(py|sql)", name)}
        gone = files - entries - SKIPPED
        assert not gone, f"{folder.relative_to(ROOT)}: the code map names {gone}, not there"
