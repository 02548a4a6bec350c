"""The columns a line of an ingested file may carry, declared once: ``retrieval ingest
--help`` and the table of docs/cli.md are both rendered from :data:`COLUMNS` (a test holds the
page to it; ``python -m retrieval.memory.file_columns`` prints the table)."""

from __future__ import annotations

import textwrap
from typing import NamedTuple


class Column(NamedTuple):
    """One column (or a group read together): its names, the records it is for, and what it
    means."""

    names: tuple[str, ...]
    records: str
    meaning: str


COLUMNS = (
    Column(("type",), "all", "`memory` (default), `decision`, `tool_call` or `message` (the "
           "default of a line with a `speaker`)"),
    Column(("id",), "all", "optional: the record's key, unique in its tenant (a string, or an "
           "integer taken as text); a line whose `id` an earlier run stored is skipped, and a "
           "line of an export (`memory-12`) whose row the tenant holds, with the same text and "
           "time, is that row"),
    Column(("tenant_id",), "all", "required, unless `--tenant` fills it; a line naming another "
           "tenant than `--tenant` stops the run, unless `--override-tenant`"),
    Column(("created_at",), "all", "ISO 8601 with a time zone (`2026-11-25T09:30:00+00:00`); "
           "default: now"),
    Column(("text",), "memory", "the memory (required)"),
    Column(("kind", "importance", "metadata", "entities"), "memory", "default `fact`; 0..1; "
           "JSON object; JSON list, or `a;b;c` in CSV"),
    Column(("thread_id", "position"), "memory", "the conversation (or session) it belongs to, "
           "and its turn in it (from 0)"),
    Column(("expires_at",), "memory", "ISO 8601 with a time zone: the end of its life, after "
           "`created_at` (after now when `created_at` is not given)"),
    Column(("namespace",), "memory", "its scope below the tenant, a path of names: a JSON list "
           "(`[\"users\", \"u1\"]`), or `users;u1` in CSV; default: the tenant's top"),
    Column(("key",), "memory", "its name within its namespace: a memory stored under the key of a "
           "live memory of the namespace supersedes it"),
    Column(("ref",), "decision, memory", "a label that later lines of the file can name (a "
           "tool call's `decision_ref`, a memory's `supersedes_ref`)"),
    Column(("supersedes_ref", "supersedes"), "memory", "the `ref` (or a list of them) of "
           "earlier memory lines it corrects, or stored memories' ids: they are retired at its "
           "`created_at`"),
    Column(("retired_at",), "memory", "ISO 8601 with a time zone, after `created_at`: a "
           "version stored retired, with no newer version (an export writes it); ignored on a "
           "line a later line supersedes"),
    Column(("task_id", "action_type", "content", "status"), "decision", "the last three are "
           "required"),
    Column(("tool_name", "params", "result"), "tool_call", "`tool_name` required; `params` a "
           "JSON object"),
    Column(("decision_id", "decision_ref"), "tool_call", "a stored decision's id, or the `ref` "
           "of a decision line above"),
    Column(("speaker", "text", "time", "session", "position", "metadata"), "message", "one turn "
           "of a chat transcript: stored as a memory of kind `message` whose text is `speaker: "
           "text`, the speaker in its metadata, its session (default: the file's name) as its "
           "thread, and its position counted in file order after the turns its session already "
           "holds (unless given); `time` (or `created_at`) when it was said; `speaker` and "
           "`text` are required; a speaker of one to three words, those after the first not in "
           "lower case (`Maria Lopez`), and not a label (`Update`, `Note`, `Step 2`: "
           "`retrieval.memory.speakers.LABELS`), is read back as who said it (a note names the "
           "others)"),
)  # fmt: skip


def columns_help(width: int = 88) -> str:
    """The columns as ``--help`` prints them (plain text, wrapped to ``width``)."""
    lines = []
    for column in COLUMNS:
        head = f"  {', '.join(column.names)} ({column.records})"
        body = textwrap.fill(
            column.meaning.replace("`", ""),
            width=width,
            initial_indent="      ",
            subsequent_indent="      ",
        )
        lines += [head, body]
    return "\n".join(lines)


def columns_markdown() -> str:
    """The columns as the table of docs/cli.md."""
    rows = ["| column | for | meaning |", "|---|---|---|"]
    for column in COLUMNS:
        names = ", ".join(f"`{name}`" for name in column.names)
        rows.append(f"| {names} | {column.records} | {column.meaning} |")
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    print(columns_markdown(), end="")
