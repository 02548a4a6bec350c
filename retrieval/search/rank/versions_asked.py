"""Whether two memories are versions of one fact for the question asked.

"Alice is allergic to peanuts." and, a day later, "Alice is allergic to shellfish." are near in
meaning and share most words, as "Bob lives in Paris." and "Bob moved to Denver." do; only the
first pair holds two true facts. Similarity cannot tell them apart; the question can: "Is Alice
allergic to peanuts?" names a word only one of the two holds, so it asks about that one, while
"Where does Bob live?" asks about the fact both state. So a newer memory is a version of an
older one for a question when either

* the statement found them near (a cosine similarity of ``version_similarity`` or more, or the
  same sentence with another value: ``near``) and the question names no content word that one
  of them holds and the other does not (:func:`tells_apart`); or
* the newer, one short statement (at most 30 words), says in words that it replaces something
  ("moved to", "switched to", "no longer", "is now", "a new number"), that a state began,
  ended, came back or passed to another ("broke up", "is engaged", "eats fish again", "handed
  it over") or when its value began ("since last month", "starting next week", "last week":
  :func:`states_update`), not that it adds to it
  ("also", "too", "another"), names what it changes (a word of the older, or the same "we" or
  "I": :func:`shares_a_word`), and the question names no name or number that only one of them
  holds (:func:`names_apart`): "Where does Bob live?" still asks about "Bob moved to Denver.",
  but not about "Alice moved to Denver.".

Neither way holds for a newer memory that only mentions what the older states
(:func:`mentions`): it tells an event in the past after the older told a state, in no word of a
change, and brings no value of its own, neither a name nor a number the older does not hold
(:func:`brings_a_value`) nor another word before a word both hold ("wet food" after "dry
food"): "Mr Okafor fixed the boiler." leaves "Our landlord is Mr Okafor." as it is, however
near the two are.

The verb of a question asked with "do" ("Where does Dmitri live?"), which a statement inflects
("lives"), names the relation asked about and tells nothing apart.

Words are compared in lower case, a word matching another that starts with it and adds at most
three letters ("live", "lives", "lived"); words with digits match only themselves; a word the
other memory holds inside one of its own ("VPN" in "OpenVPN") tells nothing apart. The signs of
an update are read in English; in another language only the first way applies.
See docs/decisions/0034-versions-for-the-question.md, 0053-an-update-says-when-it-began.md and
0071-a-mention-is-no-version.md.
"""

from __future__ import annotations

import itertools
import re
from functools import cached_property, lru_cache

from retrieval.memory.speakers import UPDATE_LABELS
from retrieval.search.rank.tense import tells_an_event

