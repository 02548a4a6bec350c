"""Runs a page's Python blocks one after the other in one namespace, then prints the values of
the named expressions given after it, as one JSON object on a line of its own.

    python tests/docs_runner.py PAGE [NAME=EXPRESSION ...]

It is run in a fresh directory by ``tests/integration/test_docs_run.py``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.docs_blocks import ROOT, blocks


def main(page: str, expressions: list[str]) -> None:
    namespace: dict[str, object] = {"__name__": "__main__"}
    for block in blocks(ROOT / page):
        if block.fragment is None:  # one after the other, as pasted into one session
            # A traceback names the page's own line.
            code = compile("\n" * block.line + block.source, page, "exec")
            exec(code, namespace)
    named = (expression.split("=", 1) for expression in expressions)
    values = {name: eval(expression, namespace) for name, expression in named}
    print("DOCS-RUNNER " + json.dumps(values, default=str))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
