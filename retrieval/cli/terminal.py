"""The terminal: asking the person there before a command destroys data, and showing stored
text without letting it act on the terminal."""

from __future__ import annotations

import io
import sys
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stdout
from typing import Any, TextIO

from retrieval.db.engine import Database


def confirmed(question: str) -> bool:
    """Whether the user typed ``yes`` to ``question``; never when no terminal can answer."""
    if not sys.stdin.isatty():
        return False
    try:
        return input(f"{question}: ").strip().lower() == "yes"
    except EOFError:
        return False


# Characters a terminal acts on rather than shows: C0 controls but the line break and the tab
# (written \x1b), DEL, C1 controls and the bidirectional overrides that reorder what is shown
# (written \u009b: a JSON line, whose encoder escapes only C0, stays valid JSON).
_ACTIVE = {
    code: f"\\x{code:02x}" if code < 0x20 else f"\\u{code:04x}"
    for code in (
        *(c for c in range(0x20) if chr(c) not in "\n\t"),
        *range(0x7F, 0xA0),
        *range(0x202A, 0x202F),
        *range(0x2066, 0x206A),
    )
}


def shown(text: str) -> str:
    """``text`` with every character a terminal would act on written as an escape (``\\x1b``),
    so that a stored text can neither retitle nor clear the terminal that prints it."""
    return text.translate(_ACTIVE)


class Escaping(io.TextIOBase):
    """A text stream that writes to ``stream`` what :func:`shown` makes of it."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(shown(text))
        return len(text)

    def flush(self) -> None:
        self._stream.flush()

    def isatty(self) -> bool:
        return self._stream.isatty()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self._stream.encoding


@contextmanager
def escaped_stdout() -> Iterator[None]:
    """Standard output through :class:`Escaping` while the block runs."""
    with redirect_stdout(Escaping(sys.stdout)):
        yield


def progress(total: int, label: str, unit: str) -> Any:
    """A progress bar of ``total`` ``unit`` on standard error: a bar on a terminal, silence in
    pipes and CI logs."""
    from tqdm import tqdm

    return tqdm(total=total, desc=label, unit=f" {unit}", disable=None, file=sys.stderr)


def database_line(database: Database) -> str:
    """Which database a command read: its URL (password masked), and for the embedded server
    its data directory."""
    if database.embedded is not None:
        return f"database: the embedded PostgreSQL in {database.embedded.data_dir} ({database.url})"
    return f"database: {database.url}"
