"""The MCP server through the SDK's own client: over stdio (``retrieval mcp``, a real process)
and over streamable HTTP with bearer tokens (a real uvicorn server on a local port)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult
from sqlalchemy import text

from retrieval.aio import AsyncHybridRetriever, AsyncMemoryStore
from retrieval.arguments import MAX_SERVED_EVENTS, MAX_SERVED_RESULTS
from retrieval.embedding.models import SentenceTransformerEmbedder
from retrieval.errors import ConfigurationError
from retrieval.integrations.mcp_config import McpConfig
from retrieval.integrations.mcp_server import http_server, memory_server, tenant_from_token
from retrieval.integrations.mcp_tokens import TokenTable, new_token, token_hash
from retrieval.memory.store import MemoryStore
from tests.conftest import PgDatabase
from tests.docs_blocks import ROOT, blocks
from tests.live_server import free_port, running

TOOLS = {"search_memory", "remember", "record_decision", "record_tool_call", "timeline", "forget"}
RETRIEVAL = str(Path(sys.executable).with_name("retrieval"))


def _data(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


def _error(result: CallToolResult) -> str:
    assert result.is_error
    message = result.content[0].text  # type: ignore[union-attr]
    assert "Traceback" not in message
    return str(message)


def test_an_agent_stores_finds_and_forgets_over_stdio(database: PgDatabase) -> None:
    params = StdioServerParameters(
        command=RETRIEVAL,
        args=["--database-url", database.url, "mcp", "--tenant", "acme"],
        env={"HF_HUB_OFFLINE": "1", "PATH": os.environ.get("PATH", "")},
    )

    async def scenario() -> None:
        async with (
            stdio_client(params) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
            assert set(tools) == TOOLS
            assert "tenant_id" not in json.dumps([t.input_schema for t in tools.values()])
            assert tools["search_memory"].input_schema["required"] == ["query"]
            # The limits of every server, named once (retrieval.arguments).
            limits = {
                name: tools[name].input_schema["properties"]["limit"]
                for name in ("search_memory", "timeline")
            }
            assert json.dumps(limits["search_memory"]).count(f'"maximum": {MAX_SERVED_RESULTS}')
            assert limits["timeline"]["maximum"] == MAX_SERVED_EVENTS
            assert tools["search_memory"].description

            stored = _data(
                await session.call_tool(
                    "remember",
                    {
                        "text": "The deploy failed because the database migration timed out",
                        "kind": "critique",
                        "entities": ["deploy"],
                    },
                )
            )
            other = _data(await session.call_tool("remember", {"text": "Alice prefers dark mode"}))
            assert other["duplicate"] is False and other["similar"] == []
            # The same text again: the stored memory's id; a near one is shown, not merged.
            again = _data(await session.call_tool("remember", {"text": "Alice prefers dark mode"}))
            assert again["id"] == other["id"] and again["duplicate"] is True
            near = _data(
                await session.call_tool("remember", {"text": "Alice prefers a dark editor theme"})
            )
            assert near["id"] != other["id"] and near["duplicate"] is False
            assert [one["id"] for one in near["similar"]] == [other["id"]]
            assert 0.0 < near["similar"][0]["similarity"] <= 1.0
            assert 0.0 <= near["similar"][0]["same_fact"] <= 1.0
            # The agent decides: the new one corrects the old, which leaves the search.
            fixed = _data(
                await session.call_tool(
                    "remember",
                    {
                        "text": "Alice now prefers light mode",
                        "supersedes": [other["id"], near["id"]],
                        "expires_at": "2099-01-01T00:00:00+00:00",
                    },
                )
            )
            assert "already superseded" in _error(
                await session.call_tool("remember", {"text": "x", "supersedes": [other["id"]]})
            )
            retired, other = [other["id"], near["id"]], fixed
            decision = _data(
                await session.call_tool(
                    "record_decision",
                    {
                        "action_type": "fix",
                        "content": "raise the migration lock timeout",
                        "status": "done",
                        "task_id": "deploy-42",
                    },
                )
            )
            _data(
                await session.call_tool(
                    "record_tool_call",
                    {
                        "tool_name": "kubectl",
                        "params": {"op": "rollout"},
                        "decision_id": decision["id"],
                    },
                )
            )
            found = _data(
                await session.call_tool("search_memory", {"query": "why did the deploy fail"})
            )
            best = found["results"][0]
            assert best["id"] == stored["id"]
            assert best["source"] == "semantic"
            assert best["kind"] == "critique"
            assert 0.0 <= best["final_score"] <= 1.0
            assert best["created_at"].endswith("+00:00")
            events = _data(await session.call_tool("timeline", {"kinds": ["decision"]}))["events"]
            assert [event["id"] for event in events] == [decision["id"]]
            # A question the corrected memories answered finds their correction, and says how.
            theme = _data(
                await session.call_tool(
                    "search_memory", {"query": "Does Alice prefer a dark editor theme?"}
                )
            )["results"][0]
            assert theme["id"] == fixed["id"]
            assert theme["details"]["found_through"] in retired

            # Bad arguments: a tool error naming the field, no traceback, nothing written.
            assert "limit" in _error(
                await session.call_tool("search_memory", {"query": "x", "limit": 0})
            )
            assert "query" in _error(await session.call_tool("search_memory", {}))
            assert "mode" in _error(
                await session.call_tool("search_memory", {"query": "x", "mode": "nope"})
            )
            assert "kind" in _error(
                await session.call_tool("remember", {"text": "x", "kind": "bogus"})
            )
            assert "since" in _error(
                await session.call_tool("timeline", {"since": "2026-01-01T00:00:00"})
            )
            assert "memory_ids" in _error(await session.call_tool("forget", {"memory_ids": []}))

            gone = _data(await session.call_tool("forget", {"memory_ids": [other["id"]]}))
            # The correction forgotten, what it retired is live again.
            assert gone == {"forgotten": [other["id"]], "revived": sorted(retired), "not_found": []}

    asyncio.run(scenario())
    with database.engine.connect() as connection:
        rows = connection.execute(
            text(
                "SELECT tenant_id, content, retired_at IS NOT NULL FROM retrieval.memories "
                "ORDER BY id"
            )
        ).all()
    assert [tuple(row) for row in rows] == [
        ("acme", "The deploy failed because the database migration timed out", False),
        ("acme", "Alice prefers dark mode", False),  # its correction forgotten: live again
        ("acme", "Alice prefers a dark editor theme", False),
    ]


@contextmanager
def _serving(
    database: PgDatabase, embedder: SentenceTransformerEmbedder, **options: Any
) -> Iterator[tuple[str, dict[str, str]]]:
    """An HTTP MCP server on a free port (``options`` go to ``http_server``); the tokens of
    tenants a and b."""
    tokens = {"a": new_token(), "b": new_token()}
    table = TokenTable.parse(
        "\n".join(f"{token_hash(token)} {tenant}" for tenant, token in tokens.items()),
        origin="test",
    )
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    store = AsyncMemoryStore(MemoryStore(database.engine, embedder=embedder))
    retriever = AsyncHybridRetriever.from_store(store, background_writes=False)
    server = memory_server(store, retriever, tenant_from_token, tokens=table, url=url)
    http = http_server(server, host="127.0.0.1", port=port, tokens=table, **options)
    try:
        with running(http):
            yield f"{url}/mcp", tokens
    finally:
        retriever.sync.close()
        store.threads.close()
        retriever.threads.close()


@pytest.fixture
def http_url(
    database: PgDatabase, embedder: SentenceTransformerEmbedder
) -> Iterator[tuple[str, dict[str, str]]]:
    """An HTTP MCP server on a free port; the tokens of tenants a and b."""
    with _serving(database, embedder) as served:
        yield served


@asynccontextmanager
async def _session(url: str, token: str) -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as client,
        streamable_http_client(url, http_client=client) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def _post_status(url: str, headers: dict[str, str]) -> int:
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "remember", "arguments": {"text": "sneaked in"}},
        }
    ).encode()
    request = urllib.request.Request(
        url,
        data=body,
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            **headers,
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return error.code


def test_a_bearer_token_reads_and_writes_its_own_tenant_only(
    http_url: tuple[str, dict[str, str]], database: PgDatabase
) -> None:
    url, tokens = http_url

    async def scenario() -> None:
        async with _session(url, tokens["a"]) as alice:
            assert {tool.name for tool in (await alice.list_tools()).tools} == TOOLS
            secret = _data(
                await alice.call_tool("remember", {"text": "Tenant a's launch code is 0000"})
            )
            found = _data(await alice.call_tool("search_memory", {"query": "launch code"}))
            assert [r["id"] for r in found["results"]] == [secret["id"]]
            assert "limit" in _error(
                await alice.call_tool("search_memory", {"query": "x", "limit": 1000})
            )
            mine = _data(await alice.call_tool(
                "remember", {"text": "Tenant a's other code is 1111", "metadata": {"box": "b2"}}
            ))  # fmt: skip
            filtered = _data(await alice.call_tool(
                "search_memory", {"query": "code", "filter": {"box": {"$eq": "b2"}}}
            ))  # fmt: skip
            assert [r["id"] for r in filtered["results"]] == [mine["id"]]
            assert "$or takes a non-empty list of filters" in _error(
                await alice.call_tool("search_memory", {"query": "x", "filter": {"$or": []}})
            )
            either = _data(await alice.call_tool("search_memory", {
                "query": "code", "filter": {"$or": [{"box": "b2"}, {"box": "nowhere"}]}
            }))  # fmt: skip
            assert [r["id"] for r in either["results"]] == [mine["id"]]
            scoped = _data(await alice.call_tool(
                "remember", {"text": "Tenant a's vault code is 2222", "namespace": ["vault"]}
            ))  # fmt: skip
            inside = _data(await alice.call_tool(
                "search_memory", {"query": "code", "namespace": ["vault"]}
            ))  # fmt: skip
            assert [r["id"] for r in inside["results"]] == [scoped["id"]]
            assert inside["results"][0]["details"]["namespace"] == ["vault"]
            assert "namespace" in _error(
                await alice.call_tool("search_memory", {"query": "x", "namespace": "vault"})
            )
            keyed = {"text": "Tenant a's vault code is 3333", "namespace": ["vault"], "key": "code"}
            first = _data(await alice.call_tool("remember", keyed))
            newer = {**keyed, "text": "Tenant a's vault code is 3333!"}
            second = _data(await alice.call_tool("remember", newer))
            inside = _data(await alice.call_tool(
                "search_memory", {"query": "vault code", "namespace": ["vault"]}
            ))  # fmt: skip
            assert first["id"] not in [r["id"] for r in inside["results"]]
            assert second["id"] in [r["id"] for r in inside["results"]]
        async with _session(url, tokens["b"]) as bob:
            found = _data(await bob.call_tool("search_memory", {"query": "launch code"}))
            assert found["results"] == []
            assert _data(await bob.call_tool("timeline", {}))["events"] == []
            gone = _data(await bob.call_tool("forget", {"memory_ids": [secret["id"]]}))
            assert gone == {"forgotten": [], "revived": [], "not_found": [secret["id"]]}
            own = _data(await bob.call_tool("remember", {"text": "Tenant b's note"}))
            assert own["id"] != secret["id"]

    asyncio.run(scenario())
    # No token, a wrong token, another scheme: 401, and nothing was written.
    assert _post_status(url, {}) == 401
    assert _post_status(url, {"Authorization": f"Bearer {new_token()}"}) == 401
    assert _post_status(url, {"Authorization": f"Basic {tokens['a']}"}) == 401
    with database.engine.connect() as connection:
        rows = connection.execute(
            text("SELECT tenant_id, content FROM retrieval.memories ORDER BY id")
        ).all()
    assert [tuple(row) for row in rows] == [
        ("a", "Tenant a's launch code is 0000"),
        ("a", "Tenant a's other code is 1111"),
        ("a", "Tenant a's vault code is 2222"),
        ("a", "Tenant a's vault code is 3333"),
        ("a", "Tenant a's vault code is 3333!"),
        ("b", "Tenant b's note"),
    ]


def test_the_tokens_file_holds_hashes_and_refuses_a_bad_line(tmp_path: Path) -> None:
    token = new_token()
    path = tmp_path / "tokens.txt"
    path.write_text(f"# agents\n{token_hash(token)} acme\n\n", encoding="utf-8")
    table = TokenTable.load(file=path, variable=None)
    assert table.tenant_of(token) == "acme"
    assert token not in path.read_text(encoding="utf-8")
    assert table.tenant_of(new_token()) is None
    with pytest.raises(ConfigurationError, match="entry 1"):
        TokenTable.parse(f"{token} acme", origin="RETRIEVAL_MCP_TOKENS")
    with pytest.raises(ConfigurationError, match="two tenants"):
        TokenTable.load(file=path, variable=f"{token_hash(token)} other")
    both = TokenTable.load(file=path, variable=f"{token_hash('x')} b,{token_hash('y')} c")
    assert both.tenant_of("y") == "c"
    assert both.tenant_of(token) == "acme"


def _initialize_body() -> bytes:
    return json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "hoarder", "version": "1"},
            },
        }
    ).encode()


def test_one_token_opening_sessions_without_end_leaves_the_others_working(
    http_url: tuple[str, dict[str, str]],
) -> None:
    """The server keeps no session between requests: a client that initializes again and again
    holds nothing, and another token's calls go on."""
    url, tokens = http_url
    headers = {
        "Authorization": f"Bearer {tokens['a']}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }

    async def scenario() -> None:
        async with httpx2.AsyncClient(timeout=60) as client:
            for _ in range(20):  # bursts of what one token may have in flight
                answers = await asyncio.gather(
                    *(client.post(url, content=_initialize_body(), headers=headers)
                      for _ in range(McpConfig().calls_per_token))
                )  # fmt: skip
                assert {answer.status_code for answer in answers} == {200}
                assert not any("mcp-session-id" in answer.headers for answer in answers)
        async with _session(url, tokens["b"]) as bob:
            _data(await bob.call_tool("remember", {"text": "Tenant b still gets in"}))
            found = _data(await bob.call_tool("search_memory", {"query": "still gets in"}))
            assert found["results"][0]["content"] == "Tenant b still gets in"

    asyncio.run(scenario())


def test_a_request_s_work_is_bounded(
    http_url: tuple[str, dict[str, str]], database: PgDatabase
) -> None:
    url, tokens = http_url
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "remember", "arguments": {"text": "x" * 2_000_000}}}  # fmt: skip
    # The answer comes from the declared length, before any of the body is read: only the head
    # is sent, since a server that closes with body bytes unread may reset the connection
    # before its answer is read (sending 64 KB of it, the answer was lost once in a full run).
    refused = _raw_post(url, tokens["a"], json.dumps(body).encode(), sent=0)
    assert _answer(refused)[0] == 413

    async def scenario() -> None:
        async with _session(url, tokens["a"]) as alice:
            many = [f"e{i}" for i in range(20_000)]
            assert "entities" in _error(
                await alice.call_tool("remember", {"text": "x", "entities": many})
            )
            assert "metadata" in _error(
                await alice.call_tool("remember", {"text": "x", "metadata": {"v": "y" * 70_000}})
            )
            assert "query" in _error(
                await alice.call_tool("search_memory", {"query": "word " * 3000})
            )

    asyncio.run(scenario())
    with database.engine.connect() as connection:
        counts = connection.execute(
            text(
                "SELECT (SELECT count(*) FROM retrieval.memories), "
                "(SELECT count(*) FROM retrieval.memory_entities)"
            )
        ).one()
    assert tuple(counts) == (0, 0)


