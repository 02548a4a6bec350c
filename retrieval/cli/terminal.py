"""The terminal: asking the person there before a command destroys data, and showing stored
text without letting it act on the terminal."""

from __future__ import annotations

import io
import sys
import threading
import time
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


# Without a terminal (a pipe, a CI log), a line this often at most.
LOG_EVERY_SECONDS = 10.0


class Progress:
    """Progress of a long command on standard error: on a terminal a bar redrawn at least every
    second (done, rate, time left); elsewhere a line every :data:`LOG_EVERY_SECONDS`.

    ``committed(n)`` counts ``n`` more units written; ``embedded(n)`` counts texts embedded
    since (:func:`retrieval.embedding.progress.reporting_embedded`), which moves the position
    within a transaction of thousands of rows, never past the last unit before it commits."""

    def __init__(self, total: int, label: str, unit: str, stream: TextIO | None = None) -> None:
        from tqdm import tqdm

        self.total, self.label, self.unit = total, label, unit
        self.stream = stream or sys.stderr
        self.done = 0
        self._within = 0
        self._began = self._logged = time.monotonic()
        self._bar: Any = None
        self._stop = threading.Event()
        if self.stream.isatty():
            self._bar = tqdm(total=total, desc=label, unit=f" {unit}", file=self.stream)
            threading.Thread(target=self._tick, daemon=True).start()

    @property
    def position(self) -> int:
        """Units done, counting those being embedded."""
        if self._within == 0:
            return self.done
        return max(self.done, min(self.done + self._within, self.total - 1))

    def committed(self, count: int) -> None:
        """``count`` more units are written."""
        self.done += count
        self._within = 0
        self._moved()

    def embedded(self, count: int) -> None:
        """``count`` more texts of the units being written are embedded."""
        self._within += count
        self._moved()

    def line(self) -> str:
        """Where it stands, as the line written without a terminal."""
        position = self.position
        elapsed = max(time.monotonic() - self._began, 1e-9)
        rate = position / elapsed
        left = f", about {(self.total - position) / rate:,.0f} s left" if rate > 0 else ""
        share = 100 * position / self.total if self.total else 100.0
        return (
            f"{self.label}: {position:,} of {self.total:,} {self.unit} ({share:.0f}%), "
            f"{rate:,.1f} {self.unit}/s{left}"
        )

    def _moved(self) -> None:
        if self._bar is not None:
            self._bar.update(self.position - self._bar.n)
            return
        now = time.monotonic()
        if now - self._logged >= LOG_EVERY_SECONDS:
            self._logged = now
            print(self.line(), file=self.stream, flush=True)

    def _tick(self) -> None:
        # The bar's time and rate stay current while a batch of the model runs.
        while not self._stop.wait(1.0):
            self._bar.refresh()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._bar is not None:
            self._bar.close()


def progress(total: int, label: str, unit: str) -> Progress:
    """A :class:`Progress` of ``total`` ``unit`` on standard error."""
    return Progress(total, label, unit)


def database_line(database: Database) -> str:
    """Which database a command read: its URL (password masked), and for the embedded server
    its data directory."""
    if database.embedded is not None:
        return f"database: the embedded PostgreSQL in {database.embedded.data_dir} ({database.url})"
    return f"database: {database.url}"
