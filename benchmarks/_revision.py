"""Another git revision measured beside this checkout: its package in a temporary worktree, its
migrations, and a worker process that imports it (``PYTHONPATH``) and answers in JSON."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


@contextmanager
def worktree(revision: str) -> Iterator[Path]:
    """A detached worktree of ``revision``, removed afterwards."""
    tree = Path(tempfile.mkdtemp(prefix="rtv-revision-")) / "tree"
    _git("worktree", "add", "--detach", str(tree), revision)
    try:
        yield tree
    finally:
        _git("worktree", "remove", "--force", str(tree), check=False)


def migrations_of(tree: Path) -> Path:
    """The revision's migrations: at the top level, or (commits of 2026-11-26 and 27) inside
    the package."""
    inside = tree / "retrieval" / "migrations"
    return inside if inside.is_dir() else tree / "migrations"


def worker_result(tree: Path, command: Sequence[str], revision: str) -> dict[str, Any]:
    """Run ``command`` with the package of ``tree`` and return the JSON of its last line."""
    done = subprocess.run(
        list(command),
        env=dict(os.environ, PYTHONPATH=str(tree)),
        cwd=tree,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"the run of {revision} failed:\n{done.stderr[-3000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def use_migrations(folder: Path | None) -> None:
    """Make ``retrieval.migrations`` another revision's own folder (``None``: leave it): an
    editable install of this checkout maps the name to this checkout's migrations, whatever
    ``PYTHONPATH`` says."""
    if folder is None:
        return
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "retrieval.migrations", folder / "__init__.py", submodule_search_locations=[str(folder)]
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["retrieval.migrations"] = module
    spec.loader.exec_module(module)


def _git(*arguments: str, check: bool = True) -> None:
    subprocess.run(["git", *arguments], cwd=ROOT, check=check, capture_output=True)
