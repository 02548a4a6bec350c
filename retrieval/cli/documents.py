"""``retrieval ingest-docs``: text, Markdown and PDF files stored as chunked documents."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from retrieval.cli.parsers import command
from retrieval.cli.terminal import progress
from retrieval.counts import counted
from retrieval.db.engine import Database
from retrieval.documents.chunking import DEFAULT_CHUNK_WORDS, DEFAULT_OVERLAP_WORDS
from retrieval.embedding.progress import reporting_embedded
from retrieval.errors import ValidationError
from retrieval.memory.config import WriteConfig
from retrieval.memory.store import MemoryStore


def add_commands(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
) -> None:
    docs = command(commands, "ingest-docs", _ingest_docs)
    docs.add_argument("paths", nargs="+", type=Path, help="files or directories")
    docs.add_argument("--tenant", required=True, help="tenant_id the documents belong to")
    docs.add_argument(
        "--root",
        type=Path,
        help="documents are named by their path relative to this directory (default: the "
        "current one), so the same file given by another path is the same document",
    )
    docs.add_argument(
        "--chunk-words",
        type=int,
        default=DEFAULT_CHUNK_WORDS,
        help=f"words per chunk (default: {DEFAULT_CHUNK_WORDS})",
    )
    docs.add_argument(
        "--overlap-words",
        type=int,
        default=DEFAULT_OVERLAP_WORDS,
        help=f"words shared by neighbouring chunks (default: {DEFAULT_OVERLAP_WORDS})",
    )
    docs.add_argument(
        "--text-search-config",
        help="PostgreSQL text search configuration for BM25 (RETRIEVAL_TEXT_SEARCH_CONFIG; "
        "english)",
    )


def _ingest_docs(args: argparse.Namespace, database: Database) -> int:
    """store text, Markdown and PDF files as chunked documents

    Read each file (directories are searched for .txt, .md and .pdf), cut it into overlapping
    chunks of words (Markdown: within its sections, titled by their headings; PDF: with the
    pages each chunk spans), embed the chunks and store them with their BM25 statistics, one
    transaction per file. Every file is read before anything is written: an unreadable one stops
    the run and nothing is stored. An unchanged file is skipped; a changed one replaces its
    chunks."""
    from retrieval.documents.chunking import ChunkSizes
    from retrieval.documents.files import find_files, read_document
    from retrieval.documents.inputs import validate_document
    from retrieval.documents.store import DocumentStore

    sizes = ChunkSizes(size=args.chunk_words, overlap=args.overlap_words)
    files = find_files(args.paths)
    if not files:
        print("no .txt, .md or .pdf file found", file=sys.stderr)
        return 1
    config = WriteConfig.from_env()
    parsed = [
        read_document(path, tenant_id=args.tenant, sizes=sizes, root=args.root) for path in files
    ]
    for path, document in zip(files, parsed, strict=True):
        try:
            validate_document(document, config.max_text_chars)
        except ValidationError as error:
            raise ValidationError(f"{path}: {error}; nothing was stored") from None
    store = MemoryStore.from_database(database, config=config)
    documents = DocumentStore(store, text_search_config=args.text_search_config)
    outcome = {"added": 0, "replaced": 0, "unchanged": 0}
    chunks = 0
    total = sum(len(document.chunks) for document in parsed)
    with progress(total, "ingest-docs", "chunks") as bar, reporting_embedded(bar.embedded):
        for document in parsed:
            written = documents.add(document)
            outcome[written.status] += 1
            chunks += len(written.chunk_ids) if written.status != "unchanged" else 0
            bar.committed(len(document.chunks))
    print(
        f"{counted(len(parsed), 'file')}: {outcome['added']} added, {outcome['replaced']} "
        f"replaced, {outcome['unchanged']} unchanged; {counted(chunks, 'chunk')} written"
    )
    return 0
