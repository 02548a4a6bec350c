"""The read pipeline's folders import in the order a call runs them: a stage imports the
shared modules of ``retrieval.search`` and the stages before it, never one after it, and the
shared modules import no stage."""

from __future__ import annotations

import ast
from pathlib import Path

SEARCH = Path(__file__).resolve().parents[2] / "retrieval" / "search"
STAGES = ("prepare", "plan", "statement", "read", "rank", "present")
# The modules the stages share (the vocabulary of a read), and those above the pipeline.
SHARED = (
    "config",
    "defaults",
    "expansions",
    "modes",
    "results",
    "scoring",
    "lexical_match",
    "candidate",
    "knowledge",
)
ABOVE = ("retriever", "agent_context", "context", "timeline", "evaluation", "reference_scores")


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        else:
            continue
        for module in modules:
            parts = module.split(".")
            if parts[:2] == ["retrieval", "search"] and len(parts) > 2:
                found.add(parts[2])
    return found


def _part(path: Path) -> str:
    relative = path.relative_to(SEARCH)
    return relative.parts[0] if len(relative.parts) > 1 else relative.stem


def test_every_module_of_search_is_a_stage_shared_or_above() -> None:
    parts = {_part(path) for path in SEARCH.rglob("*.py")} - {"__init__"}
    assert parts == set(STAGES) | set(SHARED) | set(ABOVE)


def test_a_stage_imports_no_later_stage_and_the_shared_modules_no_stage() -> None:
    wrong = []
    for path in sorted(SEARCH.rglob("*.py")):
        part = _part(path)
        if part in ABOVE or part == "__init__":
            continue
        allowed = set(SHARED) | (set(STAGES[: STAGES.index(part) + 1]) if part in STAGES else set())
        for imported in _imports(path) - allowed:
            wrong.append(f"{path.relative_to(SEARCH)} imports {imported}")
    assert not wrong, wrong
