"""A turn that only asks yields to the turns that tell.

A question said in a chat ("What sports do you play?") holds no answer, yet a question asked
of the memory is nearest in meaning to other questions: among a conversation's messages they
take the places of the turns that answer. The answer keeps what the question asked, as its
turn context (:mod:`retrieval.memory.turn_context`), and a question that is a hit still lifts
the turns around it (:mod:`retrieval.search.rank.context_lift`), the answer among them.

So a conversation turn (a message, or a memory with a thread and a position:
:func:`retrieval.memory.kinds.is_turn`) that only asks (it holds a question,
with its mark or opening as one does, and each of its other sentences is a reaction: an
exclamation of at most five words, "Wow!", "That looks great!") has its final score scaled
by ``1 - question_discount``, never under the threshold it passed: it ranks below the turns
that tell and stays retrievable. Its result carries the discount as a part of its score
(``question``, negative: the parts still add up to the final score) and its score before it
(``only_asks``) (docs/decisions/0032-a-question-yields-to-the-answers.md).

The marks are read in Latin, Chinese, Japanese and Arabic script (a Chinese or Japanese
character counts as a word); a question without its mark is recognised in English only.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from retrieval.memory.speakers import said_text
from retrieval.search.candidate import is_turn_candidate
from retrieval.search.rank.ranking import Scored

# A sentence ends at its mark: ., ! or ? and the spaces after it; the full-width marks of
# Chinese and Japanese (。！？), which need no space after them; the Arabic question mark (؟).
_SENTENCE_END = re.compile(r"(?<=[.!?\u061f])\s+|(?<=[\u3002\uff01\uff1f\uff0e])\s*")
# What may close a sentence after its mark: spaces, quotes and brackets.
_CLOSING = re.compile(r"[\s\"')\]\u201d\u2019\u300d\u300f\uff09]+$")
# A word: a Chinese character or a kana (those scripts put no space between words), else a run
# of word characters.
_WORD = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff]|\w+")
# An exclamation of at most this many words is a reaction to what the other person said.
REACTION_WORDS = 5
# A sentence with no mark at its end that opens as a question does ("how was it", "did you
# go"): people often leave the question mark out in a chat. A verb that also opens an order
# ("Have fun", "Do it") asks only before a subject.
_ASKING = re.compile(
    r"(what|when|where|who|whose|why|how|which|anyone|anything)\b"
    r"|(do|does|did|are|is|was|were|can|could|would|will|should|have|has|had)\s+"
    r"(you|u|we|they|he|she|it|i|there|that|this|your|the|anyone|anything)\b",
    re.IGNORECASE,
)
_QUESTION_MARKS = ("?", "\uff1f", "\u061f")
_EXCLAMATION_MARKS = ("!", "\uff01")
_MARKS = (".", "\u3002", "\uff0e", *_QUESTION_MARKS, *_EXCLAMATION_MARKS)


def only_asks(text: str) -> bool:
    """Whether ``text`` (a turn's words, without its speaker) asks and tells nothing: it holds
    a question (marked, or unmarked and opening as a question does: "how was it"), and each of
    its other sentences that holds a word is a reaction (an exclamation of at most
    :data:`REACTION_WORDS` words). "Wow, that looks great! How was it?" only asks; "I got the
    job in Berlin last week! Can you believe it?" tells too."""
    asked = False
    for sentence in _SENTENCE_END.split(text):
        words = _WORD.findall(sentence)
        if not words:
            continue
        closed = _CLOSING.sub("", sentence)
        unmarked = not closed.endswith(_MARKS) and _ASKING.match(closed.lstrip()) is not None
        if closed.endswith(_QUESTION_MARKS) or unmarked:
            asked = True
        elif not (closed.endswith(_EXCLAMATION_MARKS) and len(words) <= REACTION_WORDS):
            return False
    return asked


def questions_yield(scored: Sequence[Scored], discount: float, threshold: float) -> list[Scored]:
    """``scored`` (a call's semantic results) with each conversation turn that only asks and
    reaches ``threshold`` scored ``1 - discount`` of its final score, at least ``threshold``."""
    if discount <= 0.0:
        return list(scored)
    kept = 1.0 - discount
    yielded: list[Scored] = []
    for result in scored:
        candidate = result.candidate
        if (
            candidate is None
            or result.final_score < threshold
            or not is_turn_candidate(candidate)  # first: reading the words costs more
            or not _turn_only_asks(candidate.content)
        ):
            yielded.append(result)
            continue
        final = max(threshold, result.final_score * kept)
        yielded.append(result._replace(final_score=final, asks=result.final_score))
    return yielded


@lru_cache(maxsize=4096)
def _turn_only_asks(content: str) -> bool:
    # Whether a turn's text (its speaker's name first, if written so) only asks: a tenant's
    # turns come back call after call, and the answer is the text's alone.
    return only_asks(said_text(content))
