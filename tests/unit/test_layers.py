"""The package's layers: each part imports only parts below it, and no module imports itself
back through others.

A part is a subpackage of ``retrieval`` (``db``, ``search``, ...) or a top-level module
(``errors``, ``settings``, ...). Every import counts, at the top of a module, inside a function
or under ``TYPE_CHECKING``. The package's face (``retrieval/__init__.py``) and ``__main__`` stand
above everything.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "retrieval"

# From the ground up; a part may import the parts of lower layers, never those of its own
# layer or above.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors", "version", "counts"),
    ("settings", "observability"),
    ("db",),
    ("arguments",),
    ("embedding", "migrations"),
    ("memory",),
    ("search",),
    ("documents", "aio"),
    ("integrations",),
    ("ui",),
    ("cli",),
)
LAYER = {part: height for height, parts in enumerate(LAYERS) for part in parts}
FACE = ("__init__", "__main__")


def _module_name(path: Path) -> str:
    relative = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = relative.parts[:-1] if relative.name == "__init__" else relative.parts
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _imported(path: Path, modules: dict[str, Path]) -> Iterator[str]:
    """The package's modules that ``path`` imports (``from retrieval import x`` names x)."""
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [f"{node.module}.{alias.name}" for alias in node.names] + [node.module]
        else:
            continue
        for name in names:
            if name in modules and name != "retrieval":
                yield name


def _part(module: str) -> str:
    return module.split(".")[1]


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {
        module: set(_imported(path, modules)) - {module}
        for module, path in modules.items()
        if module != "retrieval"
    }


def test_every_part_has_a_layer() -> None:
    parts = {_part(module) for module in _graph()} - set(FACE)
    assert parts <= set(LAYER), f"give these parts a layer in LAYERS: {sorted(parts - set(LAYER))}"


def test_each_part_imports_only_parts_below_it() -> None:
    upward = sorted(
        f"{module} -> {target}"
        for module, targets in _graph().items()
        if _part(module) not in FACE
        for target in targets
        if _part(target) != _part(module) and LAYER[_part(target)] >= LAYER[_part(module)]
    )
    assert upward == []


def test_no_module_imports_itself_back() -> None:
    graph = _graph()
    state: dict[str, int] = {}  # 1: on the path being walked, 2: done
    circles: list[list[str]] = []

    def walk(module: str, path: list[str]) -> None:
        state[module] = 1
        for target in sorted(graph.get(module, ())):
            if state.get(target) == 1:
                circles.append([*path[path.index(target) :], target])
            elif target not in state:
                walk(target, [*path, target])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            walk(module, [module])
    assert circles == []
