"""The time a query names, as a window: "on 1 February 2023", "in June", "last week".

A question about a time ("What did Gina find for her store on 1 February, 2023?", "What did
we decide last week?") is answered by what was stored then. :func:`query_window` finds the
first time expression of a query and returns the window it names, ``[start, end)``, in UTC:

* absolute dates: "1 February 2023", "February 1st, 2023", "Feb 1 2023", "2023-02-01";
* a month: "February 2023", "in/during/since/until/before/after/early/late February" (the most
  recent February up to ``as_of``), "this/last/next month";
* a season: "in spring 2023", "summer of 2022" (the meteorological seasons of the northern
  hemisphere), "last summer";
* a year: "in 2023", "during 2022", "this/last year";
* relative to ``as_of`` (the time the question is asked): "today", "yesterday", "the day before
  yesterday", "N days/weeks/months/years ago", "last/this/past week", "last weekend", "last
  Friday", "earlier this week", "recently" is not a window.

"before X" and "since X" or "after X" open the window on one side. Anything else (a query with
no time, a date that does not exist such as "31 February") gives ``None``: the query behaves as
one without a time. Nothing here raises on odd text, and the work is linear in the query's
length, of which the first :data:`READ_CHARS` characters are read.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

# The part of a query read for a time: about what the embedding model reads of it (256 tokens).
# The parser is linear in what it reads, but its many patterns cost about 3 ms per 1,000
# characters, so a 10,000-character query would spend 30 ms here.
READ_CHARS = 1_000
_MONTHS = {name.lower(): number for number, name in enumerate(calendar.month_name) if name}
_MONTHS |= {name.lower(): number for number, name in enumerate(calendar.month_abbr) if name}
_MONTHS["sept"] = 9
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
_WEEKDAYS = {name.lower(): number for number, name in enumerate(calendar.day_name)}
_WEEKDAY = "|".join(_WEEKDAYS)
_SEASONS = {"spring": (3, 3), "summer": (6, 3), "autumn": (9, 3), "fall": (9, 3), "winter": (12, 3)}
_SEASON = "|".join(_SEASONS)
_UNITS = {"day": 1, "week": 7, "month": 30, "year": 365}
_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "a couple of": 2, "a few": 3, "several": 4,
}  # fmt: skip
_NUMBER = "|".join(sorted(map(re.escape, _NUMBERS), key=len, reverse=True))
# Words that make a bare month name a time ("in June"), not a name ("June said").
_MONTH_CUE = r"in|during|since|until|till|before|after|by|early|late|mid|last|this|next|of"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_OPEN = re.compile(r"\b(before|until|till|by|since|after)\s+$", re.IGNORECASE)
_CUE = re.compile(rf"\b(?:{_MONTH_CUE})\s+(?:the\s+)?$", re.IGNORECASE)
_LAST = re.compile(r"\blast\s+$", re.IGNORECASE)
_CUED_MONTH = re.compile(rf"\b(?:{_MONTH_CUE})\s+(?:the\s+)?({_MONTH})\b", re.IGNORECASE)
# The patterns above end at a time expression and read only this many characters before it
# (a word or two and their spaces), so that finding every time in a long query stays linear in
# its length: searched over the whole prefix, each would read it all again.
_LOOK_BACK = 64
# "two weeks before", "the day after", "the weekend before" a date: a window moved from it.
_SHIFT = re.compile(
    rf"(?:\b(?P<count>\d+|{_NUMBER})\s+(?P<unit>day|week|month|year)s?"
    r"|\b(?:the|last|that)\s+(?P<period>day|week|weekend|month))\s+(?P<way>before|after)\s+$",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class TimeWindow:
    """The window a query names, ``start <= t < end`` (``None``: open on that side), and the
    words that named it."""

    start: datetime | None
    end: datetime | None
    words: str

    def distance_days(self, moment: datetime) -> float:
        """How many days ``moment`` lies outside the window (0 inside)."""
        if self.start is not None and moment < self.start:
            return (self.start - moment).total_seconds() / 86_400
        if self.end is not None and moment >= self.end:
            return (moment - self.end).total_seconds() / 86_400
        return 0.0


def query_window(query: str, as_of: datetime) -> TimeWindow | None:
    """The window of the first time expression of ``query`` (relative ones from ``as_of``),
    or ``None`` when it names no time (or one that does not exist). Only the query's first
    :data:`READ_CHARS` characters are read."""
    today = as_of.astimezone(UTC).date()
    query = _beginning(query)
    for finder in _FINDERS:
        try:
            found = finder(query, today)
        except (ValueError, OverflowError):  # a date that does not exist: no window
            return None
        if found is not None:
            return found
    return None


def _beginning(query: str) -> str:
    # The first READ_CHARS characters, cut at a space so that no word is cut in two.
    if len(query) <= READ_CHARS:
        return query
    cut = query.rfind(" ", 0, READ_CHARS + 1)
    return query[: cut if cut > 0 else READ_CHARS]


def _day(value: date) -> datetime:
    return datetime.combine(value, time(0), tzinfo=UTC)


def _span(first: date, after: date, words: str, query: str, at: int) -> TimeWindow:
    """``[first, after)``, moved by "two weeks before"/"the day after" that precedes the words,
    or opened on one side by "before"/"since"."""
    shift = _before(_SHIFT, query, at)
    if shift is not None:
        count = shift["count"]
        number = 1 if count is None else int(count) if count.isdigit() else _NUMBERS[count]
        unit = _UNITS.get(shift["unit"] or "", 7 if shift["period"] in ("week", "weekend") else 1)
        if shift["period"] == "month":
            unit = 30
        sign = -1 if shift["way"].lower() == "before" else 1
        center = (first if sign < 0 else after - timedelta(days=1)) + sign * timedelta(
            days=number * unit
        )
        slack = max(1, unit // 2)
        return TimeWindow(_day(center - timedelta(days=slack)),
                          _day(center + timedelta(days=slack + 1)), shift[0] + words)  # fmt: skip
    opener = _before(_OPEN, query, at)
    start, end = _day(first), _day(after)
    if opener is not None:
        word = opener.group(1).lower()
        if word in ("before", "until", "till", "by"):
            return TimeWindow(None, start if word == "before" else end, words)
        return TimeWindow(start if word == "since" else end, None, words)
    return TimeWindow(start, end, words)


def _month_span(year: int, month: int) -> tuple[date, date]:
    first = date(year, month, 1)
    return first, date(year + (month == 12), month % 12 + 1, 1)


def _recent_year(month: int, today: date) -> int:
    """The year of the most recent ``month`` up to ``today``."""
    return today.year if month <= today.month else today.year - 1


def _full_date(query: str, today: date) -> TimeWindow | None:
    patterns = (
        (rf"\b{_DAY}\s+(?:of\s+)?({_MONTH})\.?,?\s+(\d{{4}})\b", (1, 2, 3)),
        (rf"\b({_MONTH})\.?\s+{_DAY},?\s+(\d{{4}})\b", (2, 1, 3)),
        (r"\b(\d{4})-(\d{2})-(\d{2})\b", None),
    )
    for pattern, order in patterns:
        match = re.search(pattern, query, re.IGNORECASE)
        if match is None:
            continue
        if order is None:
            day = date(int(match[1]), int(match[2]), int(match[3]))
        else:
            day_at, month_at, year_at = order
            month = _MONTHS[match[month_at].lower()]
            day = date(int(match[year_at]), month, int(match[day_at]))
        return _span(day, day + timedelta(days=1), match[0], query, match.start())
    return None


def _day_of_month(query: str, today: date) -> TimeWindow | None:
    # "on 5 March", "March 5th" without a year: the most recent such day up to today.
    match = re.search(
        rf"\b(?:on\s+)?(?:{_DAY}\s+(?:of\s+)?({_MONTH})|({_MONTH})\.?\s+{_DAY})\b(?!,?\s*\d)",
        query,
        re.IGNORECASE,
    )
    if match is None or not (match[1] or match[4]):
        return None
    day_number = int(match[1] or match[4])
    month = _MONTHS[(match[2] or match[3]).lower()]
    year = _recent_year(month, today)
    day = date(year, month, day_number)
    if day > today:
        day = date(year - 1, month, day_number)
    return _span(day, day + timedelta(days=1), match[0], query, match.start())


def _month_year(query: str, today: date) -> TimeWindow | None:
    match = re.search(rf"\b({_MONTH})\.?,?\s+(?:of\s+)?(\d{{4}})\b", query, re.IGNORECASE)
    if match is None:
        return None
    first, after = _month_span(int(match[2]), _MONTHS[match[1].lower()])
    return _span(first, after, match[0], query, match.start())


def _season(query: str, today: date) -> TimeWindow | None:
    match = re.search(
        rf"\b(?:(last|this)\s+)?({_SEASON})(?:\s+(?:of\s+)?(\d{{4}}))?\b", query, re.IGNORECASE
    )
    if match is None or not (match[1] or match[3] or _cued(query, match.start())):
        return None
    start_month, months = _SEASONS[match[2].lower()]
    if match[3]:
        year = int(match[3])
    else:
        year = today.year if start_month <= today.month else today.year - 1
        if match[1] and match[1].lower() == "last":
            year -= 1
    first = date(year, start_month, 1)
    end_month = start_month + months
    after = date(year + (end_month > 12), (end_month - 1) % 12 + 1, 1)
    return _span(first, after, match[0], query, match.start())


def _before(pattern: re.Pattern[str], query: str, at: int) -> re.Match[str] | None:
    """``pattern`` (anchored by ``$``) matched in the last :data:`_LOOK_BACK` characters before
    ``at``; word boundaries still see the character before that window."""
    return pattern.search(query, max(0, at - _LOOK_BACK), at)


def _cued(query: str, at: int) -> bool:
    return _before(_CUE, query, at) is not None


def _month(query: str, today: date) -> TimeWindow | None:
    # A month name right after a cue ("in June", "since the March"), in one pass.
    for cued in _CUED_MONTH.finditer(query):
        name, at = cued[1], cued.start(1)
        if name.lower() == "may" and name != "May":
            continue  # the verb "may"
        month = _MONTHS[name.lower()]
        year = _recent_year(month, today)
        if _before(_LAST, query, at) and month >= today.month:
            year = min(year, today.year - 1)
        first, after = _month_span(year, month)
        return _span(first, after, name, query, at)
    return None


def _year(query: str, today: date) -> TimeWindow | None:
    match = re.search(r"\b(?:in|during|since|until|before|after|of|by)\s+((?:19|20)\d{2})\b",
                      query, re.IGNORECASE)  # fmt: skip
    if match is None:
        return None
    year = int(match[1])
    return _span(date(year, 1, 1), date(year + 1, 1, 1), match[1], query, match.start(1))


def _relative(query: str, today: date) -> TimeWindow | None:
    text = query.lower()
    fixed = (
        (r"\bthe day before yesterday\b", today - timedelta(days=2), 1),
        (r"\btoday\b|\bthis morning\b|\btonight\b|\bthis evening\b", today, 1),
        (r"\byesterday\b|\blast night\b", today - timedelta(days=1), 1),
    )
    for pattern, first, days in fixed:
        match = re.search(pattern, text)
        if match is not None:
            return _span(first, first + timedelta(days=days), match[0], query, match.start())
    match = re.search(rf"\b(\d+|{_NUMBER})\s+(day|week|month|year)s?\s+ago\b", text)
    if match is not None:
        count = int(match[1]) if match[1].isdigit() else _NUMBERS[match[1]]
        unit = _UNITS[match[2]]
        center = today - timedelta(days=count * unit)
        slack = max(1, unit // 2) if unit > 1 else 1
        return TimeWindow(_day(center - timedelta(days=slack)),
                          _day(center + timedelta(days=slack + 1)), match[0])  # fmt: skip
    match = re.search(r"\b(last|this|past|previous|earlier this)\s+(weekend|week|month|year)\b",
                      text)  # fmt: skip
    if match is not None:
        return _period(match[1], match[2], today, match[0], query, match.start())
    match = re.search(rf"\b(?:last|on|this past)\s+({_WEEKDAY})\b", text)
    if match is not None:
        back = (today.weekday() - _WEEKDAYS[match[1]]) % 7 or 7
        day = today - timedelta(days=back)
        return _span(day, day + timedelta(days=1), match[0], query, match.start())
    return None


def _period(which: str, unit: str, today: date, words: str, query: str, at: int) -> TimeWindow:
    previous = which in ("last", "past", "previous")
    if unit == "weekend":
        saturday = today - timedelta(days=(today.weekday() - 5) % 7 or 7)
        return _span(saturday, saturday + timedelta(days=2), words, query, at)
    if unit == "week":
        if which == "past":  # the seven days up to today
            return _span(today - timedelta(days=7), today + timedelta(days=1), words, query, at)
        monday = today - timedelta(days=today.weekday() + (7 if previous else 0))
        return _span(monday, monday + timedelta(days=7), words, query, at)
    if unit == "month":
        year, month = today.year, today.month
        if previous:
            year, month = (year - 1, 12) if month == 1 else (year, month - 1)
        first, after = _month_span(year, month)
        return _span(first, after, words, query, at)
    year = today.year - (1 if previous else 0)
    return _span(date(year, 1, 1), date(year + 1, 1, 1), words, query, at)


# Most specific first: a full date before a month, a month with its year before a bare month.
_FINDERS = (_full_date, _month_year, _day_of_month, _season, _relative, _month, _year)
