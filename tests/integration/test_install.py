"""The wheel installs into a new virtual environment and every extra imports from it.

The environment is new and holds the wheel alone; the packages it depends on are seen through a
path file from the test's own environment (installed from the same pyproject.toml and
constraints.txt), so that the test needs no network and a minute rather than the three of a
full install. What it proves: the wheel's files, its console script, its migrations, and that
each extra's declared requirements are met by what an install of that extra resolves. The full
install from the package index is the README's own line (docs/development.md gives its time).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from retrieval.db import migrate
from tests.conftest import PgDatabase
from tests.wheel import build_wheel

ROOT = Path(__file__).resolve().parents[2]
# Each extra of pyproject.toml and a module that needs it.
EXTRAS = {
    "mcp": "retrieval.integrations.mcp_server",
    "ui": "retrieval.ui.app",
    "otel": "opentelemetry.trace",
    "langchain": "retrieval.integrations.langchain",
    "llamaindex": "retrieval.integrations.llamaindex",
}
CHECK = """
import importlib, importlib.metadata as metadata, json, sys
from packaging.requirements import Requirement

import retrieval
distribution = metadata.distribution("retrieval")
unmet = []
for line in distribution.requires or []:
    requirement = Requirement(line)
    for extra in [None, *sys.argv[2:]]:
        environment = {"extra": extra or ""}
        if requirement.marker is None and extra is None or (
            requirement.marker is not None and extra and requirement.marker.evaluate(environment)
        ):
            try:
                found = metadata.version(requirement.name)
            except metadata.PackageNotFoundError:
                found = None
            if found is None or not requirement.specifier.contains(found, prereleases=True):
                unmet.append(f"{line} (found {found})")
imported = [importlib.import_module(name).__name__ for name in json.loads(sys.argv[1])]
print(json.dumps({
    "file": retrieval.__file__,
    "extras": sorted(distribution.metadata.get_all("Provides-Extra")),
    "unmet": unmet,
    "imported": imported,
}))
"""


@pytest.mark.slow
def test_the_wheel_installs_and_every_extra_imports(
    tmp_path: Path, empty_database: PgDatabase
) -> None:
    wheel = build_wheel(tmp_path / "dist")

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
         "--no-index", str(wheel)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    # The dependencies, from this environment (after the new one's own packages on sys.path).
    (Path(site) / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")

    environment = {k: v for k, v in os.environ.items() if not k.startswith("RETRIEVAL_")}
    environment["HF_HUB_OFFLINE"] = "1"
    checked = subprocess.run(
        [str(python), "-c", CHECK, json.dumps(list(EXTRAS.values())), *EXTRAS],
        capture_output=True, text=True, check=False, cwd=tmp_path, env=environment,
    )  # fmt: skip
    assert checked.returncode == 0, checked.stderr
    report = json.loads(checked.stdout)
    assert report["file"].startswith(site), report["file"]  # the wheel's, not the source's
    assert set(EXTRAS) <= set(report["extras"])
    assert report["unmet"] == []
    assert report["imported"] == list(EXTRAS.values())

    # Its console script runs, and migrates a database from the migrations it ships.
    retrieval = venv / "bin" / "retrieval"
    upgraded = subprocess.run(
        [str(retrieval), "--database-url", empty_database.url, "db", "upgrade"],
        capture_output=True, text=True, check=False, cwd=tmp_path, env=environment,
    )  # fmt: skip
    assert upgraded.returncode == 0, upgraded.stderr
    assert upgraded.stdout.strip().endswith(f"at revision {migrate.head_revision()}")
