from __future__ import annotations

import pytest

from retrieval.documents.chunking import (
    ChunkSizes,
    chunk_sections,
    markdown_sections,
    paged_sections,
    plain_sections,
)
from retrieval.errors import ConfigurationError


def test_windows_overlap_and_cover_every_word() -> None:
    words = " ".join(f"w{i}" for i in range(10))
    chunks = chunk_sections(plain_sections(words), ChunkSizes(size=4, overlap=1))
    assert [c.text for c in chunks] == ["w0 w1 w2 w3", "w3 w4 w5 w6", "w6 w7 w8 w9"]
    assert all(c.section_title is None and c.page_start is None for c in chunks)
    assert chunk_sections(plain_sections("  \n "), ChunkSizes()) == []


def test_markdown_chunks_stay_in_their_sections_with_heading_paths() -> None:
    text = "Intro words here\n# Install\nrun make\n## Linux\nuse apt get\n# Usage\ncall it"
    chunks = chunk_sections(markdown_sections(text), ChunkSizes(size=50, overlap=5))
    assert [(c.section_title, c.text) for c in chunks] == [
        (None, "Intro words here"),
        ("Install", "run make"),
        ("Install > Linux", "use apt get"),
        ("Usage", "call it"),
    ]


def test_pdf_chunks_record_the_pages_they_span() -> None:
    pages = ["one two three", "four five", "six seven eight nine"]
    chunks = chunk_sections(paged_sections(pages), ChunkSizes(size=4, overlap=0))
    assert [(c.text, c.page_start, c.page_end) for c in chunks] == [
        ("one two three four", 1, 2),
        ("five six seven eight", 2, 3),
        ("nine", 3, 3),
    ]


def test_bad_sizes_are_refused() -> None:
    with pytest.raises(ConfigurationError, match="chunk size"):
        ChunkSizes(size=0)
    with pytest.raises(ConfigurationError, match="overlap"):
        ChunkSizes(size=10, overlap=10)
