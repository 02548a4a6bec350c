"""The MCP server's settings (``retrieval mcp``); this module imports no MCP code."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from retrieval.settings import Within, check_ranges, configurable, from_env, setting

# The largest request body of the HTTP transport (a memory of 32,000 characters escaped as JSON,
# with its metadata, fits several times over).
DEFAULT_MAX_REQUEST_BYTES = 1_048_576
# What one token may have in flight: an agent's burst of parallel tool calls fits.
DEFAULT_CALLS_PER_TOKEN = 16
# Requests running at once, all tokens together (benchmarks/README.md, mcp-two-tokens).
DEFAULT_CALLS_AT_ONCE = 8


@configurable
@dataclass(frozen=True)
class McpConfig:
    """Where ``retrieval mcp --http`` listens and which bearer tokens it accepts."""

    host: str = setting(
        "127.0.0.1",
        env="RETRIEVAL_MCP_HOST",
        help="address retrieval mcp --http listens on (default: this machine only)",
    )
    port: int = setting(
        8765,
        env="RETRIEVAL_MCP_PORT",
        help="port of retrieval mcp --http",
        within=Within(0, integer=True),
    )
    tokens_file: Path | None = setting(
        None,
        env="RETRIEVAL_MCP_TOKENS_FILE",
        help="file of accepted bearer tokens, one 'SHA256-HEX TENANT' line each (retrieval "
        "mcp-token makes one); the tokens themselves are never stored",
    )
    tokens: str | None = setting(
        None,
        env="RETRIEVAL_MCP_TOKENS",
        help="accepted bearer tokens as 'SHA256-HEX TENANT' entries separated by commas or "
        "newlines (beside RETRIEVAL_MCP_TOKENS_FILE)",
    )

    max_request_bytes: int = setting(
        DEFAULT_MAX_REQUEST_BYTES,
        env="RETRIEVAL_MCP_MAX_REQUEST_BYTES",
        help="largest request body retrieval mcp --http reads (a larger one gets 413)",
        within=Within(1024, integer=True),
    )

    calls_per_token: int = setting(
        DEFAULT_CALLS_PER_TOKEN,
        env="RETRIEVAL_MCP_CALLS_PER_TOKEN",
        help="requests one bearer token may have in flight (running or waiting); one more "
        "gets 429 with Retry-After",
        within=Within(1, integer=True),
    )
    calls_at_once: int = setting(
        DEFAULT_CALLS_AT_ONCE,
        env="RETRIEVAL_MCP_CALLS_AT_ONCE",
        help="requests that run at once, all tokens together; a token alone may use them all, "
        "while several tokens are active each runs one at a time, in turn",
        within=Within(1, integer=True),
    )

    def __post_init__(self) -> None:
        check_ranges(self)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> McpConfig:
        """Read the ``RETRIEVAL_MCP_*`` variables."""
        return from_env(cls, environ)
