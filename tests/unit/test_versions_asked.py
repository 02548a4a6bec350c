"""Whether two memories are versions of one fact for a question
(retrieval.search.rank.versions_asked): the question tells two true facts apart by a word only
one holds; an update said in words stays a version unless a name or a number tells them apart."""

from __future__ import annotations

import pytest

from retrieval.search.rank.tense import tells_an_event
from retrieval.search.rank.versions_asked import (
    brings_a_value,
    mentions,
    names_apart,
    shares_a_word,
    states_update,
    tells_apart,
    versions_for_query,
)


@pytest.mark.parametrize(
    ("query", "older", "newer"),
    [
        ("Is Alice allergic to peanuts?", "Alice is allergic to peanuts.",
         "Alice is allergic to shellfish."),
        ("When does the Paris office open?", "Our Paris office opens at 9am.",
         "Our Berlin office opens at 10am."),
        ("How many API calls do free users get?", "Free users get 100 API calls per minute.",
         "Paid users get 1000 API calls per minute."),
        ("Which PostgreSQL does the production server run?",
         "The staging server runs PostgreSQL 17.", "The production server runs PostgreSQL 17."),
    ],
)  # fmt: skip
def test_a_question_naming_a_word_only_one_holds_tells_two_facts_apart(
    query: str, older: str, newer: str
) -> None:
    assert tells_apart(query, older, newer)
    assert not versions_for_query(query, older, newer, near=True)


@pytest.mark.parametrize(
    ("query", "older", "newer"),
    [
        ("What is Alice allergic to?", "Alice is allergic to peanuts.",
         "Alice is allergic to shellfish."),
        ("What PostgreSQL version does the staging cluster run?",
         "The staging cluster runs PostgreSQL 15.", "The staging cluster runs PostgreSQL 16."),
        ("Which office does Ravi work from?", "Ravi works from the Berlin office.",
         "Ravi works from the Munich office."),
    ],
)  # fmt: skip
def test_a_question_that_names_neither_value_asks_about_the_newer(
    query: str, older: str, newer: str
) -> None:
    assert not tells_apart(query, older, newer)
    assert versions_for_query(query, older, newer, near=True)
    assert not versions_for_query(query, older, newer, near=False)


@pytest.mark.parametrize(
    "text",
    [
        "Bob moved to Denver.",
        "The project deadline slipped to April 15.",
        "We switched to GitLab.",
        "Max upload size is 100 MB now.",
        "Carol has a new number: 555-0199.",
        "Grace no longer works at Initech.",
        "Trial is 30 days starting next week.",
        "Gateway timeout is 60s as of today.",
        "Mark is on day shifts since last month.",
        "P1 SLA is 2h from next month.",
        "Correction: the standup is at 10.",  # a note labelled as what replaces another
        "UPDATE: the on-call phone is Priya's.",
        # A state that began, ended, came back or passed to another.
        "Carlos and Mia broke up.",
        "Frank is engaged to Julia.",
        "Priti eats fish again.",
        "I swapped my Kobo for a Kindle Paperwhite.",
        "Sam handed the mobile app over to Nadia.",
        "We remortgaged at 4.2 percent.",
        "Hannah had the twins last week, two girls.",
        "Maya gave up Spanish and is learning Italian.",
        "Derek's back on days.",
        "We moved in two years ago.",
    ],
)
def test_an_update_is_said_in_words(text: str) -> None:
    assert states_update(text)


@pytest.mark.parametrize(
    "text",
    [
        "Alice is allergic to shellfish.",
        "Alice is now also allergic to shellfish.",  # it adds, it does not replace
        "Paid users get 1000 API calls per minute.",
        "Bob said it again, too.",
        "The starting salary for seniors is 60k.",  # a value, not when one began
        "We chose Postgres since it is free.",  # a reason
        "Ravi works from the Berlin office.",
        "Support is open from 8 to 18 on weekdays.",
        "The update broke the login page.",  # a label only where it opens the text
        "Note: the standup is at 10.",
        "The annual review is in the last week of November.",  # a time, not a change
        "The last month of the quarter is the busiest.",
        "Frank is engaged to Julia too.",  # one more, not another in its place
    ],
)
def test_a_fact_that_adds_is_no_update(text: str) -> None:
    assert not states_update(text)


def test_an_update_in_other_words_is_a_version_unless_a_name_tells_them_apart() -> None:
    # "live" is only the older's word, yet the question asks where Bob lives now.
    assert versions_for_query(
        "Where does Bob live?", "Bob lives in Paris.", "Bob moved to Denver.", near=False
    )
    # Alice's move says nothing of where Bob lives.
    assert names_apart("Where does Bob live?", "Bob lives in Paris.", "Alice moved to Denver.")
    assert not versions_for_query(
        "Where does Bob live?", "Bob lives in Paris.", "Alice moved to Denver.", near=False
    )


