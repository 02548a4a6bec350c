"""What the retriever learns of its tenants from the presence rows (no database)."""

from __future__ import annotations

from retrieval.search.knowledge import FACTS, MEMORIES, SourcePresence
from retrieval.search.sources.episodic.plan import SOURCE as EPISODIC


def test_a_source_is_left_out_while_the_tenant_holds_none_and_back_with_its_first_rows() -> None:
    presence = SourcePresence()
    assert presence.may_hold("acme", EPISODIC) and presence.empty("acme") == frozenset()
    presence.learn("acme", {EPISODIC: 0, MEMORIES: 12})
    assert presence.empty("acme") == {EPISODIC}  # the sizes are not sources
    presence.learn("acme", {EPISODIC: 1})
    assert presence.empty("acme") == frozenset()
    presence.learn("acme", {EPISODIC: 0})  # forgotten again: left out again
    assert presence.empty("acme") == {EPISODIC}
    assert presence.empty("other") == frozenset()


def test_a_tenant_whose_candidates_once_held_a_pair_of_facts_keeps_the_versions() -> None:
    # Candidates without a pair, then with one (a second statement), then without again: the
    # versions stay, as a second statement on the next pair costs more than they do.
    presence = SourcePresence()
    presence.learn("acme", {FACTS: 0})
    assert presence.empty("acme") == {FACTS}
    presence.learn("acme", {FACTS: 1})
    assert presence.empty("acme") == frozenset()
    presence.learn("acme", {FACTS: 0, EPISODIC: 0})
    assert presence.empty("acme") == {EPISODIC}