# Words that say nothing about which fact a question asks for.
_FUNCTION_WORDS = frozenset(
    """
    a an the and or but nor of in on at to for from by with about as into onto over under than
    then so if is are was were be been being am do does did doing done have has had having will
    would shall should can could may might must what when where who whom whose which why how i
    me my mine we us our ours you your yours he him his she her hers it its they them their
    theirs this that these those there here some any all each every no not very just still also
    too much many more most own same such other only again ever s t get gets got
    """.split()  # noqa: SIM905 (a word list reads better as text)
)
_WORD = re.compile(r"\w+(?:['\u2019]\w+)*")
_POSSESSIVE = re.compile(r"['\u2019]s?$")
# A word matches a longer one that starts with it and adds at most this many letters.
_SUFFIX_LETTERS = 3
_SHORTEST_STEM = 3
# A memory that says it replaces what was before: a value that changed, moved or was replaced.
_UPDATE = re.compile(
    r"\b(now|nowadays|currently|these days|from now on|no longer|not any ?more|any ?more|instead|"
    r"new|newly|moved?|moving|changed?|changing|switched|switching|replaced?|replacing|"
    r"took over|takes over|relocated|transferred|joined|left|quit|upgraded|downgraded|"
    r"migrated|rewr(?:ote|itten)|renamed|rescheduled|postponed|delayed|pushed back|"
    r"brought forward|slipped|raised|lowered|increased|decreased|went (?:up|down)|dropped|"
    r"rose|cut|reduced|extended|shortened|bumped|updated|became|becomes|turned|started|stopped|"
    r"sold|bought|got married|divorced|retired|promoted|rolled out)\b",
    re.IGNORECASE,
)
# A memory that says a state began, ended, came back or passed to another: an event that
# replaces what was true before ("Carlos and Mia broke up.", "Frank is engaged to Julia.",
# "Priti eats fish again.", "I swapped my Kobo for a Kindle.", "Sam handed the app over to
# Nadia.", "We remortgaged at 4.2 percent.").
_CHANGE_OF_STATE = re.compile(
    r"\b(again|back (?:on|to|in|at)|went back|returned|"
    r"swap(?:ped|ping|s)?|traded|exchanged|hand(?:ed|s|ing)? (?:\w+ ){0,4}?over|succeeded|"
    r"hired|appointed|acquired|merged|"
    r"broke up|broken up|split up|separated|ended|cancell?ed|resigned|fired|laid off|"
    r"graduated|passed away|died|gave up|given up|giving up|"
    r"engaged|gave birth|had (?:a|the|her|his|their) (?:baby|babies|twins|triplets)|adopted|"
    r"retrained|took up|renewed|refinanced|remortgaged|rebranded|reopened)\b",
    re.IGNORECASE,
)
# A question asked with "do": its verb is in its base form, which a statement inflects.
_DO_QUESTION = re.compile(r"\b(?:do|does|did)\b", re.IGNORECASE)
_INFLECTIONS = ("s", "es", "d", "ed")
# A value that holds from a moment on: "since last month", "starting next week", "as of
# today", "from next month", "effective immediately" (a time must follow: "since it is cheaper"
# gives a reason, "the starting salary" names a value, "works from the Berlin office" a place).
_WHEN = (
    r"(?:today|tonight|tomorrow|yesterday|now|immediately|next|this|last|the|early|mid|late|"
    r"\d|mon|tue|wed|thu|fri|sat|sun|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec|"
    r"spring|summer|autumn|fall|winter)"
)
_ONSET = re.compile(
    rf"\b(?:since|as of|starting|beginning|effective) {_WHEN}|\bfrom (?:next|today|tomorrow)\b",
    re.IGNORECASE,
)
# ... or a moment it happened: "had the twins last week", "two months ago" ("in the last week
# of November" names a time, not when something changed). Told with an event that brings no
# value, the moment tells when the event happened, not that a value began (:func:`mentions`).
_MOMENT = re.compile(
    r"(?<!the )\blast (?:week|weekend|month|year)\b(?! of)|\b\w+ (?:days|weeks|months|years) ago\b",
    re.IGNORECASE,
)
# A note labelled as what replaces an earlier one: "Update: ...", "Correction: ...".
_LABELLED_UPDATE = re.compile(rf"^\s*(?:{'|'.join(sorted(UPDATE_LABELS))})\s*:", re.IGNORECASE)
# An update is one statement: a longer text that holds such a word (an abstract, a summary,
# a page: "increased", "now", "new" among its many claims) states many things.
UPDATE_MOST_WORDS = 30
# A memory that adds to what was before rather than replacing it.
_ADDITION = re.compile(
    r"\b(also|too|as well|another|in addition|besides|additionally|second)\b", re.IGNORECASE
)


def states_update(text: str) -> bool:
    """Whether ``text`` says that it replaces an earlier value ("Bob moved to Denver.", "We
    switched to GitLab.", "Max upload size is 100 MB now.", "Correction: the standup is at
    10."), that a state began, ended or came back ("Carlos and Mia broke up.", "Priti eats fish
    again."), or when its value began ("Trial is 30 days starting next week.", "Mark is on day
    shifts since last month.", "Hannah had the twins last week.") and does not say it adds to
    one ("Alice is now also allergic to shellfish.")."""
    return _says_a_change(text, moment=True)


def _says_a_change(text: str, *, moment: bool) -> bool:
    # states_update, with or without the moment something happened as a sign.
    said = (
        _UPDATE.search(text) is not None
        or _CHANGE_OF_STATE.search(text) is not None
        or _ONSET.search(text) is not None
        or (moment and _MOMENT.search(text) is not None)
        or _LABELLED_UPDATE.match(text) is not None
    )
    return said and _ADDITION.search(text) is None


