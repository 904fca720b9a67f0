"""The write-time decision (SPEC §4, Deduplication): add a new statement, reinforce the live
fact it restates, or add it and supersede the facts it changes. Pure; no I/O.

mem0 decides ADD / UPDATE / DELETE / NONE per extracted fact against the similar memories it
holds; without that, an agent's memory fills with restatements ("I live in Leeds", "Home for
me is Leeds", "I've lived in Leeds for six years") and stale values ("I'm vegetarian" after
"I've gone vegan"). The rules here make that decision without an LLM (the LLM path asks the
model, and keeps the strict rules below as a check):

1. A fragment of a live fact (a paste cut short), or a statement whose words a live fact
   holds almost all of, restates it: reinforce.
2. A statement that holds all of a live fact and says more is the richer saying: it is added
   and supersedes the old one ("Grace, my mum, lives in Sheffield" over "My mum is called
   Grace").
3. One-valued attributes (slots.py): the same value restates, another value changes (the old
   fact is superseded, kept in history).
4. For the owner's own statements (first person, no speaker name), a restatement in other
   words: the statements share most of the lighter one's weight (sameness.py) and that
   share is made of telling words, not "really" and "love".

What other people say in a recorded conversation (a named speaker, LoCoMo-style) is kept as
said: only rules 1 and 3's first half apply, with a strict share, since two turns on one topic
are two things that happened. Two statements dated on different days are two occurrences,
unless the owner said nothing but the date differently ("Traffic was terrible this
morning", said daily): then the newest saying replaces the older one (kept in history).
"""

from __future__ import annotations

from typing import Iterable, Literal, NamedTuple, Optional, Sequence

from evoclaw_memory.distill.sameness import (Statement, held_in, reachable, same_but_dates,
                                             shared_weight, statement, total)
from evoclaw_memory.distill.slots import Slot, has_change_cue, slots_of
from evoclaw_memory.text import tokens

# Rule 1: share of the new statement's weight a live fact holds for the new one to add nothing.
RESTATES = 0.8
# Rule 1 for other speakers' words (and the LLM path's check): nearly the same both ways.
STRICT = 0.85
# Rule 2: the old fact held this much in the new one, which adds at least this much weight.
RICHER_HOLDS = 0.95
RICHER_ADDS = 8.0
# Rule 4: share of the lighter statement's weight both hold, the least shared weight (a word
# rarer than ~"Leeds", or two middling ones), and the least share of the heavier one.
OWN_COVERAGE = 0.5
OWN_MIN_SHARED = 8.0
OWN_HEAVIER_SHARE = 0.2
# The cheap first look: the word-for-word share of the lighter statement below which no rule
# can call two statements the same (words used alike add at most a little).
QUICK_SHARE = 0.25
COMPARED = 10           # candidates compared in full, the closest word for word first
QUICK_SHARE_STRICT = 0.6
# A fragment must be this long to count as a piece of a live fact (not "I see").
FRAGMENT_MIN_TOKENS = 4


class Known(NamedTuple):
    """A live fact as the decision sees it."""

    id: str
    text: str


class Decision(NamedTuple):
    action: Literal["add", "reinforce", "skip"]
    same: Optional[str] = None          # reinforce: the live fact the statement restates
    replaces: tuple[str, ...] = ()      # facts superseded: by the new fact (add), else by `same`
    why: str = ""


def decide(text: str, known: Sequence[Known], *, own: bool, rendered: Iterable[str] = (),
           ignore: Iterable[str] = (), strict_only: bool = False) -> Decision:
    """What to do with statement `text` given the live facts it may repeat or change.

    own: the owner's first-person statement (rule 4 and the slots apply); rendered: texts
    the memory itself shows outside the facts (hot entries), which a statement must not add
    again; ignore: tokens that say nothing (the speakers' names); strict_only: rules 1-3 only
    (the LLM decided the rest)."""
    ignored = set(ignore)
    new = statement(text, ignored)
    if not new.weights:
        return Decision("add", why="no content words to compare")
    new_slots = slots_of(text) if own else []
    new_tokens = tokens(text)
    same: Optional[tuple[float, str]] = None
    replaces: list[str] = []
    for fact in _closest_first(new, known, ignored):
        old = statement(fact.text, ignored)
        verdict, score = _compare(new, old, new_tokens, fact.text, new_slots, own, strict_only,
                                  text)
        if verdict == "same" and (same is None or score > same[0]):
            same = (score, fact.id)
        elif verdict == "replaces":
            replaces.append(fact.id)
    if same is not None:
        return Decision("reinforce", same[1], tuple(r for r in replaces if r != same[1]),
                        "restates a live fact")
    if replaces:
        return Decision("add", None, tuple(replaces), "changes or extends live facts")
    shown = tuple(rendered)
    if shown and reachable(new.weights, shown, frozenset(ignored)) >= STRICT * total(new.weights) \
            * (1 - 1e-9):
        for text_shown in shown:
            if held_in(new.weights, statement(text_shown, ignored).weights) >= STRICT:
                return Decision("skip", why="already in hot memory")
    return Decision("add", why="new")


