"""The repository's layout and the wheel's packages agree: the design card's top level, with
``migrations/`` beside ``retrieval/``, and every package listed in pyproject.toml."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _pyproject() -> dict[str, object]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))


def test_the_top_level_is_the_design_cards() -> None:
    for name in ("migrations", "retrieval", "tests", "benchmarks", "docs"):
        assert (ROOT / name).is_dir(), name
    for name in ("pyproject.toml", "README.md", "docker-compose.yml", "alembic.ini", ".ci/run"):
        assert (ROOT / name).is_file(), name
    assert (ROOT / "migrations" / "env.py").is_file()
    assert not (ROOT / "retrieval" / "migrations").exists()


def test_every_package_folder_is_listed_for_the_wheel() -> None:
    setuptools = _pyproject()["tool"]["setuptools"]  # type: ignore[index]
    listed = set(setuptools["packages"])
    folders = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for init in (ROOT / "retrieval").rglob("__init__.py")
    }
    migrations = {
        "retrieval." + ".".join(init.parent.relative_to(ROOT).parts)
        for init in (ROOT / "migrations").rglob("__init__.py")
    }
    assert listed == folders | migrations
    assert setuptools["package-dir"] == {"retrieval.migrations": "migrations"}