# A time is a value of a state only where the older told one: "The server ran out of memory at
# 2am." tells no new time of "The server has 64 GB of RAM.", "The clinic moved it to 4pm." a new
# time of "The appointment is at 3pm.".
_WEEKDAYS_AND_MONTHS = frozenset(
    """
    monday tuesday wednesday thursday friday saturday sunday january february march april may
    june july august september october november december jan feb mar apr jun jul aug sep sept
    oct nov dec
    """.split()  # noqa: SIM905 (a word list reads better as text)
)
_TIME_OF_DAY = re.compile(r"\d{1,2}(?::\d{2})?\s*(?:am|pm)\b|\b\d{1,2}:\d{2}\b", re.IGNORECASE)
# A day of the month beside its month ("3 June", "the 3rd of June", "June 3").
_DAY_OF_MONTH = (
    re.compile(r"\b\d{1,2}(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<month>[A-Za-z]+)"),
    re.compile(r"\b(?P<month>[A-Za-z]+)\s+\d{1,2}(?:st|nd|rd|th)?\b"),
)


def brings_a_value(older: str, newer: str) -> bool:
    """Whether ``newer`` holds a value that ``older`` does not: a name or a number (past its
    first word, which a capital letter does not make a name) or another word before a word both
    hold. "The council put the allotment fee up to 95." after "The allotment costs 85 a year.",
    "We put in a Ring video doorbell." after "Our doorbell is a basic wired chime.", "The vet
    put our cat on wet food only." after "Our cat eats dry food." do; "The client exceeded the
    API rate limit yesterday." and "Maria talked to Tom about her promotion." after "Maria's
    manager is Tom." do not. A day, a month or a time of day counts only where ``older`` holds
    one ("We bought Leon a bike on Friday." brings no new day to "Leon wants a red bike.", a
    new time to "Leon's birthday is on 14 August.")."""
    first, second = _text(older), _text(newer)
    return any(
        not first.shares(value) and (bool(first.time_words) or value not in second.time_words)
        for value in second.values
    ) or _replaces_a_modifier(first, second)


def _replaces_a_modifier(first: _Text, second: _Text) -> bool:
    # A word both describe, each with a word of its own before it: "wet food" after "dry food".
    return any(
        _same_word(noun, other) and not first.shares(modifier) and not second.shares(told)
        for modifier, noun in second.described
        for told, other in first.described
    )


def mentions(older: str, newer: str) -> bool:
    """Whether ``newer`` only mentions what ``older`` states: it tells an event in the past
    (:func:`tells_an_event`) after ``older`` told a state, in no word of a change
    (:func:`states_update`; when it happened, "last week" or "two days ago", is no change here),
    and brings no value of its own (:func:`brings_a_value`): "Mr Okafor fixed the boiler last
    month." after "Our landlord is Mr Okafor.", "A guest asked for the office Wi-Fi password."
    after "The office Wi-Fi password is sunflower42."."""
    said, told = _text(newer), _text(older)
    return (
        said.event and not said.short_change and not told.event and not brings_a_value(older, newer)
    )


def tells_apart(query: str, older: str, newer: str) -> bool:
    """Whether ``query`` names a content word that one of ``older`` and ``newer`` holds and
    the other does not ("Is Alice allergic to peanuts?"). The verb of a question asked with
    "do", "does" or "did", which a statement inflects ("Where does Dmitri live?", "Dmitri lives
    with his parents."), names the relation asked about, not a value: an update may say it in
    another verb ("Dmitri got his own flat in Leeds."), so it tells nothing apart."""
    asked = _words(query)
    first, second = _text(older), _text(newer)
    if _DO_QUESTION.search(query):
        asked = asked - first.inflected(asked) - second.inflected(asked)
    return _apart(first.holds(asked), second.holds(asked), first, second, asked)


def names_apart(query: str, older: str, newer: str) -> bool:
    """Whether ``query`` names a name or a number (a word written with a capital letter or a
    digit) that one of ``older`` and ``newer`` holds and the other does not ("Where does Bob
    live?" beside "Bob lives in Paris." and "Alice moved to Denver.")."""
    asked = _words(query)
    first, second = _text(older), _text(newer)
    return _apart(first.names_held(asked), second.names_held(asked), first, second, asked)


