"""Whether a sentence of a turn goes on with the one before it, or starts another statement.

A turn's sentences are packed into one fact when they say one thing ("I loved reading
Charlotte's Web. It was so cool." — alone, the second says nothing); two unrelated statements
in one message are two facts ("Luna needs her thyroid tablet with breakfast. Oh and the house
alarm code is 2580.": one fact would be forgotten, retrieved and superseded as one, and a
forget of the code would take Luna's tablet with it). A sentence goes on with the previous
ones unless
- it opens with a change of subject ("Also,", "Oh and", "By the way", "Another thing", "PS"),
- or both carry a telling word of their own (a rare word, a name, a number: sameness.py's
  weights) and share none of them, and the new one does not point back ("it", "that",
  "she", "there" ...).
Pure; no I/O.
"""

from __future__ import annotations

import re

from evoclaw_memory.distill.sameness import statement

# A word this heavy (rarer than ~"Leeds") names what a sentence is about.
TELLING_WEIGHT = 9.0

_SHIFT = re.compile(
    r"^\W*(?:(?:oh|ah|and|so|well|ok|okay)[,\s]+)*(?:also|plus|btw|by\s+the\s+way|another\s+thing"
    r"|one\s+more\s+thing|p\.?s\.?|oh\s+and|and\s+also|on\s+another\s+note|unrelated(?:ly)?"
    r"|separately|while\s+i\s+remember|speaking\s+of\s+which|besides)\b|^\W*(?:另外|还有|对了|顺便)",
    re.I)
_BACK = re.compile(
    r"^\W*(?:(?:and|but|so|yeah|yes|well|oh|because|since|though|then|plus)[,\s]+)*"
    r"(?:it|its|it's|that|this|these|those|they|them|their|there|he|she|him|her|his|hers"
    r"|which|who|such|same|both|each|one|the\s+(?:one|other|same|latter|former)|too|either"
    r"|neither|afterwards|after\s+that|before\s+that|then|later|still|anyway)\b", re.I)


def shifts_topic(sentence: str) -> bool:
    """Whether a sentence opens with a change of subject ("Also, ...", "Oh and ...")."""
    return _SHIFT.match(sentence) is not None


def continues(previous: list[str], sentence: str) -> bool:
    """Whether `sentence` goes on with the turn's `previous` sentences (see the docstring)."""
    if shifts_topic(sentence):
        return False
    if _BACK.match(sentence):
        return True
    new = _telling(sentence)
    if not new:
        return True
    before: set[str] = set()
    for text in previous:
        before |= set(statement(text).weights)
    old = {t for t in before if t in _telling_of(previous)}
    return not old or bool(new & before)


def _telling(text: str) -> set[str]:
    weights = statement(text).weights
    return {t for t, w in weights.items() if w >= TELLING_WEIGHT}


def _telling_of(texts: list[str]) -> set[str]:
    out: set[str] = set()
    for text in texts:
        out |= _telling(text)
    return out
