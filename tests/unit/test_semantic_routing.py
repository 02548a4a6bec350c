"""Which semantic statements read the memories a correction replaced: every call's but one that
reads only memories under a key (LangGraph's store), whose new values replace them."""

from __future__ import annotations

import pytest

from retrieval.search.modes import Mode
from retrieval.search.prepare.metadata_filter import KEYED, NAMESPACE
from retrieval.search.sources.semantic.plan import SemanticQuery
from retrieval.search.sources.semantic.statement import semantic_ctes


def _statement(operators: tuple[str, ...], *, bm25: bool) -> str:
    query = SemanticQuery(Mode(), with_max_distance=True, with_entities=False, bm25=bm25)
    return "\n".join(str(cte) for cte in semantic_ctes("retrieval", query, operators))


@pytest.mark.parametrize("bm25", [True, False])
@pytest.mark.parametrize("operators", [(), (NAMESPACE,)])
def test_a_call_reads_corrected_memories_and_routes_them(
    operators: tuple[str, ...], bm25: bool
) -> None:
    statement = _statement(operators, bm25=bm25)
    assert "semantic_routed AS MATERIALIZED" in statement
    assert "FROM semantic_routed AS n" in statement
    assert "'found_through', n.found_through" in statement
    assert "m.superseded_by IS NOT NULL AND m.key IS NULL" in statement


@pytest.mark.parametrize("bm25", [True, False])
def test_a_call_of_keyed_memories_only_reads_the_live_ones(bm25: bool) -> None:
    statement = _statement((KEYED,), bm25=bm25)
    assert "semantic_routed" not in statement
    assert "found_through" not in statement
    assert "superseded_by IS NOT NULL" not in statement