def _compare(new: Statement, old: Statement, new_tokens: list[str], old_text: str,
             new_slots: list[Slot], own: bool, strict_only: bool,
             new_text: str) -> tuple[str, float]:
    """("same" | "replaces" | "", score) of the new statement against one live fact."""
    if len(new_tokens) >= FRAGMENT_MIN_TOKENS and _contains(tokens(old_text), new_tokens):
        return "same", 2.0
    if not old.weights:
        return "", 0.0
    if not _may_be_related(new, old, own, new_slots, old_text):
        return "", 0.0
    # Each way's shared weight once (held_in(a, b) is shared_weight(a, b) / total(a)): an
    # old memory compares a statement with dozens of facts.
    total_new, total_old = total(new.weights), total(old.weights)
    shared = shared_weight(new.weights, old.weights)
    shared_back = shared_weight(old.weights, new.weights)
    held_new = shared / total_new if total_new > 0 else 0.0
    held_old = shared_back / total_old if total_old > 0 else 0.0
    other_day = bool(new.dates and old.dates and new.dates != old.dates)
    if other_day:
        # Two occurrences of something, on different days. The owner saying the same words
        # on another day ("Long day today", "I went to the gym today") is one recurring
        # statement: the newest saying replaces the older, which stays in its history.
        return ("replaces", 1.0) if own and same_but_dates(new, old) else ("", 0.0)
    if new.values - old.values and old.values - new.values:
        # Each names a value the other does not ("sensor 1" / "sensor 0"): not the same
        # statement, whatever else they share (a one-valued attribute's change is a slot's).
        slot = _slot_relation(new_slots, slots_of(old_text), new_text) if own else ""
        return (slot, 1.5 if slot == "same" else 0.0) if slot else ("", 0.0)
    if not own:
        return ("same", held_new) if min(held_new, held_old) >= STRICT else ("", 0.0)
    if held_new >= RESTATES and shared >= OWN_MIN_SHARED / 2:
        return "same", held_new
    if held_old >= RICHER_HOLDS and total_new - shared >= RICHER_ADDS \
            and shared >= OWN_MIN_SHARED / 2:
        return "replaces", held_old
    slot = _slot_relation(new_slots, slots_of(old_text), new_text)
    if slot:
        return slot, 1.5 if slot == "same" else 0.0
    if strict_only:
        return "", 0.0
    held_light, held_heavy = (held_new, held_old) if total_new <= total_old \
        else (held_old, held_new)
    if shared >= OWN_MIN_SHARED and held_light >= OWN_COVERAGE \
            and held_heavy >= OWN_HEAVIER_SHARE:
        return "same", held_light
    return "", 0.0


def closest(text: str, known: Sequence[Known], *, own: bool) -> list[Known]:
    """`known` ordered by how much of them `text` holds (slot kin first): the candidates an
    LLM is shown for its own decision."""
    new = statement(text)
    new_slots = slots_of(text) if own else []

    def key(fact: Known) -> float:
        old = statement(fact.text)
        kin = any(a.same_slot(b) for a in new_slots for b in slots_of(fact.text))
        return (2.0 if kin else 0.0) + max(held_in(new.weights, old.weights),
                                           held_in(old.weights, new.weights))
    scored = sorted(known, key=key, reverse=True)
    return [fact for fact in scored if key(fact) > 0]


def _closest_first(new: Statement, known: Sequence[Known], ignored: set[str]) -> list[Known]:
    """The COMPARED live facts sharing the most weight word for word with `new`, then every
    fact stating a one-valued attribute (its frame found it, maybe with no word in common):
    an old memory's candidates are many, and a full comparison costs."""
    def exact(fact: Known) -> float:
        other = statement(fact.text, ignored).weights
        return sum(min(w, other[t]) for t, w in new.weights.items() if t in other)
    scored = sorted(known, key=exact, reverse=True)
    return scored[:COMPARED] + [k for k in scored[COMPARED:] if slots_of(k.text)]


def _may_be_related(new: Statement, old: Statement, own: bool, new_slots: list[Slot],
                    old_text: str) -> bool:
    """A cheap first look (word for word, no other forms or words used alike): below
    QUICK_SHARE of the lighter statement's weight in common, no rule can find the two the
    same, unless a one-valued attribute ties them. Most candidates of an old memory stop here."""
    a, b = new.weights, old.weights
    exact = sum(min(w, b[t]) for t, w in a.items() if t in b)
    if exact >= (QUICK_SHARE if own else QUICK_SHARE_STRICT) * min(total(a), total(b)):
        return True
    return own and bool(new_slots) and any(s.same_slot(o) for s in new_slots
                                           for o in slots_of(old_text))


def _slot_relation(new_slots: list[Slot], old_slots: list[Slot], new_text: str) -> str:
    """"same" when a slot holds the same value in both, "replaces" when another value (for
    "my X is Y", only when the statement says it is a change), else ""."""
    relation = ""
    for mine in new_slots:
        for theirs in old_slots:
            if not mine.same_slot(theirs):
                continue
            if _same_value(mine.value, theirs.value):
                return "same"
            if mine.kind != "my" or has_change_cue(new_text):
                relation = "replaces"
    return relation


def _same_value(a: str, b: str) -> bool:
    """Equal values, or one's words within the other's ("blue honda jazz" / "honda jazz")."""
    if a == b:
        return True
    wa, wb = set(a.split()), set(b.split())
    return bool(wa) and bool(wb) and (wa <= wb or wb <= wa)


def _contains(haystack: list[str], needle: list[str]) -> bool:
    """Whether `needle` occurs as a run of tokens inside `haystack`."""
    n = len(needle)
    if n > len(haystack):
        return False
    first = needle[0]
    return any(haystack[i] == first and haystack[i:i + n] == needle
               for i in range(len(haystack) - n + 1))
