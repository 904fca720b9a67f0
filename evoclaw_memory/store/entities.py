"""The entity graph's SQL (schema/local/0008): entities, their aliases, their links to facts
(by rowid) and their relations. Every method runs inside the caller's transaction."""

from __future__ import annotations

# `json` is imported in the functions that use it: a CLI run of store/retrieve/context/hot
# starts without it (start-up time, one process per agent turn).
import functools
import re
from typing import Iterable, Iterator, Optional

from evoclaw_memory.limits import ENTITY_SYNC_MAX
from evoclaw_memory.models import Entity, EntityRecord, EntityRelation
from evoclaw_memory.store.entity_records import every_record, kept_records
from evoclaw_memory.store.local import KV_CURSOR, LocalStore

_CHUNK = 500
_RANK = {"mention": 0, "subject": 1, "speaker": 2}     # a fact's strongest tie to an entity
OWNER = "owner"     # the entity the owner's relations point to ("my wife Sarah")


_WORD_RE = re.compile(r"[A-Za-z0-9]+(?:['’-][A-Za-z0-9]+)*")


@functools.cache
def _cjk_run_re() -> re.Pattern[str]:
    return re.compile("[\u4e00-\u9fff]+")


def _cjk_runs(text: str) -> list[str]:
    """The Chinese runs of `text`; the pattern (~0.5 ms to compile) only for non-ASCII text."""
    return [] if text.isascii() else _cjk_run_re().findall(text)


def norm(name: str) -> str:
    """The join key of a name: lower case, one space, no possessive."""
    key = " ".join(name.lower().split())
    return key[:-2] if key.endswith(("'s", "’s")) else key


_norm = norm


def _said_at(first: Optional[float], last: Optional[float]) -> float:
    """When an entity was last mentioned (by a fact, or by the owner's own add or link: see
    EntityKeeper.owner_mentioned), as removals are weighed against."""
    return max(first or 0.0, last or 0.0)


def lookup_keys(text: str, limit: int = 3_000) -> list[str]:
    """Keys under which known entities' names may appear in `text`: word runs of 1-3 words
    (lower case, possessive dropped) and 2-4 character runs of Chinese; at most `limit`."""
    return list(dict.fromkeys(_keys(text, limit)))


def _words(text: str) -> list[str]:
    # norm() of each word, done once over the whole text (this runs for every fact stored).
    return [w[:-2] if w.endswith(("'s", "’s")) else w
            for w in (m.lower() for m in _WORD_RE.findall(text))]


def _keys(text: str, limit: int) -> Iterator[str]:
    words = _words(text)
    keys: list[str] = []
    n = len(words)
    for i, word in enumerate(words):
        keys.append(word)
        if i + 1 < n:
            pair = f"{word} {words[i + 1]}"
            keys.append(pair)
            if i + 2 < n:
                keys.append(f"{pair} {words[i + 2]}")
        if len(keys) >= limit:
            yield from keys[:limit]
            return
    yield from keys
    count = len(keys)
    for run in _cjk_runs(text):
        for i in range(len(run)):
            for n in (2, 3, 4):
                if i + n <= len(run):
                    count += 1
                    if count > limit:
                        return
                    yield run[i:i + n]


# How many facts the linking cursor in kv may lag behind the one this connection keeps:
# writing it with every remember was a page per call. A crash loses at most this lag, and
# those facts are linked again (linking is idempotent: links, aliases and relations are
# INSERT OR IGNORE, a mention counts only when its link is new).
CURSOR_LAG = 32


def linked_upto(store: LocalStore) -> int:
    """The linking cursor (KV_CURSOR): every fact up to this rowid is linked. Read from kv
    once, then kept by the store while only this connection writes (LocalStore.transaction
    asks for a check after anything else wrote). kv wins when it changed, and whenever
    another connection committed: it may have forgotten the newest facts (their rowids come
    back), so what this one linked beyond kv is linked again rather than trusted."""
    in_transaction = store._txn_version is not None
    if store.link_cursor is not None and in_transaction and not store.link_cursor_check:
        return store.link_cursor
    saved = int(store.get_setting(KV_CURSOR) or 0)
    last = store._last_commit
    foreign = last is None or last[0] != store.data_version()
    if store.link_cursor is None or foreign or saved != store.link_cursor_saved:
        store.link_cursor = saved
    store.link_cursor_saved = saved
    if in_transaction:
        store.link_cursor_check = False
    return store.link_cursor


