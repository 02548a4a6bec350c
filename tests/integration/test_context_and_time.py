"""A thread's relevance lifts its turns, and a time the query names is preferred: both within
the caller's budget and the scoring contract (every final score the weighted sum of its
signals, each in [0, 1])."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from retrieval.memory.config import WriteConfig
from retrieval.memory.records import MemoryInput
from retrieval.memory.store import MemoryStore
from retrieval.search.config import RetrievalConfig
from retrieval.search.retriever import HybridRetriever
from tests.score_contract import check_contract

AS_OF = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)
MAY = datetime(2026, 5, 8, 13, 56, tzinfo=UTC)
TURNS = [
    'Ana said, "How did the move to the new flat go?"',
    'Bo said, "Exhausting, but the kitchen is finally unpacked."',
    'Ana said, "And which neighbourhood did you end up in?"',
    'Bo said, "Riverside, two streets from the old bakery."',
    'Ana said, "Sounds lovely. Coffee there next week?"',
]


def _turns(store: MemoryStore, tenant: str = "acme") -> list[int]:
    return store.remember_many(
        MemoryInput(text=body, tenant_id=tenant, kind="message", thread_id="chat",
                    position=position, created_at=MAY + timedelta(minutes=position))
        for position, body in enumerate(TURNS)
    )  # fmt: skip


@pytest.fixture
def retriever(store: MemoryStore) -> Iterator[HybridRetriever]:
    config = RetrievalConfig(record_access=False)
    with HybridRetriever.from_store(store, config=config, background_writes=False) as retriever:
        yield retriever


def test_the_answer_next_to_a_matching_question_is_lifted_into_the_results(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    ids = _turns(store)
    question = "Which neighbourhood did Bo end up in after the move?"
    response = retriever.retrieve(question, tenant_id="acme", as_of=AS_OF, limit=3)
    found = {r.metadata["id"]: r for r in response}
    assert len(response.results) <= 3  # within the budget
    lifted = [r for r in response if "lifted_by" in r.metadata]
    assert lifted, [r.content for r in response]
    # Each hit's own relevance, read with the lift off: a hit lifts by its lead over the best.
    own = {
        r.metadata["id"]: r
        for r in retriever.retrieve(
            question, tenant_id="acme", as_of=AS_OF, limit=10,
            config=replace(retriever.config, context_lift=0.0),
        )
    }  # fmt: skip
    best = max(r.relevance_score for r in own.values())
    for result in lifted:
        by = result.metadata["lifted_by"]
        parent = own[by["id"]]
        lead = (parent.relevance_score / best) ** 5
        expected = parent.relevance_score * lead * 0.85 ** abs(by["offset"])
        assert math.isclose(result.relevance_score, expected, abs_tol=1e-9)
        assert by["own_relevance"] < result.relevance_score
        assert abs(result.metadata["position"] - parent.metadata["position"]) == abs(by["offset"])
    assert ids[3] in found  # "Riverside, ...": the answer, which its own words barely match
    check_contract(response)
    # Off, the answer comes only by its own relevance, and nothing says it was lifted.
    off = retriever.retrieve(
        question, tenant_id="acme", as_of=AS_OF, limit=3,
        config=replace(retriever.config, context_lift=0.0),
    )  # fmt: skip
    assert all("lifted_by" not in r.metadata for r in off)
    # The turns were read in the call's one statement (the tenant's first call reads them in).
    assert off.diagnostics.statements == 1 and response.diagnostics.statements == 1


def test_the_turns_are_read_in_the_one_statement_while_the_tenant_has_them(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    # A tenant whose candidates held no turn is read without them; when its hits are turns,
    # a second statement reads them, and from then on the one statement does: same results.
    question = "Which neighbourhood did Bo end up in after the move?"
    store.remember(
        "Bo likes the bakery near the old flat", tenant_id="acme", kind="fact", created_at=MAY
    )
    before = retriever.retrieve(question, tenant_id="acme", as_of=AS_OF)
    assert before.diagnostics.statements == 1 and len(before.results) == 1
    _turns(store)
    apart = retriever.retrieve(question, tenant_id="acme", as_of=AS_OF, limit=3)
    assert apart.diagnostics.statements == 2
    assert any("lifted_by" in r.metadata for r in apart)
    together = retriever.retrieve(question, tenant_id="acme", as_of=AS_OF, limit=3)
    assert together.diagnostics.statements == 1
    assert [(r.metadata["id"], r.final_score, r.metadata.get("lifted_by")) for r in together] == [
        (r.metadata["id"], r.final_score, r.metadata.get("lifted_by")) for r in apart
    ]
    # A retriever new to the tenant reads them in its first statement, the same again.
    with HybridRetriever.from_store(store, config=retriever.config) as fresh:
        first = fresh.retrieve(question, tenant_id="acme", as_of=AS_OF, limit=3)
    assert first.diagnostics.statements == 1
    assert [r.content for r in first] == [r.content for r in apart]


def test_the_one_statement_sends_only_the_turns_the_lift_may_raise(store: MemoryStore) -> None:
    # The statement of a second call reads the turns itself and leaves out those the lift
    # cannot raise above their own relevance (no candidate, and as near the question as the
    # lift from their hit would make them); the first call's statement, sent apart, reads every
    # turn in the window: the same results. A conversation on one topic, a small pool.
    question = "Which neighbourhood did Bo end up in after the move?"
    store.remember(
        "Bo likes the bakery near the old flat", tenant_id="acme", kind="fact", created_at=MAY
    )
    more = [
        'Bo said, "The new flat is near the river and the old bakery."',
        'Ana said, "Is the neighbourhood quiet at night?"',
        'Bo said, "Very quiet, the move was worth it."',
        'Ana said, "How far is Riverside from your work?"',
        'Bo said, "Twenty minutes by bike along the river."',
        'Ana said, "Did the movers break anything in the flat?"',
        'Bo said, "Only one lamp, the rest of the move went fine."',
    ]
    config = RetrievalConfig(record_access=False, candidate_pool=4)
    with HybridRetriever.from_store(store, config=config, background_writes=False) as retriever:
        retriever.retrieve(question, tenant_id="acme", as_of=AS_OF)  # a tenant without turns
        store.remember_many(
            MemoryInput(text=body, tenant_id="acme", kind="message", thread_id="chat",
                        position=position, created_at=MAY + timedelta(minutes=position))
            for position, body in enumerate([*TURNS, *more])
        )  # fmt: skip
        reads = []
        read = retriever._reader.read

        def spy(*args: object, **kwargs: object) -> object:
            reads.append(read(*args, **kwargs))  # type: ignore[arg-type]
            return reads[-1]

        retriever._reader.read = spy  # type: ignore[method-assign]
        apart = retriever.retrieve(question, tenant_id="acme", as_of=AS_OF, limit=3)
        together = retriever.retrieve(question, tenant_id="acme", as_of=AS_OF, limit=3)
    assert (apart.diagnostics.statements, together.diagnostics.statements) == (2, 1)
    every, worth = ({(row[0], row[1], row[4]) for row in r.turns} for r in reads)  # hit, offset, id
    assert worth < every  # fewer turns sent, each one the first statement read too
    assert [(r.metadata["id"], r.final_score, r.metadata.get("lifted_by")) for r in together] == [
        (r.metadata["id"], r.final_score, r.metadata.get("lifted_by")) for r in apart
    ]


CHAT = [  # a chat's messages, one thought typed as several
    "Bo: Finally moved into the new flat!",
    "Bo: Riverside, two streets from the old bakery.",
    "Bo: The kitchen is still in boxes though.",
    "Ana: Which floor are you on?",
    "Bo: Third, with a view of the river.",
    "Ana: Nice, coffee there next week?",
]


def test_a_message_lifts_the_turns_around_it(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    ids = store.remember_many(
        MemoryInput(text=body, tenant_id="acme", kind="message", thread_id="chat",
                    position=position, created_at=MAY + timedelta(minutes=position))
        for position, body in enumerate(CHAT)
    )  # fmt: skip
    question = "Has Bo unpacked the kitchen of the new flat?"
    config = replace(retriever.config, min_final_score=0.0)
    response = retriever.retrieve(question, tenant_id="acme", as_of=AS_OF, limit=6,
                                  config=config)  # fmt: skip
    check_contract(response)
    lifted = {r.metadata["id"]: r.metadata["lifted_by"]["id"]
              for r in response if "lifted_by" in r.metadata}  # fmt: skip
    best = ids[2]  # "The kitchen is still in boxes though."
    # Ana's question after Bo's run, and Bo's own messages around it, are lifted by it.
    assert lifted.get(ids[3]) == best, lifted
    assert set(ids[:2]) & set(lifted), lifted


def test_memories_without_a_thread_that_are_not_messages_are_not_lifted(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    store.remember_many(
        {
            "text": f"The build of module {i} passed on the staging runner.",
            "tenant_id": "acme",
            "created_at": AS_OF - timedelta(days=1),
        }
        for i in range(6)
    )
    response = retriever.retrieve("which builds passed", tenant_id="acme", as_of=AS_OF)
    assert response.results and all("lifted_by" not in r.metadata for r in response)
    assert response.diagnostics.statements == 1


def test_another_tenants_thread_of_the_same_name_is_not_lifted(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    _turns(store)
    other = _turns(store, tenant="globex")
    response = retriever.retrieve("Which neighbourhood?", tenant_id="acme", as_of=AS_OF)
    assert not {r.metadata["id"] for r in response} & set(other)


def _releases(store: MemoryStore) -> dict[str, int]:
    # The same words at three times: three events, so copies are not collapsed here.
    store = MemoryStore(
        store.engine, embedder=store.embedder, config=WriteConfig(collapse_duplicates=False)
    )
    when = {
        "march": datetime(2026, 3, 12, 10, 0, tzinfo=UTC),
        "june": datetime(2026, 6, 18, 10, 0, tzinfo=UTC),
        "october": datetime(2026, 10, 2, 10, 0, tzinfo=UTC),
    }
    return {
        month: store.remember("The team shipped the billing release to every customer.",
                              tenant_id="acme", created_at=at)
        for month, at in when.items()
    }  # fmt: skip


@pytest.mark.parametrize(
    ("question", "month"),
    [
        ("Which billing release did the team ship in March?", "march"),
        ("the billing release shipped during June 2026", "june"),
        ("Was a billing release shipped to customers on 12 March, 2026?", "march"),
        ("the billing release shipped two weeks before July 2, 2026", "june"),
        ("which billing release did the team ship last month", "october"),
        ("what billing release did we ship in spring 2026", "march"),
    ],
)
def test_a_time_named_in_the_query_is_preferred(
    store: MemoryStore, retriever: HybridRetriever, question: str, month: str
) -> None:
    ids = _releases(store)
    response = retriever.retrieve(question, tenant_id="acme", as_of=AS_OF)
    assert response.results[0].metadata["id"] == ids[month]
    best = response.results[0]
    assert best.metadata["weights"]["time"] == pytest.approx(0.2)
    assert best.metadata["signals"]["time"] == 1.0
    check_contract(response)


@pytest.mark.parametrize(
    "question",
    [
        "What did the team ship?",
        "What did the team ship on 31 February, 2026?",  # no such day: no window
        "ship 99999999999 days ago",
        "the release in 12345",
        "\u202e\u0301 May?? 2026-13-45 ship",
    ],
)
def test_a_query_without_a_usable_time_ranks_as_before(
    store: MemoryStore, retriever: HybridRetriever, question: str
) -> None:
    _releases(store)
    plain = replace(retriever.config, time_weight=0.0)
    with_time = retriever.retrieve(question, tenant_id="acme", as_of=AS_OF)
    without = retriever.retrieve(question, tenant_id="acme", as_of=AS_OF, config=plain)
    assert [(r.metadata["id"], r.final_score) for r in with_time] == [
        (r.metadata["id"], r.final_score) for r in without
    ]
    assert all("time" not in r.metadata["weights"] for r in with_time)
