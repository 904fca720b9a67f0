"""ControlKeeper: the owner's control over stored facts (SPEC §5b) as rows.

Forget (erasure: the row, its full-text entry and its old versions go; a tombstone goes
through the outbox), edit (the old version is kept in fact_versions, out of search),
unsupersede, the listing, and a fact's history. Every mutating method runs in one store
transaction together with its outbox entry and its audit row; the audit row of a forget holds
the id, the time and the actor, never the text. Validation happens above (lifecycle.control).
"""

from __future__ import annotations

import sqlite3
from typing import Any, Iterable, Optional

import msgspec

from evoclaw_memory.errors import NotFoundError, StoreError, ValidationError
from evoclaw_memory.models import Fact, Metadata
from evoclaw_memory.store.entities import EntityKeeper
from evoclaw_memory.store.local import LocalStore
from evoclaw_memory.store.rows import FACT_AND_FLAGS, encoder, fact_from_row, facts_where
from evoclaw_memory.store.tree_keeper import TreeKeeper, key_and_body_of
from evoclaw_memory.text import key_digest
from evoclaw_memory.tiers.warm import fact_size

_metadata_decoder = msgspec.json.Decoder(Metadata)


class FactVersion(msgspec.Struct):
    """A fact as it was before an edit replaced it."""

    version: int
    text: str
    category: str
    importance: float
    metadata: Metadata
    replaced_at: float
    actor: str


_VERSION_COLUMNS = "version, text, category, importance, metadata, replaced_at, actor"


def _version(row: tuple) -> FactVersion:
    return FactVersion(version=row[0], text=row[1], category=row[2], importance=row[3],
                       metadata=_metadata_decoder.decode(row[4]), replaced_at=row[5], actor=row[6])


def versions_by_fact(store: LocalStore) -> dict[str, list[FactVersion]]:
    """Every fact's earlier versions (the export's history), oldest first."""
    out: dict[str, list[FactVersion]] = {}
    for fact_id, *row in store.conn.execute(
            f"SELECT fact_id, {_VERSION_COLUMNS} FROM fact_versions ORDER BY fact_id, version"):
        out.setdefault(fact_id, []).append(_version(tuple(row)))
    return out


class HistoryEvent(msgspec.Struct):
    """One thing that happened to a fact: stored, edited, reinforced, superseded, forgotten."""

    ts: float
    op: str
    actor: str
    detail: str = ""


class FactHistory(msgspec.Struct):
    """Everything the device knows about one fact's life (the fact is None once forgotten)."""

    fact_id: str
    fact: Optional[Fact]
    versions: list[FactVersion]
    events: list[HistoryEvent]
    superseded_by: Optional[str] = None
    supersedes: list[str] = []
    forgotten_at: Optional[float] = None


def _actor_of(op: str, detail: str) -> str:
    """The actor recorded in an audit row's detail ("... actor=X"), else what the op implies."""
    if "actor=" in detail:
        return detail.rsplit("actor=", 1)[1].split()[0]
    if op.startswith("sync."):
        return "sync"
    if op in ("retrieve", "remember.duplicate"):
        return "agent"
    if op.startswith(("evict", "cold.cleanup", "archive")):
        return "system:decay"          # the rules moved it, nobody asked
    return "manual"


