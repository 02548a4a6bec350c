"""The MCP tools' arguments as the Python API takes them: never coerced ("yes" is not true,
"12" is not 12, 0 is not a time, the text "{}" is not an object), an argument a tool does not
take refused, naming the ones it takes, instead of ignored, and every refusal said as the CLI
says it: what was wrong and an example of the right form (not pydantic's report)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BeforeValidator, Field, Strict, ValidationError


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


# The right form of an argument, for a refusal's message.
EXAMPLES = {
    "namespace": '["users", "alice"]',
    "filter": '{"user": "u1"} or {"score": {"$gte": 3}}',
    "metadata": '{"source": "chat"}',
    "arguments": '{"query": "latency"}',
    "entities": '["alice", "payments-api"]',
    "supersedes": "[12, 15]",
    "memory_ids": "[12, 15]",
    "decision_ids": "[3]",
    "tool_call_ids": "[4]",
    "kinds": '["fact", "preference"]',
    "expires_at": '"2026-12-31T18:00:00Z"',
    "as_of": '"2026-11-25T09:30:00Z"',
    "since": '"2026-11-01T00:00:00Z"',
    "until": '"2026-11-30T00:00:00Z"',
}
# Each JSON schema type in words, and the schema type of each of pydantic's type errors.
_SCHEMA_TYPES = {
    "array": "a list",
    "boolean": "true or false",
    "integer": "an integer",
    "number": "a number",
    "object": "a JSON object",
    "string": "text",
}
_TYPE_ERRORS = {
    "list_type": "array",
    "dict_type": "object",
    "int_type": "integer",
    "bool_type": "boolean",
    "string_type": "string",
    "float_type": "number",
}
_BOUNDS = ("greater_than_equal", "less_than_equal", "greater_than", "less_than")


def _json_type(value: object) -> str:
    # The JSON name of a value's type, as a client wrote it.
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "a list" if isinstance(value, list) else "an object"


def _types_of(schema: dict[str, Any]) -> set[str]:
    # The JSON types a property's schema allows (``anyOf`` included).
    found = {schema["type"]} if isinstance(schema.get("type"), str) else set()
    for option in schema.get("anyOf", []):
        found |= _types_of(option)
    return found


def _bounds(schema: dict[str, Any]) -> tuple[Any, Any]:
    # A number's least and greatest values in a property's schema (``anyOf`` included).
    for option in [schema, *schema.get("anyOf", [])]:
        if "minimum" in option or "maximum" in option:
            return option.get("minimum"), option.get("maximum")
    return None, None


def said(tool: str, error: ValidationError, schema: dict[str, Any]) -> str:
    """A tool's argument error in words: per wrong argument, what was wrong and what to give
    (its bounds from ``schema``, the tool's input schema, and an example)."""
    properties = schema.get("properties", {})
    lines = []
    for problem in error.errors(include_url=False):
        field = ".".join(str(part) for part in problem["loc"]) or "the arguments"
        name = str(problem["loc"][0]) if problem["loc"] else ""
        kind, given = problem["type"], problem.get("input")
        example = EXAMPLES.get(name)
        like = f", such as {example}" if example else ""
        if kind == "missing":
            lines.append(f"{field} is required{like}")
        elif kind in _TYPE_ERRORS:
            wanted = _SCHEMA_TYPES[_TYPE_ERRORS[kind]]
            lines.append(f"{field} must be {wanted}{like}; got {_json_type(given)} {given!r:.40}")
        elif kind in _BOUNDS:
            low, high = _bounds(properties.get(name, {}))
            span = (
                f"from {low} to {high}"
                if low is not None and high is not None
                else f"at least {low}"
                if low is not None
                else f"at most {high}"
            )
            lines.append(f"{field} must be {span}, got {given!r:.40}")
        elif kind == "value_error":
            lines.append(f"{field}: {str(problem['msg']).removeprefix('Value error, ')}")
        else:
            lines.append(f"{field}: {problem['msg']}{like}")
    return f"{tool}: " + "; ".join(lines)


class MemoryServer(MCPServer):
    """An MCP server whose tools refuse an argument they do not take, naming the ones they
    do, instead of ignoring it; refuse the text of an object or a list where the object or the
    list is due (the SDK would parse it); and say each refusal in words."""

    _schemas: dict[str, dict[str, Any]] | None = None

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> Any:
        if self._schemas is None:
            self._schemas = {tool.name: tool.input_schema for tool in await self.list_tools()}
        schema = self._schemas.get(name)
        if schema is not None:
            properties = schema.get("properties", {})
            unknown = sorted(set(arguments) - set(properties))
            if unknown:
                raise ToolError(
                    f"{name} takes no argument {', '.join(map(repr, unknown))}: it takes "
                    f"{', '.join(sorted(properties)) or 'none'}"
                )
            for argument, value in arguments.items():
                allowed = _types_of(properties[argument])
                if isinstance(value, str) and allowed and "string" not in allowed:
                    wanted = " or ".join(
                        _SCHEMA_TYPES[kind] for kind in sorted(allowed) if kind in _SCHEMA_TYPES
                    )
                    example = EXAMPLES.get(argument)
                    like = f", such as {example}" if example else ""
                    raise ToolError(
                        f"{name}: {argument} must be {wanted}{like}; got a string {value!r:.40} "
                        "(arguments are never converted)"
                    )
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as error:
            if isinstance(error.__cause__, ValidationError) and schema is not None:
                raise ToolError(said(name, error.__cause__, schema)) from None
            raise
