"""Progress of long commands: a bar on a terminal, a line every few seconds elsewhere, moved by
the texts the model embeds within a transaction."""

from __future__ import annotations

import io

import pytest

from retrieval.cli import terminal
from retrieval.cli.terminal import Progress
from retrieval.embedding.progress import embedded, reporting_embedded


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_without_a_terminal_a_line_says_done_rate_and_time_left(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(terminal, "LOG_EVERY_SECONDS", 0.0)
    stream = io.StringIO()
    with Progress(200, "ingest", "rows", stream) as bar, reporting_embedded(bar.embedded):
        embedded(64)  # the model's first batch of a transaction of 200 rows
        assert bar.position == 64 and bar.done == 0
        embedded(200)  # more texts than rows (a turn and the one before it): held below
        assert bar.position == 199
        bar.committed(200)
        assert bar.position == 200
    lines = stream.getvalue().splitlines()
    assert lines[0].startswith("ingest: 64 of 200 rows (32%), ")
    assert " rows/s, about " in lines[0] and lines[0].endswith(" s left")
    assert lines[-1].startswith("ingest: 200 of 200 rows (100%)")


def test_lines_are_spaced_in_time(monkeypatch: pytest.MonkeyPatch) -> None:
    stream = io.StringIO()
    with Progress(1000, "reembed", "memories", stream) as bar:
        for _ in range(10):
            bar.committed(100)
    assert stream.getvalue() == ""  # all within the first 10 s


def test_on_a_terminal_a_bar_shows_the_rate() -> None:
    stream = Terminal()
    with Progress(100, "ingest", "rows", stream) as bar:
        bar.embedded(30)
        bar.committed(100)
    shown = stream.getvalue()
    assert "ingest" in shown and "100/100" in shown and "rows/s" in shown


def test_nothing_is_heard_outside_the_block() -> None:
    heard: list[int] = []
    with reporting_embedded(heard.append):
        embedded(3)
        embedded(0)
    embedded(5)
    assert heard == [3]
