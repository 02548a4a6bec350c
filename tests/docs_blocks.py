"""The Python blocks of the README and docs/, as a reader copies them.

A block runs as written unless the line before its fence is ``<!-- fragment: why -->``: a
fragment (a server that runs until its client leaves, a script saved as its own file) is left
out of its page's run, and the tests name each one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))
_FENCE = re.compile(r"^( *)```python\n(.*?)^\1```$", re.DOTALL | re.MULTILINE)
_FRAGMENT = re.compile(r"<!-- fragment: (.+?) -->\s*$")


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # of the opening fence, 1-based
    source: str
    fragment: str | None  # why it is not run with its page, or None

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """The page's Python blocks in order, dedented to the fence's indentation."""
    text = page.read_text("utf-8")
    found = []
    for match in _FENCE.finditer(text):
        indent = len(match.group(1))
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1].strip()
        marked = _FRAGMENT.match(before)
        source = "\n".join(line[indent:] for line in match.group(2).splitlines())
        found.append(
            Block(
                page=page,
                line=text.count("\n", 0, match.start()) + 1,
                source=source + "\n",
                fragment=marked.group(1) if marked else None,
            )
        )
    return found