def test_an_outage_tells_the_client_to_retry_and_names_nothing_of_the_server(
    http_url: tuple[str, dict[str, str]], database: PgDatabase, caplog: pytest.LogCaptureFixture
) -> None:
    url, tokens = http_url
    moved = f"{database.name}_away"

    async def scenario() -> str:
        async with _session(url, tokens["a"]) as alice:
            _data(await alice.call_tool("remember", {"text": "before the outage"}))
            database.server.execute(
                f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                f"WHERE datname = '{database.name}' AND pid <> pg_backend_pid()"
            )
            database.server.execute(f'ALTER DATABASE "{database.name}" RENAME TO "{moved}"')
            try:
                return _error(
                    await alice.call_tool("search_memory", {"query": "a query never embedded"})
                )
            finally:
                database.server.execute(f'ALTER DATABASE "{moved}" RENAME TO "{database.name}"')

    message = asyncio.run(scenario())
    assert "try again later" in message
    for secret in (database.name, "127.0.0.1", "postgres", "host=", "/tmp", "rtv"):
        assert secret not in message, message
    assert database.name in caplog.text  # the detail is in the server's log


@pytest.mark.slow
@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_retrieval_mcp_http_stops_with_one_line(
    database: PgDatabase, tmp_path: Path, stop: signal.Signals
) -> None:
    tokens = tmp_path / "tokens.txt"
    tokens.write_text(f"{token_hash(new_token())} acme\n", encoding="utf-8")
    port = free_port()
    server = subprocess.Popen(
        [RETRIEVAL, "--database-url", database.url, "mcp", "--http", "--port", str(port),
         "--tokens-file", str(tokens)],
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while _listening(port) is False:
            assert server.poll() is None and time.monotonic() < deadline, server.stderr
            time.sleep(0.2)
        server.send_signal(stop)
        _, err = server.communicate(timeout=30)
    finally:
        if server.poll() is None:
            server.kill()
    assert server.returncode == 0, err
    assert "retrieval mcp: stopped" in err
    assert "Traceback" not in err


def _listening(port: int) -> bool:
    try:
        return _post_status(f"http://127.0.0.1:{port}/mcp", {}) == 401
    except urllib.error.URLError:
        return False


def _search_body(query: str) -> bytes:
    return json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "search_memory", "arguments": {"query": query}},
        }
    ).encode()


