"""Whether two statements say the same thing: the measure behind the write-time decision.

Pure functions; no I/O. A statement is reduced to its content words (text.tokens, stopwords
out), each weighed by how rare it is in English (english.zipf, from wordfreq; see
scripts/build_wordfreq.py), so that "Leeds", "penicillin" or "4417" carry a statement and
"live", "work" or "really" barely count. Rarity in English rather than in one memory: a young
memory has seen every word once, and the decision must be the same on its first day as
after a year.

`coverage(a, b)` is the share of the lighter statement's weight that the other one holds.
Restatements in other words keep the words that carry the statement ("Chicken makes Biscuit
itch, he's allergic" / "My dog Biscuit is allergic to chicken"), so their coverage is high
even when half the words differ; two different statements share at most a common word or
one name ("My mum is called Grace" / "I'm knitting a scarf for my mum").

Dates a statement carries ("on 7 January 2026") are kept apart: two sayings that differ only
in their date are the same recurring statement ("Traffic was terrible this morning" said on
two days), which `same_but_dates` tells.
"""

from __future__ import annotations

import functools
import re
from typing import Iterable, Mapping, NamedTuple

from evoclaw_memory.english import neighbours, zipf
from evoclaw_memory.text import STEMMED_STOPWORDS, is_cjk, tokens

Weights = Mapping[str, float]

# weight = (CEILING - zipf)^2, at least FLOOR: "the" ~0, "live" ~2.8, "Leeds" ~10, unlisted 22.
CEILING = 7.2
FLOOR = 0.25
NUMBER_WEIGHT = 25.0       # a number or code ("4417", "sunflower88", "11pm") names its value
CJK_WEIGHT = 6.0           # a CJK bigram: no frequency list, a middling word
# A resolved date (dates.py) always carries its year: "on 7 January 2026", "Friday 9 January
# 2026", "in the week before 8 May 2023", "in March 2026", "in 2022". Such phrases say when,
# not what, and are compared apart; a number or month without a year is what a statement says
# ("My birthday is on 14 March", "sensor 2").
_MONTH_NAMES = ("January|February|March|April|May|June|July|August|September|October|November"
                "|December")
_DATE_PHRASE = re.compile(
    rf"\b(?:(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday),?\s+)?"
    rf"(?:\d{{1,2}}\s+(?:{_MONTH_NAMES})|(?:{_MONTH_NAMES})(?:\s+\d{{1,2}},?)?)\s+(?:1[89]|2[01])\d\d\b"
    rf"|\b(?:in|around|since|of|from|until)\s+(?:1[89]|2[01])\d\d\b"
    rf"|\d{{4}}年(?:\d{{1,2}}月(?:\d{{1,2}}日)?)?")
# What every date phrase above holds (its year, or 年): most statements hold neither, and
# one search for it is a fraction of the phrase's.
_YEAR = re.compile(r"(?:1[89]|2[01])\d\d|年")


@functools.lru_cache(maxsize=16384)
def term_weight(term: str) -> float:
    """What a content term weighs in a statement: the rarer, the more. Cached: an old
    memory's candidates bring the same few thousand words again and again."""
    if not term.isalpha() and any(ch.isdigit() for ch in term):
        return NUMBER_WEIGHT
    if is_cjk(term):
        return CJK_WEIGHT
    return max(FLOOR, CEILING - zipf(term)) ** 2


class Statement(NamedTuple):
    """A statement's content words and their weights, its dates apart."""

    weights: dict[str, float]      # what it says (do not change: statements are cached)
    dates: frozenset[str]          # when: the absolute dates it names, as token strings
    values: frozenset[str]         # its terms that hold a digit ("4417", "11pm", "sensor 2")


def statement(text: str, ignore: Iterable[str] = ()) -> Statement:
    """The content words of `text` with their weights; `ignore`: tokens left out (the
    speaker's name, which every fact of that speaker holds)."""
    return _statement(text, frozenset(ignore))


@functools.lru_cache(maxsize=4096)
def _statement(text: str, skip: frozenset[str]) -> Statement:
    # Cached: a conversation's statements are compared with the same live facts again and
    # again (their Statement must not be changed by a caller).
    dates = frozenset(" ".join(tokens(m.group())) for m in _DATE_PHRASE.finditer(text)) \
        if _YEAR.search(text) else frozenset()
    if dates:
        text = _DATE_PHRASE.sub(" ", text)
    weights: dict[str, float] = {}
    for tok in tokens(text):
        if tok in STEMMED_STOPWORDS or tok in skip or tok in _CONTRACTIONS:
            continue
        if len(tok) == 1 and not tok.isdigit() and not is_cjk(tok):
            continue
        weights[tok] = term_weight(tok)
    return Statement(weights, dates, frozenset(t for t in weights if not t.isalpha()
                                               and any(ch.isdigit() for ch in t)))