def set_linked_upto(store: LocalStore, rowid: int, lazy: bool = False) -> None:
    """Move the cursor (in the caller's transaction). `lazy`: kv may stay up to CURSOR_LAG
    facts behind (written then, or at close); never for the first move in a process, so a
    one-shot CLI `store` leaves nothing behind."""
    saved = store.link_cursor_saved
    if lazy and saved is not None and store.link_cursor_written and rowid - saved < CURSOR_LAG:
        store.link_cursor = rowid
        return
    store.set_setting(KV_CURSOR, str(rowid))
    store.link_cursor_written = True


def save_linked_upto(store: LocalStore) -> None:
    """Write the cursor where kv lags it (in the caller's transaction): before a change a
    second linking of the lagging facts must not undo (an entity removed)."""
    ahead, saved = store.link_cursor, store.link_cursor_saved
    if ahead is not None and saved is not None and ahead > saved:
        set_linked_upto(store, ahead)


# Names the owner removed from the graph (remove_entity), with when: a removal is sticky, as
# a forget is. Linking does not bring a removed name back from a fact said before it (a
# restore, a pulled fact, an edit), another device's record of it does not bring it back,
# and another device applies it (the critical state carries them). The newest are kept.
KV_REMOVALS = "entities.removed"
REMOVALS_MAX = 256


def read_removals(store: LocalStore) -> dict[str, float]:
    """norm -> when the owner removed that name (KV_REMOVALS)."""
    raw = store.get_setting(KV_REMOVALS)
    if not raw:
        return {}
    import json
    try:
        loaded = json.loads(raw)
    except ValueError:
        return {}
    return {str(k): float(v) for k, v in loaded.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool)} \
        if isinstance(loaded, dict) else {}


# A process that links facts more than once keeps the names in memory: linking a fact then
# probes a dict instead of sending SQLite ~100 keys. One that links a single fact (a CLI
# `store`) never loads them: one indexed query is cheaper than reading every name.
_CACHE_AFTER_USES = 2


class EntityCache:
    """Every alias (-> entity id) and entity kind, as this connection last saw them. Exact:
    EntityKeeper writes through it, a rollback drops it (LocalStore.transaction) and a
    commit by another connection (data_version) reloads it."""

    def __init__(self, store: LocalStore):
        self.version = store.data_version()
        self.aliases: dict[str, int] = dict(store.conn.execute(
            "SELECT alias, entity_id FROM entity_aliases"))
        self.kinds: dict[int, str] = dict(store.conn.execute("SELECT id, kind FROM entities"))
        self.removed: dict[str, float] = read_removals(store)
        # The most words a lookup key needs to match any alias (keys have 1-3).
        self.max_words = 1
        for alias in self.aliases:
            self.note(alias)

    def note(self, alias: str) -> None:
        """Count a new alias's words into max_words."""
        if self.max_words < 3:
            self.max_words = max(self.max_words, min(3, alias.count(" ") + 1))