def versions_for_query(
    query: str, older: str, newer: str, *, near: bool, close: bool = True
) -> bool:
    """Whether ``newer`` is a newer version of ``older`` for the question ``query``: found
    ``near`` and not told apart by the question, or a short statement of an update (at most
    :data:`UPDATE_MOST_WORDS` words) that names what it changes and that the question does not
    tell apart by a name or a number, nor, unless the two are ``close`` (the statement's
    ``version_words_similarity``), by any content word: "How old is Leo?" asks about "My son Leo
    is 8 years old.", not about the later "Leo has a new piano teacher, Mr Evans."."""
    said = _text(newer)
    if not (near or said.short_update) or mentions(older, newer):
        return False
    apart = tells_apart(query, older, newer)
    if near and not apart:
        return True
    return (
        said.short_update
        and shares_a_word(older, newer)
        and not names_apart(query, older, newer)
        and (close or not apart)
    )


def shares_a_word(older: str, newer: str) -> bool:
    """Whether ``newer`` holds a content word of ``older`` (the same, one that starts it and
    adds at most three letters, or one inside a word of its own), or both are told by "we" or
    "I": an update names what it changes ("Bob moved to Denver." after "Bob lives in Paris.",
    "We switched to GitLab." after "We use GitHub for our code."), where a memory that changed
    something else ("We migrated CI to GitHub Actions.") names nothing of "The design system
    lives in the shared Figma workspace."."""
    first, second = _text(older), _text(newer)
    if first.tellers & second.tellers:
        return True
    return any(second.shares(word) for word in first.words)


def _apart(
    first_held: frozenset[str],
    second_held: frozenset[str],
    first: _Text,
    second: _Text,
    asked: frozenset[str],
) -> bool:
    # A word of the question held by one (``first_held``, ``second_held``) that the other holds
    # nowhere, not even inside a word of its own ("vpn" in "openvpn").
    return bool(first_held - second.inside(asked)) or bool(second_held - first.inside(asked))


class _Text:
    """A memory's text as the rule reads it: its content words, those written with a capital
    letter or a digit (names and numbers), whether it is a short statement of an update or
    tells an event, its words of time and the words it describes by the word before them;
    what it holds of the last question's words is kept (one question at a time)."""

    def __init__(self, text: str) -> None:
        self.words = _words(text)
        self.names = _names(text)
        self.text = text
        self.short_update = len(_WORD.findall(text)) <= UPDATE_MOST_WORDS and states_update(text)
        self.tellers = _tellers(text)
        self._by_start: dict[str, list[str]] = {}
        for word in self.words:
            self._by_start.setdefault(word[:_SHORTEST_STEM], []).append(word)
        self._joined = "\x00".join(sorted(self.words))
        self._asked: frozenset[str] | None = None
        self._held: frozenset[str] = frozenset()
        self._inside: frozenset[str] = frozenset()

    # What mentions() reads, only for the pairs that reach it.

    @cached_property
    def short_change(self) -> bool:
        """A short statement of an update that says more than when something happened
        ("... last week.")."""
        return self.short_update and _says_a_change(self.text, moment=False)

    @cached_property
    def event(self) -> bool:
        """Whether it tells an event in the past, and adds to nothing ("also")."""
        return _ADDITION.search(self.text) is None and tells_an_event(self.text)

    @cached_property
    def time_words(self) -> frozenset[str]:
        """Its words of a day, a month or a time of day."""
        return _time_words(self.text)

    @cached_property
    def values(self) -> frozenset[str]:
        """Its names and numbers but its first word (a capital letter there makes no name)."""
        first = _WORD.search(self.text)
        return self.names - {_POSSESSIVE.sub("", first.group().lower()) if first else ""}

    @cached_property
    def described(self) -> tuple[tuple[str, str], ...]:
        """Each content word after another content word (the word before, the word)."""
        return _described(self.text)

    def holds(self, asked: frozenset[str]) -> frozenset[str]:
        """The words of ``asked`` this text holds (the same word, or one that starts it and
        adds at most three letters)."""
        self._read(asked)
        return self._held

    def names_held(self, asked: frozenset[str]) -> frozenset[str]:
        """The words of ``asked`` this text holds as a name or a number."""
        return frozenset(w for w in self.holds(asked) if _held(w, self.names))

    def inflected(self, asked: frozenset[str]) -> frozenset[str]:
        """The words of ``asked`` this text holds only inflected as a verb is after "he" or
        in the past ("live": "lives", "lived"), never as they are."""
        return frozenset(
            w
            for w in asked
            if w not in self.words and any(w + end in self.words for end in _INFLECTIONS)
        )

    def inside(self, asked: frozenset[str]) -> frozenset[str]:
        """The words of ``asked`` this text holds, or holds inside a word of its own (a word of
        at least three letters, no digit: "vpn" in "openvpn")."""
        self._read(asked)
        return self._inside

    def shares(self, word: str) -> bool:
        """Whether this text holds ``word``, or holds it inside a word of its own."""
        return self._holds(word) or (_may_be_inside(word) and word in self._joined)

    def _read(self, asked: frozenset[str]) -> None:
        if asked is self._asked or asked == self._asked:
            return
        held = frozenset(w for w in asked if self._holds(w))
        inside = frozenset(w for w in asked - held if _may_be_inside(w) and w in self._joined)
        self._asked, self._held, self._inside = asked, held, held | inside

    def _holds(self, word: str) -> bool:
        if word in self.words:
            return True
        return any(_same_word(word, other) for other in self._by_start.get(word[:3], ()))


