"""Where each source of the read lives: the modules of ``retrieval/search`` whose code names it.

A module names a source when one of its identifiers (a name, an attribute, a function, class or
argument, an import) or one of its string literals holds the source's name (``documents``,
``DOCUMENTS``, ``DocumentsQuery``, ``"documents"``); docstrings and comments do not count. Each
source's count is split into the modules of its own folder (``retrieval/search/sources/NAME/``)
and the others: what a change of the source, or a new source, reads and touches outside its
folder. ``--at REV`` reads a commit's tree instead of the work tree.

Usage: python benchmarks/reading/source_spread.py [--at REV] [--list] [--json PATH] [--no-save]
"""

from __future__ import annotations

import argparse
import ast
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import ROOT, add_output, write_result

SEARCH = "retrieval/search/"
SOURCES = ("semantic", "episodic", "documents")


def modules(at: str | None) -> dict[str, str]:
    """The text of every module of ``retrieval/search`` at ``at`` (a revision), or in the work
    tree when ``at`` is None, by path."""
    if at is None:
        return {
            str(path.relative_to(ROOT)): path.read_text("utf-8")
            for path in sorted((ROOT / SEARCH).rglob("*.py"))
        }
    listed = subprocess.run(
        ["git", "ls-tree", "-r", "--name-only", at, SEARCH],
        cwd=ROOT, check=True, capture_output=True, text=True,
    ).stdout.split()  # fmt: skip
    return {
        path: subprocess.run(
            ["git", "show", f"{at}:{path}"], cwd=ROOT, check=True, capture_output=True, text=True
        ).stdout
        for path in listed
        if path.endswith(".py")
    }


def names_in_code(text: str) -> set[str]:
    """The identifiers and string literals of a module's code, lower-cased, docstrings left
    out."""
    tree = ast.parse(text)
    docstrings = {
        id(body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and (body := node.body)
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    }
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.Attribute):
            found.add(node.attr)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found.add(node.name)
        elif isinstance(node, ast.arg) or (isinstance(node, ast.keyword) and node.arg):
            found.add(node.arg)
        elif isinstance(node, ast.alias):
            found.update(node.name.split(".") + ([node.asname] if node.asname else []))
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.update(node.module.split("."))
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
        ):
            found.add(node.value)
    return {name.lower() for name in found}


def spread(at: str | None) -> dict[str, dict[str, list[str]]]:
    """Per source, the modules that name it: in its own folder, and elsewhere."""
    texts = {path: names_in_code(text) for path, text in modules(at).items()}
    result: dict[str, dict[str, list[str]]] = {}
    for source in SOURCES:
        own = f"{SEARCH}sources/{source}/"
        naming = sorted(path for path, names in texts.items() if any(source in n for n in names))
        result[source] = {
            "own_folder": [path for path in naming if path.startswith(own)],
            "elsewhere": [path for path in naming if not path.startswith(own)],
        }
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--at", help="a revision to read instead of the work tree")
    parser.add_argument("--list", action="store_true", help="list the modules, not only counts")
    add_output(parser)
    args = parser.parse_args()
    found = spread(args.at)
    print(f"{'source':<10} {'own folder':>10} {'elsewhere':>10}")
    for source, where in found.items():
        print(f"{source:<10} {len(where['own_folder']):>10} {len(where['elsewhere']):>10}")
        if args.list:
            for path in where["elsewhere"]:
                print(f"    {path}")
    counts = {
        source: {"own_folder": len(where["own_folder"]), "elsewhere": len(where["elsewhere"])}
        for source, where in found.items()
    }
    write_result("source_spread", {"counts": counts, "modules": found}, args)


if __name__ == "__main__":
    main()
