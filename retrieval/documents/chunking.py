"""Cutting text into overlapping chunks of words, keeping sections and pages.

A text is a sequence of words, each with the page it is on (PDF) and the section it belongs to
(Markdown headings). Chunks are windows of ``size`` words that start ``size - overlap`` words
apart; a chunk never spans two sections, so its section title is exact, and it records the
first and last page of its words.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from retrieval.documents.inputs import ChunkInput
from retrieval.errors import ConfigurationError

DEFAULT_CHUNK_WORDS = 200
DEFAULT_OVERLAP_WORDS = 40
_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")


@dataclass(frozen=True)
class ChunkSizes:
    """Words per chunk and words shared by neighbouring chunks."""

    size: int = DEFAULT_CHUNK_WORDS
    overlap: int = DEFAULT_OVERLAP_WORDS

    def __post_init__(self) -> None:
        if isinstance(self.size, bool) or not isinstance(self.size, int) or self.size < 1:
            raise ConfigurationError(f"chunk size must be an integer >= 1, got {self.size!r}")
        if not isinstance(self.overlap, int) or not 0 <= self.overlap < self.size:
            raise ConfigurationError(
                f"overlap must be an integer in [0, size), got {self.overlap!r} (size {self.size})"
            )


@dataclass(frozen=True)
class Section:
    """Consecutive words under one title; ``pages[i]`` is the page of ``words[i]`` (or None)."""

    title: str | None
    words: Sequence[str]
    pages: Sequence[int | None]


def chunk_sections(sections: Sequence[Section], sizes: ChunkSizes) -> list[ChunkInput]:
    """The chunks of every section in order, windows of ``sizes.size`` words."""
    chunks: list[ChunkInput] = []
    step = sizes.size - sizes.overlap
    for section in sections:
        count = len(section.words)
        start = 0
        while start < count:
            stop = min(count, start + sizes.size)
            pages = [p for p in section.pages[start:stop] if p is not None]
            chunks.append(
                ChunkInput(
                    text=" ".join(section.words[start:stop]),
                    section_title=section.title,
                    page_start=min(pages) if pages else None,
                    page_end=max(pages) if pages else None,
                )
            )
            if stop == count:
                break
            start += step
    return chunks


def plain_sections(text: str) -> list[Section]:
    """A plain text as one untitled section."""
    words = text.split()
    return [Section(title=None, words=words, pages=[None] * len(words))] if words else []


def markdown_sections(text: str) -> list[Section]:
    """A Markdown text cut at its headings; a section's title is its heading path
    (``Install > Linux``). Text before the first heading has no title."""
    sections: list[Section] = []
    path: list[tuple[int, str]] = []
    words: list[str] = []
    title: str | None = None
    for line in text.splitlines():
        heading = _HEADING.match(line)
        if heading is None:
            words.extend(line.split())
            continue
        if words:
            sections.append(Section(title=title, words=words, pages=[None] * len(words)))
        words = []
        level = len(heading.group(1))
        path = [(lvl, name) for lvl, name in path if lvl < level] + [(level, heading.group(2))]
        title = " > ".join(name for _, name in path)
    if words:
        sections.append(Section(title=title, words=words, pages=[None] * len(words)))
    return sections


def paged_sections(pages: Sequence[str]) -> list[Section]:
    """The pages of a PDF (their text, page 1 first) as one section that remembers pages."""
    words: list[str] = []
    numbers: list[int | None] = []
    for number, page in enumerate(pages, start=1):
        page_words = page.split()
        words.extend(page_words)
        numbers.extend([number] * len(page_words))
    return [Section(title=None, words=words, pages=numbers)] if words else []