def _raw_post(url: str, token: str, body: bytes, *, sent: int | None = None) -> socket.socket:
    """A POST on its own connection with ``sent`` bytes of its body sent (all by default): one
    whose body is not finished stays in flight in the server."""
    address = urllib.parse.urlsplit(url)
    connection = socket.create_connection((address.hostname, address.port), timeout=60)
    head = (
        f"POST {address.path} HTTP/1.1\r\nHost: {address.netloc}\r\n"
        f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"
        f"Accept: application/json, text/event-stream\r\nContent-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    )
    connection.sendall(head.encode() + body[: len(body) if sent is None else sent])
    return connection


def _answer(connection: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """The status, headers and body of the response on ``connection`` (read to its end)."""
    chunks = []
    while chunk := connection.recv(65536):
        chunks.append(chunk)
    connection.close()
    head, _, body = b"".join(chunks).partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    fields = (line.partition(":") for line in lines)
    headers = {name.lower(): value.strip() for name, _, value in fields}
    return int(status_line.split()[1]), headers, body


def test_a_token_past_its_bound_gets_429_and_the_other_tokens_are_served(
    database: PgDatabase, embedder: SentenceTransformerEmbedder
) -> None:
    body = _search_body("launch code")
    with _serving(database, embedder, calls_per_token=2) as (url, tokens):
        # Two requests of token a whose bodies never finish: a's two requests in flight.
        held = [_raw_post(url, tokens["a"], body, sent=10) for _ in range(2)]
        deadline = time.monotonic() + 30
        while True:  # a third is refused once both are in the server
            status, headers, answer = _answer(_raw_post(url, tokens["a"], body))
            if status == 429 or time.monotonic() > deadline:
                break
        assert status == 429
        assert headers["retry-after"] == "1"
        assert "2 requests in flight" in json.loads(answer)["error_description"]

        async def other_token() -> None:
            async with _session(url, tokens["b"]) as bob:
                _data(await bob.call_tool("remember", {"text": "Tenant b is served"}))
                found = _data(await bob.call_tool("search_memory", {"query": "served"}))
                assert found["results"][0]["content"] == "Tenant b is served"

        asyncio.run(other_token())
        for connection in held:  # a's held requests, finished, are answered
            connection.sendall(body[10:])
            assert _answer(connection)[0] == 200
        assert _answer(_raw_post(url, tokens["a"], body))[0] == 200


def test_a_flag_or_an_id_is_never_coerced_and_an_unknown_argument_is_refused(
    http_url: tuple[str, dict[str, str]],
    database: PgDatabase,
    embedder: SentenceTransformerEmbedder,
) -> None:
    url, tokens = http_url
    store = MemoryStore(database.engine, embedder=embedder)
    when = datetime.now(UTC) - timedelta(days=3)
    old = store.remember("An old door code.", tenant_id="a", created_at=when,
                         expires_at=when + timedelta(days=1))  # fmt: skip

    async def scenario() -> None:
        async with _session(url, tokens["a"]) as alice:
            for flag in ("yes", 1, "true"):
                said = _error(await alice.call_tool("forget", {"expired": flag}))
                assert "expired must be true or false; got" in said, said
            said = _error(await alice.call_tool("forget", {"memory_ids": [str(old)]}))
            assert "memory_ids.0 must be an integer" in said and "https://" not in said
            said = _error(await alice.call_tool("timeline", {"as_off": "2026-11-01T00:00:00Z"}))
            assert "timeline takes no argument 'as_off'" in said and "as_of" in said
            then = when + timedelta(hours=1)
            events = _data(await alice.call_tool("timeline", {"as_of": then.isoformat()}))
            assert [event["id"] for event in events["events"]] == [old]
            assert _data(await alice.call_tool("timeline", {}))["events"] == []  # expired now
            assert _data(await alice.call_tool("forget", {"expired": True}))["forgotten"] == [old]

    asyncio.run(scenario())


def test_a_request_nested_past_the_parsers_depth_gets_a_json_rpc_error(
    http_url: tuple[str, dict[str, str]],
) -> None:
    # A filter value nested 200 deep: the server's JSON parser stops at its recursion limit and
    # answers with a JSON-RPC parse error at once; the client does not wait for its timeout.
    url, tokens = http_url

    async def scenario() -> None:
        async with _session(url, tokens["a"]) as alice:
            arguments = {"query": "x", "filter": {"k": _deep(200)}}
            with pytest.raises(MCPError, match="Parse error"):
                await asyncio.wait_for(alice.call_tool("search_memory", arguments), 30)

    asyncio.run(scenario())


def _deep(depth: int) -> Any:
    # A value whose objects nest ``depth`` deep.
    value: Any = 1
    for _ in range(depth):
        value = {"a": value}
    return value


@pytest.mark.parametrize(
    ("tool", "arguments", "says"),
    [
        ("search_memory", {"query": "x", "namespace": "users/alice"},
         'namespace must be a list, such as ["users", "alice"]; got a string'),
        ("search_memory", {"query": "x", "filter": "user=u1"},
         'filter must be a JSON object, such as {"user": "u1"}'),
        ("search_memory", {"query": "x", "limit": 0}, "limit must be from 1 to 100, got 0"),
        ("remember", {"text": "x", "expires_at": "2099-01-01T00:00:00"},
         "expires_at: '2099-01-01T00:00:00' has no time zone: add Z or +00:00"),
        ("remember", {"text": "x", "metadata": "{}"},
         "metadata must be a JSON object, such as {\"source\": \"chat\"}; got a string '{}'"),
        ("remember", {"text": "x", "importance": "0.5"}, "importance must be a number; got"),
        ("remember", {}, "text is required"),
        # Past what one index entry holds, inside 32 names of 256 characters: not "try later".
        ("remember", {"text": "x", "namespace": ["n" * 256] * 11}, "over the limit of 2,400"),
        ("search_memory", {"query": "x", "filter": {"a\u0000": 1}}, "contains a NUL byte"),
        ("search_memory", {"query": "x", "filter": {"k": _deep(40)}},
         "its value nests lists and objects 33 deep, over the limit of 32"),
    ],
)  # fmt: skip
def test_an_argument_error_is_said_in_words_with_the_right_form(
    http_url: tuple[str, dict[str, str]], database: PgDatabase, tool: str,
    arguments: dict[str, Any], says: str,
) -> None:  # fmt: skip
    url, tokens = http_url

    async def scenario() -> str:
        async with _session(url, tokens["a"]) as alice:
            return _error(await alice.call_tool(tool, arguments))

    said = asyncio.run(scenario())
    assert says in said, said
    assert "pydantic" not in said and "validation error" not in said and "[type=" not in said
    with database.engine.connect() as connection:
        assert connection.execute(text("SELECT count(*) FROM retrieval.memories")).scalar() == 0


def test_a_timeline_of_an_unknown_kind_is_a_tool_error(
    http_url: tuple[str, dict[str, str]],
) -> None:
    url, tokens = http_url

    async def scenario() -> None:
        async with _session(url, tokens["a"]) as alice:
            said = _error(await alice.call_tool("timeline", {"kinds": ["nope"]}))
            assert "'nope' is not a kind" in said and "Traceback" not in said
            assert _data(await alice.call_tool("timeline", {"kinds": ["fact"]}))["events"] == []

    asyncio.run(scenario())


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("search_memory", '{"query": "a\\u0000b"}'),
        ("search_memory", json.dumps({"query": "Jun " * 2499})),
        ("search_memory", '{"query": "x", "limit": ' + "9" * 5000 + "}"),
        ("search_memory", '{"query": "x", "mode": "\\u001b[2J"}'),
        ("timeline", '{"kinds": ["nope"]}'),
        ("timeline", '{"since": "yesterday"}'),
        ("forget", '{"memory_ids": [' + "1" * 30 + "]}"),
        ("remember", '{"text": "x", "metadata": ' + "[" * 3000 + "]" * 3000 + "}"),
        ("remember", '{"text": "x", "kind": "nope"}'),
        # What the Python API refuses, never coerced: text for a number, a number for a time.
        ("remember", '{"text": "x", "supersedes": ["123"]}'),
        ("remember", '{"text": "x", "supersedes": {"id": 1}}'),
        ("remember", '{"text": "x", "expires_at": 0}'),
        ("remember", '{"text": "x", "expires_at": "2020-01-01T00:00:00Z"}'),
        ("remember", '{"text": "x", "expires_at": "2099-01-01T00:00:00"}'),
        ("remember", '{"text": "x", "importance": "0.5"}'),
        ("remember", '{"text": "x", "as_of": "2026-01-01T00:00:00Z"}'),
        ("search_memory", '{"query": "x", "limit": "5"}'),
        ("timeline", '{"as_of": 5}'),
        ("timeline", '{"since": "2026-11-20"}'),
        ("timeline", '{"include_deleted": true}'),
    ],
)
def test_a_hostile_tool_argument_is_answered_without_a_traceback(
    http_url: tuple[str, dict[str, str]], database: PgDatabase, tool: str, arguments: str
) -> None:
    url, tokens = http_url
    body = (
        '{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "'
        + tool
        + '", "arguments": '
        + arguments
        + "}}"
    ).encode()
    status, _, answer = _answer(_raw_post(url, tokens["a"], body))
    said = answer.decode("utf-8", errors="replace")
    assert status in (200, 400, 413), (status, said[-300:])
    assert "Traceback" not in said and 'File "' not in said
    if tool == "search_memory" and "Jun" in arguments:
        assert '"isError":false' in said  # long, but a question: answered
    elif status == 200:
        assert '"isError":true' in said or '"error"' in said, said[-300:]
    with database.engine.connect() as connection:
        assert connection.execute(text("SELECT count(*) FROM retrieval.memories")).scalar() == 0