class ControlKeeper:
    """Forget, edit, unsupersede, list and history over one LocalStore."""

    def __init__(self, store: LocalStore, tree: TreeKeeper):
        self.store = store
        self.tree = tree

    # -- forget -------------------------------------------------------------------------------

    def forget(self, fact_ids: Iterable[str], actor: str, now: float,
               enqueue: bool = True) -> list[str]:
        """Erase these facts here and queue their tombstones; returns the ids that existed.

        `enqueue=False` for deletions another device already made (pulled tombstones)."""
        conn = self.store.conn
        gone: list[str] = []
        # Zero the freed bytes of the deleted rows (and FTS entries) in the database pages,
        # not only unlink them; the WAL copy is overwritten at the next checkpoint.
        secure = conn.execute("PRAGMA secure_delete").fetchone()[0]
        conn.execute("PRAGMA secure_delete = ON")
        try:
            self._forget(fact_ids, actor, now, enqueue, gone)
        finally:
            conn.execute(f"PRAGMA secure_delete = {int(secure)}")
        return gone

    def _forget(self, fact_ids: Iterable[str], actor: str, now: float, enqueue: bool,
                gone: list[str]) -> None:
        store, conn = self.store, self.store.conn
        with store.transaction():
            for fact_id in dict.fromkeys(fact_ids):
                row = conn.execute("SELECT category, tier, superseded_by FROM facts WHERE id = ?",
                                   (fact_id,)).fetchone()
                if row is not None:
                    category, tier, superseded_by = row
                    rowid = conn.execute("SELECT rowid FROM facts WHERE id = ?", (fact_id,)).fetchone()[0]
                    store.delete_facts([fact_id])
                    EntityKeeper(store).unlink_rowids([rowid])      # no entity still points at it
                    if superseded_by is None:
                        store.adjust_counts(category, warm=-(tier == "warm"),
                                            cold=-(tier == "cold"))
                    gone.append(fact_id)
                elif not enqueue or conn.execute("SELECT 1 FROM forgotten WHERE id = ?",
                                                 (fact_id,)).fetchone():
                    continue
                # The old texts go with it, and a queued upsert must never carry it back.
                conn.execute("DELETE FROM fact_versions WHERE fact_id = ?", (fact_id,))
                conn.execute("DELETE FROM outbox WHERE kind IN ('fact', 'revive') AND ref = ?",
                             (fact_id,))
                conn.execute("DELETE FROM outbox_rejected WHERE ref = ?", (fact_id,))
                conn.execute("INSERT OR IGNORE INTO forgotten (id, deleted_at, actor) "
                             "VALUES (?, ?, ?)", (fact_id, now, actor))
                if enqueue:
                    conn.execute("INSERT INTO outbox (kind, ref, created_at) VALUES "
                                 "('forget', ?, ?) ON CONFLICT(kind, ref) DO NOTHING",
                                 (fact_id, now))
                store.audit("forget" if enqueue else "sync.forget", fact_id,
                            f"actor={actor}", now)
            if gone:
                store.incr_metric("forgets", len(gone))
                store.note_erasure()        # their words leave the index's files later
                # No state entry: the push carries the critical state (the tree's counts)
                # with every forget (SyncEngine.sync), as it does with every new fact.
                if not enqueue:
                    store.enqueue_state(now, counts_only=True)

    def forgotten_among(self, fact_ids: list[str]) -> set[str]:
        """Which of these ids were forgotten on this device (or pulled as forgotten)."""
        found: set[str] = set()
        for start in range(0, len(fact_ids), 500):
            chunk = fact_ids[start:start + 500]
            found.update(r[0] for r in self.store.conn.execute(
                f"SELECT id FROM forgotten WHERE id IN ({','.join('?' * len(chunk))})", chunk))
        return found

    # -- edit, unsupersede ----------------------------------------------------------------------

    def edit(self, fact: Fact, actor: str, now: float, *, text: Optional[str] = None,
             category: Optional[str] = None, importance: Optional[float] = None,
             metadata: Optional[Metadata] = None) -> Fact:
        """Replace a fact's text, category, importance or metadata; the old version is kept
        in fact_versions (history), not in search. The cloud row is replaced at the next push."""
        store, conn = self.store, self.store.conn
        with store.transaction():
            new_category = fact.category
            if category is not None and category != fact.category:
                new_category = self.tree.ensure_category(category, now)
            new = msgspec.structs.replace(
                fact, text=fact.text if text is None else text, category=new_category,
                importance=fact.importance if importance is None else float(importance),
                metadata=fact.metadata if metadata is None else metadata)
            if new == fact:
                return fact
            version = conn.execute("SELECT COALESCE(MAX(version), 0) + 1 FROM fact_versions "
                                   "WHERE fact_id = ?", (fact.id,)).fetchone()[0]
            conn.execute("INSERT INTO fact_versions (fact_id, version, text, category, "
                         "importance, metadata, replaced_at, actor) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                         (fact.id, version, fact.text, fact.category, fact.importance,
                          encoder.encode(fact.metadata).decode(), now, actor))
            key, body = key_and_body_of(new)
            conn.execute("UPDATE facts SET text = ?, category = ?, importance = ?, metadata = ?, "
                         "norm_key = ?, size = ? WHERE id = ?",
                         (new.text, new.category, new.importance,
                          encoder.encode(new.metadata).decode(), key_digest(key),
                          fact_size(new.text, new.metadata), fact.id))
            store.reindex_fact(fact.id, body)
            if new.text != fact.text:
                store.replace_aliases(fact.id, new.text)
            if new.category != fact.category and fact.superseded_by is None:
                live_warm, live_cold = fact.tier == "warm", fact.tier == "cold"
                store.adjust_counts(fact.category, warm=-live_warm, cold=-live_cold)
                store.adjust_counts(new.category, warm=live_warm, cold=live_cold)
                store.enqueue_state(now)
            store.enqueue_change(fact.id, now)
            changed = [name for name in ("text", "category", "importance", "metadata")
                       if getattr(new, name) != getattr(fact, name)]
            store.audit("edit", fact.id, f"v{version} replaced ({','.join(changed)}) "
                        f"actor={actor}", now)
        return new

    def unsupersede(self, fact: Fact, actor: str, now: float) -> Fact:
        """Bring a superseded fact back into search and the counts."""
        if fact.superseded_by is None:
            raise ValidationError(f"fact {fact.id!r} is not superseded")
        store = self.store
        with store.transaction():
            store.conn.execute("UPDATE facts SET superseded_by = NULL WHERE id = ?", (fact.id,))
            store.adjust_counts(fact.category, warm=fact.tier == "warm", cold=fact.tier == "cold")
            # 'revive' tells the cloud to clear the link (an upsert only ever sets it), and
            # the fact entry carries the row (sealed anew: the link is authenticated).
            store.conn.execute("INSERT INTO outbox (kind, ref, created_at) VALUES ('revive', ?, ?) "
                               "ON CONFLICT(kind, ref) DO UPDATE SET version = version + 1",
                               (fact.id, now))
            store.enqueue_change(fact.id, now, part="supersession")
            store.enqueue_state(now)
            store.audit("unsupersede", fact.id, f"was superseded by {fact.superseded_by} "
                        f"actor={actor}", now)
        return msgspec.structs.replace(fact, superseded_by=None)

    def would_cycle(self, old_id: str, new_id: str) -> bool:
        """True when marking `old_id` superseded by `new_id` closes a loop (new_id's chain of
        supersessions already leads to old_id): both would be hidden for good."""
        seen = {old_id}
        current: Optional[str] = new_id
        while current is not None:
            if current in seen:
                return True
            seen.add(current)
            row = self.store.conn.execute("SELECT superseded_by FROM facts WHERE id = ?",
                                          (current,)).fetchone()
            current = str(row[0]) if row and row[0] is not None else None
        return False

    # -- reading ------------------------------------------------------------------------------

    def select(self, *, category: Optional[str] = None, tier: Optional[str] = None,
             since: Optional[float] = None, until: Optional[float] = None,
             include_superseded: bool = False, limit: Optional[int] = None,
             offset: int = 0) -> list[Fact]:
        """Facts in the order they were stored, filtered (category includes its subtree)."""
        where, args = facts_where(category=category, tier=tier, since=since, until=until,
                                  include_superseded=include_superseded)
        clause = f"WHERE {where}" if where else ""
        args += [-1 if limit is None else limit, offset]
        return [fact_from_row(r) for r in self.store.conn.execute(
            f"SELECT {FACT_AND_FLAGS} FROM facts {clause} ORDER BY rowid LIMIT ? OFFSET ?", args)]

    def matching(self, match: str, categories: Optional[list[str]], limit: int) -> list[Fact]:
        """Facts (superseded ones too: an erasure must reach them) matching an FTS5
        expression, optionally filed at or below one of `categories`, oldest first."""
        self.store.flush_fulltext()
        where: list[str] = ["facts_fts MATCH ?"]
        args: list[Any] = [match]
        if categories:
            where.append("(" + " OR ".join("(f.category = ? OR substr(f.category, 1, ?) = ?)"
                                           for _ in categories) + ")")
            for path in categories:
                args += [path, len(path) + 1, path + "/"]
        cols = ", ".join("f." + c.strip() for c in FACT_AND_FLAGS.split(","))
        try:
            rows = self.store.conn.execute(
                f"SELECT {cols} FROM facts_fts JOIN facts f ON f.rowid = facts_fts.rowid "
                f"WHERE {' AND '.join(where)} ORDER BY f.rowid LIMIT ?", (*args, limit)).fetchall()
        except sqlite3.OperationalError as exc:
            raise StoreError(f"full-text search failed: {exc}") from exc
        return [fact_from_row(r) for r in rows]

    def versions(self, fact_id: str) -> list[FactVersion]:
        return [_version(r) for r in self.store.conn.execute(
            f"SELECT {_VERSION_COLUMNS} FROM fact_versions WHERE fact_id = ? ORDER BY version",
            (fact_id,))]

    def history(self, fact_id: str) -> FactHistory:
        """Versions, supersessions, reinforcements and the forget of one fact, with times and
        actors. NotFoundError when the device never knew it."""
        conn = self.store.conn
        fact = self.store.get_fact(fact_id)
        gone = conn.execute("SELECT deleted_at, actor FROM forgotten WHERE id = ?",
                            (fact_id,)).fetchone()
        # Reinforcements audit several ids in one row ("a,b,c"); ids are hex, so LIKE is exact
        # enough once the comma-joined list is checked below.
        rows = conn.execute("SELECT ts, op, target, detail FROM audit WHERE target = ? OR "
                            "(instr(target, ',') > 0 AND instr(target, ?) > 0) ORDER BY id",
                            (fact_id, fact_id)).fetchall()
        if fact is None and gone is None and not rows:
            raise NotFoundError(f"no fact {fact_id!r}")
        events = [HistoryEvent(ts=ts, op=op, actor=_actor_of(op, detail),
                               detail=detail.split("actor=")[0].strip())
                  for ts, op, target, detail in rows
                  if target == fact_id or fact_id in target.split(",")]
        supersedes = [r[0] for r in conn.execute("SELECT id FROM facts WHERE superseded_by = ? "
                                                 "ORDER BY rowid", (fact_id,))]
        return FactHistory(fact_id=fact_id, fact=fact, versions=self.versions(fact_id),
                           events=events, superseded_by=fact.superseded_by if fact else None,
                           supersedes=supersedes, forgotten_at=gone[0] if gone else None)

    def require(self, fact_id: str) -> Fact:
        fact = self.store.get_fact(fact_id)
        if fact is None:
            raise NotFoundError(f"no fact {fact_id!r}")
        return fact
