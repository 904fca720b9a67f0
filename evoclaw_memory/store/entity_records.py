"""RecordCache: the critical state's entity records, kept between pushes.

Every push of the critical state carries the entities (store.entities.EntityKeeper.records):
manual ones first, then the most recently mentioned, at most ENTITY_SYNC_MAX. Building them
from SQL was ~0.9 ms for an agent's ~150 entities, most of a push's own CPU, and between
two pushes only the few entities the new facts mention change. So LocalStore keeps the
records once built, and only the entities written since are read again. It stays exact the
way the entity cache does (store.entities.EntityCache):
- EntityKeeper marks every entity it writes (`touch`) and drops the records when it
  removes one; nothing else writes the entity tables but a wipe, which drops them too;
- a rollback drops them (LocalStore.transaction);
- a commit by another connection moves PRAGMA data_version, and they are built again.
Only the first ENTITY_SYNC_MAX need be kept: an entity's place in the order (manual first,
then last mentioned) only ever rises, since `manual` is only ever set and last_mentioned
only moves by MAX. An entity below the kept ones therefore stays below them until it is
written, and then it is read again. Removing an entity, the one way down, drops them all.
"""

from __future__ import annotations

from typing import Optional

import msgspec

from evoclaw_memory.models import EntityRecord

# ORDER BY manual DESC, last_mentioned DESC, id as a Python sort key (a NULL last_mentioned
# sorts after every time, as SQLite's DESC puts NULL last).
SortKey = tuple[int, int, float, int]


def sort_key(entity_id: int, last_mentioned: Optional[float], manual: int) -> SortKey:
    if last_mentioned is None:
        return (-manual, 1, 0.0, entity_id)
    return (-manual, 0, -last_mentioned, entity_id)


class RecordCache:
    """The records by entity id with their places, as of `version` (PRAGMA data_version),
    and the ids written since they were read."""

    def __init__(self, version: int):
        self.version = version
        # id -> (place, record, first_mentioned, last_mentioned as stored)
        self.records: dict[int, tuple[SortKey, EntityRecord, Optional[float],
                                      Optional[float]]] = {}
        self.touched: set[int] = set()

    def put(self, entity_id: int, key: SortKey, record: EntityRecord, first: Optional[float],
            last: Optional[float]) -> None:
        self.records[entity_id] = (key, record, first, last)

    def mentioned(self, entity_id: int, at: float) -> None:
        """EntityKeeper.link_fact counted a mention at `at`: first_mentioned and
        last_mentioned move as its UPDATE moves them (MIN / MAX over COALESCE), here without
        SQL, the common change between two pushes. An entity not kept is read again."""
        kept = self.records.get(entity_id)
        if kept is None:
            self.touched.add(entity_id)
            return
        key, record, first, last = kept
        manual = -key[0]
        at = float(at)                          # the REAL column's value
        first = at if first is None else min(first, at)
        last = at if last is None else max(last, at)
        # A new record, not a changed one: lists returned before hold the old one.
        record = msgspec.structs.replace(record, first_mentioned=float(int(first)),
                                         last_mentioned=float(int(last)))
        self.records[entity_id] = (sort_key(entity_id, last, manual), record, first, last)

    def first(self, limit: int) -> list[EntityRecord]:
        """The first `limit` records in order; the rest are let go (see the module's
        docstring: they could only come back by being written, and then are read again)."""
        ranked = sorted(self.records.items(), key=lambda item: item[1][0])[:limit]
        if len(ranked) < len(self.records):
            self.records = dict(ranked)
        return [kept[1] for _, kept in ranked]