def _code(source: str) -> str:
    # A block's source after its opening comment lines (the extra it needs).
    lines = source.splitlines(keepends=True)
    while lines and lines[0].startswith("#"):
        lines.pop(0)
    return "".join(lines)


def _fragment(page: str, first_line: str) -> str:
    """The fragment of ``page`` whose first line is ``first_line``, as a reader copies it."""
    (block,) = [
        b for b in blocks(ROOT / page) if b.fragment and _code(b.source).startswith(first_line)
    ]
    return block.source


def _readme_check_script() -> str:
    return _fragment("README.md", "import asyncio")


def _run_check(tmp_path: Path, environment: dict[str, str]) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "check_mcp.py"
    script.write_text(_readme_check_script(), encoding="utf-8")
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    return subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        # The user's HOME (the exported model in its cache); the database is what RETRIEVAL_*
        # names, which the tests check where the memory landed.
        env={"PATH": path, "HOME": os.environ.get("HOME", str(tmp_path)), **environment},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_readme_check_script_runs_as_written_on_the_database_it_is_given(
    database: PgDatabase, tmp_path: Path
) -> None:
    done = _run_check(tmp_path, {"RETRIEVAL_DATABASE_URL": database.url})
    assert done.returncode == 0, done.stderr
    assert "search_memory" in done.stdout
    assert done.stdout.strip().endswith("The staging database is PostgreSQL 18")
    with database.engine.connect() as connection:  # the database named, not the default one
        count = connection.execute(
            text("SELECT count(*) FROM retrieval.memories WHERE tenant_id = 'me'")
        ).scalar()
    assert count == 1


