"""Measure how long the embedded PostgreSQL takes to be ready.

Three cases, each in a fresh process so imports are counted as a user sees them:
  cold   - a new data directory: initdb, start, create the database;
  warm   - an existing data directory whose server is stopped: start only;
  reuse  - a server another process is already running: join it.

Usage: python benchmarks/writing/embedded_start.py [--runs N]
Prints the median and the spread of N runs of each case (seconds, inside start_embedded()),
and the wall time of the whole process (interpreter + imports + start).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the shared _common, _scifact
from _common import add_output, write_result

PROBE = """
import json, sys, time
from pathlib import Path
from retrieval.db.embedded import start_embedded
server = start_embedded(Path(sys.argv[1]))
print(json.dumps({"seconds": server.seconds_to_ready, "reused": server.reused}), flush=True)
if len(sys.argv) > 2:
    sys.stdin.readline()  # hold the server until told to exit
"""


def _probe(data_dir: Path) -> tuple[float, float]:
    began = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(data_dir)], capture_output=True, text=True, check=True
    ).stdout
    return json.loads(out)["seconds"], time.perf_counter() - began


def _hold(data_dir: Path) -> subprocess.Popen[str]:
    holder = subprocess.Popen(
        [sys.executable, "-c", PROBE, str(data_dir), "hold"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None
    holder.stdout.readline()
    return holder


def measure(runs: int) -> dict[str, list[tuple[float, float]]]:
    results: dict[str, list[tuple[float, float]]] = {"cold": [], "warm": [], "reuse": []}
    for _ in range(runs):
        parent = Path(tempfile.mkdtemp(prefix="rtv-bench-"))
        data_dir = parent / "pg"
        try:
            results["cold"].append(_probe(data_dir))
            results["warm"].append(_probe(data_dir))
            holder = _hold(data_dir)
            try:
                results["reuse"].append(_probe(data_dir))
            finally:
                assert holder.stdin is not None
                holder.stdin.write("\n")
                holder.stdin.flush()
                holder.wait(60)
        finally:
            shutil.rmtree(parent, ignore_errors=True)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs of each case (default: 5)")
    add_output(parser)
    args = parser.parse_args()
    results = measure(args.runs)
    summary = {}
    print(f"{'case':<6} {'start_embedded() median':>24} {'min-max':>14} {'process median':>15}")
    for case, samples in results.items():
        inner = [s for s, _ in samples]
        outer = [w for _, w in samples]
        print(
            f"{case:<6} {statistics.median(inner):>22.3f} s "
            f"{min(inner):>6.3f}-{max(inner):<6.3f} {statistics.median(outer):>13.3f} s"
        )
        summary[case] = {
            "start_embedded_median_s": statistics.median(inner),
            "start_embedded_min_s": min(inner),
            "start_embedded_max_s": max(inner),
            "process_median_s": statistics.median(outer),
        }
    write_result("embedded-start", summary, args)


if __name__ == "__main__":
    main()