# What is left of "I've", "we'll", "they're", "I'd" once the tokenizer split them.
_CONTRACTIONS = frozenset({"ve", "ll", "re", "d", "m", "s", "t"})


def total(weights: Weights) -> float:
    return sum(weights.values())


# Two different words count as one, partly: the same word in another form that the light
# stemmer leaves apart ("carpentry" / "carpenter": the same first SAME_PREFIX letters), or
# words used alike (english.neighbours, "practise" / "learn"), at their similarity.
SAME_PREFIX = 7
PREFIX_CREDIT = 0.9
NEIGHBOUR_SIMILARITY = 0.7


def shared_weight(a: Weights, b: Weights) -> float:
    """The weight of `a`'s words that `b` holds, each at most its weight in `b`."""
    total_shared = 0.0
    by_prefix: dict[str, float] | None = None
    for t, w in a.items():
        if t in b:
            total_shared += min(w, b[t])
            continue
        # What `b` holds of t through another form or a word used alike.
        best = 0.0
        if len(t) > SAME_PREFIX:
            if by_prefix is None:
                by_prefix = _by_prefix(b)
            heaviest = by_prefix.get(t[:SAME_PREFIX])
            if heaviest is not None:
                best = PREFIX_CREDIT * min(w, heaviest)
        if t.isalpha():
            for u, similarity in _alike(t).items():
                if u in b:
                    best = max(best, similarity * min(w, b[u]))
        total_shared += best
    return total_shared


def _by_prefix(weights: Weights) -> dict[str, float]:
    """The heaviest weight of `weights`' long words by their first SAME_PREFIX letters (built
    once per comparison rather than scanned once per word)."""
    out: dict[str, float] = {}
    for u, w in weights.items():
        if len(u) > SAME_PREFIX:
            key = u[:SAME_PREFIX]
            if w > out.get(key, -1.0):
                out[key] = w
    return out


def reachable(a: Weights, texts: tuple[str, ...], ignore: frozenset[str]) -> float:
    """The weight of `a`'s words that any of `texts` could hold (itself, another form, a word
    used alike): an upper bound of shared_weight(a, statement(t).weights) for every t, so
    a statement whose bound is below a share need not be compared with them one by one."""
    words, prefixes = _words_of(texts, ignore)
    out = 0.0
    for t, w in a.items():
        if t in words or (len(t) > SAME_PREFIX and t[:SAME_PREFIX] in prefixes) or \
                (t.isalpha() and any(u in words for u in _alike(t))):
            out += w
    return out


@functools.lru_cache(maxsize=64)
def _words_of(texts: tuple[str, ...], ignore: frozenset[str]) -> tuple[frozenset[str],
                                                                      frozenset[str]]:
    """All content words of `texts`, and the SAME_PREFIX-letter prefixes of the long ones;
    cached: the hot memory's entries are the same for every statement of a conversation."""
    words = frozenset(t for text in texts for t in _statement(text, ignore).weights)
    return words, frozenset(t[:SAME_PREFIX] for t in words if len(t) > SAME_PREFIX)


@functools.lru_cache(maxsize=8192)
def _alike(term: str) -> dict[str, float]:
    """The words used like `term` closely enough to count as it (NEIGHBOUR_SIMILARITY)."""
    return {u: s for s, u in neighbours(term) if s >= NEIGHBOUR_SIMILARITY}


def coverage(a: Weights, b: Weights) -> float:
    """Share of the lighter statement's weight that both hold (0 when either says nothing)."""
    ta, tb = total(a), total(b)
    if ta <= 0 or tb <= 0:
        return 0.0
    return shared_weight(a, b) / min(ta, tb)


def held_in(a: Weights, b: Weights) -> float:
    """Share of `a`'s weight that `b` holds too."""
    ta = total(a)
    return shared_weight(a, b) / ta if ta > 0 else 0.0


def same_but_dates(a: Statement, b: Statement, share: float = 0.9) -> bool:
    """The same words both ways (the dates aside): one statement said on different days."""
    return bool(a.weights) and held_in(a.weights, b.weights) >= share \
        and held_in(b.weights, a.weights) >= share
