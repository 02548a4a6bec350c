"""``retrieval ui``: the inspector, web pages to look inside the memory.

Starlette, Jinja2 and uvicorn are imported only when the command runs: the rest of the CLI
does not need the ``ui`` extra.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import socket
import sys
import threading
from dataclasses import replace
from pathlib import Path

from retrieval.cli.mcp import until_stopped
from retrieval.cli.parsers import command
from retrieval.counts import counted
from retrieval.db.engine import Database
from retrieval.errors import ConfigurationError, RetrievalError
from retrieval.integrations.mcp_tokens import TokenTable
from retrieval.memory.config import WriteConfig
from retrieval.memory.store import MemoryStore
from retrieval.search.config import RetrievalConfig
from retrieval.ui.config import DEFAULT_PORT, InspectorConfig

logger = logging.getLogger(__name__)

UI_HELP = """\
Serve web pages to look inside the memory: the tenants and what each holds, a tenant's
timeline by day, one memory with its thread, and search with each result's final score split
into its weighted parts (drawn as bars), the stage timings and what the threshold cut. A
memory or a task can be forgotten, after a confirmation (not with --read-only). Searches here
do not count as accesses (a memory's popularity is left as it is).

On a loopback address without --tokens-file, every tenant of the database is shown: the person
running it owns the database. On any other address it starts only with --tokens-file (the MCP
server's file: `retrieval mcp-token --tenant T --append-to tokens.txt`), and each token then
sees its own tenant only. Prometheus metrics at /metrics. Ctrl-C stops.
"""


def add_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The parser of ``ui``."""
    ui = command(commands, "ui", _ui, description=UI_HELP)
    ui.add_argument("--host", help="address to listen on (RETRIEVAL_UI_HOST; 127.0.0.1)")
    ui.add_argument(
        "--port", type=int, help=f"port (RETRIEVAL_UI_PORT; {DEFAULT_PORT}; 0: any free one)"
    )
    ui.add_argument("--read-only", action="store_true", help="hide forget, and refuse it if asked")
    ui.add_argument(
        "--tokens-file",
        type=Path,
        help="bearer tokens, 'SHA256-HEX TENANT' per line: each token sees its tenant only "
        "(required off loopback)",
    )


def _ui(args: argparse.Namespace, database: Database) -> int:
    """web pages to look inside the memory (search scores as bars, timeline, forget)"""
    try:
        import uvicorn

        from retrieval.ui.access import Access, is_loopback
        from retrieval.ui.app import inspector_app
    except ImportError as error:
        raise ConfigurationError(
            f"retrieval ui needs the ui extra ({error}): pip install 'retrieval[ui]'"
        ) from None
    from retrieval.search.retriever import HybridRetriever

    listen = InspectorConfig.from_env()
    host = listen.host if args.host is None else args.host
    port = listen.port if args.port is None else args.port
    tokens = TokenTable.load(file=args.tokens_file, variable=None) if args.tokens_file else None
    if tokens is not None and not tokens.tenants:
        raise ConfigurationError(
            f"{args.tokens_file} holds no token: add one with retrieval mcp-token --tenant T "
            f"--append-to {args.tokens_file}"
        )
    if tokens is None and not is_loopback(host):
        raise ConfigurationError(
            f"retrieval ui on {host} would show every tenant to anyone who reaches it: "
            "give --tokens-file (retrieval mcp-token --tenant T --append-to tokens.txt makes "
            "one), or listen on 127.0.0.1"
        )
    if not 0 <= port <= 65535:
        raise ConfigurationError(f"--port must be from 0 to 65535, got {port}")
    store = MemoryStore.from_database(database, config=WriteConfig.from_env())
    config = replace(RetrievalConfig.from_env(), record_access=False)
    retriever = HybridRetriever.from_store(store, config=config, background_writes=False)
    try:
        app = inspector_app(store, retriever, access=Access(tokens), read_only=args.read_only)
        listener = _listen(host, port)
        port = listener.getsockname()[1]
        shown = f"[{host}]" if ":" in host else host
        who = (
            "every tenant"
            if tokens is None
            else f"{counted(len(set(tokens.tenants.values())), 'tenant')} by token"
        )
        mode = ", read-only" if args.read_only else ""
        print(f"inspector at http://{shown}:{port}/ ({who}{mode}); Ctrl-C stops", file=sys.stderr)
        sys.stderr.flush()
        threading.Thread(target=_warm, args=(store,), daemon=True).start()
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
        with until_stopped("retrieval ui"):
            asyncio.run(server.serve(sockets=[listener]))
        return 0
    finally:
        retriever.close()


def _listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((host, port))
    except OSError as error:
        listener.close()
        raise ConfigurationError(
            f"cannot listen on {host}:{port} ({error.strerror}): choose another --port or --host"
        ) from None
    listener.listen(128)
    return listener


def _warm(store: MemoryStore) -> None:
    # The embedding model loads while the first pages are read, not in the first search.
    try:
        store.check_embedder()
    except RetrievalError as error:
        logger.error("the embedding model did not load: %s", error)
