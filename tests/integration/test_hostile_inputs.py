"""Hostile and careless inputs over every public entry point, Python and CLI: each gets a
``ValidationError`` or ``ConfigurationError`` saying what was wrong (the CLI: exit 1 and the
message), and the database is left exactly as it was."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.exc import IntegrityError

from retrieval.cli.commands import main
from retrieval.db.config import DatabaseConfig
from retrieval.db.engine import connect
from retrieval.documents.store import ChunkInput, DocumentInput, DocumentStore
from retrieval.embedding.models import SentenceTransformerEmbedder, Vectors
from retrieval.errors import ConfigurationError, DatabaseError, ValidationError
from retrieval.memory.config import WriteConfig
from retrieval.memory.file_ingest import read_file
from retrieval.memory.store import MemoryStore
from retrieval.search.config import RetrievalConfig, SourceConfig
from retrieval.search.retriever import HybridRetriever
from tests.conftest import CountingEmbedder, PgDatabase, copy_of_template
from tests.harness import PgServer

# Every table a write can touch: a refused input changes none of them.
TABLES = (
    "memories",
    "memory_entities",
    "decisions",
    "tool_calls",
    "documents",
    "document_chunks",
    "embedding_cache",
    "memory_corpus",
)


@dataclass
class Ctx:
    """What an entry point needs: the store, a retriever, the documents and a scratch folder."""

    store: MemoryStore
    retriever: HybridRetriever
    documents: DocumentStore
    tmp: Path
    url: str
    memory_id: int


def _file(ctx: Ctx, name: str, content: str) -> str:
    path = ctx.tmp / name
    path.write_text(content, encoding="utf-8")
    return str(path)


def _deep(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"a": value}
    return value


NAIVE = datetime(2026, 11, 27, 9, 0)
YEAR_10000 = datetime(9999, 12, 31, 23, 0, tzinfo=timezone(timedelta(hours=-14)))
Call = Callable[[Ctx], object]

PYTHON: list[tuple[str, Call, type[Exception], str]] = [
    ("empty text", lambda c: c.store.remember("  ", tenant_id="acme"), ValidationError,
     "text: is empty"),
    ("NUL in text", lambda c: c.store.remember("a\x00b", tenant_id="acme"), ValidationError,
     "NUL"),
    ("unpaired surrogate", lambda c: c.store.remember("half \ud800", tenant_id="acme"),
     ValidationError, "unpaired surrogate"),
    ("text too long", lambda c: c.store.remember("x" * 32_001, tenant_id="acme"),
     ValidationError, "32,000"),
    ("tenant with a trailing space", lambda c: c.store.remember("x", tenant_id="acme "),
     ValidationError, "tenant_id"),
    ("a megabyte tenant", lambda c: c.store.remember("x", tenant_id="t" * 1_000_000),
     ValidationError, "over the limit of 256"),
    ("tenant not a string", lambda c: c.store.remember("x", tenant_id=7),  # type: ignore[arg-type]
     ValidationError, "must be a string"),
    ("unknown kind", lambda c: c.store.remember("x", tenant_id="acme", kind="banana"),
     ValidationError, "not a memory kind"),
    ("importance above 1", lambda c: c.store.remember("x", tenant_id="acme", importance=1.5),
     ValidationError, "must be in"),
    ("importance NaN", lambda c: c.store.remember("x", tenant_id="acme", importance=float("nan")),
     ValidationError, "must be in"),
    ("importance 10**400", lambda c: c.store.remember("x", tenant_id="acme", importance=10**400),
     ValidationError, "must be in"),
    ("naive created_at", lambda c: c.store.remember("x", tenant_id="acme", created_at=NAIVE),
     ValidationError, "no time zone"),
    ("created_at in year 10000 UTC",
     lambda c: c.store.remember("x", tenant_id="acme", created_at=YEAR_10000),
     ValidationError, "outside the years 1 to 9999"),
    ("metadata a list",
     lambda c: c.store.remember("x", tenant_id="acme", metadata=[1, 2]),  # type: ignore[arg-type]
     ValidationError, "metadata"),
    ("metadata nested 5,000 deep",
     lambda c: c.store.remember("x", tenant_id="acme", metadata=_deep(5000)),
     ValidationError, "nested too deeply"),
    ("metadata holding NaN",
     lambda c: c.store.remember("x", tenant_id="acme", metadata={"v": float("nan")}),
     ValidationError, "metadata"),
    ("entities a string",
     lambda c: c.store.remember("x", tenant_id="acme", entities="abc"),
     ValidationError, "entities"),
    ("embedding of the wrong dimension",
     lambda c: c.store.remember("x", tenant_id="acme", embedding=[0.1] * 10),
     ValidationError, "384"),
    ("embedding holding NaN",
     lambda c: c.store.remember("x", tenant_id="acme", embedding=[float("nan")] * 384),
     ValidationError, "NaN or infinity"),
    ("negative position",
     lambda c: c.store.remember("x", tenant_id="acme", thread_id="s", position=-1),
     ValidationError, "position"),
    ("one bad row in a batch",
     lambda c: c.store.remember_many(
         [{"text": "good", "tenant_id": "acme"}, {"text": "", "tenant_id": "acme"}]),
     ValidationError, "item 1: text"),
    ("a batch of None", lambda c: c.store.remember_many(None),  # type: ignore[arg-type]
     ValidationError, "takes an iterable"),
    ("unknown field in a batch",
     lambda c: c.store.remember_many([{"text": "x", "tenant_id": "acme", "colour": "red"}]),
     ValidationError, "unknown field"),
    ("decision with an empty status",
     lambda c: c.store.record_decision(tenant_id="acme", task_id=None, action_type="a",
                                       content="c", status=""),
     ValidationError, "status"),
    ("tool call with params that are not JSON",
     lambda c: c.store.record_tool_call(tenant_id="acme", decision_id=None, tool_name="t",
                                        params={"x": object()}, result=None),
     ValidationError, "params"),
    ("tool call naming a decision id as a string",
     lambda c: c.store.record_tool_call(tenant_id="acme", decision_id="5",  # type: ignore[arg-type]
                                        tool_name="t", params={}, result=None),
     ValidationError, "decision_id"),
    ("tool call naming a decision that does not exist",
     lambda c: c.store.record_tool_call(tenant_id="acme", decision_id=999_999, tool_name="t",
                                        params={}, result=None),
     ValidationError, "decision"),
    ("forget ids given as a string",
     lambda c: c.store.forget(tenant_id="acme", memory_ids="12"),  # type: ignore[arg-type]
     ValidationError, "memory_ids"),
    ("forget ids given as an int",
     lambda c: c.store.forget(tenant_id="acme", memory_ids=5),  # type: ignore[arg-type]
     ValidationError, "memory_ids"),
    ("forget with a tenant that breaks the rule",
     lambda c: c.store.forget(tenant_id="acme\t", memory_ids=[c.memory_id]),
     ValidationError, "tenant_id"),
    ("get_memories ids as strings",
     lambda c: c.store.get_memories(["1"], tenant_id="acme"),  # type: ignore[list-item]
     ValidationError, "memory_ids"),
    ("empty query", lambda c: c.retriever.retrieve("   ", tenant_id="acme"), ValidationError,
     "query"),
    ("NUL in the query", lambda c: c.retriever.retrieve("a\x00b", tenant_id="acme"),
     ValidationError, "NUL"),
    ("retrieve for a tenant with a tab", lambda c: c.retriever.retrieve("x", tenant_id="acme\t"),
     ValidationError, "tenant_id"),
    ("retrieve with limit 0", lambda c: c.retriever.retrieve("x", tenant_id="acme", limit=0),
     ValidationError, "limit"),
    ("retrieve with 21 neighbors",
     lambda c: c.retriever.retrieve("x", tenant_id="acme", neighbors=21), ValidationError,
     "neighbors"),
    ("retrieve as of a naive time",
     lambda c: c.retriever.retrieve("x", tenant_id="acme", as_of=NAIVE), ValidationError,
     "as_of"),
    ("retrieve in an unknown mode",
     lambda c: c.retriever.retrieve("x", tenant_id="acme", mode="everything"),
     ConfigurationError, "mode"),
    ("retrieve with an unknown fusion",
     lambda c: c.retriever.retrieve("x", tenant_id="acme", fusion="average"),
     ConfigurationError, "fusion"),
    ("timeline with a naive since",
     lambda c: c.retriever.timeline("acme", since=NAIVE), ValidationError, "since"),
    ("document with an empty chunk",
     lambda c: c.documents.add(DocumentInput(tenant_id="acme", doc_id="d",
                                             chunks=[ChunkInput("ok"), ChunkInput("")])),
     ValidationError, "chunk 1 is empty"),
    ("document with an empty id",
     lambda c: c.documents.add(DocumentInput(tenant_id="acme", doc_id=" ",
                                             chunks=[ChunkInput("ok")])),
     ValidationError, "doc_id"),
    ("document metadata holding infinity",
     lambda c: c.documents.add(DocumentInput(tenant_id="acme", doc_id="d",
                                             chunks=[ChunkInput("ok")],
                                             metadata={"v": float("inf")})),
     ValidationError, "JSON"),
    ("bm25 with k1 NaN",
     lambda c: c.documents.bm25("x", tenant_id="acme", k1=float("nan")), ValidationError, "k1"),
    ("a file with one bad line among good ones",
     lambda c: read_file(Path(_file(c, "h.jsonl", '{"text": "ok"}\n{"text": ""}\n')), c.store,
                         tenant_id="acme"),
     ValidationError, "line 2: text"),
    ("a schema name that is SQL",
     lambda c: HybridRetriever(c.store.engine, schema='x".memories; --'), ConfigurationError,
     "identifier"),
    ("a declared kind that is not a name", lambda c: WriteConfig(extra_kinds={"Bad Kind"}),
     ConfigurationError, "extra_kinds"),
    ("weights that do not sum to 1",
     lambda c: RetrievalConfig(semantic=SourceConfig(
         relevance=0.9, recency=0.9, limit=10, half_life_hours=24.0)),
     ConfigurationError, "sum"),
    ("retrieve with limit 2000 (past hnsw.ef_search's 1,000)",
     lambda c: c.retriever.retrieve("x", tenant_id="acme", limit=2000), ValidationError,
     "limit must be an integer from 1 to 1,000"),
    ("retrieve with entities None",
     lambda c: c.retriever.retrieve("x", tenant_id="acme", entities=None),  # type: ignore[arg-type]
     ValidationError, "entities"),
    ("retrieve with a working state that is a number",
     lambda c: c.retriever.retrieve("x", tenant_id="acme", working_state=5),  # type: ignore[arg-type]
     ValidationError, "working_state"),
    ("retrieve with read_your_writes 'yes'",
     lambda c: c.retriever.retrieve("x", tenant_id="acme", read_your_writes="yes"),  # type: ignore[arg-type]
     ValidationError, "read_your_writes"),
    ("retrieve with a mode that is a list",
     lambda c: c.retriever.retrieve("x", tenant_id="acme", mode=[None]),  # type: ignore[arg-type]
     ValidationError, "mode"),
    ("retrieve with a task id that is a number",
     lambda c: c.retriever.retrieve("x", tenant_id="acme", task_id=5),  # type: ignore[arg-type]
     ValidationError, "task_id"),
    ("a query of 10,001 characters",
     lambda c: c.retriever.retrieve("word " * 2001, tenant_id="acme"), ValidationError,
     "over the limit of 10,000"),
    ("timeline with limit 10**30",
     lambda c: c.retriever.timeline("acme", limit=10**30), ValidationError, "limit"),
    ("timeline with kinds a number",
     lambda c: c.retriever.timeline("acme", kinds=5),  # type: ignore[arg-type]
     ValidationError, "kinds"),
    ("documents' BM25 with limit -1",
     lambda c: c.documents.bm25("x", tenant_id="acme", limit=-1), ValidationError, "limit"),
    ("documents' BM25 with limit 'x'",
     lambda c: c.documents.bm25("x", tenant_id="acme", limit="x"),  # type: ignore[arg-type]
     ValidationError, "limit"),
    ("documents' BM25 with limit 10**30",
     lambda c: c.documents.bm25("x", tenant_id="acme", limit=10**30), ValidationError, "limit"),
    ("documents' vectors with limit '5'",
     lambda c: c.documents.dense("x", tenant_id="acme", limit="5"),  # type: ignore[arg-type]
     ValidationError, "limit"),
    ("documents' vectors with limit -1",
     lambda c: c.documents.dense("x", tenant_id="acme", limit=-1), ValidationError, "limit"),
    ("tool call naming decision 2**63",
     lambda c: c.store.record_tool_call(tenant_id="acme", decision_id=2**63, tool_name="t",
                                        params={}, result=None),
     ValidationError, "decision_id"),
    ("forget a task id that is a number",
     lambda c: c.store.forget(tenant_id="acme", task_id=5),  # type: ignore[arg-type]
     ValidationError, "task_id"),
    ("forget everything='yes'",
     lambda c: c.store.forget(tenant_id="acme", everything="yes"),  # type: ignore[arg-type]
     ValidationError, "everything must be True or False"),
    ("forget memory ids holding None",
     lambda c: c.store.forget(tenant_id="acme", memory_ids=[None]),  # type: ignore[list-item]
     ValidationError, "memory_ids"),
    ("get_memories holding None",
     lambda c: c.store.get_memories([None], tenant_id="acme"),  # type: ignore[list-item]
     ValidationError, "memory_ids"),
    ("get_memory of None",
     lambda c: c.store.get_memory(None, tenant_id="acme"),  # type: ignore[arg-type]
     ValidationError, "memory_id"),
    ("get_decision of 'x'",
     lambda c: c.store.get_decision("x", tenant_id="acme"),  # type: ignore[arg-type]
     ValidationError, "decision_id"),
    ("get_tool_call of 2**63",
     lambda c: c.store.get_tool_call(2**63, tenant_id="acme"), ValidationError, "tool_call_id"),
    ("a document id holding a NUL byte",
     lambda c: c.documents.add(DocumentInput(tenant_id="acme", doc_id="a\x00b",
                                             chunks=[ChunkInput("ok")])),
     ValidationError, "doc_id"),
    ("a document id of 10,000 characters",
     lambda c: c.documents.add(DocumentInput(tenant_id="acme", doc_id="d" * 10_000,
                                             chunks=[ChunkInput("ok")])),
     ValidationError, "doc_id has 10,000 characters"),
    ("forget a document id holding a NUL byte",
     lambda c: c.documents.forget(tenant_id="acme", doc_id="a\x00b"), ValidationError,
     "doc_id"),
    ("forget a document id that is a number",
     lambda c: c.documents.forget(tenant_id="acme", doc_id=5),  # type: ignore[arg-type]
     ValidationError, "doc_id"),
    ("a URL with a scheme typo",
     lambda c: connect(DatabaseConfig(url="postgres:/alice:hunter2@host/db")),
     ConfigurationError, "not a"),
    ("position 2**31",
     lambda c: c.store.remember("x", tenant_id="acme", thread_id="s", position=2**31),
     ValidationError, "over the largest position, 2,147,483,647"),
    ("position without a thread",
     lambda c: c.store.remember("x", tenant_id="acme", position=3),
     ValidationError, "this memory has no thread_id"),
    ("a timeline of an unknown kind",
     lambda c: c.retriever.timeline("acme", kinds=["nope"]),
     ValidationError, "'nope' is not a kind: use memory kinds"),
    ("a retriever on an engine of another driver",
     lambda c: HybridRetriever(create_engine("sqlite://")),
     ConfigurationError, "through psycopg 3"),
    ("a store on an engine of another driver",
     lambda c: MemoryStore(create_engine("sqlite://")),
     ConfigurationError, "through psycopg 3"),
]  # fmt: skip

CLI: list[tuple[str, Callable[[Ctx], list[str]], str]] = [
    ("ingest: a missing tenant", lambda c: ["ingest", _file(c, "a.jsonl", '{"text": "x"}\n')],
     "tenant_id is missing"),
    ("ingest: a file that does not exist", lambda c: ["ingest", str(c.tmp / "none.jsonl")],
     "cannot read it"),
    ("ingest: a CSV line with more cells than the header",
     lambda c: ["ingest", _file(c, "b.csv", "text,tenant_id\nx,acme,extra\n")],
     "more cells than the header"),
    ("ingest: a transcript line without a speaker's text",
     lambda c: ["ingest", "--tenant", "acme", _file(c, "c.jsonl", '{"speaker": "ann"}\n')],
     "a message needs a non-empty text"),
    ("search: an empty query", lambda c: ["search", "--tenant", "acme", " "], "query"),
    ("search: limit 0", lambda c: ["search", "--tenant", "acme", "--limit", "0", "x"], "limit"),
    ("search: a tenant with a trailing space", lambda c: ["search", "--tenant", "acme ", "x"],
     "tenant_id"),
    ("timeline: a time that is not ISO 8601",
     lambda c: ["timeline", "--tenant", "acme", "--since", "yesterday"], "yesterday"),
    ("db upgrade: an unknown revision", lambda c: ["db", "upgrade", "9999"], "9999"),
    ("export: into a folder that does not exist",
     lambda c: ["export", "--tenant", "acme", "--output", str(c.tmp / "missing" / "x.jsonl")],
     "No such file or directory"),
    ("mcp-token: appending to a directory",
     lambda c: ["mcp-token", "--tenant", "acme", "--append-to", str(c.tmp)], "Is a directory"),
    ("search: limit 2000", lambda c: ["search", "--tenant", "acme", "--limit", "2000", "x"],
     "limit must be an integer from 1 to 1,000"),
    ("ingest-docs: a path that does not exist",
     lambda c: ["ingest-docs", "--tenant", "acme", str(c.tmp / "nowhere")], "nowhere"),
    ("ingest: a JSON Lines integer of 5,000 digits",
     lambda c: ["ingest", _file(c, "d.jsonl", '{"text": "x", "tenant_id": "acme", '
                '"importance": ' + "9" * 5000 + "}\n")],
     "line 1: a JSON number has more than 4,300 digits"),
    ("ingest: a CSV metadata cell nested 3,000 deep",
     lambda c: ["ingest", _file(c, "e.csv", "text,tenant_id,metadata\nx,acme,"
                                + "[" * 3000 + "]" * 3000 + "\n")],
     "line 2, metadata: JSON nested too deeply"),
    ("ingest: a CSV params cell nested 3,000 deep",
     lambda c: ["ingest", _file(c, "f.csv", "type,tool_name,tenant_id,params\ntool_call,t,"
                                "acme," + "[" * 3000 + "]" * 3000 + "\n")],
     "line 2, params: JSON nested too deeply"),
    ("ingest: a CSV metadata cell that is not JSON",
     lambda c: ["ingest", _file(c, "g.csv", "text,tenant_id,metadata\nok,acme,\nx,acme,{oops\n")],
     "line 3, metadata: not valid JSON"),
    ("ingest: a CSV importance that is not a number",
     lambda c: ["ingest", _file(c, "h.csv", "text,tenant_id,importance\nx,acme,abc\n")],
     "line 2, importance: 'abc' is not a number"),
    ("ingest: a CSV position that is not a whole number",
     lambda c: ["ingest", _file(c, "i.csv", "text,tenant_id,thread_id,position\nx,acme,t,1.5\n")],
     "line 2, position: '1.5' is not a whole number"),
    ("ingest: a CSV quote never closed",
     lambda c: ["ingest", _file(c, "j.csv", 'text,tenant_id\nok,acme\n"open,acme\nx,acme\n')],
     "line 3: a quoted cell that starts here never ends"),
    ("ingest: a CSV header naming a column twice",
     lambda c: ["ingest", _file(c, "k.csv", "text,text,tenant_id\nx,y,acme\n")],
     "column 'text' appears more than once"),
    ("remember: --metadata nested 3,000 deep",
     lambda c: ["remember", "x", "--tenant", "acme", "--metadata", "[" * 3000 + "]" * 3000],
     "--metadata: JSON nested too deeply"),
    ("remember: --metadata holding an integer of 5,000 digits",
     lambda c: ["remember", "x", "--tenant", "acme", "--metadata", '{"a": ' + "1" * 5000 + "}"],
     "more than 4,300 digits"),
    ("remember: --position without --thread",
     lambda c: ["remember", "x", "--tenant", "acme", "--position", "2"], "no thread_id"),
    ("timeline: an unknown kind",
     lambda c: ["timeline", "--tenant", "acme", "--kind", "nope"], "'nope' is not a kind"),
    ("timeline: a misspelt kind",
     lambda c: ["timeline", "--tenant", "acme", "--kind", "decisoin"],
     "'decisoin' is not a kind: did you mean 'decision'?"),
    ("remember: a misspelt kind",
     lambda c: ["remember", "x", "--tenant", "acme", "--kind", "prefrence"],
     "'prefrence' is not a memory kind; did you mean 'preference'?"),
]  # fmt: skip


def _snapshot(database: PgDatabase) -> dict[str, int]:
    with database.engine.connect() as connection:
        return {
            table: int(
                connection.execute(text(f"SELECT count(*) FROM retrieval.{table}")).scalar_one()
            )
            for table in TABLES
        }


@pytest.fixture
def ctx(database: PgDatabase, store: MemoryStore, tmp_path: Path) -> Ctx:
    memory_id = store.remember(
        "The deploy key lives in the vault.",
        tenant_id="acme",
        created_at=datetime(2026, 11, 1, tzinfo=UTC),
    )
    retriever = HybridRetriever.from_store(store, background_writes=False)
    return Ctx(store, retriever, DocumentStore(store), tmp_path, database.url, memory_id)


@pytest.fixture(scope="module")
def shared_database(pg_server: PgServer, template_database: str) -> Iterator[PgDatabase]:
    """One database for every hostile input of this module: each is refused before it writes,
    and each test compares the tables before and after its own call."""
    with copy_of_template(pg_server, template_database) as database:
        yield database


@pytest.fixture(scope="module")
def shared_ctx(
    shared_database: PgDatabase,
    embedder: SentenceTransformerEmbedder,
    vectors_seen: dict[str, Vectors],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Ctx]:
    counting = CountingEmbedder(embedder, vectors_seen)
    store = MemoryStore(shared_database.engine, schema="retrieval", embedder=counting)
    memory_id = store.remember(
        "The deploy key lives in the vault.",
        tenant_id="acme",
        created_at=datetime(2026, 11, 1, tzinfo=UTC),
    )
    with HybridRetriever.from_store(store, background_writes=False) as retriever:
        yield Ctx(store, retriever, DocumentStore(store), tmp_path_factory.mktemp("hostile"),
                  shared_database.url, memory_id)  # fmt: skip


def test_the_table_holds_at_least_forty_inputs() -> None:
    assert len(PYTHON) + len(CLI) >= 40


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [pytest.param(call, error, message, id=name) for name, call, error, message in PYTHON],
)
def test_a_hostile_python_input_is_refused_and_nothing_changes(
    shared_database: PgDatabase, shared_ctx: Ctx, call: Call, error: type[Exception], message: str
) -> None:
    database, ctx = shared_database, shared_ctx
    before = _snapshot(database)
    with pytest.raises(error, match=message) as raised:
        call(ctx)
    assert not isinstance(raised.value, DatabaseError)  # refused before PostgreSQL saw it
    assert "Traceback" not in str(raised.value)
    assert "hunter2" not in str(raised.value)
    assert _snapshot(database) == before


@pytest.mark.parametrize(
    ("argv", "message"), [pytest.param(argv, message, id=name) for name, argv, message in CLI]
)
def test_a_hostile_cli_input_exits_1_with_the_reason_and_nothing_changes(
    shared_database: PgDatabase,
    shared_ctx: Ctx,
    capsys: pytest.CaptureFixture[str],
    argv: Callable[[Ctx], list[str]],
    message: str,
) -> None:
    database, ctx = shared_database, shared_ctx
    before = _snapshot(database)
    capsys.readouterr()
    try:
        code = main(["--database-url", database.url, *argv(ctx)])
    except SystemExit as exit_:  # argparse refused the arguments themselves
        code = int(exit_.code or 0)
    err = capsys.readouterr().err
    assert code in (1, 2), err  # 2: argparse refused the arguments themselves
    assert message in err, err
    assert "Traceback" not in err
    assert _snapshot(database) == before


def test_ids_are_normalised_alike_on_write_read_and_forget(store: MemoryStore) -> None:
    """A task id is stripped when stored; a read or a forget naming it with the same spaces
    finds it, rather than silently nothing."""
    decision = store.record_decision(
        tenant_id="acme",
        task_id=" T1 ",
        action_type="fix",
        content="rotated the deploy key",
        status="done",
    )
    assert store.get_decision(decision, tenant_id="acme").task_id == "T1"  # type: ignore[union-attr]
    with HybridRetriever.from_store(store, background_writes=False) as retriever:
        found = retriever.retrieve("deploy key", tenant_id="acme", task_id="T1 ")
        assert [r.metadata["id"] for r in found if r.source == "episodic"] == [decision]
    forgotten = store.forget(tenant_id="acme", task_id=" T1")
    assert forgotten.decision_ids == (decision,)


@pytest.mark.parametrize(
    "value",
    ["infinity", "-infinity", "10000-01-01 00:00:00+00", "9999-12-31 23:00:00+00", "0001-01-01"],
)
def test_a_time_no_reader_can_use_is_refused_by_the_database_itself(
    database: PgDatabase, ctx: Ctx, value: str
) -> None:
    """Rows written by SQL, outside the library, cannot break a tenant's reads either."""
    decision = ctx.store.record_decision(
        tenant_id="acme", task_id="t", action_type="fix", content="vault key", status="done"
    )
    call = ctx.store.record_tool_call(
        tenant_id="acme", decision_id=decision, tool_name="vault", params={}, result="ok"
    )
    ctx.documents.add(DocumentInput(tenant_id="acme", doc_id="d", chunks=[ChunkInput("vault")]))
    columns = {
        "memories": ("created_at", "last_accessed_at"),
        "decisions": ("created_at",),
        "tool_calls": ("created_at",),
        "documents": ("created_at",),
        "document_chunks": ("created_at",),
    }
    for table, names in columns.items():
        for column in names:
            refused = pytest.raises(IntegrityError, match=f"{table}_{column}_range")
            with refused, database.engine.begin() as connection:
                connection.execute(
                    text(f"UPDATE retrieval.{table} SET {column} = CAST(:v AS timestamptz)"),
                    {"v": value},
                )
    assert ctx.retriever.retrieve("vault key", tenant_id="acme").results
    assert len(ctx.retriever.timeline("acme")) == 3
    assert ctx.store.get_tool_call(call, tenant_id="acme") is not None


