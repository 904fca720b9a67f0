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

from evoclaw_memory.distill.slots import asked_kinds, frame_query_terms, slots_of
from evoclaw_memory.text import fts_phrase

if TYPE_CHECKING:
    from evoclaw_memory.store.local import LocalStore

SCAN = 40           # newest owner facts read per attribute asked
PER_KIND = 1        # facts returned per attribute: its current value


def attribute_fact_ids(store: "LocalStore", question: str) -> list[str]:
    """Ids of the live owner facts stating what `question` asks about, newest first."""
    found: list[str] = []
    for kind in asked_kinds(question):
        terms = frame_query_terms(kind)
        if not terms:
            continue
        rows = store.newest_live_texts(" OR ".join(map(fts_phrase, terms)), None, SCAN)
        stating = [fact_id for fact_id, text in rows
                   if any(slot.kind == kind for slot in slots_of(text))]
        found += [f for f in stating[:PER_KIND] if f not in found]
    return found
