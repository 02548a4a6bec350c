"""The newer version of a fact first without ``supersedes``, through ``retrieve()`` on a real
PostgreSQL: as of now and of a past moment, the older still returned and naming the newer;
related facts, conversation turns and the setting left alone."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from retrieval.memory.store import MemoryStore
from retrieval.search.config import RetrievalConfig
from retrieval.search.knowledge import FACTS
from retrieval.search.results import RetrievalResult
from retrieval.search.retriever import HybridRetriever
from retrieval.search.sources.semantic.plan import VERSION_MOST_CHARACTERS

JANUARY = datetime(2026, 1, 1, 9, tzinfo=UTC)
APRIL = datetime(2026, 4, 1, 9, tzinfo=UTC)
JULY = datetime(2026, 7, 1, 9, tzinfo=UTC)
QUESTION = "What language is the payments service written in?"
# What follows a page's first sentence: the rest of a long text about the payments service.
PAGE = (
    " It takes card payments from the web shop and the mobile app, settles them nightly with"
    " the acquiring bank, sends refunds back the same way, and keeps every ledger entry for"
    " seven years, as the auditors ask. Its on-call rota, dashboards and runbooks live in the"
    " platform team's wiki."
)


@pytest.fixture
def retriever(store: MemoryStore) -> Iterator[HybridRetriever]:
    with HybridRetriever.from_store(store, config=RetrievalConfig(record_access=False)) as r:
        yield r


def _memories(results: list[RetrievalResult]) -> list[int]:
    return [r.metadata["id"] for r in results if r.source == "semantic"]


def _versions(store: MemoryStore, tenant: str = "acme") -> list[int]:
    # The same sentence with another value each time; the oldest is the nearest the question.
    return [
        store.remember(
            f"The payments service is written in {language}.", tenant_id=tenant, created_at=when
        )
        for language, when in (("Java", JANUARY), ("Go", APRIL), ("Rust", JULY))
    ]


def test_the_newest_version_comes_first_and_the_older_ones_name_it(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    java, go, rust = _versions(store)
    results = retriever.retrieve(QUESTION, tenant_id="acme")
    assert _memories(results)[:3] == [rust, go, java]
    by_id = {r.metadata["id"]: r for r in results}
    assert "possibly_outdated_by" not in by_id[rust].metadata
    for older in (java, go):
        assert by_id[older].metadata["possibly_outdated_by"]["id"] == rust
        assert by_id[older].final_score < by_id[rust].final_score


def test_in_the_past_the_version_then_newest_comes_first(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    java, go, rust = _versions(store)
    may = retriever.retrieve(QUESTION, tenant_id="acme", as_of=APRIL + timedelta(days=44))
    assert _memories(may)[:2] == [go, java]
    assert rust not in _memories(may)
    february = retriever.retrieve(QUESTION, tenant_id="acme", as_of=JANUARY + timedelta(days=45))
    assert _memories(february) == [java]
    assert "possibly_outdated_by" not in february[0].metadata


def test_long_texts_on_one_topic_are_never_versions_of_one_another(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    # Three notes that differ as the versions above do, but each a page of its own: two texts on
    # one topic both stay true (abstracts, notes, pages put one after the other).
    notes = [
        store.remember(
            f"The payments service is written in {language}.{PAGE}",
            tenant_id="acme",
            created_at=when,
        )
        for language, when in (("Java", JANUARY), ("Go", APRIL), ("Rust", JULY))
    ]
    assert len(f"The payments service is written in Java.{PAGE}") > VERSION_MOST_CHARACTERS
    results = retriever.retrieve(QUESTION, tenant_id="acme")
    assert sorted(_memories(results)[:3]) == sorted(notes)
    assert all("possibly_outdated_by" not in r.metadata for r in results)
    assert all("newer_version_of" not in r.metadata for r in results)


def test_a_tenant_of_long_texts_is_read_without_the_versions_until_facts_come(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    # Pairing the candidates as versions costs every statement; a tenant whose candidates held
    # no two short statements (abstracts, pages) is read without it, its presence row still
    # counting them: the first facts that may be versions bring the versions back in that call.
    assert len(f"The payments service was once written in Go.{PAGE}") > VERSION_MOST_CHARACTERS
    for language, when in (("Java", JANUARY), ("Go", APRIL)):
        store.remember(f"The payments service was once written in {language}.{PAGE}",
                       tenant_id="acme", created_at=when)  # fmt: skip

    def ask() -> tuple[list[int], int]:
        response = retriever.retrieve(QUESTION, tenant_id="acme")
        return _memories(response), response.diagnostics.statements

    assert ask()[1] == 1  # not known yet: read with the versions, and learnt
    assert FACTS in retriever._knowledge.view("acme", retriever._reads).empty
    pages, statements = ask()  # read without them
    assert statements == 1 and len(pages) == 2
    java, go, rust = _versions(store)
    found, statements = ask()
    assert statements == 2  # the facts arrived: the full statement ran, in the same call
    assert found[:3] == [rust, go, java]
    assert FACTS not in retriever._knowledge.view("acme", retriever._reads).empty
    assert ask() == (found, 1)  # known to hold facts: one statement with the versions


def test_a_short_statement_in_a_script_of_several_bytes_a_character_is_a_version(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    # A short statement's length is counted in characters, though its bytes are read first:
    # these statements in Chinese are under the limit in characters and over it in bytes.
    statement = (
        "商店的支付服务接受来自网站和手机应用的银行卡付款、每天晚上与收单银行结算、用同样的方式退款、"
        "并按照审计师的要求将每一笔账目保存七年。它的值班表、仪表盘和运行手册都放在平台团队的维基上。"
        "这个支付服务是用{}编写的。"
    )
    versions = [
        store.remember(statement.format(language), tenant_id="acme", created_at=when)
        for language, when in (("Java", JANUARY), ("Go", APRIL), ("Rust", JULY))
    ]
    text = statement.format("Java")
    assert len(text) <= VERSION_MOST_CHARACTERS < len(text.encode())
    results = retriever.retrieve(statement.format("什么语言"), tenant_id="acme")
    assert _memories(results)[:3] == versions[::-1]
    assert FACTS not in retriever._knowledge.view("acme", retriever._reads).empty


def test_the_setting_turns_it_off(store: MemoryStore) -> None:
    java, _, _ = _versions(store)
    config = RetrievalConfig(record_access=False, newer_versions_first=False)
    with HybridRetriever.from_store(store, config=config) as plain:
        results = plain.retrieve(QUESTION, tenant_id="acme")
    assert _memories(results)[0] == java  # the nearest the question, as before
    assert all("possibly_outdated_by" not in r.metadata for r in results)


def test_related_facts_and_conversation_turns_are_not_versions(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    alice = store.remember(
        "Alice prefers dark mode in her editor.", tenant_id="acme", created_at=JANUARY
    )
    vim = store.remember(
        "Alice uses Vim keybindings in her editor.", tenant_id="acme", created_at=APRIL
    )
    results = retriever.retrieve("How does Alice set up her editor?", tenant_id="acme")
    assert {alice, vim} <= set(_memories(results))
    assert all("possibly_outdated_by" not in r.metadata for r in results)
    # The same words said again later in a conversation are another turn, not a version.
    store.remember_many(
        [
            {"text": "My payments service is written in Java.", "tenant_id": "chat",
             "kind": "message", "thread_id": "t", "position": 0, "created_at": JANUARY},
            {"text": "My payments service is written in Go.", "tenant_id": "chat",
             "kind": "message", "thread_id": "t", "position": 1, "created_at": APRIL},
        ]
    )  # fmt: skip
    turns = retriever.retrieve(QUESTION, tenant_id="chat")
    assert turns and all("possibly_outdated_by" not in r.metadata for r in turns)


@pytest.mark.parametrize("kind", [None, "fact", "message"])
def test_turns_of_a_thread_are_never_versions_whatever_their_kind(
    store: MemoryStore, retriever: HybridRetriever, kind: str | None
) -> None:
    # A conversation stored as docs/api.md shows it: a thread and a position, the kind left out.
    extra = {} if kind is None else {"kind": kind}
    store.remember_many(
        {"text": f"Maria said, \"My payments service is written in {language}.\"",
         "tenant_id": "chat", "thread_id": "t", "position": n, "created_at": when, **extra}
        for n, (language, when) in enumerate((("Java", JANUARY), ("Go", APRIL), ("Rust", JULY)))
    )  # fmt: skip
    turns = retriever.retrieve(QUESTION, tenant_id="chat")
    assert len(_memories(turns)) == 3
    assert all("possibly_outdated_by" not in r.metadata for r in turns)
    assert all("newer_version_of" not in r.metadata for r in turns)


def test_a_question_about_one_of_two_true_facts_finds_it_first(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    peanuts = store.remember("Alice is allergic to peanuts.", tenant_id="acme",
                             created_at=JULY - timedelta(days=2))  # fmt: skip
    shellfish = store.remember("Alice is allergic to shellfish.", tenant_id="acme",
                               created_at=JULY - timedelta(days=1))  # fmt: skip
    asked = retriever.retrieve("Is Alice allergic to peanuts?", tenant_id="acme", as_of=JULY)
    assert _memories(asked)[:2] == [peanuts, shellfish]
    assert all("possibly_outdated_by" not in r.metadata for r in asked)
    # Asked about neither, the newer leads and the older names it.
    both = retriever.retrieve("What is Alice allergic to?", tenant_id="acme", as_of=JULY)
    assert _memories(both)[:2] == [shellfish, peanuts]


def test_an_update_in_other_words_takes_the_place_of_the_fact_it_changes(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    paris = store.remember("Bob lives in Paris.", tenant_id="acme", created_at=APRIL)
    denver = store.remember("Bob moved to Denver.", tenant_id="acme", created_at=JULY)
    results = retriever.retrieve("Where does Bob live?", tenant_id="acme")
    assert _memories(results)[:2] == [denver, paris]
    by_id = {r.metadata["id"]: r for r in results}
    assert by_id[paris].metadata["possibly_outdated_by"]["id"] == denver
    assert by_id[denver].metadata["newer_version_of"]["id"] == paris
    assert by_id[denver].final_score > by_id[paris].final_score


def test_a_version_dated_after_the_calls_moment_is_no_version_yet(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    # A memory told with a later date (a plan, a clock ahead) does not demote today's fact
    # until that moment comes; asked as of a moment after it, it does.
    now = datetime.now(UTC)
    paris = store.remember("Bob lives in Paris.", tenant_id="acme", created_at=now - timedelta(30))
    denver = store.remember(
        "Bob moved to Denver.", tenant_id="acme", created_at=now + timedelta(10)
    )
    today = retriever.retrieve("Where does Bob live?", tenant_id="acme")
    assert _memories(today)[0] == paris
    by_id = {r.metadata["id"]: r for r in today}
    assert "possibly_outdated_by" not in by_id[paris].metadata
    assert all("newer_version_of" not in r.metadata for r in today)
    later = retriever.retrieve("Where does Bob live?", tenant_id="acme", as_of=now + timedelta(20))
    assert _memories(later)[:2] == [denver, paris]
    assert {r.metadata["id"]: r for r in later}[paris].metadata["possibly_outdated_by"]["id"] == (
        denver
    )


def test_a_keyed_update_outranks_an_earlier_statement_without_a_key(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    klm = store.remember("Alice's favourite airline is KLM.", tenant_id="acme", created_at=APRIL)
    france = store.remember(
        "Alice now flies Air France.", tenant_id="acme", created_at=JULY, key="airline"
    )
    results = retriever.retrieve("Which airline does Alice fly?", tenant_id="acme")
    assert _memories(results)[:2] == [france, klm]


def test_keyed_memories_are_versions_for_a_question_that_does_not_tell_them_apart(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    # A key names an item (LangGraph's keys are ids): the question decides, as for any memory.
    home = store.remember("Alice's home airport is Schiphol.", tenant_id="keys", key="a1",
                          created_at=APRIL)  # fmt: skip
    work = store.remember("Alice's work airport is Heathrow.", tenant_id="keys", key="a2",
                          created_at=JULY)  # fmt: skip
    asked = retriever.retrieve("Which airport does Alice fly from for home?", tenant_id="keys")
    assert _memories(asked)[0] == home
    assert all("possibly_outdated_by" not in r.metadata for r in asked)
    either = retriever.retrieve("Which airport does Alice use?", tenant_id="keys")
    assert _memories(either)[:2] == [work, home]


def test_a_newer_memory_that_changed_something_else_leaves_the_one_asked_about_first(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    retro = store.remember(
        "The team retro is every other Thursday.", tenant_id="acme", created_at=JANUARY
    )
    store.remember("Our on-call rotation is weekly.", tenant_id="acme", created_at=APRIL)
    rotation = store.remember(
        "On-call rotation changed to every two weeks.",
        tenant_id="acme",
        created_at=APRIL + timedelta(days=1),
    )
    lives = store.remember("Dmitri lives with his parents.", tenant_id="acme", created_at=JANUARY)
    flat = store.remember(
        "Dmitri has his own flat in Leeds since last month.", tenant_id="acme", created_at=APRIL
    )
    results = retriever.retrieve("How often is the team retro?", tenant_id="acme", as_of=JULY)
    assert _memories(results)[0] == retro
    assert "possibly_outdated_by" not in results[0].metadata
    assert rotation not in _memories(results)[:1]
    # An update that says when its value began, asked with the verb the older holds.
    results = retriever.retrieve("Where does Dmitri live?", tenant_id="acme", as_of=JULY)
    memories = _memories(results)
    assert memories.index(flat) < memories.index(lives)


def test_a_later_memory_of_the_same_person_is_no_version_of_a_fact_the_question_names(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    age = store.remember("My son Leo is 8 years old.", tenant_id="acme", created_at=JANUARY)
    teacher = store.remember(
        "Leo has a new piano teacher, Mr Evans.", tenant_id="acme", created_at=APRIL
    )
    results = retriever.retrieve("How old is Leo?", tenant_id="acme", as_of=JULY)
    assert _memories(results)[0] == age
    assert "possibly_outdated_by" not in results[0].metadata
    by_id = {r.metadata["id"]: r for r in results}
    assert teacher not in by_id or "newer_version_of" not in by_id[teacher].metadata


def test_an_update_takes_the_place_of_the_fact_it_is_nearest_to_only(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    # One person's facts in one memory: the update names her name, not what she eats.
    name = store.remember("Maria's last name is Lopez.", tenant_id="acme", created_at=JANUARY)
    diet = store.remember(
        "Maria is vegetarian.", tenant_id="acme", created_at=JANUARY + timedelta(days=1)
    )
    married = store.remember(
        "Maria got married and her name is now Maria Silva.", tenant_id="acme", created_at=APRIL
    )
    results = retriever.retrieve("Is Maria vegetarian?", tenant_id="acme", as_of=JULY)
    assert _memories(results)[0] == diet
    assert "possibly_outdated_by" not in results[0].metadata
    results = retriever.retrieve("What is Maria's last name?", tenant_id="acme", as_of=JULY)
    memories = _memories(results)
    assert memories[0] == married
    by_id = {r.metadata["id"]: r for r in results}
    assert by_id[name].metadata["possibly_outdated_by"]["id"] == married


def test_an_update_that_replaced_its_fact_under_a_key_is_no_version_of_another(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    # The fact it updates is retired (the same key): it found its fact, and is not another's.
    store.remember("Maria's last name is Lopez.", tenant_id="acme", created_at=JANUARY, key="name")
    diet = store.remember(
        "Maria is vegetarian.", tenant_id="acme", created_at=JANUARY + timedelta(days=1), key="diet"
    )
    married = store.remember(
        "Maria got married and her name is now Maria Silva.",
        tenant_id="acme",
        created_at=APRIL,
        key="name",
    )
    results = retriever.retrieve("Is Maria vegetarian?", tenant_id="acme", as_of=JULY)
    assert _memories(results)[0] == diet
    assert "possibly_outdated_by" not in results[0].metadata
    results = retriever.retrieve("What is Maria's last name?", tenant_id="acme", as_of=JULY)
    assert _memories(results)[0] == married


def test_a_chain_of_updates_said_in_words_comes_newest_first(
    store: MemoryStore, retriever: HybridRetriever
) -> None:
    # Each update is nearest the one before it: the chain still ranks newest first.
    paris = store.remember("Bob lives in Paris.", tenant_id="acme", created_at=JANUARY)
    denver = store.remember("Bob moved to Denver.", tenant_id="acme", created_at=APRIL)
    austin = store.remember(
        "Bob moved to Austin last week.", tenant_id="acme", created_at=JULY - timedelta(days=1)
    )
    results = retriever.retrieve("Where does Bob live?", tenant_id="acme", as_of=JULY)
    assert _memories(results)[:3] == [austin, denver, paris]


@pytest.mark.parametrize("label", ["Update", "Note", "UPDATE", "Correction", "FYI"])
def test_a_note_that_opens_with_a_label_is_a_fact_and_may_be_a_version(
    store: MemoryStore, retriever: HybridRetriever, label: str
) -> None:
    # "Update: ..." names no one who said it: an agent's note, not a conversation's turn, so it
    # may be the newer version of a fact as any other fact may.
    deadline = store.remember("The project deadline is March 1.", tenant_id="acme",
                              created_at=APRIL)  # fmt: skip
    slipped = store.remember(f"{label}: the project deadline slipped to April 15.",
                             tenant_id="acme", created_at=JULY)  # fmt: skip
    results = retriever.retrieve("When is the project deadline?", tenant_id="acme")
    assert _memories(results)[:2] == [slipped, deadline]
    by_id = {r.metadata["id"]: r for r in results}
    assert by_id[deadline].metadata["possibly_outdated_by"]["id"] == slipped


@pytest.mark.parametrize(
    ("before", "after", "question"),
    [
        ("Carlos is dating Mia.", "Carlos and Mia broke up.", "Is Carlos dating Mia?"),
        ("Frank is single.", "Frank is engaged to Julia.", "Is Frank single?"),
        ("Priti is vegan.", "Priti eats fish again.", "Is Priti vegan?"),
    ],
)
def test_a_state_that_ended_or_began_takes_the_place_of_the_one_asked_about(
    store: MemoryStore, retriever: HybridRetriever, before: str, after: str, question: str
) -> None:
    # The question names a word only the older holds ("dating", "single", "vegan"), yet the
    # newer says the state it asks about ended or another began: the newer leads.
    _the_newer_leads(store, retriever, before, after, question)


def _the_newer_leads(
    store: MemoryStore, retriever: HybridRetriever, before: str, after: str, question: str
) -> None:
    # ``before`` told in April, ``after`` in July: asked ``question``, the newer comes first and
    # the older, right after it, names it.
    older = store.remember(before, tenant_id="acme", created_at=APRIL)
    newer = store.remember(after, tenant_id="acme", created_at=JULY)
    results = retriever.retrieve(question, tenant_id="acme")
    assert _memories(results)[:2] == [newer, older]
    by_id = {r.metadata["id"]: r for r in results}
    assert by_id[older].metadata["possibly_outdated_by"]["id"] == newer


@pytest.mark.parametrize(
    ("state", "event", "question"),
    [
        ("My brother lives in Glasgow.", "My sister lives in a shared flat in Leeds.",
         "Where does my brother live?"),
        ("Alice's favourite editor is Vim.", "Alice opened a ticket about the editor crashing.",
         "What is Alice's favourite editor?"),
        ("The project uses Python 3.11.", "We fixed a bug in the project's Python code.",
         "Which Python does the project use?"),
        ("Our database is PostgreSQL 16.", "We backed up the database last night.",
         "What database do we use?"),
        ("Maria's manager is Tom.", "Maria talked to Tom about her promotion.",
         "Who is Maria's manager?"),
        # Near the state, and the question names no word only one holds.
        ("The API rate limit is 100 requests per minute.",
         "The client exceeded the API rate limit yesterday.", "What is the API rate limit?"),
        ("The office Wi-Fi password is sunflower42.",
         "A guest asked for the office Wi-Fi password.", "What is the office Wi-Fi password?"),
        ("The weekly report goes to the finance team.",
         "The finance team reviewed the weekly report on Monday.", "Who gets the weekly report?"),
        # When it happened is no word of a change.
        ("Our landlord is Mr Okafor.", "Mr Okafor fixed the boiler last month.",
         "Who is our landlord?"),
        # "had" tells an event.
        ("We have a cat called Tofu.", "Tofu had a vet check-up last week; all fine.",
         "Do we have a cat?"),
    ],
)  # fmt: skip
def test_a_later_memory_that_mentions_a_state_without_changing_it_leaves_it_first(
    store: MemoryStore, retriever: HybridRetriever, state: str, event: str, question: str
) -> None:
    # An agent's later memory of what happened to a thing, or a description of another, is no
    # update of the state asked about: the state comes first and is not marked outdated.
    older = store.remember(state, tenant_id="acme", created_at=APRIL)
    store.remember(event, tenant_id="acme", created_at=JULY)
    results = retriever.retrieve(question, tenant_id="acme")
    assert _memories(results)[0] == older
    assert "possibly_outdated_by" not in results[0].metadata


@pytest.mark.parametrize("told", ["supersedes", "key"])
def test_an_update_the_rule_cannot_read_replaces_its_fact_when_the_writer_says_so(
    store: MemoryStore, retriever: HybridRetriever, told: str
) -> None:
    # "We moved to Porto." shares no word with the fact nor the question, and is far from both
    # in meaning: untold, "Where do I live?" finds Lisbon alone (docs/api.md). Told as the
    # fact's correction, or under its key, the fact leaves the answer and the update answers.
    tenant = f"moved-{told}"
    keyed = {"key": "home"} if told == "key" else {}
    lisbon = store.remember("I live in Lisbon with my partner Joana.", tenant_id=tenant,
                            created_at=JANUARY, **keyed)  # fmt: skip
    store.remember("My partner Joana is a vet.", tenant_id=tenant, created_at=APRIL)
    store.remember("I work as a backend engineer at Feedzai.", tenant_id=tenant, created_at=APRIL)
    replaces = {"supersedes": lisbon} if told == "supersedes" else keyed
    porto = store.remember("We moved to Porto.", tenant_id=tenant, created_at=JULY, **replaces)
    asked = retriever.retrieve("Where do I live?", tenant_id=tenant)
    assert _memories(asked)[0] == porto
    assert lisbon not in _memories(asked)
    before = retriever.retrieve(
        "Where do I live?", tenant_id=tenant, as_of=JULY - timedelta(days=1)
    )
    assert _memories(before)[0] == lisbon