def test_the_library_accepts_the_times_the_database_holds() -> None:
    from retrieval import arguments
    from retrieval.db.schema import EARLIEST_TIME, LATEST_TIME

    assert datetime.fromisoformat(EARLIEST_TIME) == arguments.EARLIEST_TIME
    assert datetime.fromisoformat(LATEST_TIME) == arguments.LATEST_TIME


def test_a_byte_order_mark_before_the_header_is_dropped(
    database: PgDatabase, store: MemoryStore, tmp_path: Path
) -> None:
    for name, body in (
        ("bom.csv", "\ufefftext,tenant_id\nfrom a spreadsheet,acme\n"),
        ("bom.jsonl", '\ufeff{"text": "from an editor", "tenant_id": "acme"}\n'),
    ):
        path = tmp_path / name
        path.write_text(body, encoding="utf-8")
        (record,) = read_file(path, store)
        assert record.valid.text in ("from a spreadsheet", "from an editor")


ESCAPES = "\x1b]0;PWNED\x07\x1b[2J\x9b\u202e"


def test_stored_control_characters_reach_the_terminal_escaped(
    database: PgDatabase, store: MemoryStore, capsys: pytest.CaptureFixture[str]
) -> None:
    store.remember(f"deploy notes {ESCAPES} end", tenant_id="acme", thread_id="t", position=0,
                   kind="message")  # fmt: skip
    store.record_decision(tenant_id="acme", task_id=None, action_type="deploy",
                          content=f"deploy {ESCAPES}", status="done")  # fmt: skip
    url = ["--database-url", database.url]
    for argv in (
        ["search", "deploy notes", "--tenant", "acme"],
        ["search", "deploy notes", "--tenant", "acme", "--neighbors", "1"],
        ["timeline", "--tenant", "acme"],
        ["export", "--tenant", "acme"],
    ):
        capsys.readouterr()
        assert main([*url, *argv]) == 0
        out = capsys.readouterr().out
        assert "deploy" in out
        assert not any(c in out for c in "\x1b\x07\x9b\u202e"), (argv, out)
        assert "\\x1b]0;PWNED\\x07\\x1b[2J" in out or "\\u001b]0;PWNED" in out, (argv, out)
    # What export wrote still reads back as the same text.
    capsys.readouterr()
    assert main([*url, "export", "--tenant", "acme"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert any(line.get("text") == f"deploy notes {ESCAPES} end" for line in lines)


def test_a_retriever_on_an_engine_made_by_sqlalchemy_itself_searches(
    database: PgDatabase, store: MemoryStore
) -> None:
    store.remember("The deploy key lives in the vault.", tenant_id="acme")
    bare = create_engine(database.url)  # no pgvector types registered on its connections
    try:
        with HybridRetriever(bare, embedder=store.embedder, background_writes=False) as retriever:
            response = retriever.retrieve("where is the deploy key", tenant_id="acme")
        assert response[0].content == "The deploy key lives in the vault."
    finally:
        bare.dispose()