class EntityKeeper:
    """Entities over one LocalStore."""

    def __init__(self, store: LocalStore):
        self.store = store

    @property
    def conn(self):
        return self.store.conn

    def _cache(self, load: bool = False) -> Optional[EntityCache]:
        """The store's EntityCache if it holds; `load`: a lookup, which loads it on the
        second one in this process."""
        store = self.store
        cache = store.entity_cache
        if cache is not None:
            if cache.version == store.data_version():
                return cache
            store.entity_cache = None       # another connection committed: read again
        if not load:
            return None
        store.entity_cache_uses += 1
        if store.entity_cache_uses < _CACHE_AFTER_USES:
            return None
        store.entity_cache = EntityCache(store)
        return store.entity_cache

    def _cached(self) -> Optional[EntityCache]:
        """The cache if loaded, for writes to keep it true (never loads it; a stale one is
        dropped at the next read)."""
        return self.store.entity_cache

    # -- entities and aliases ---------------------------------------------------------------

    def find(self, name: str) -> Optional[int]:
        """The id of the entity called `name` (or one of its aliases)."""
        cache = self._cache()
        if cache is not None:
            return cache.aliases.get(_norm(name))
        row = self.conn.execute("SELECT entity_id FROM entity_aliases WHERE alias = ?",
                                (_norm(name),)).fetchone()
        return row[0] if row else None

    def ensure(self, name: str, kind: str, now: float, *, manual: bool = False,
               attributes: Optional[dict[str, str]] = None) -> int:
        """The entity called `name`, created if new; a manual call sets its kind and merges
        attributes; a rule's guess of the kind only fills in "other"."""
        import json
        found = self.find(name)
        if found is None:
            cur = self.conn.execute(
                "INSERT INTO entities (name, norm, kind, attributes, manual, updated_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (name, _norm(name), kind, json.dumps(attributes or {}), int(manual), now))
            found = int(cur.lastrowid or 0)
            self.alias(found, name)         # marks its record for reading (_touch)
            cache = self._cached()
            if cache is not None:
                cache.kinds[found] = kind
            return found
        cache = self._cached()
        if manual:
            old = json.loads(self.conn.execute("SELECT attributes FROM entities WHERE id = ?",
                                               (found,)).fetchone()[0])
            old.update(attributes or {})
            self.conn.execute("UPDATE entities SET kind = ?, attributes = ?, manual = 1, "
                              "updated_at = ? WHERE id = ?", (kind, json.dumps(old), now, found))
            self._touch(found)
        elif kind == "other":
            return found
        elif cache is not None:
            if cache.kinds.get(found) != "other":
                return found
            self.conn.execute("UPDATE entities SET kind = ? WHERE id = ?", (kind, found))
            self._touch(found)
        elif self.conn.execute(
                "SELECT 1 FROM entities WHERE id = ? AND kind = 'other'", (found,)).fetchone():
            # (read first: this runs for every name of every fact stored, and a read is
            # cheaper than an UPDATE that almost always changes nothing)
            self.conn.execute("UPDATE entities SET kind = ? WHERE id = ?", (kind, found))
            self._touch(found)
        else:
            return found
        if cache is not None:
            cache.kinds[found] = kind
        return found

    def alias(self, entity_id: int, alias: str) -> None:
        """Let `alias` name this entity too (an alias already naming another one stays)."""
        key = _norm(alias)
        cache = self._cached()
        if cache is not None and key in cache.aliases:
            return                          # INSERT OR IGNORE would change nothing
        self.conn.execute("INSERT OR IGNORE INTO entity_aliases VALUES (?, ?)", (key, entity_id))
        self._touch(entity_id)
        if cache is not None:
            cache.aliases[key] = entity_id
            cache.note(key)

    def named_in(self, text: str, limit: int) -> set[int]:
        """The ids of the known entities `text` names (under its first `limit` lookup_keys):
        set(lookup(lookup_keys(text, limit)).values()), without building the key list when
        the names are in memory (linking asks this for every fact stored)."""
        cache = self._cache(load=True)
        if cache is None:
            return set(self._lookup_sql(lookup_keys(text, limit)).values())
        known = cache.aliases
        words = _words(text)
        if len(words) * 3 > limit or not text.isascii():
            return {known[k] for k in _keys(text, limit) if k in known}
        # Every key is within the limit: probe only the key lengths an alias has.
        found = {known[w] for w in words if w in known}
        n = len(words)
        for size in range(2, cache.max_words + 1):
            for i in range(n - size + 1):
                key = " ".join(words[i:i + size])
                if key in known:
                    found.add(known[key])
        return found

    def lookup(self, keys: list[str]) -> dict[str, int]:
        """key -> entity id, for the keys that name a known entity (one indexed probe each),
        in the order of the keys' text (as SQLite's IN answers)."""
        cache = self._cache(load=True)
        if cache is not None:
            known = cache.aliases
            return {k: known[k] for k in sorted({k for k in keys if k in known})}
        return self._lookup_sql(keys)

    def _lookup_sql(self, keys: list[str]) -> dict[str, int]:
        out: dict[str, int] = {}
        for start in range(0, len(keys), _CHUNK):
            chunk = keys[start:start + _CHUNK]
            out.update(self.conn.execute(
                f"SELECT alias, entity_id FROM entity_aliases WHERE alias IN "
                f"({','.join('?' * len(chunk))})", chunk).fetchall())
        return out

    def remove(self, entity_id: int) -> None:
        # Its record goes, and other records lose their relations to it; and an entity
        # below the kept records may now belong among them (store.entity_records).
        self.store.entity_records = None
        cache = self._cached()
        if cache is not None:
            cache.kinds.pop(entity_id, None)
            for key in [k for k, v in cache.aliases.items() if v == entity_id]:
                del cache.aliases[key]
        for sql in ("DELETE FROM entity_facts WHERE entity_id = ?",
                    "DELETE FROM entity_aliases WHERE entity_id = ?",
                    "DELETE FROM entity_relations WHERE a = ?1 OR b = ?1",
                    "DELETE FROM entities WHERE id = ?"):
            self.conn.execute(sql, (entity_id,))

    # -- links to facts and to each other ------------------------------------------------------

    def link_fact(self, entity_id: int, fact_rowid: int, role: str, created_at: float) -> None:
        """Link a fact; counts a mention and moves first/last mentioned (once per fact).

        The count is kept by +1 on a new link, not recounted: a recount reads every link of
        the entity, and a common name's thousands of links made each `remember` slow."""
        cur = self.conn.execute("INSERT OR IGNORE INTO entity_facts VALUES (?, ?, ?, ?)",
                                (entity_id, fact_rowid, role, created_at))
        if cur.rowcount:
            self._mentioned(entity_id, created_at, counted=True)
        elif role != "mention":
            # Already linked: keep the strongest role (speaker > subject > mention).
            self.conn.execute(
                "UPDATE entity_facts SET role = ?3 WHERE entity_id = ?1 AND fact_rowid = ?2 AND "
                "(?3 = 'speaker' OR (?3 = 'subject' AND role = 'mention'))",
                (entity_id, fact_rowid, role))

    def owner_mentioned(self, entity_id: int, now: float) -> None:
        """The owner added or related this entity by hand: a mention at `now` (as a fact's
        would be, without a link), so a removal made before it, on any device, does not
        cover it."""
        self._mentioned(entity_id, now, counted=False)

    def _mentioned(self, entity_id: int, at: float, counted: bool) -> None:
        """Move first/last mentioned to take in `at` (and count a link's mention), in SQL and
        in the kept records (RecordCache.mentioned follows this UPDATE)."""
        self.conn.execute(
            "UPDATE entities SET " + ("mentions = mentions + 1, " if counted else "")
            + "first_mentioned = MIN(COALESCE(first_mentioned, ?2), ?2), "
            "last_mentioned = MAX(COALESCE(last_mentioned, ?2), ?2) WHERE id = ?1",
            (entity_id, at))
        cache = self.store.entity_records
        if cache is not None:
            cache.mentioned(entity_id, at)

    def unlink_rowids(self, rowids: Iterable[int]) -> None:
        """A fact is gone (forgotten): its links go, its entities' counts follow."""
        for rowid in rowids:
            ids = [r[0] for r in self.conn.execute(
                "SELECT entity_id FROM entity_facts WHERE fact_rowid = ?", (rowid,))]
            self.conn.execute("DELETE FROM entity_facts WHERE fact_rowid = ?", (rowid,))
            for entity_id in ids:
                self.conn.execute(
                    "UPDATE entities SET mentions = (SELECT COUNT(*) FROM entity_facts WHERE "
                    "entity_id = ?1) WHERE id = ?1", (entity_id,))
                # A name only forgotten facts held is forgotten with them (erasure: "forget
                # my old address" must not leave "Elm Street" behind); the owner's own
                # entities (manual) stay.
                if self.conn.execute("SELECT 1 FROM entities WHERE id = ? AND mentions = 0 AND "
                                     "manual = 0", (entity_id,)).fetchone():
                    self.remove(entity_id)
        # SQLite hands the highest deleted rowid to the next fact: step the cursor back so
        # that fact is still linked.
        top = self.conn.execute("SELECT COALESCE(MAX(rowid), 0) FROM facts").fetchone()[0]
        if top < linked_upto(self.store):
            set_linked_upto(self.store, top)

    def relate(self, a: int, b: int, relation: str, now: float) -> None:
        self.conn.execute("INSERT OR IGNORE INTO entity_relations VALUES (?, ?, ?, ?)",
                          (a, b, relation, now))
        self._touch(a)

    # -- reading ---------------------------------------------------------------------------

    def recent_facts(self, entity_id: int, limit: int) -> list[int]:
        """The rowids of the newest facts linked to an entity (entity_facts_recent)."""
        return [r[0] for r in self.conn.execute(
            "SELECT fact_rowid FROM entity_facts WHERE entity_id = ? ORDER BY created_at DESC "
            "LIMIT ?", (entity_id, limit))]

    def roles(self, entity_ids: list[int], rowids: list[int]) -> dict[int, str]:
        """rowid -> the strongest role (speaker > subject > mention) these entities have there."""
        out: dict[int, str] = {}
        for start in range(0, len(rowids), _CHUNK):
            chunk = rowids[start:start + _CHUNK]
            for rowid, role in self.conn.execute(
                    f"SELECT fact_rowid, role FROM entity_facts WHERE entity_id IN "
                    f"({','.join('?' * len(entity_ids))}) AND fact_rowid IN "
                    f"({','.join('?' * len(chunk))})", [*entity_ids, *chunk]):
                if _RANK[role] > _RANK.get(out.get(rowid, ""), -1):
                    out[rowid] = role
        return out

    def linked_to(self, rowids: list[int]) -> list[int]:
        """Entity ids linked to these facts, most linked first."""
        if not rowids:
            return []
        rows = self.conn.execute(
            f"SELECT entity_id, COUNT(*) c FROM entity_facts WHERE fact_rowid IN "
            f"({','.join('?' * len(rowids))}) GROUP BY entity_id ORDER BY c DESC", rowids)
        return [r[0] for r in rows]

    def get(self, entity_id: int, fact_limit: Optional[int] = 200) -> Entity:
        name, kind, attributes, mentions, first, last = self.conn.execute(
            "SELECT name, kind, attributes, mentions, first_mentioned, last_mentioned FROM "
            "entities WHERE id = ?", (entity_id,)).fetchone()
        norm = _norm(name)
        aliases = [r[0] for r in self.conn.execute(
            "SELECT alias FROM entity_aliases WHERE entity_id = ? ORDER BY alias", (entity_id,))
            if r[0] != norm]
        facts = [r[0] for r in self.conn.execute(
            "SELECT f.id FROM entity_facts l JOIN facts f ON f.rowid = l.fact_rowid WHERE "
            "l.entity_id = ? ORDER BY l.created_at DESC LIMIT ?",
            (entity_id, -1 if fact_limit is None else fact_limit))]
        if attributes == "{}":          # most entities: no need to import json (issue 29)
            decoded: dict = {}
        else:
            import json
            decoded = json.loads(attributes)
        return Entity(name=name, kind=kind, aliases=aliases, attributes=decoded,
                      relations=self.relations(entity_id), mentions=mentions,
                      first_mentioned=first, last_mentioned=last, facts=facts)

    def relations(self, entity_id: int) -> list[EntityRelation]:
        """Both directions: "wife" of owner from Sarah; "wife: Sarah" seen from the owner."""
        out = [EntityRelation(relation=rel, other=name) for rel, name in self.conn.execute(
            "SELECT r.relation, e.name FROM entity_relations r JOIN entities e ON e.id = r.b "
            "WHERE r.a = ? ORDER BY r.created_at", (entity_id,))]
        out += [EntityRelation(relation=f"{rel} (of this)", other=name)
                for rel, name in self.conn.execute(
                    "SELECT r.relation, e.name FROM entity_relations r JOIN entities e ON "
                    "e.id = r.a WHERE r.b = ? ORDER BY r.created_at", (entity_id,))]
        return out

    def listing(self, kind: Optional[str], limit: Optional[int]) -> list[int]:
        """Entity ids, most mentioned first (then the most recent)."""
        sql = "SELECT id FROM entities"
        args: list = []
        if kind:
            sql, args = sql + " WHERE kind = ?", [kind]
        sql += " ORDER BY mentions DESC, last_mentioned DESC, name LIMIT ?"
        return [r[0] for r in self.conn.execute(sql, [*args, limit or -1])]

    # -- the critical state ----------------------------------------------------------------

    def records(self) -> list[EntityRecord]:
        """What the critical state carries: manual entities first, then the most recently
        mentioned, at most ENTITY_SYNC_MAX (the links are rebuilt from the facts). Kept
        between calls (store.entity_records): read them, do not change them."""
        return kept_records(self.store, ENTITY_SYNC_MAX)

    def every_record(self) -> list[EntityRecord]:
        """Every entity as a record (an export's entity lines), in a fixed order."""
        return every_record(self.conn)

    # -- removals (sticky, see KV_REMOVALS) ---------------------------------------------------

    def removals(self) -> dict[str, float]:
        cache = self._cache()
        return dict(cache.removed) if cache is not None else read_removals(self.store)

    def removed_since(self, name: str, said_at: float) -> bool:
        """Whether the owner removed this name at or after `said_at` (a fact's time)."""
        cache = self._cache()
        removed = cache.removed if cache is not None else read_removals(self.store)
        when = removed.get(_norm(name))
        return when is not None and when >= said_at

    def note_removed(self, removals: dict[str, float]) -> dict[str, float]:
        """Merge removals into ours (the later time of each name); keeps the REMOVALS_MAX
        newest. Returns the merged map."""
        import json
        merged = self.removals()
        for key, when in removals.items():
            if when > merged.get(key, float("-inf")):
                merged[key] = when
        if len(merged) > REMOVALS_MAX:
            merged = dict(sorted(merged.items(), key=lambda kv: (-kv[1], kv[0]))[:REMOVALS_MAX])
        self.store.set_setting(KV_REMOVALS, json.dumps(merged, sort_keys=True))
        cache = self._cached()
        if cache is not None:
            cache.removed = dict(merged)
        return merged

    def apply_removals(self, removals: dict[str, float]) -> int:
        """Another device's removals: merged into ours, and every entity here that they
        cover removed (one not mentioned after its name was removed); returns how many
        went. Facts linked before stay unlinked (save_linked_upto
        is the caller's, as for remove_entity)."""
        if not removals:
            return 0
        merged = self.note_removed(removals)
        gone = 0
        for key in removals:
            entity_id = self.find(key)
            when = merged.get(key)
            if entity_id is None or when is None:
                continue
            first, last = self.conn.execute(
                "SELECT first_mentioned, last_mentioned FROM entities WHERE id = ?",
                (entity_id,)).fetchone()
            if _said_at(first, last) <= when:
                self.remove(entity_id)
                gone += 1
        return gone

    def _touch(self, entity_id: int) -> None:
        """This entity's record changed (a write of ours): read it again at the next
        records()."""
        cache = self.store.entity_records
        if cache is not None:
            cache.touched.add(entity_id)

    def install(self, records: list[EntityRecord], now: float) -> int:
        """Join records (another device's, a restore's) into ours: unknown entities are added,
        known ones gain aliases, attributes and relations; returns how many were new. A
        record of a name the owner removed after its last change is not taken."""
        added = 0
        removed = self.removals()
        if removed:
            records = [rec for rec in records if removed.get(_norm(rec.name), float("-inf"))
                       < _said_at(rec.first_mentioned, rec.last_mentioned)]
        for rec in records:
            known = self.find(rec.name)
            entity_id = self.ensure(rec.name, rec.kind, now, manual=rec.manual,
                                    attributes=rec.attributes if rec.manual else None)
            added += known is None
            for alias in rec.aliases:
                self.alias(entity_id, alias)
            # `mentions` stays the count of this device's links (link_fact keeps it by +1):
            # the facts a restore brings are linked after this and count themselves.
            self.conn.execute(
                "UPDATE entities SET first_mentioned = "
                "MIN(COALESCE(first_mentioned, ?1), ?1), last_mentioned = "
                "MAX(COALESCE(last_mentioned, ?2), ?2) WHERE id = ?3 AND ?1 > 0",
                (rec.first_mentioned, rec.last_mentioned, entity_id))
            self._touch(entity_id)
        for rec in records:          # second pass: every target exists now
            a = self.find(rec.name)
            for rel in rec.relations:
                b = self.find(rel.other)
                if a is not None and b is not None:
                    self.relate(a, b, rel.relation, now)
        return added
