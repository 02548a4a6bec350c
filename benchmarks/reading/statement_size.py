"""The read statement's size: its lines, CTEs and parameters, and how often each fragment is
written out in it, for every shape on file (docs/statements/).

Each template of ``retrieval/sql/read_*.sql`` is followed by a comment naming it before the
statement modules load, so a rendered statement says how many times each fragment went into
it; PostgreSQL's parser (pglast) drops the comments, so the formatted statement (the file in
docs/statements/) is the one on file. For each fragment: the files it appears in (a change of
it rewrites them), its uses in all of them (the places the change shows in their diffs), and
the sources' own files it appears in (docs/statements/sources/).

Usage: python benchmarks/reading/statement_size.py [--shape default] [--fragment NAME ...]
       [--json PATH] [--no-save]
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the shared modules
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests.statement_shapes
from _common import add_output, write_result

# The expressions computed per candidate, and the fragments a change is counted for.
FRAGMENTS = (
    "read_relevance.dense",
    "read_relevance.lexical",
    "read_relevance.fused",
    "read_relevance.lexical_share",
    "read_common.halvings",
    "read_common.recency",
    "read_common.told_at",
    "read_common.live",
)
_MARKED = re.compile(r"/\*@([\w.]+)\*/")
_PARAMETER = re.compile(r"%\((\w+)\)s")
# The modules that render the read statement: the statement stage's, and each source's part.
_STATEMENT_STAGE = "retrieval.search.statement"
_SOURCES = "retrieval.search.sources."


def mark_templates() -> None:
    """Every template's text ends with ``/*@FILE.NAME*/`` from now on; the statement modules,
    which render some fragments once when first imported, are forgotten and imported afresh
    (in their own order) when :func:`measure` imports them."""
    from retrieval.db import queries

    plain = queries.blocks

    def marked(file: str) -> Mapping[str, str]:
        return MappingProxyType(
            {name: f"{text}/*@{file}.{name}*/" for name, text in plain(file).items()}
        )

    queries.blocks = marked  # type: ignore[assignment]
    for name in [name for name in sys.modules if _renders(name)]:
        del sys.modules[name]


def _renders(module: str) -> bool:
    # Whether ``module`` renders part of the read statement.
    if module.startswith(_SOURCES):
        return module.endswith(".statement")
    return module.startswith(_STATEMENT_STAGE)


def measure(fragments: tuple[str, ...]) -> dict[str, Any]:
    """Each shape's size and fragment uses, and each fragment's files and uses over them."""
    from retrieval.search.statement.render import build_statement, statement_parts
    from tests.statement_shapes import SCHEMA, format_statement, pinned_shapes, source_parts

    shapes: dict[str, Any] = {}
    for name, (title, shape) in sorted(pinned_shapes().items()):
        raw = build_statement(SCHEMA, shape)
        formatted = format_statement(SCHEMA, shape, f"{name}: {title}")
        ctes, _ = statement_parts(SCHEMA, shape)
        uses = Counter(_MARKED.findall(raw))
        plain = _MARKED.sub("", raw)
        shapes[name] = {
            "lines": formatted.count("\n"),
            "ctes": len(ctes),
            "parameters": len(set(_PARAMETER.findall(plain))),
            "parameter_uses": len(_PARAMETER.findall(plain)),
            "fragment_uses": {fragment: uses[fragment] for fragment in fragments},
        }
    sources = {
        name: Counter(_MARKED.findall("".join(part.sql for part in parts)))
        for name, (_, parts) in sorted(source_parts().items())
    }
    changes = {
        fragment: {
            "files": sum(1 for s in shapes.values() if s["fragment_uses"][fragment]),
            "uses": sum(s["fragment_uses"][fragment] for s in shapes.values()),
            "source_files": sorted(name for name, uses in sources.items() if uses[fragment]),
        }
        for fragment in fragments
    }
    return {"files": len(shapes), "shapes": shapes, "a_change_of": changes}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", default="default", help="the shape printed in full")
    parser.add_argument(
        "--fragment",
        action="append",
        help="a template (FILE.NAME) to count; repeatable (default: the per-candidate "
        "expressions and the live predicate)",
    )
    add_output(parser)
    args = parser.parse_args()
    mark_templates()
    fragments = tuple(args.fragment or FRAGMENTS)
    results = measure(fragments)
    shape = results["shapes"][args.shape]
    print(
        f"{args.shape}: {shape['lines']} lines, {shape['ctes']} CTEs, "
        f"{shape['parameters']} parameters bound {shape['parameter_uses']} times"
    )
    print(
        f"{'fragment':<30} {'uses in ' + args.shape:>16} {'files':>6} {'uses in all':>12}  "
        "sources' files"
    )
    for fragment in fragments:
        change = results["a_change_of"][fragment]
        print(
            f"{fragment:<30} {shape['fragment_uses'][fragment]:>16} "
            f"{change['files']:>3}/{results['files']:<2} {change['uses']:>12}  "
            + ", ".join(change["source_files"])
        )
    write_result("statement-size", results, args)


if __name__ == "__main__":
    main()
