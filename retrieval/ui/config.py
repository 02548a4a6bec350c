"""Where the inspector (``retrieval ui``) listens: :class:`InspectorConfig`; this module imports
no web framework."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from retrieval.settings import Within, check_ranges, configurable, from_env, setting

# Beside the MCP server's 8765, so that both can run on one machine with their defaults.
DEFAULT_PORT = 8766


@configurable
@dataclass(frozen=True)
class InspectorConfig:
    """The address ``retrieval ui`` listens on (its --host and --port win)."""

    host: str = setting(
        "127.0.0.1",
        env="RETRIEVAL_UI_HOST",
        help="address retrieval ui listens on (default: this machine only; any other needs "
        "--tokens-file)",
    )
    port: int = setting(
        DEFAULT_PORT,
        env="RETRIEVAL_UI_PORT",
        help="port of retrieval ui (0: any free one)",
        within=Within(0, 65535, integer=True),
    )

    def __post_init__(self) -> None:
        check_ranges(self)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> InspectorConfig:
        """Read ``RETRIEVAL_UI_HOST`` and ``RETRIEVAL_UI_PORT``."""
        return from_env(cls, environ)
