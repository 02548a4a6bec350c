"""The package's wheel, built from the repository as pip builds it (no dependencies, no build
isolation: the test environment has setuptools)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def build_wheel(destination: Path) -> Path:
    """Build the wheel into ``destination`` and return its path."""
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(destination), str(ROOT)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    (wheel,) = destination.glob("retrieval-*.whl")
    return wheel