def test_words_match_by_their_stem_numbers_only_themselves_and_a_word_inside_another() -> None:
    assert not tells_apart("Where does Bob live?", "Bob lives in Paris.", "Bob lived in Rome.")
    assert tells_apart("Does the plan give 100 calls?", "100 calls a day.", "1000 calls a day.")
    # "VPN" inside "OpenVPN": the newer speaks of it too.
    assert not names_apart(
        "Which VPN does the company use?",
        "The company VPN is OpenVPN.",
        "IT rolled out WireGuard to replace OpenVPN.",
    )


def test_a_long_text_that_holds_a_word_of_change_is_no_update_of_a_fact() -> None:
    # An abstract's "increased" or "now" is one of its many claims, not a replaced value.
    older = "Vitamin D levels predict bone density in older adults."
    abstract = (
        "In this cohort of 1,200 adults we measured serum levels over five years; bone density "
        "increased with supplementation, fracture rates dropped, and the effect is now seen in "
        "both sexes, though adherence varied between the sites that took part in the trial."
    )
    assert states_update(abstract)
    assert not versions_for_query("What predicts bone density?", older, abstract, near=False)


def test_the_verb_of_a_question_asked_with_do_tells_nothing_apart() -> None:
    # "eat" is the relation asked about; the newer states it in another verb.
    older, newer = "Our cat eats dry food.", "The vet put our cat on wet food only."
    assert not tells_apart("What does our cat eat?", older, newer)
    assert versions_for_query("What does our cat eat?", older, newer, near=True)
    # A value the question names still tells two true facts apart, with "do" or without.
    assert tells_apart(
        "Does Priya play tennis?", "Priya plays tennis on weekends.", "Priya plays chess."
    )
    assert tells_apart(
        "Where does the Lisbon team sit?",
        "The Lisbon team sits in building B.",
        "The Porto team sits in building D.",
    )
    # Without "do" an inflected word is no verb of the question: "cats" tells apart.
    assert tells_apart(
        "Is Tom allergic to cat hair?", "Tom is allergic to cats.", "Tom is allergic to dust."
    )


def test_an_update_names_what_it_changes() -> None:
    # A subject both hold, or the same teller ("we"), as an update of the fact has it.
    assert shares_a_word("Bob lives in Paris.", "Bob moved to Denver.")
    assert shares_a_word("We use GitHub for our code.", "We switched to GitLab.")
    assert shares_a_word("The CI runs on Jenkins.", "We migrated CI to GitHub Actions.")
    # A memory that changed something else names nothing of the one asked about.
    older, newer = (
        "The design system lives in the shared Figma workspace.",
        ("We migrated CI to GitHub Actions."),
    )
    assert not shares_a_word(older, newer)
    assert not versions_for_query("Where does the design system live?", older, newer, near=False)
    # "other" is no subject: "every other Thursday" and "every other Monday" share none.
    assert not shares_a_word(
        "The team retro is every other Thursday.", "Client meetings moved to every other Monday."
    )


def test_an_update_the_question_tells_apart_is_a_version_only_when_close() -> None:
    # "old" is only the older's word: a later memory about Leo that says something changed is
    # another fact, unless the statement found the two close in meaning.
    older, newer = "My son Leo is 8 years old.", "Leo has a new piano teacher, Mr Evans."
    assert tells_apart("How old is Leo?", older, newer)
    assert not versions_for_query("How old is Leo?", older, newer, near=False, close=False)
    # Not told apart by the question, an update stays one however far its words.
    assert versions_for_query(
        "Where does Bob live?",
        "Bob lives in Paris.",
        "Bob moved to Denver.",
        near=False,
        close=False,
    )
    # A state that ended, close to the one asked about: "dating" is only the older's word.
    assert versions_for_query(
        "Is Carlos dating Mia?", "Carlos is dating Mia.", "Carlos and Mia broke up.",
        near=True, close=True,
    )  # fmt: skip
    # Close, an update the question tells apart is one: "phone" is only the older's word.
    assert versions_for_query(
        "What is Carol's phone number?",
        "Carol's phone number is 555-0142.",
        "Carol has a new number: 555-0199.",
        near=False,
        close=True,
    )


@pytest.mark.parametrize(
    "text",
    [
        "Mr Okafor fixed the boiler.",
        "The client exceeded the API rate limit yesterday.",
        "I installed Ubuntu on my laptop and wiped Windows.",
        "The council put the allotment fee up to 95.",  # "put" after a subject of one
        "We put in a Ring video doorbell.",  # after "we", before a particle
        "Bob has finally moved to Denver.",  # the present perfect
        "The guest network was renamed to Acme-Visitors.",
        "The old boiler was replaced by a heat pump.",  # "was" before "-ed by"
        "Tofu had a vet check-up last week; all fine.",
    ],
)
def test_a_text_that_tells_an_event_in_the_past(text: str) -> None:
    assert tells_an_event(text)


