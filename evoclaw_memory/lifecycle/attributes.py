"""Questions about the owner's one-valued attributes, answered from the facts that state them.

"What do I do for a living?", "Which town is my home these days?", "Do I eat meat or animal
products?" rarely share a word with "I started a new job as a paramedic", "We moved to
Bristol last weekend" or "I've gone fully vegan now". The write-time decision already knows
those facts state the owner's job, home and diet (distill.slots), and keeps one live value
of each (a change supersedes the old one). A question that asks about such an attribute
(distill.slots.asked_kinds) gets the newest live facts that state it, first: the current
value, whatever the words.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evoclaw_memory.english import neighbours
from evoclaw_memory.text import FIRST_PERSON, fts_phrase, query_terms

if TYPE_CHECKING:
    from evoclaw_memory.store.local import LocalStore

SCAN = 40           # newest owner facts read per attribute asked
PER_KIND = 1        # facts returned per attribute: its current value
FAVOURITES = 3      # favourite things returned when the question names none of their kinds


def attribute_fact_ids(store: "LocalStore", question: str) -> list[str]:
    """Ids of the live owner facts stating what `question` asks about, newest first."""
    if not FIRST_PERSON.search(question):
        return []       # asked_kinds says none; most queries, and slots costs ~0.7 ms to load
    from evoclaw_memory.distill.slots import asked_kinds, frame_query_terms, slots_of
    found: list[str] = []
    for kind in asked_kinds(question):
        terms = frame_query_terms(kind)
        if not terms:
            continue
        rows = store.newest_live_texts(" OR ".join(map(fts_phrase, terms)), None, SCAN)
        stating = [(fact_id, slot) for fact_id, text in rows for slot in slots_of(text)
                   if slot.kind == kind]
        if kind == "favourite":
            chosen = _favourites(question, stating)
        else:
            chosen = [fact_id for fact_id, _ in stating[:PER_KIND]]
        found += [f for f in chosen if f not in found]
    return found


def _favourites(question: str, stating: list) -> list[str]:
    """The owner's favourite things a question asks about: those whose kind ("band", "dish")
    the question names or names a word used alike for; if it names none, all of them (a few):
    "What meal do I love most?" may mean the favourite dish."""
    words = set(query_terms(question))
    near = {w for t in words for _, w in neighbours(t)}
    named = [fact_id for fact_id, slot in stating
             if slot.key in words or slot.key in near
             or words & {w for _, w in neighbours(slot.key)}]
    chosen = named or [fact_id for fact_id, _ in stating]
    return list(dict.fromkeys(chosen))[:FAVOURITES]