def test_a_server_on_a_database_not_migrated_says_so_in_one_line(
    database: PgDatabase, tmp_path: Path
) -> None:
    done = _run_check(
        tmp_path, {"RETRIEVAL_DATABASE_URL": database.url, "RETRIEVAL_SCHEMA": "not_migrated"}
    )
    assert done.returncode != 0
    assert "Traceback" not in done.stderr and "ExceptionGroup" not in done.stderr
    assert "schema 'not_migrated' has no memories table" in done.stderr
    assert "run `retrieval db upgrade`" in done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        "the MCP server stopped; its reason is the line above"
    )


def test_upgrade_migrates_a_new_database_before_serving(database: PgDatabase) -> None:
    """``retrieval mcp --upgrade``: a client's configuration can start the server on a database
    nobody migrated yet (here a new schema; the embedded server's new data directory the same)."""
    environment = {
        "HF_HUB_OFFLINE": "1",
        "RETRIEVAL_DATABASE_URL": database.url,
        "RETRIEVAL_SCHEMA": "fresh_memory",
    }
    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "retrieval", "mcp", "--tenant", "me", "--upgrade"],
        env=environment,
    )

    async def scenario() -> str:
        async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            await session.call_tool("remember", {"text": "The staging database is PostgreSQL 18"})
            found = await session.call_tool("search_memory", {"query": "staging database"})
            return str(_data(found)["results"][0]["content"])

    assert asyncio.run(scenario()) == "The staging database is PostgreSQL 18"
    with database.engine.connect() as connection:
        stored = connection.execute(text("SELECT count(*) FROM fresh_memory.memories")).scalar()
    assert stored == 1


