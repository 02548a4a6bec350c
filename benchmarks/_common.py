"""What every benchmark shares: the machine, the commit, a call timed, percentiles, and one
result format.

A benchmark writes ``benchmarks/results/<benchmark>.json`` (or ``--json PATH``) as
``{benchmark, date, git_commit, machine, settings, results}``: the current figures, which
``benchmarks/README.md`` quotes. A result a decision record cites is copied by hand under
``benchmarks/results/decisions/``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import subprocess
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

ROOT = Path(__file__).resolve().parents[1]
T = TypeVar("T")
RESULTS = ROOT / "benchmarks" / "results"


def cpus() -> int:
    """CPUs the benchmark may use."""
    return os.cpu_count() or 0


def machine() -> dict[str, Any]:
    """The machine the figures come from."""
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return {
        "cpus": cpus(),
        "memory_gib": round(memory / 2**30, 1),
        "platform": platform.platform(),
        "python": platform.python_version(),
    }


def git_commit() -> str:
    """The short hash of the checked-out commit ("unknown" outside git); ``+`` when the work
    tree has changes, so a figure is never credited to a commit that did not make it."""

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True)
        return done.stdout.strip()

    try:
        head = git("rev-parse", "--short", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+" if dirty else "")  # fmt: skip


def percentiles(times: Sequence[float]) -> dict[str, float]:
    """p50 and p95 of ``times``."""
    ordered = sorted(times)
    return {
        "p50": statistics.median(ordered),
        "p95": ordered[min(len(ordered) - 1, math.ceil(0.95 * len(ordered)) - 1)],
    }


def summary_ms(times: Sequence[float]) -> dict[str, float]:
    """p50, p95 and mean of ``times`` in ms, as the A/B scripts report them."""
    ordered = sorted(times)
    return {
        "p50_ms": statistics.median(ordered),
        "p95_ms": ordered[round(0.95 * (len(ordered) - 1))],
        "mean_ms": statistics.mean(ordered),
    }


def add_output(parser: argparse.ArgumentParser) -> None:
    """``--json PATH`` (default ``benchmarks/results/<benchmark>.json``) and ``--no-save``."""
    parser.add_argument(
        "--json",
        type=Path,
        help="where the results go (default: benchmarks/results/<benchmark>.json, the "
        "benchmark's current figures)",
    )
    parser.add_argument("--no-save", action="store_true", help="print the results only")


def parts_variant(parts: str, default: str) -> str | None:
    """The file-name suffix of a run of some ``--parts`` only (``None`` for the default)."""
    return None if parts == default else parts.replace(",", "-")


def write_result(
    benchmark: str,
    results: Any,
    args: argparse.Namespace,
    *,
    variant: str | None = None,
) -> dict[str, Any]:
    """Print ``results`` and, unless ``--no-save``, write them in the one format to ``--json``
    or ``benchmarks/results/<benchmark>[-<variant>].json``; the settings are the arguments."""
    settings = {
        key: str(value) if isinstance(value, Path) else value
        for key, value in vars(args).items()
        if key not in ("json", "no_save")
    }
    record = {
        "benchmark": benchmark,
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "git_commit": git_commit(),
        "machine": machine(),
        "settings": settings,
        "results": results,
    }
    print(json.dumps(results, indent=2, default=str))
    if not getattr(args, "no_save", False):
        name = benchmark if variant is None else f"{benchmark}-{variant}"
        path: Path = args.json or RESULTS / f"{name}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(record, indent=2, default=str) + "\n")
        print(f"written to {path}")
    return record


def timed_ms(call: Callable[..., T], *args: Any, **options: Any) -> tuple[T, float]:
    """What ``call(*args, **options)`` returns, and the milliseconds it took."""
    began = time.perf_counter()
    result = call(*args, **options)
    return result, (time.perf_counter() - began) * 1000


def timed_passes(
    search: Callable[[int], list[int]], count: int, passes: int
) -> tuple[list[list[int]], list[list[float]]]:
    """Each of ``count`` queries once to warm up, then ``passes`` timed passes: the first
    pass's ids and each query's times in milliseconds."""
    for index in range(count):
        search(index)
    found: list[list[int]] = []
    times: list[list[float]] = [[] for _ in range(count)]
    for run in range(passes):
        for index in range(count):
            began = time.perf_counter()
            ids = search(index)
            times[index].append((time.perf_counter() - began) * 1000)
            if run == 0:
                found.append(ids)
    return found, times


def recall(found: list[list[int]], exact: list[list[int]]) -> float:
    """The mean share of each query's exact nearest rows that it found."""
    return statistics.mean(
        len(set(ids) & set(nearest)) / len(nearest)
        for ids, nearest in zip(found, exact, strict=True)
    )


def claim_timing(times: list[list[float]]) -> dict[str, float]:
    """p50/p95 over the claims of each claim's median time."""
    per_claim = [statistics.median(claim) for claim in times]
    summary = percentiles(per_claim)
    return {"p50_ms": summary["p50"], "p95_ms": summary["p95"]}
