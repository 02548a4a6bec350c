"""``retrieval mcp`` (the MCP server, over stdio or HTTP) and ``retrieval mcp-token``.

The MCP SDK is imported only when the server starts: the rest of the CLI does not need the
``mcp`` extra.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

from retrieval.arguments import check_tenant
from retrieval.cli.parsers import command
from retrieval.counts import counted
from retrieval.db import migrate
from retrieval.db.engine import Database
from retrieval.errors import ConfigurationError
from retrieval.integrations.mcp_config import McpConfig
from retrieval.integrations.mcp_tokens import TokenTable, new_token, token_hash
from retrieval.memory.config import WriteConfig
from retrieval.search.config import RetrievalConfig

logger = logging.getLogger(__name__)

MCP_HELP = """\
Serve a tenant's memory to an agent over the Model Context Protocol. Tools: search_memory,
remember, record_decision, record_tool_call, timeline, forget. The tenant is never a tool
argument: over stdio it is --tenant; over HTTP (--http) each request's bearer token names it
(retrieval mcp-token makes one), and a request without a valid token gets 401. Over HTTP,
Prometheus metrics of the tool calls are at /metrics.

The server loads the embedding model once, then answers each call in milliseconds: it is the
long-running process to use instead of one `retrieval search` per query.
"""


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The parsers of ``mcp`` and ``mcp-token``."""
    mcp = command(commands, "mcp", _mcp, description=MCP_HELP)
    mcp.add_argument("--tenant", help="the tenant of every call (stdio; required there)")
    mcp.add_argument(
        "--http",
        action="store_true",
        help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio",
    )
    mcp.add_argument("--host", help="address to listen on (RETRIEVAL_MCP_HOST; 127.0.0.1)")
    mcp.add_argument("--port", type=int, help="port (RETRIEVAL_MCP_PORT; 8765)")
    mcp.add_argument(
        "--tokens-file",
        type=Path,
        help="accepted bearer tokens, 'SHA256-HEX TENANT' per line (RETRIEVAL_MCP_TOKENS_FILE)",
    )
    mcp.add_argument(
        "--upgrade",
        dest="creates_database",
        action="store_true",
        help="migrate the database to the newest revision first (making the embedded one if "
        "its data directory does not exist): for a client's configuration that starts the "
        "server on a new machine",
    )
    token = command(commands, "mcp-token", offline=_mcp_token)
    token.add_argument("--tenant", required=True, help="the tenant the token opens")
    token.add_argument(
        "--append-to", type=Path, help="append the line to this tokens file (created if absent)"
    )


def _mcp_token(args: argparse.Namespace) -> int:
    """make a bearer token for retrieval mcp --http

    Print a new random bearer token for TENANT, and the line to append to the tokens file (its
    SHA-256 and the tenant: the file never holds the token). Give the token to the agent's MCP
    client; keep it secret. Touches no database."""
    tenant = check_tenant(args.tenant)
    token = new_token()
    line = f"{token_hash(token)} {tenant}"
    if args.append_to is not None:
        path: Path = args.append_to.expanduser()
        with path.open("a", encoding="utf-8") as tokens:
            tokens.write(line + "\n")
        path.chmod(0o600)
        print(f"token for tenant {tenant!r} (its hash is now in {path}):")
    else:
        print(f"token for tenant {tenant!r}:")
    print(f"  {token}")
    if args.append_to is None:
        print("line for the tokens file (RETRIEVAL_MCP_TOKENS_FILE):")
        print(f"  {line}")
    return 0


def _mcp(args: argparse.Namespace, database: Database) -> int:
    """serve the memory to agents over MCP (stdio, or HTTP with bearer tokens)"""
    try:
        from retrieval.integrations import mcp_server
    except ImportError as error:
        raise ConfigurationError(
            f"the MCP server needs the mcp extra ({error}): pip install 'retrieval[mcp]'"
        ) from None
    from retrieval.aio import AsyncHybridRetriever, AsyncMemoryStore
    from retrieval.memory.store import MemoryStore

    config = McpConfig.from_env()
    if args.creates_database:  # --upgrade; stdout may be the protocol's channel: say it on stderr
        settings = migrate.MigrationSettings.from_config(database.config)
        migrate.upgrade(database.engine, settings)
        revision = migrate.current_revision(database.engine, settings)
        print(f"retrieval mcp: {database.url} at revision {revision}", file=sys.stderr)
    store = AsyncMemoryStore(MemoryStore.from_database(database, config=WriteConfig.from_env()))
    retriever = AsyncHybridRetriever.from_store(store, config=RetrievalConfig.from_env())
    try:
        if not args.http:
            if args.tenant is None:
                raise ConfigurationError(
                    "retrieval mcp over stdio serves one tenant: give --tenant T (or --http "
                    "to serve several, each by its bearer token)"
                )
            server = mcp_server.memory_server(
                store, retriever, mcp_server.fixed_tenant(check_tenant(args.tenant))
            )
            with until_stopped():
                server.run("stdio")
            return 0
        if args.tenant is not None:
            raise ConfigurationError(
                "over HTTP each bearer token names its tenant: drop --tenant, and make a token "
                "with retrieval mcp-token --tenant T"
            )
        host = args.host or config.host
        port = args.port or config.port
        tokens = TokenTable.load(
            file=args.tokens_file or config.tokens_file, variable=config.tokens
        )
        if not tokens.tenants:
            raise ConfigurationError(
                "retrieval mcp --http accepts no token yet: make one with retrieval mcp-token "
                "--tenant T --append-to tokens.txt and start with --tokens-file tokens.txt "
                "(or RETRIEVAL_MCP_TOKENS_FILE)"
            )
        url = f"http://{host}:{port}"
        metrics = mcp_server.tool_metrics(retriever)
        server = mcp_server.memory_server(
            store, retriever, mcp_server.tenant_from_token, tokens=tokens, url=url, metrics=metrics
        )
        tenants = sorted(set(tokens.tenants.values()))
        print(
            f"MCP server at {url}/mcp for {counted(len(tenants), 'tenant')} by bearer token; "
            "Ctrl-C stops",
            file=sys.stderr,
        )
        with until_stopped():
            http = mcp_server.http_server(
                server,
                host=host,
                port=port,
                max_request_bytes=config.max_request_bytes,
                metrics=metrics,
                tokens=tokens,
                calls_per_token=config.calls_per_token,
                calls_at_once=config.calls_at_once,
            )
            asyncio.run(http.serve())
        return 0
    finally:
        _close(store, retriever)


@contextmanager
def until_stopped(command: str = "retrieval mcp") -> Iterator[None]:
    """Ctrl-C (SIGINT) or SIGTERM ends the server with one line and lets the caller's cleanup
    run. uvicorn shuts down gracefully on either, then raises the signal again once its own
    handlers are gone: SIGINT arrives as KeyboardInterrupt, and SIGTERM is made one here
    (its default action would end the process before the connections are closed). SIGINT is
    made one too: a process started in the background inherits it ignored."""
    previous = {sig: signal.signal(sig, _interrupt) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    except KeyboardInterrupt:
        print(f"{command}: stopped", file=sys.stderr)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _interrupt(_signal: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def _close(*closeable: Any) -> None:
    async def close_all() -> None:
        for item in closeable:
            await item.close()

    asyncio.run(close_all())
