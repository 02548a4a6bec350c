"""Whether a text tells an event in the past, read from its verbs' tense (English).

"Mr Okafor fixed the boiler." tells an event; "Our landlord is Mr Okafor." a state. The versions'
rule (:mod:`retrieval.search.rank.versions_asked`) reads a later memory that tells an event after
a state, says no change and brings no value of its own as a mention of that state, not as its
update. See docs/decisions/0070-an-event-after-a-state.md and 0071-a-mention-is-no-version.md.
"""

from __future__ import annotations

import re

# A memory that tells an event in the past ("Mr Okafor fixed the boiler.", "The client exceeded
# the API rate limit.", "I installed Ubuntu on my laptop."): a verb in the past
# tense after its subject, regular ("-ed") or one of the common irregular ones. After "is",
# "are" or a modal it is a state or a habit ("is called", "are answered", "can only do"),
# after "a", "the", "my" or a preposition a noun's description ("a shared flat", "of regulated
# assemblies"); a word that starts the text is no verb ("Paid users get ..."). "put", "shut",
# "cut", "quit", "split" and "left" are the present too after "I", "we", "you" or "they":
# there, only before a particle ("We put in a Ring doorbell.", "We shut down Freshdesk.").
# "had" tells an event ("Tofu had a vet check-up last week."), but before "to" it only carries
# the verb after it ("We had to sell the car."), which tells its own tense.
_IRREGULAR_PAST = frozenset(
    """
    got gave took went made bought sold began became broke brought built came chose drove fell
    found grew heard held kept knew led lost met paid ran sent spent stood taught told threw won
    wrote did sat flew forgot hung rode rang shook stole struck swore tore woke wore dug fed fled
    fought caught put shut cut quit split left had
    """.split()  # noqa: SIM905 (a word list reads better as text)
)
_PRESENT_TOO = frozenset(["put", "shut", "cut", "quit", "split", "left"])
_PLURAL_TELLERS = frozenset(["i", "we", "you", "they"])
_PARTICLES = frozenset(["in", "down", "up", "off", "out", "away", "back", "over"])
# Words that end as a past tense does and are no verb, or are a state after a noun.
_NOT_PAST = frozenset(
    """
    hundred based located named called used supposed interested red bed shed wed sacred naked
    wicked rugged beloved aged skilled talented dedicated tired
    """.split()  # noqa: SIM905 (a word list reads better as text)
)
_STATE_BEFORE = frozenset(
    """
    is are am be being remains stays seems looks feels to will would can could may might must
    shall should do does don't doesn't usually always often never
    """.split()  # noqa: SIM905 (a word list reads better as text)
)
_ADVERBS = frozenset(
    ["just", "recently", "finally", "already", "only", "then", "officially", "eventually"]
)
# "has moved", "have switched": the present perfect tells an event; after a verb in the present
# ("Our doorbell is a basic wired chime.", "Bob has a cat named Felix."), a past participle
# describes a state.
_PERFECT = frozenset(["has", "have", "we've", "i've", "you've", "they've"])
_PRESENT_VERBS = frozenset(["is", "are", "am", "has", "have"])
# After a determiner or a preposition, a word in "-ed" describes a noun ("a shared flat", "the
# updated plan", "the formation of dynamically regulated assemblies"); an adverb in "-ly" may
# stand between.
_DESCRIBED_AFTER = frozenset(
    """
    a an the my our your his her their its this that of in on at for with by from into about
    as via per without within between
    """.split()  # noqa: SIM905 (a word list reads better as text)
)
_MANNER = re.compile(r"\w{3,}ly")
# Words with their hyphens kept: a compound in "-ed" ("tumor-derived") is no verb.
_COMPOUND = re.compile(r"\w+(?:[-'\u2019]\w+)*")
# Without "was" or "got" before it, a word in "-ed" before "by" or "with" describes the noun
# before it; with one, it tells an event ("The bonus pool was halved by the board.").
_AGENTS = frozenset(["by", "with"])
_PAST_AUXILIARIES = frozenset(["was", "were", "got", "been"])


def tells_an_event(text: str) -> bool:
    """Whether ``text`` tells an event in the past: a verb in the past tense after its subject
    ("Mr Okafor fixed the boiler.", "The guest network was renamed.", "We put in a Ring
    doorbell."), not a state ("The office Wi-Fi is called Acme-Guest.", "Free users get
    100 calls.", "Paid users get 1000.")."""
    words = [word.lower() for word in _COMPOUND.findall(text)]
    return any(_past_verb(words, at) for at in range(1, len(words)))


def _past_verb(words: list[str], at: int) -> bool:
    word = words[at]
    regular = len(word) >= 5 and word.endswith("ed") and not word.endswith("eed")
    if "-" in word:  # a compound describes: "tumor-derived", "home-made"
        return False
    if not (word in _IRREGULAR_PAST or (regular and word not in _NOT_PAST)):
        return False
    if word == "had" and at + 1 < len(words) and words[at + 1] == "to":
        return False
    before = at - 1
    while before > 0 and (words[before] in _ADVERBS or _MANNER.fullmatch(words[before])):
        before -= 1
    if words[before] in _PERFECT or words[before] in _PAST_AUXILIARIES:
        return True
    if words[before] in _STATE_BEFORE or words[before] in _DESCRIBED_AFTER:
        return False
    if at + 1 < len(words) and words[at + 1] in _AGENTS:
        return False  # "women treated with tamoxifen", "the map revealed by the survey"
    if any(w in _PRESENT_VERBS for w in words[:before]):
        return False
    if word in _PRESENT_TOO and words[before] in _PLURAL_TELLERS:
        return at + 1 < len(words) and words[at + 1] in _PARTICLES
    return True
