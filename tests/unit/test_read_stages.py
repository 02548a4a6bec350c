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
SOURCES = "sources"  # each source's folder: its part of each stage that treats it apart
SOURCE_PARTS = ("plan", "statement", "rank")


def _imports(path: Path) -> set[str]:
    # The parts of retrieval.search that ``path`` imports: a stage, a shared module, or a
    # source's part (counted as the stage it is named after).
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
            if parts[:3] == ["retrieval", "search", SOURCES] and len(parts) > 4:
                found.add(parts[4])
            elif parts[:2] == ["retrieval", "search"] and len(parts) > 2 and parts[2] != SOURCES:
                found.add(parts[2])
    return found


def _part(path: Path) -> str:
    # A source's part belongs to the stage it is named after (sources/semantic/plan.py: plan).
    relative = path.relative_to(SEARCH)
    if relative.parts[0] == SOURCES:
        return relative.stem
    return relative.parts[0] if len(relative.parts) > 1 else relative.stem


def test_every_module_of_search_is_a_stage_shared_or_above() -> None:
    parts = {_part(path) for path in SEARCH.rglob("*.py")} - {"__init__"}
    assert parts == set(STAGES) | set(SHARED) | set(ABOVE)


def test_every_source_has_the_same_parts_and_each_stage_names_every_source() -> None:
    folders = sorted(path for path in (SEARCH / SOURCES).iterdir() if path.is_dir())
    names = [folder.name for folder in folders if folder.name != "__pycache__"]
    assert names, "no source folder"
    for name in names:
        parts = {path.stem for path in (SEARCH / SOURCES / name).glob("*.py")} - {"__init__"}
        assert parts == set(SOURCE_PARTS), f"{name}: {sorted(parts)}"
    from retrieval.search.plan.read_plan import SOURCES as PLANNED
    from retrieval.search.rank.rank import SOURCES as RANKED
    from retrieval.search.statement.render import SOURCES as RENDERED

    assert sorted(source.name for source in PLANNED) == sorted(names)
    assert [source.name for source in PLANNED] == [source.name for source in RENDERED]
    assert set(RANKED) == set(names)


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
