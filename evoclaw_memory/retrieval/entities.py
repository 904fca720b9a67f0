"""The entity graph's part in retrieval (issue 18).

A query naming a known entity (by name or alias) adds that entity's newest linked facts to
the candidates — bounded: ENTITY_CANDIDATES per entity, at most MAX_ENTITIES entities, each an
indexed read of entity_facts — and a candidate that entity *spoke* (a stored turn, "Melanie:
...") ranks higher. Questions about one person ("Where has Melanie camped?") are answered by
turns Melanie spoke; a turn in which someone else only addresses her shares the words but not
the answer. Only the speaker's label earns the boost: boosting facts that merely open with
the name ("Biscuit is the family beagle") cost the dev set 0.05 recall@5 (measured), since the
answer to "how much food should Biscuit get" need not open with "Biscuit".
"""

from __future__ import annotations

from evoclaw_memory.limits import ENTITY_CANDIDATES
from evoclaw_memory.store.entities import EntityKeeper, lookup_keys
from evoclaw_memory.store.local import LocalStore

MAX_ENTITIES = 3           # entities of one query whose facts become candidates
SPEAKER_BOOST = 3.0        # rank × (1 + this) for a turn the named entity spoke
MENTION_BOOST = 0.0        # a fact that only mentions it: no boost (measured: none helps)


class EntityHook:
    """The entities one query names and what they change."""

    def __init__(self, store: LocalStore, query: str):
        self.keeper = EntityKeeper(store)
        found = self.keeper.lookup(lookup_keys(query, 300))
        self.ids = list(dict.fromkeys(found.values()))[:MAX_ENTITIES]

    def candidates(self) -> list[int]:
        """Rowids of the named entities' newest facts."""
        out: list[int] = []
        for entity_id in self.ids:
            out += self.keeper.recent_facts(entity_id, ENTITY_CANDIDATES)
        return out

    def boost(self, rowids: list[int]) -> dict[int, float]:
        """rowid -> rank multiplier for the candidates linked to a named entity."""
        if not self.ids or not rowids:
            return {}
        return {rowid: 1 + (SPEAKER_BOOST if role == "speaker" else MENTION_BOOST)
                for rowid, role in self.keeper.roles(self.ids, rowids).items()}
