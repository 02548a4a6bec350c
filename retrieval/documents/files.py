"""Reading files into documents: plain text, Markdown and PDF.

Each file becomes one :class:`~retrieval.documents.DocumentInput` whose ``doc_id`` is stable:
its path relative to a root (:func:`document_id`; the current directory unless named), so the
same file reached as ``docs/a.md``, ``./docs/a.md`` or by its absolute path is one document, and
adding it again is "unchanged" (its chunks' SHA-256). Its chunks come from
:mod:`retrieval.documents.chunking`. A file that cannot be read (missing, not UTF-8, a corrupt
PDF) is a :class:`~retrieval.errors.ValidationError` naming the file.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from retrieval.documents.chunking import (
    ChunkSizes,
    Section,
    chunk_sections,
    markdown_sections,
    paged_sections,
    plain_sections,
)
from retrieval.documents.inputs import DocumentInput
from retrieval.errors import ValidationError

TEXT_SUFFIXES = frozenset({".txt", ".text"})
MARKDOWN_SUFFIXES = frozenset({".md", ".markdown"})
PDF_SUFFIXES = frozenset({".pdf"})
SUFFIXES = TEXT_SUFFIXES | MARKDOWN_SUFFIXES | PDF_SUFFIXES


def find_files(paths: Iterable[Path]) -> list[Path]:
    """The readable files among ``paths``: files as given, directories searched recursively."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found.extend(sorted(p for p in path.rglob("*") if p.suffix.lower() in SUFFIXES))
        elif path.is_file():
            if path.suffix.lower() not in SUFFIXES:
                raise ValidationError(
                    f"{path}: unknown file type {path.suffix!r}; give "
                    f"{', '.join(sorted(SUFFIXES))} files",
                    field="path",
                )
            found.append(path)
        else:
            raise ValidationError(f"{path}: no such file or directory", field="path")
    return found


def document_id(path: Path, root: Path | None = None) -> str:
    """The stable id of the file at ``path``: its resolved path relative to ``root`` (default:
    the current directory), in POSIX form; the absolute path for a file outside the root."""
    resolved = path.resolve()
    base = (root or Path.cwd()).resolve()
    try:
        return resolved.relative_to(base).as_posix()
    except ValueError:
        return resolved.as_posix()


def read_document(
    path: Path, *, tenant_id: str, sizes: ChunkSizes, root: Path | None = None
) -> DocumentInput:
    """``path`` as a document of ``tenant_id``, cut into chunks of ``sizes``, its id relative
    to ``root`` (:func:`document_id`)."""
    sections = _sections(path)
    chunks = chunk_sections(sections, sizes)
    if not chunks:
        raise ValidationError(f"{path}: no text found in the file", field="path")
    doc_id = document_id(path, root)
    return DocumentInput(
        tenant_id=tenant_id,
        doc_id=doc_id,
        filename=path.name,
        chunks=chunks,
        metadata={"path": doc_id, "chunk_words": sizes.size, "overlap_words": sizes.overlap},
    )


def _sections(path: Path) -> list[Section]:
    suffix = path.suffix.lower()
    if suffix in PDF_SUFFIXES:
        return paged_sections(_pdf_pages(path))
    try:
        body = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise ValidationError(f"{path}: not UTF-8 text ({error})", field="path") from None
    except OSError as error:
        raise ValidationError(f"{path}: cannot be read ({error})", field="path") from None
    body = body.replace("\x00", "")
    return markdown_sections(body) if suffix in MARKDOWN_SUFFIXES else plain_sections(body)


def _pdf_pages(path: Path) -> list[str]:
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        reader = PdfReader(path, strict=False)
        return [(page.extract_text() or "").replace("\x00", "") for page in reader.pages]
    except (PyPdfError, ValueError, KeyError, TypeError, OSError) as error:
        raise ValidationError(
            f"{path}: not a readable PDF ({type(error).__name__}: {error}); nothing was "
            "stored from it",
            field="path",
        ) from None
