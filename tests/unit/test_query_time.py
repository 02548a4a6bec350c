"""The time a query names, as a window: absolute dates, months, seasons, years, and times
relative to when it is asked, in many wordings; and no window where none is named."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from retrieval.search.prepare.query_time import READ_CHARS, query_window

AS_OF = datetime(2023, 8, 16, 9, 30, tzinfo=UTC)  # a Wednesday


@pytest.mark.parametrize(
    ("query", "start", "end"),
    [
        ("What did Gina find for her store on 1 February, 2023?", "2023-02-01", "2023-02-02"),
        ("what happened on February 1st 2023", "2023-02-01", "2023-02-02"),
        ("Anything logged on Feb 1, 2023?", "2023-02-01", "2023-02-02"),
        ("the deploy of 2023-02-01", "2023-02-01", "2023-02-02"),
        ("notes from the 3rd of March, 2022", "2022-03-03", "2022-03-04"),
        ("What was John doing as a volunteer in August 2023?", "2023-08-01", "2023-09-01"),
        ("plans for December 2022", "2022-12-01", "2023-01-01"),
        ("Where did they go in June?", "2023-06-01", "2023-07-01"),
        ("what did she cook in September", "2022-09-01", "2022-10-01"),  # not yet this year
        ("the camping trip during July", "2023-07-01", "2023-08-01"),
        ("late May", "2023-05-01", "2023-06-01"),
        ("What did we plan on 5 March?", "2023-03-05", "2023-03-06"),
        ("trips in spring 2023", "2023-03-01", "2023-06-01"),
        ("the summer of 2022", "2022-06-01", "2022-09-01"),
        ("anything last summer", "2022-06-01", "2022-09-01"),
        ("what was said in the fall", "2022-09-01", "2022-12-01"),
        ("decisions made in 2022", "2022-01-01", "2023-01-01"),
        ("What did I eat yesterday?", "2023-08-15", "2023-08-16"),
        ("the call today", "2023-08-16", "2023-08-17"),
        ("the day before yesterday", "2023-08-14", "2023-08-15"),
        ("what broke three days ago", "2023-08-12", "2023-08-15"),
        ("the talk two weeks ago", "2023-07-30", "2023-08-06"),
        ("What did we decide last week?", "2023-08-07", "2023-08-14"),
        ("the last weekend", "2023-08-12", "2023-08-14"),
        ("what happened this month", "2023-08-01", "2023-09-01"),
        ("last month's incidents", "2023-07-01", "2023-08-01"),
        ("last year", "2022-01-01", "2023-01-01"),
        ("what did Ann say last Friday", "2023-08-11", "2023-08-12"),
        ("the meeting on Monday", "2023-08-14", "2023-08-15"),
        ("earlier this week", "2023-08-14", "2023-08-21"),
        ("over the past week", "2023-08-09", "2023-08-17"),
        ("the puppy she got two weeks before August 11, 2023", "2023-07-25", "2023-08-01"),
        ("what he did the week before August 3, 2023", "2023-07-24", "2023-07-31"),
        ("last weekend before April 10, 2023", "2023-03-31", "2023-04-07"),
        ("the day after 1 February, 2023", "2023-02-01", "2023-02-04"),
    ],
)
def test_a_named_time_is_a_window(query: str, start: str, end: str) -> None:
    window = query_window(query, AS_OF)
    assert window is not None, query
    assert window.start is not None and window.end is not None
    assert (window.start.date().isoformat(), window.end.date().isoformat()) == (start, end)


@pytest.mark.parametrize(
    ("query", "start", "end"),
    [
        ("What changed before June 2023?", None, "2023-06-01"),
        ("everything since March 2023", "2023-03-01", None),
        ("after 2022", "2023-01-01", None),
    ],
)
def test_before_and_since_open_the_window(query: str, start: str | None, end: str | None) -> None:
    window = query_window(query, AS_OF)
    assert window is not None
    assert (
        window.start.date().isoformat() if window.start else None,
        window.end.date().isoformat() if window.end else None,
    ) == (start, end)


@pytest.mark.parametrize(
    "query",
    [
        "Why did the deploy fail?",
        "What does June like to paint?",  # a name, not a month
        "you may want to rotate the key",
        "Did Melanie fall off her bike?",
        "What is Caroline's favourite season?",
        "the summer job",
        "recently",
        "on 31 February 2023",  # no such day
        "in 12345",
        "",
        "\u200b\u0000 weird \ud83d text",
        "what happened 999999999999 days ago",
    ],
)
def test_no_window_where_no_time_is_named(query: str) -> None:
    assert query_window(query, AS_OF) is None


def test_a_window_measures_how_far_outside_a_moment_is() -> None:
    window = query_window("in June", AS_OF)
    assert window is not None
    assert window.distance_days(datetime(2023, 6, 15, tzinfo=UTC)) == 0.0
    assert window.distance_days(datetime(2023, 7, 3, tzinfo=UTC)) == pytest.approx(2.0)
    assert window.distance_days(datetime(2023, 5, 30, tzinfo=UTC)) == pytest.approx(2.0)


# fmt: off
_TIME_WORDS = [
    "in", "on", "before", "after", "since", "last", "this", "next", "ago", "the", "weekend",
    "week", "month", "year", "day", "yesterday", "today", "spring", "summer", "fall", "winter",
    "June", "May", "February", "Friday", "31", "1st", "9999", "0001", "2023", "two",
    "999999999", "weeks", "days", "of", ",", "-",
]
# fmt: on


@given(
    words=st.lists(st.one_of(st.sampled_from(_TIME_WORDS), st.text(max_size=12)), max_size=14),
    as_of=st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31)),
)
@settings(max_examples=400, deadline=None)
def test_odd_text_and_extreme_moments_never_raise(words: list[str], as_of: datetime) -> None:
    window = query_window(" ".join(words), as_of.replace(tzinfo=UTC))
    if window is not None:
        assert window.start is not None or window.end is not None
        if window.start is not None and window.end is not None:
            assert window.start < window.end


def test_only_the_beginning_of_a_long_query_is_read() -> None:
    filler = "word " * (READ_CHARS // 5 - 4)
    window = query_window(filler + "in June", AS_OF)
    assert window is not None and window.words == "June"  # within the first READ_CHARS
    assert query_window(filler + "the notes from June and then in June", AS_OF) is None
    # A cut never splits a word: "in Ju" + "ne" is not read as a month.
    cut = "x" * (READ_CHARS - len("in Ju")) + "in June"
    assert query_window(cut, AS_OF) is None


@pytest.mark.parametrize(
    "query", ["Jun " * 2500, "May " * 2500, "in " * 3333, "1 " * 5000, "in the " * 1428]
)
def test_many_month_names_and_cues_are_read_once(query: str) -> None:
    # Each month name once checked for a cue before it, not the whole text before it each time.
    assert query_window(query, AS_OF) is None
