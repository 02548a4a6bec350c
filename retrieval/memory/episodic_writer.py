"""Writing decisions and tool calls, validated, with binary ``COPY`` on a connection the
caller's transaction owns."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from sqlalchemy import Connection

from retrieval.db.copy_rows import copy_rows, encode_jsonb, reserve_ids, split_columns
from retrieval.errors import ValidationError
from retrieval.memory.fields import DECISION, TOOL_CALL, copy_columns
from retrieval.memory.get_and_forget import Lookup
from retrieval.memory.validation import ValidDecision, ValidToolCall

# The COPY columns of each, in the order the rows below give them.
_DECISION_COLUMNS = copy_columns(DECISION)
_TOOL_CALL_COLUMNS = copy_columns(TOOL_CALL)


class EpisodicWriter:
    """Writes the decisions and tool calls of one schema."""

    def __init__(self, schema: str, lookup: Lookup) -> None:
        self.schema = schema
        self.lookup = lookup

    def decisions(self, connection: Connection, decisions: Sequence[ValidDecision]) -> list[int]:
        """Copy ``decisions``."""
        if not decisions:
            return []
        now, ids = reserve_ids(connection, self.schema, "decisions", len(decisions))
        rows = (
            (d.tenant_id, i, d.task_id, d.action_type, d.content, d.status, d.created_at or now)
            for d, i in zip(decisions, ids, strict=True)
        )
        copy_rows(connection, self.schema, "decisions", *split_columns(_DECISION_COLUMNS), rows)
        return ids

    def tool_calls(
        self, connection: Connection, calls: Sequence[ValidToolCall], *, single: bool = False
    ) -> list[int]:
        """Copy ``calls`` after checking that the decisions they name exist for their tenant."""
        if not calls:
            return []
        self._check_decisions_exist(connection, calls, single)
        now, ids = reserve_ids(connection, self.schema, "tool_calls", len(calls))
        rows = (
            (
                c.tenant_id,
                i,
                c.decision_id,
                c.tool_name,
                encode_jsonb(c.params_json),
                c.result,
                c.created_at or now,
            )
            for c, i in zip(calls, ids, strict=True)
        )
        copy_rows(connection, self.schema, "tool_calls", *split_columns(_TOOL_CALL_COLUMNS), rows)
        return ids

    def _check_decisions_exist(
        self, connection: Connection, calls: Sequence[ValidToolCall], single: bool
    ) -> None:
        wanted: dict[str, set[int]] = defaultdict(set)
        for call in calls:
            if call.decision_id is not None:
                wanted[call.tenant_id].add(call.decision_id)
        for tenant_id, ids in wanted.items():
            missing = ids - self.lookup.existing_decisions(connection, tenant_id, sorted(ids))
            if not missing:
                continue
            index = next(
                i
                for i, call in enumerate(calls)
                if call.tenant_id == tenant_id and call.decision_id in missing
            )
            raise ValidationError(
                f"decision_id: decision {calls[index].decision_id} does not exist for tenant "
                f"{tenant_id!r}: record the decision first, or leave decision_id empty",
                item=None if single else index,
                field="decision_id",
            )