@pytest.mark.parametrize(
    "text",
    [
        "Our doorbell is a basic wired chime.",  # a participle after "is" describes
        "The office guest Wi-Fi is called Acme-Guest.",
        "Customer emails are answered in Freshdesk.",
        "Bob has a cat named Felix.",
        "My sister lives in a shared flat in Leeds.",  # after "a": a description
        "Ligation induces the formation of dynamically regulated assemblies.",  # after "of"
        "Outcomes among women treated with tamoxifen.",  # before "with", no "was"
        "Plasma holds tumor-derived DNA.",  # a compound
        "Paid users get 1000 API calls per minute.",  # the first word is no verb
        "We put the kids to bed at eight.",  # "we put" without a particle: a habit
        "The judo coach can only do Friday afternoons.",
        "Alice is allergic to peanuts.",
        "We had to sell the car.",  # "had to" carries the verb after it, here the present
    ],
)
def test_a_text_that_tells_a_state_or_a_habit(text: str) -> None:
    assert not tells_an_event(text)


@pytest.mark.parametrize(
    ("older", "newer", "brings"),
    [
        # A name or a number the older does not hold.
        ("The allotment costs 85 a year.", "The council put the allotment fee up to 95.", True),
        ("Our doorbell is a basic wired chime.", "We put in a Ring video doorbell.", True),
        # Another word before a word both hold.
        ("Our cat eats dry food.", "The vet put our cat on wet food only.", True),
        # The older's own names, the first word and a word of no value bring none.
        ("Maria's manager is Tom.", "Maria talked to Tom about her promotion.", False),
        ("The API rate limit is 100 requests per minute.",
         "The client exceeded the API rate limit yesterday.", False),
        ("The company's fiscal year ends in June.", "Finance audited the fiscal year.", False),
        # A time is a value only where the older holds one.
        ("Leon wants a red bike.", "We bought Leon a bike on Friday.", False),
        ("The API keys rotate every 90 days.", "Ops rotated the API keys on 3 June.", False),
        ("The server has 64 GB of RAM.", "The server ran out of memory at 2am.", False),
        ("Leon's birthday is on 14 August.", "We bought Leon a bike on Friday.", True),
        ("The standup is at 9:30 on Mondays.", "The team pushed it to 10:15.", True),
    ],
)  # fmt: skip
def test_a_newer_memory_brings_a_value_the_older_does_not_hold(
    older: str, newer: str, brings: bool
) -> None:
    assert brings_a_value(older, newer) is brings


@pytest.mark.parametrize(
    ("query", "older", "newer"),
    [
        ("Who is the quarterly review with?", "The quarterly review is with the board.",
         "The board asked for more detail on churn at the quarterly review."),
        ("What is the office Wi-Fi password?", "The office Wi-Fi password is sunflower42.",
         "A guest asked for the office Wi-Fi password."),
        ("What is the API rate limit?", "The API rate limit is 100 requests per minute.",
         "The client exceeded the API rate limit yesterday."),
        ("Who gets the weekly report?", "The weekly report goes to the finance team.",
         "The finance team reviewed the weekly report on Monday."),
    ],
)  # fmt: skip
def test_an_event_that_only_mentions_a_state_is_no_version_of_it(
    query: str, older: str, newer: str
) -> None:
    # Near, and the question names no word only one holds: without the event read as a
    # mention, the newer would be the older's version.
    assert not tells_apart(query, older, newer)
    assert mentions(older, newer)
    assert not versions_for_query(query, older, newer, near=True)


def test_an_event_that_brings_a_value_or_says_a_change_is_no_mere_mention() -> None:
    # A value of its own: the newer is what the older now is, near or said.
    assert not mentions("Our cat eats dry food.", "The vet put our cat on wet food only.")
    assert versions_for_query(
        "How much is the allotment?", "The allotment costs 85 a year.",
        "The council put the allotment fee up to 95.", near=True,
    )  # fmt: skip
    # A word of change keeps an update an update, however little it names.
    assert not mentions("Jamal eats no fish.", "Jamal started eating fish again.")
    # Two events: the later is no mention of a state.
    assert not mentions("Bob ran a marathon in April.", "Bob ran the Berlin marathon.")
    # One that adds ("also", "too") is neither a mention nor an update.
    assert not mentions("We have a van.", "We also bought a second van.")


def test_when_an_event_happened_is_no_word_of_a_change() -> None:
    # "last month" says when the boiler was fixed, not that the landlord changed.
    newer = "Mr Okafor fixed the boiler last month."
    assert states_update(newer)
    assert mentions("Our landlord is Mr Okafor.", newer)
    assert not versions_for_query(
        "Who is our landlord?", "Our landlord is Mr Okafor.", newer, near=True
    )
    # With a value of its own, or a word of change, the moment still tells an update.
    assert not mentions("Mateo works at a bakery.", "Mateo got a job at Pret two weeks ago.")
    assert not mentions("Hannah is pregnant.", "Hannah had the twins last week.")
