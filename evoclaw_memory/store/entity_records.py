"""The critical state's entity records, built from the entity tables and kept between pushes
(RecordCache).

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

from typing import TYPE_CHECKING, Optional

import msgspec

from evoclaw_memory.models import EntityRecord, EntityRelation

if TYPE_CHECKING:
    import sqlite3

    from evoclaw_memory.store.local import LocalStore

_CHUNK = 500            # ids per IN (...), well within SQLite's limit on variables
# An entities row as records are built from it (`norm`: the name's join key, which the
# aliases hold too).
_RECORD_COLS = "id, name, norm, kind, attributes, first_mentioned, last_mentioned, manual"

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


def kept_records(store: "LocalStore", limit: int) -> list[EntityRecord]:
    """The first `limit` records (manual entities first, then the most recently mentioned),
    from the store's RecordCache: built when missing or stale (another connection
    committed), else only the entities written since are read again."""
    version = store.data_version()
    cache = store.entity_records
    if cache is None or cache.version != version:
        cache = store.entity_records = RecordCache(version)
        _read_into(store.conn, cache, store.conn.execute(
            f"SELECT {_RECORD_COLS} FROM entities ORDER BY manual DESC, last_mentioned DESC, "
            "id LIMIT ?", (limit,)).fetchall())
    elif cache.touched:
        ids = sorted(cache.touched)
        rows = []
        for start in range(0, len(ids), _CHUNK):
            chunk = ids[start:start + _CHUNK]
            rows += store.conn.execute(
                f"SELECT {_RECORD_COLS} FROM entities WHERE id IN "
                f"({','.join('?' * len(chunk))})", chunk).fetchall()
        for gone in set(ids) - {row[0] for row in rows}:
            cache.records.pop(gone, None)
        _read_into(store.conn, cache, rows)
    cache.touched = set()
    return cache.first(limit)


def every_record(conn: "sqlite3.Connection") -> list[EntityRecord]:
    """Every entity as a record, by its name's join key, with its relations by label and
    other: two memories holding the same graph give the same records, whatever order they
    learnt it in."""
    rows = conn.execute(f"SELECT {_RECORD_COLS} FROM entities ORDER BY norm").fetchall()
    scratch = RecordCache(0)            # fresh records, not the kept ones: sorted here
    _read_into(conn, scratch, rows)
    out = []
    for row in rows:
        record = scratch.records[row[0]][1]
        record.relations.sort(key=lambda r: (r.relation, r.other))
        out.append(record)
    return out


def _read_into(conn: "sqlite3.Connection", cache: RecordCache, rows: list[tuple]) -> None:
    """Build the records of these entities rows (_RECORD_COLS) into `cache`: three queries
    for all of them, not four per entity."""
    import json
    aliases: dict[int, list[str]] = {}
    relations: dict[int, list[EntityRelation]] = {}
    for start in range(0, len(rows), _CHUNK):
        ids = [r[0] for r in rows[start:start + _CHUNK]]
        marks = ",".join("?" * len(ids))
        for entity_id, alias in conn.execute(
                f"SELECT entity_id, alias FROM entity_aliases WHERE entity_id IN ({marks}) "
                "ORDER BY entity_id, alias", ids):
            aliases.setdefault(entity_id, []).append(alias)
        # Only this side of each relation: the other side's record carries its own.
        for entity_id, relation, other in conn.execute(
                f"SELECT r.a, r.relation, e.name FROM entity_relations r JOIN entities e "
                f"ON e.id = r.b WHERE r.a IN ({marks}) ORDER BY r.a, r.created_at", ids):
            relations.setdefault(entity_id, []).append(
                EntityRelation(relation=relation, other=other))
    for entity_id, name, norm, kind, attributes, first, last, manual in rows:
        names = [a for a in aliases.get(entity_id, ()) if a != norm]
        cache.put(entity_id, sort_key(entity_id, last, manual), EntityRecord(
            name=name, kind=kind, aliases=names,
            # Most entities have no attributes: no JSON to parse for them.
            attributes=json.loads(attributes) if attributes != "{}" else {},
            relations=relations.get(entity_id, []),
            # Whole seconds; `mentions` stays home (install() keeps each device's own
            # count of its links): a third fewer bytes in every push of the state.
            first_mentioned=float(int(first or 0)), last_mentioned=float(int(last or 0)),
            manual=bool(manual)), first, last)
