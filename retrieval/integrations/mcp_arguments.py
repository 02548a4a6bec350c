"""The MCP tools' arguments as the Python API takes them: never coerced ("yes" is not true,
"12" is not 12, 0 is not a time), and an argument a tool does not take refused, naming the
ones it takes, instead of ignored."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BeforeValidator, Field, Strict


def iso_time(value: object) -> object:
    # A time argument is ISO 8601 text that names its zone: never a number of seconds, never a
    # local time the server would have to guess the zone of.
    if value is None or isinstance(value, datetime):
        return value
    if not isinstance(value, str):
        raise ValueError(f"must be an ISO 8601 time with a zone, as text, got {value!r:.40}")
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(f"{value[:40]!r} is not an ISO 8601 time (2026-11-25T09:30:00Z)") from None
    if moment.tzinfo is None:
        raise ValueError(f"{value[:40]!r} has no time zone: add Z or +00:00")
    return moment


# Arguments as the Python API takes them: no coercion of "yes" to true, "12" to 12 or 0 to a time.
Time = Annotated[datetime | None, BeforeValidator(iso_time)]
Ids = Annotated[list[Annotated[int, Strict()]] | None, Strict()]
Flag = Annotated[bool, Strict()]
Count = Annotated[int, Strict()]
Text = Annotated[str, Strict()]
Names = Annotated[list[Text] | None, Strict()]
# A memory's namespace (remember), or the namespaces a search reads (search_memory).
STORED_NAMESPACE = Field(
    description='its scope, a path of names such as ["projects", "apollo"] (default: none)'
)
MEMORY_KEY = Field(
    description='a name for it in its namespace, such as "theme": a later memory under the '
    "same key replaces it (the older is kept in its history)"
)
SEARCHED_NAMESPACE = Field(
    description="only memories in this namespace or below it, such as "
    '["projects", "apollo"] (no decisions, tool calls or documents then)'
)


class MemoryServer(MCPServer):
    """An MCP server whose tools refuse an argument they do not take, naming the ones they
    do, instead of ignoring it."""

    _arguments: dict[str, frozenset[str]] | None = None

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> Any:
        if self._arguments is None:
            self._arguments = {
                tool.name: frozenset(tool.input_schema.get("properties", {}))
                for tool in await self.list_tools()
            }
        known = self._arguments.get(name)
        unknown = sorted(set(arguments) - known) if known is not None else []
        if known is not None and unknown:
            raise ToolError(
                f"{name} takes no argument {', '.join(map(repr, unknown))}: it takes "
                f"{', '.join(sorted(known)) or 'none'}"
            )
        return await super().call_tool(name, arguments, context)