def test_the_http_client_of_the_docs_runs_with_a_token(
    http_url: tuple[str, dict[str, str]], tmp_path: Path
) -> None:
    url, tokens = http_url
    block = _fragment("docs/mcp.md", "import asyncio")
    assert 'URL = "http://127.0.0.1:8765/mcp"' in block and 'TOKEN = "..."' in block
    script = tmp_path / "client.py"
    script.write_text(
        block.replace('URL = "http://127.0.0.1:8765/mcp"', f"URL = {url!r}").replace(
            'TOKEN = "..."', f"TOKEN = {tokens['a']!r}"
        ),
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "The staging database is PostgreSQL 18"


def test_an_agent_stores_a_conversation_with_its_threads_places_and_times(
    database: PgDatabase, embedder: SentenceTransformerEmbedder
) -> None:
    # A client replaying a chat gives each turn its thread, place and time, as the API does:
    # a turn found brings the turns around it, and each keeps the time it was said.
    from mcp import Client

    from retrieval.integrations.mcp_server import fixed_tenant
    from retrieval.memory.store import MemoryStore
    from retrieval.search.retriever import HybridRetriever

    said = datetime(2026, 3, 14, 18, 0, tzinfo=UTC)
    turns = [
        "Maria: Where did you go last weekend?",
        "Jon: I went climbing in the Dolomites with my brother.",
        "Maria: That sounds amazing!",
    ]
    store = MemoryStore(database.engine, embedder=embedder)
    with HybridRetriever.from_store(store) as retriever:

        async def scenario() -> None:
            server = memory_server(AsyncMemoryStore(store), AsyncHybridRetriever(retriever),
                                   fixed_tenant("acme"))  # fmt: skip
            async with Client(server) as client:
                for place, turn in enumerate(turns):
                    _data(await client.call_tool("remember", {
                        "text": turn, "kind": "message", "thread_id": "chat-1",
                        "position": place, "created_at": (said + timedelta(minutes=place))
                        .isoformat(),
                    }))  # fmt: skip
                found = _data(await client.call_tool(
                    "search_memory", {"query": "Who went climbing in the Dolomites?"}
                ))  # fmt: skip
                first = found["results"][0]
                assert first["content"] == turns[1]
                assert (first["details"]["thread_id"], first["details"]["position"]) == (
                    "chat-1",
                    1,
                )
                assert datetime.fromisoformat(first["created_at"]) == said + timedelta(minutes=1)
                # Asked as the memory stood before Jon answered: his turn was not told yet.
                before = _data(await client.call_tool("search_memory", {
                    "query": "Who went climbing in the Dolomites?",
                    "as_of": (said + timedelta(seconds=30)).isoformat(),
                }))  # fmt: skip
                assert turns[1] not in [r["content"] for r in before["results"]]
                assert "as_of" in _error(await client.call_tool(
                    "search_memory", {"query": "x", "as_of": "last weekend"}
                ))  # fmt: skip
                assert "thread_id" in _error(await client.call_tool(
                    "remember", {"text": "a place alone", "position": 4}
                ))  # fmt: skip
                assert "position" in _error(await client.call_tool(
                    "remember", {"text": "x", "thread_id": "chat-1", "position": -1}
                ))  # fmt: skip

        asyncio.run(scenario())
    with database.engine.connect() as connection:
        assert connection.execute(text("SELECT count(*) FROM retrieval.memories")).scalar() == 3
