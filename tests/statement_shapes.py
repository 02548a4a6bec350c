"""The read statement's shapes kept on file (docs/statements/), and how they are written.

Every option of a call and of the settings that changes the statement is a field of
:class:`~retrieval.search.statement.render.StatementShape`. Their product runs to thousands
(:func:`shape_space`), so the files hold a pinned set: the shapes the defaults produce (a
tenant's first call, and its later calls with and without documents, decisions or turns), each
mode, and each documented option turned from its default, one at a time. Together they use
every fragment of every template at least once (tests/unit/test_statement_files.py checks).

A file is the statement as it runs, formatted by PostgreSQL's own parser (pglast): a header
naming the shape and the parameters it binds, then each CTE after a one-line comment saying
what it holds, then the final select. Each source's CTEs of the default shape are also on file
by themselves (docs/statements/sources/), so a change of one source reads in one small file.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pglast
from pglast.stream import IndentedStream

from retrieval.search.knowledge import FACTS, SIZE_ROWS
from retrieval.search.modes import DEFAULT_MODES
from retrieval.search.plan.shape import StatementShape
from retrieval.search.sources.documents.plan import SOURCE as DOCUMENTS
from retrieval.search.sources.documents.plan import DocumentsQuery
from retrieval.search.sources.episodic.plan import SOURCE as EPISODIC
from retrieval.search.sources.episodic.plan import EpisodicQuery
from retrieval.search.sources.semantic.plan import SemanticQuery
from retrieval.search.statement.context import statement_context_ctes
from retrieval.search.statement.cte import Cte
from retrieval.search.statement.render import SOURCES, build_statement, statement_parts

SCHEMA = "retrieval"
PARAMETER = re.compile(r"%\((\w+)\)s")
_MARK = "__bound_"  # a parameter written as a column name while the parser reads the text

_SEMANTIC = SemanticQuery(
    mode=DEFAULT_MODES["semantic"],
    with_max_distance=True,
    with_entities=False,
    bm25=True,
    versions=True,
)
_EPISODIC = EpisodicQuery(decisions=True, tool_calls=True, with_task=False)
_SOURCES_PROBED = (EPISODIC, DOCUMENTS)
# And whether the memories' candidates hold a pair of facts that may be versions.
_PROBED = (*_SOURCES_PROBED, FACTS)
# A later call of a tenant that holds memories, decisions and tool calls, and documents.
# Every operator of a metadata filter, each condition's part of the statement.
EVERY_OPERATOR = (
    "eq", "eq_json", "eq_at", "contains", "ne", "gt", "gte", "lt", "lte", "in", "in_within",
    "nin", "exists", "substring", "isubstring",
)  # fmt: skip
_DOCUMENTS = DocumentsQuery(gated=True)
DEFAULT = StatementShape(
    semantic=_SEMANTIC, episodic=_EPISODIC, documents=_DOCUMENTS, presence=_PROBED
)


def pinned_shapes() -> dict[str, tuple[str, StatementShape]]:
    """The shapes on file, by file name: what each stands for, and the shape."""
    semantic, episodic = _SEMANTIC, _EPISODIC
    shapes: dict[str, tuple[str, StatementShape]] = {
        "default": ("the defaults, a tenant holding every source", DEFAULT),
        "default-first-call": (
            "the defaults, a tenant's first call: its size asked for, the context turns read",
            replace(DEFAULT, presence=_PROBED + SIZE_ROWS, context=True, materialized=True),
        ),
        "default-conversation": (
            "the defaults, a tenant whose leading hits are turns: their context turns read",
            replace(DEFAULT, context=True),
        ),
        "default-memories-only": (
            "the defaults, a tenant holding memories only",
            StatementShape(semantic=semantic, episodic=None, presence=_PROBED),
        ),
        "default-no-facts": (
            "the defaults, a tenant whose candidates held no pair of facts that may be versions "
            "(abstracts, turns): the versions left out, their presence row kept",
            replace(DEFAULT, semantic=replace(semantic, versions=False)),
        ),
        "default-small-tenant": (
            "the defaults, a tenant small for its table: its memories read exactly",
            replace(DEFAULT, semantic=replace(semantic, exact=True)),
        ),
        "default-row-security": (
            "the defaults, on a role bound by row-level security",
            replace(
                DEFAULT,
                semantic=replace(semantic, bound=True),
                episodic=replace(episodic, bound=True),
                materialized=True,
            ),
        ),
        "default-long-query": (
            "the defaults, a query of more words than max_query_words (and 63 keywords)",
            replace(
                DEFAULT,
                semantic=replace(semantic, capped=True),
                episodic=replace(episodic, capped=True, many_keywords=True),
                documents=replace(_DOCUMENTS, capped=True),
            ),
        ),
        "default-citus": (
            "the defaults planned for their values (on a Citus cluster, a tenant whose size the "
            "generic plan misjudges): every CTE materialized, each planned apart",
            replace(DEFAULT, materialized=True),
        ),
        "default-without-threads": (
            "the defaults, memories only, messages stored without threads: context turns read",
            StatementShape(semantic=semantic, episodic=None, presence=_PROBED, context=True),
        ),
    }
    for name, mode in DEFAULT_MODES.items():
        if name == "semantic":
            continue
        kinds = mode.include_kinds
        shapes[f"mode-{name}"] = (
            f"mode {name}",
            replace(
                DEFAULT,
                semantic=replace(semantic, mode=mode),
                episodic=replace(
                    episodic,
                    decisions=kinds is None or "decision" in kinds,
                    tool_calls=kinds is None or "tool_call" in kinds,
                ),
                materialized=True,  # its kinds choose the index: planned for its values
            ),
        )
    shapes |= {
        "option-task": (
            "task_id given: the episodic source reads one task",
            replace(DEFAULT, episodic=replace(episodic, with_task=True)),
        ),
        "option-entities": (
            "entities given: the entity-overlap signal",
            replace(DEFAULT, semantic=replace(semantic, with_entities=True)),
        ),
        "option-no-gate": (
            "max_distance None: no evidence gate",
            replace(
                DEFAULT,
                semantic=replace(semantic, with_max_distance=False),
                documents=replace(_DOCUMENTS, gated=False),
            ),
        ),
        "option-no-memory-bm25": (
            "memory_bm25 off: memories by vector only",
            replace(DEFAULT, semantic=replace(semantic, bm25=False)),
        ),
        "option-no-versions": (
            "newer_versions_first off: no memory's newer versions named",
            replace(DEFAULT, semantic=replace(semantic, versions=False), presence=_SOURCES_PROBED),
        ),
        "option-filter": (
            "a metadata filter with every operator: memories, their context turns and the "
            "chunks that meet it; no decisions or tool calls",
            replace(
                DEFAULT,
                episodic=None,
                context=True,
                filter=EVERY_OPERATOR,
                materialized=True,
            ),
        ),
        "option-namespace": (
            "a namespace given (with a metadata filter): memories in it or below it and their "
            "context turns; no decisions, tool calls or documents",
            replace(
                DEFAULT,
                episodic=None,
                documents=None,
                presence=(FACTS,),
                context=True,
                filter=("namespace", "eq"),
                materialized=True,
            ),
        ),
        "option-episodic-only": (
            "the semantic source off",
            StatementShape(semantic=None, episodic=episodic, presence=_SOURCES_PROBED),
        ),
        "option-documents-only": (
            "the semantic and episodic sources off",
            StatementShape(
                semantic=None, episodic=None, documents=_DOCUMENTS, presence=(DOCUMENTS,)
            ),
        ),
    }
    for how in ("max", "weighted", "cascade"):
        shapes[f"option-lexical-{how}"] = (
            f"lexical_match {how} on memories and on the episodic source",
            replace(
                DEFAULT,
                semantic=replace(semantic, lexical=how),
                episodic=replace(episodic, lexical=how),
            ),
        )
    return shapes


def shape_space() -> int:
    """How many distinct statements the options can make (modes counted as the default ones)."""
    semantic = [None] + [
        SemanticQuery(mode, *flags[:2], lexical, *flags[2:])
        for mode in DEFAULT_MODES.values()
        for lexical in (None, "max", "weighted", "cascade")
        for flags in itertools.product((False, True), repeat=7)
    ]
    episodic = [None] + [
        EpisodicQuery(*flags[:3], lexical, *flags[3:])
        for lexical in (None, "max", "weighted", "cascade")
        for flags in itertools.product((False, True), repeat=6)
        if flags[0] or flags[1]
    ]
    documents = [None] + [
        DocumentsQuery(*flags) for flags in itertools.product((False, True), repeat=2)
    ]
    presence = 4  # with or without the size rows, times the probed sources at their defaults
    filters = 3  # none, a metadata filter, or a namespace (each list of operators its own)
    return len(semantic) * len(episodic) * len(documents) * presence * 2 * filters


def format_statement(schema: str, shape: StatementShape, title: str) -> str:
    """The statement of ``shape`` formatted for reading: its header, then each CTE after its
    note and the parameters it binds, then the final select."""
    parts, _ = statement_parts(schema, shape)
    sql = build_statement(schema, shape)
    blocks, statement = _formatted(sql, parts)
    body = "WITH\n" + ",\n\n".join(blocks) + "\n\n-- the candidates of every source\n"
    body += _stream(statement) + "\n"
    return _header(title, sql) + body


def source_parts() -> dict[str, tuple[str, list[Cte]]]:
    """Each source's CTEs in the default shape (a tenant's later call: the semantic source's
    context turns besides), by file name: what each holds, and the CTEs."""
    files: dict[str, tuple[str, list[Cte]]] = {
        source.name: (f"the {source.name} source's CTEs", source.ctes(SCHEMA, DEFAULT))
        for source in SOURCES
    }
    files["context"] = (
        "the context turns of the semantic candidates that are turns",
        statement_context_ctes(SCHEMA, _SEMANTIC.mode),
    )
    return files


def format_source(title: str, parts: list[Cte]) -> str:
    """A source's CTEs formatted for reading as :func:`format_statement` writes them: its
    header, then each CTE after its note and the parameters it binds."""
    sql = "WITH " + ",\n".join(part.sql for part in parts) + "\nSELECT 1"
    blocks, _ = _formatted(sql, parts)
    return _header(title, sql) + ",\n\n".join(blocks) + "\n"


def _formatted(sql: str, parts: list[Cte]) -> tuple[list[str], Any]:
    # Each CTE of ``sql`` after its note and the parameters it binds, and the statement
    # without them.
    (raw,) = pglast.parse_sql(PARAMETER.sub(lambda m: _MARK + m[1], sql))
    statement = raw.stmt
    ctes = statement.withClause.ctes
    statement.withClause = None
    assert [cte.ctename for cte in ctes] == [part.name for part in parts]
    blocks = []
    for cte, part in zip(ctes, parts, strict=True):
        lines = [f"-- {part.name}: {part.note}"]
        lines += _wrapped("--   binds: ", ", ".join(part.binds)) if part.binds else []
        blocks.append("\n".join([*lines, _stream(cte)]))
    return blocks, statement


def _header(title: str, sql: str) -> str:
    names = sorted(set(PARAMETER.findall(sql)))
    return "\n".join([f"-- {title}", *_wrapped("-- Binds: ", ", ".join(names))]) + "\n\n"


def _stream(node: object) -> str:
    text: str = IndentedStream(comma_at_eoln=True)(node)
    return re.sub(rf"{_MARK}(\w+)", r"%(\1)s", text)


def _wrapped(prefix: str, text: str, width: int = 99) -> Iterator[str]:
    line = prefix
    for word in text.split(" "):
        if len(line) + len(word) > width and line.strip() != prefix.strip():
            yield line.rstrip()
            line = "--" + " " * (len(prefix) - 2)
        line += word + " "
    yield line.rstrip()