def _may_be_inside(word: str) -> bool:
    return len(word) >= _SHORTEST_STEM and not any(c.isdigit() for c in word)


def _held(word: str, words: frozenset[str]) -> bool:
    return word in words or any(_same_word(word, other) for other in words)


def _same_word(a: str, b: str) -> bool:
    # Equal, or one starts the other and the other adds at most a few letters: live, lives,
    # lived; a word with a digit only equals itself.
    if a == b:
        return True
    if any(c.isdigit() for c in a + b):
        return False
    shorter, longer = sorted((a, b), key=len)
    common = 0
    for x, y in zip(shorter, longer, strict=False):
        if x != y:
            break
        common += 1
    if common < _SHORTEST_STEM or common < len(shorter) - 1:
        return False
    return len(longer) - common <= _SUFFIX_LETTERS


@lru_cache(maxsize=4096)
def _text(text: str) -> _Text:
    return _Text(text)


@lru_cache(maxsize=4096)
def _words(text: str) -> frozenset[str]:
    # The content words of ``text``, in lower case, without a possessive's ending.
    found = (_POSSESSIVE.sub("", word.lower()) for word in _WORD.findall(text))
    return frozenset(w for w in found if w and w not in _FUNCTION_WORDS)


def _described(text: str) -> tuple[tuple[str, str], ...]:
    # Each content word of ``text`` after another content word (the word before, the word).
    words = [_POSSESSIVE.sub("", word.lower()) for word in _WORD.findall(text)]
    return tuple(
        (before, word)
        for before, word in itertools.pairwise(words)
        if before and word and before not in _FUNCTION_WORDS and word not in _FUNCTION_WORDS
    )


def _time_words(text: str) -> frozenset[str]:
    # The words of ``text`` that tell a day, a month or a time of day ("Friday", "14 August",
    # "2am", "9:30"), as :func:`_names` has them.
    found = {w for w in _names(text) if w in _WEEKDAYS_AND_MONTHS}
    for match in _TIME_OF_DAY.finditer(text):
        found |= _names(match.group())
    for pattern in _DAY_OF_MONTH:
        for match in pattern.finditer(text):
            if match["month"].lower() in _WEEKDAYS_AND_MONTHS:
                found |= _names(match.group())
    return frozenset(found)


# Who tells a memory, when it says so: one team ("we", "our") or one person ("I", "my").
_TELLERS = {"we": "we", "our": "we", "us": "we", "ours": "we", "i": "i", "my": "i", "me": "i"}


def _tellers(text: str) -> frozenset[str]:
    return frozenset(_TELLERS[w] for w in map(str.lower, _WORD.findall(text)) if w in _TELLERS)


@lru_cache(maxsize=4096)
def _names(text: str) -> frozenset[str]:
    # The words of ``text`` written with a capital letter or a digit, as :func:`_words` has them.
    found = (
        _POSSESSIVE.sub("", word.lower())
        for word in _WORD.findall(text)
        if word[0].isupper() or any(c.isdigit() for c in word)
    )
    return frozenset(w for w in found if w and w not in _FUNCTION_WORDS)
