"""Every benchmark script starts: its imports resolve (the shared modules of benchmarks/ and the
package) and ``--help`` explains it. One process runs them all, as ``python SCRIPT --help``
would, so that a change to a shared module or to the package cannot leave a script that no
longer runs unseen until someone measures with it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted(
    path for path in (ROOT / "benchmarks").glob("*/*.py") if not path.name.startswith("_")
)

# Each script run as __main__ with --help, its own folder first on sys.path (as python puts it).
DRIVER = """
import contextlib, io, json, runpy, sys
failed = {}
for script in sys.argv[1:]:
    sys.argv = [script, "--help"]
    sys.path.insert(0, script.rsplit("/", 1)[0])
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            runpy.run_path(script, run_name="__main__")
        failed[script] = "ran on without stopping at --help"
    except SystemExit as stop:
        if stop.code not in (0, None):
            failed[script] = f"exit {stop.code}"
        elif "usage" not in out.getvalue():
            failed[script] = "no usage printed"
    except Exception as error:
        failed[script] = repr(error)
    finally:
        sys.path.pop(0)
print(json.dumps(failed))
"""


def test_every_benchmark_script_starts_and_explains_itself() -> None:
    assert len(SCRIPTS) >= 30
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, *map(str, SCRIPTS)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"},
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.splitlines()[-1]) == {}
