"""LocalStore: the device database of one agent (SQLite, WAL), and nothing but I/O.

Rules (hot, warm, tree) live in their own modules as pure functions; this class only reads
and writes rows. Every mutating method expects to run inside `transaction()`, so a change,
its outbox entry and its audit row land together or not at all.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from pathlib import Path
from typing import Any, Iterable, Iterator, Optional

import msgspec

# Re-exported for callers that caught them here before they moved to errors.py.
from evoclaw_memory.errors import DamagedStoreError, ReadOnlyStoreError, StoreError
from evoclaw_memory.models import Fact, HotState, TreeNode
from evoclaw_memory.store.fulltext import FULLTEXT_BATCH, FullTextMixin
from evoclaw_memory.store.opening import OpeningMixin
from evoclaw_memory.store.outbox import OutboxMixin
from evoclaw_memory.store.rows import FACT_AND_FLAGS, FACT_COLUMNS, encoder, fact_from_row, hot_decoder
from evoclaw_memory.store.tree_rows import TreeRows
from evoclaw_memory.text import key_digest, normalized_key

KV_CURSOR = "entities.linked_rowid"     # facts up to this rowid are linked (store.entities)

__all__ = ["LocalStore", "fact_from_row", "FULLTEXT_BATCH", "DamagedStoreError",
           "ReadOnlyStoreError"]


class LocalStore(OpeningMixin, FullTextMixin, OutboxMixin):
    """One agent's SQLite database: facts, full-text index, tree, hot state, outbox, audit.

    Opening lives in store.opening, the full-text index and searches in store.fulltext, the
    outbox in store.outbox; this class holds the transaction and the plain rows."""

    def __init__(self, conn: sqlite3.Connection, path: Optional[Path]):
        self.conn = conn
        self.path = path
        # The warm total as of a write stamp, and one noted inside the open transaction as of
        # its total_changes; see warm_bytes().
        self._warm_total: Optional[tuple[tuple[int, int], int]] = None
        self._warm_noted: Optional[tuple[int, int]] = None
        # What this connection knows without asking SQLite (see transaction()): kept while
        # nothing else writes, dropped at a rollback and when another connection commits.
        self._txn_version: Optional[int] = None     # data_version inside our write transaction
        self._last_commit: Optional[tuple[int, int]] = None   # _write_stamp() after our commit
        self.fresh: Optional[list[tuple[int, Fact]]] = []   # (rowid, fact) insert_fact() added
        # in this transaction, in order (None: facts came another way too); linking reads them
        # from here instead of reading the rows back.
        self._pending: Optional[int] = None         # rows in fts_pending, when known
        # The entity linking cursor (store.entities.linked_upto): how far this connection
        # knows facts are linked, what kv held when it last read or wrote it, and whether
        # kv must be read again (someone else wrote since our last commit).
        self.link_cursor: Optional[int] = None
        self.link_cursor_saved: Optional[int] = None
        self.link_cursor_check = True
        self.link_cursor_written = False            # kv written by us at least once
        self.entity_cache: Any = None               # store.entities.EntityCache, when loaded
        self.entity_cache_uses = 0
        # retrieval's counts of common words (retriever._Corpus), kept with the store they
        # count: a WeakKeyDictionary in retrieval did the same, and weakref costs ~0.6 ms of
        # every CLI start.
        self.corpus_cache: Any = None
        self.tree_rows: Optional[TreeRows] = None   # tree_nodes once read (store.tree_rows)
        self.entity_records: Any = None             # store.entity_records.RecordCache

    def close(self) -> None:
        self.save_link_cursor()
        # A forget's words leave the full-text files by the end of the command at the latest;
        # if that fails (the disk full, another writer), the next close or consolidation does.
        with contextlib.suppress(sqlite3.Error, StoreError):
            if not self.conn.in_transaction:
                self.erase_forgotten_words()
        self.conn.close()

    def save_link_cursor(self) -> None:
        """Write the linking cursor where it ran ahead of kv (store.entities.set_linked_upto
        lets it lag a few facts; losing that lag in a crash only links them again)."""
        ahead, saved, last = self.link_cursor, self.link_cursor_saved, self._last_commit
        if ahead is None or saved is None or ahead <= saved or last is None:
            return
        with contextlib.suppress(sqlite3.Error):
            if self.conn.in_transaction:
                return
            with self.transaction():
                # Only if nobody else committed since our last commit (see linked_upto).
                if last[0] == self._txn_version and \
                        int(self.get_setting(KV_CURSOR) or 0) == saved:
                    self.set_setting(KV_CURSOR, str(ahead))

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """BEGIN IMMEDIATE .. COMMIT; nested calls join the outer transaction."""
        if self.conn.in_transaction:
            yield
            return
        self.conn.execute("BEGIN IMMEDIATE")
        # One data_version read per transaction: while we hold the write lock no other
        # connection can commit, so it stands until our COMMIT (which does not move it).
        version = self._txn_version = self._data_version()
        if self._last_commit != (version, self.conn.total_changes):
            # Someone wrote since our last commit (another connection, or this one outside
            # a transaction): what we counted ourselves is asked again.
            self._pending = None
            self.link_cursor_check = True
        try:
            yield
            # A warm total noted after the transaction's last write holds after the commit.
            # Its stamp: data_version read while we held the write lock (another connection
            # committing right after us must still move it), total_changes read after COMMIT
            # (which moves it: FTS5 writes its pending terms then).
            noted = self._warm_noted
            holds = noted is not None and noted[0] == self.conn.total_changes
            self.conn.execute("COMMIT")
            self._last_commit = (version, self.conn.total_changes)
            self._warm_total = (self._last_commit, noted[1]) if noted and holds else None
        except BaseException:
            self._warm_total = None        # it may count rows the rollback takes back
            self._last_commit = None
            self._pending = self.entity_cache = self.tree_rows = None     # the same
            self.entity_records = None
            self.link_cursor = self.link_cursor_saved = None
            # SQLite may have rolled back already (disk full, I/O error); a failed COMMIT
            # must not leave the transaction open for the next caller to join.
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            raise
        finally:
            self._warm_noted = self._txn_version = None
            self.fresh = []

    def _write_stamp(self) -> tuple[int, int]:
        """Changes as of now: data_version moves when another connection commits,
        total_changes when this one writes a row (a rollback moves neither)."""
        return self.data_version(), self.conn.total_changes

    def data_version(self) -> int:
        """PRAGMA data_version, read once per write transaction (it cannot move inside one)."""
        return self._data_version() if self._txn_version is None else self._txn_version

    def _data_version(self) -> int:
        return self.conn.execute("PRAGMA data_version").fetchone()[0]

    REQUIRED_TABLES = ("facts", "facts_fts", "fts_pending", "tree_nodes", "hot_state", "outbox",
                       "metrics", "audit", "kv", "schema_version")

    def table_counts(self) -> dict[str, int]:
        """Rows per table (sqlite-utils' introspection; imported here, off the per-turn path,
        because importing it costs ~80 ms)."""
        import sqlite_utils
        db = sqlite_utils.Database(self.conn)
        return {name: db[name].count for name in db.table_names()
                if not name.startswith(("facts_fts_", "sqlite_"))}

    def quick_check(self) -> str:
        """PRAGMA quick_check: 'ok' or the first problem found."""
        return self.conn.execute("PRAGMA quick_check").fetchone()[0]

    # -- facts ---------------------------------------------------------------------------

    def insert_fact(self, fact: Fact, norm_key: str, size: int, body: str) -> None:
        cur = self.conn.execute(
            f"INSERT INTO facts ({FACT_COLUMNS}, norm_key, size, pinned, private, changed_at, "
            "content_changed_at, flags_changed_at, speaker, superseded_changed_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (fact.id, fact.text, fact.category, fact.importance, fact.created_at,
             fact.last_access, fact.access_count, encoder.encode(fact.metadata).decode(),
             fact.source, fact.tier, fact.superseded_by, key_digest(norm_key), size,
             int(fact.pinned), int(fact.private), fact.changed_at, fact.content_changed_at,
             fact.flags_changed_at, fact.speaker, fact.superseded_changed_at))
        rowid = cur.lastrowid
        self.conn.execute("INSERT INTO fts_pending (fact_rowid, body) VALUES (?, ?)",
                          (rowid, body))
        self.add_aliases(rowid, fact.text)
        if self.fresh is not None and rowid is not None:
            self.fresh.append((rowid, fact))
        if self.pending_fulltext(added=1) >= FULLTEXT_BATCH:
            self.flush_fulltext()
    @staticmethod
    def bulk_row(fact: Fact, norm_key: str, size: int, body: str) -> tuple[tuple, str]:
        """A fact as insert_facts_bulk() takes it: (column values, full-text body)."""
        return ((fact.id, fact.text, fact.category, fact.importance, fact.created_at,
                 fact.last_access, fact.access_count,
                 "{}" if fact.metadata.is_empty() else encoder.encode(fact.metadata).decode(),
                 fact.source, fact.tier, fact.superseded_by, key_digest(norm_key), size,
                 int(fact.pinned), int(fact.private), fact.changed_at, fact.content_changed_at,
                 fact.flags_changed_at, fact.speaker, fact.superseded_changed_at), body)
    def get_fact(self, fact_id: str) -> Optional[Fact]:
        row = self.conn.execute(f"SELECT {FACT_AND_FLAGS} FROM facts WHERE id = ?",
                                (fact_id,)).fetchone()
        return fact_from_row(row) if row else None

    def facts_by_ids(self, ids: list[str]) -> list[Fact]:
        """Facts with these ids, in no particular order (missing ids are skipped)."""
        out: list[Fact] = []
        for start in range(0, len(ids), 500):
            chunk = ids[start:start + 500]
            marks = ",".join("?" * len(chunk))
            out += [fact_from_row(r) for r in self.conn.execute(
                f"SELECT {FACT_AND_FLAGS} FROM facts WHERE id IN ({marks})", chunk)]
        return out

    def find_live_by_norm_key(self, norm_key: str) -> Optional[Fact]:
        """The live fact whose normalized text is `norm_key` (an exact duplicate), if any."""
        for row in self.conn.execute(
                f"SELECT {FACT_AND_FLAGS} FROM facts WHERE norm_key = ? AND superseded_by IS NULL",
                (key_digest(norm_key),)):
            if normalized_key(row[1]) == norm_key:      # the digest matched; so must the text
                return fact_from_row(row)
        return None

    def iter_facts(self, tier: Optional[str] = None, live_only: bool = False) -> Iterator[Fact]:
        """Every fact (optionally of one tier, optionally without superseded ones)."""
        where, args = [], []
        if tier:
            where.append("tier = ?")
            args.append(tier)
        if live_only:
            where.append("superseded_by IS NULL")
        clause = f"WHERE {' AND '.join(where)}" if where else ""
        for row in self.conn.execute(f"SELECT {FACT_AND_FLAGS} FROM facts {clause} "
                                     "ORDER BY rowid", args):
            yield fact_from_row(row)

    def warm_rows(self) -> list[tuple[str, float, float, int, int, str]]:
        """(id, importance, created_at, access_count, size, category) of every warm fact
        that may be evicted (pinned facts never leave the device)."""
        return self.conn.execute(
            "SELECT id, importance, created_at, access_count, size, category FROM facts "
            "WHERE tier = 'warm' AND pinned = 0").fetchall()

    def warm_bytes(self) -> int:
        """Bytes the warm tier holds (the sum of its facts' sizes).

        remember() asks on every call; summing ~300 rows each time was ~7% of its cost. So a
        caller that knows the total after its own writes leaves it with note_warm_bytes(),
        and the next call takes it as long as nothing else wrote since: any other write, here
        or from another connection, changes the stamp and forces a recount.
        """
        noted = self._warm_noted
        if noted is not None and self.conn.in_transaction and noted[0] == self.conn.total_changes:
            # Noted earlier in this same transaction (end_conversation stores all its facts in
            # one): nothing has been written since. Without this every fact of a conversation
            # summed warm again (~1.2 ms each on a 100k-fact store).
            return noted[1]
        if self._warm_total is not None and self._warm_total[0] == self._write_stamp():
            return self._warm_total[1]
        total = self.conn.execute(
            # The vault has its own cap: pinned facts do not count against warm's.
            "SELECT COALESCE(SUM(size), 0) FROM facts WHERE tier = 'warm' AND pinned = 0"
        ).fetchone()[0]
        self._warm_total = (self._write_stamp(), total)
        return total

    def note_warm_bytes(self, total: int) -> None:
        """Record the warm total as of now, after writes whose effect on it the caller knows.

        In a transaction it is kept only if nothing else is written before the commit."""
        if self.conn.in_transaction:
            self._warm_noted = (self.conn.total_changes, total)
        else:
            self._warm_total = (self._write_stamp(), total)

    @contextlib.contextmanager
    def warm_neutral(self) -> Iterator[None]:
        """Writes inside this block leave warm's total as it was (entity links, settings):
        a total noted before them still holds at the commit."""
        before = self.conn.total_changes
        yield
        noted = self._warm_noted
        if noted is not None and noted[0] == before:
            self._warm_noted = (self.conn.total_changes, noted[1])

    def count_facts(self, tier: Optional[str] = None) -> int:
        if tier:
            return self.conn.execute("SELECT COUNT(*) FROM facts WHERE tier = ?",
                                     (tier,)).fetchone()[0]
        return self.conn.execute("SELECT COUNT(*) FROM facts").fetchone()[0]

    def set_tier(self, fact_ids: Iterable[str], tier: str) -> None:
        self.conn.executemany("UPDATE facts SET tier = ? WHERE id = ?",
                              [(tier, i) for i in fact_ids])

    def set_superseded(self, fact_id: str, by: str) -> None:
        self.conn.execute("UPDATE facts SET superseded_by = ? WHERE id = ?", (by, fact_id))

    def set_category(self, fact_id: str, category: str) -> None:
        self.conn.execute("UPDATE facts SET category = ? WHERE id = ?", (category, fact_id))

    def reinforce(self, fact_ids: list[str], now: float) -> None:
        self.conn.executemany(
            "UPDATE facts SET access_count = access_count + 1, last_access = ? WHERE id = ?",
            [(now, i) for i in fact_ids])

    def delete_facts(self, fact_ids: list[str]) -> None:
        self._pending = None
        for fact_id in fact_ids:
            row = self.conn.execute("SELECT rowid FROM facts WHERE id = ?", (fact_id,)).fetchone()
            if row:
                self.conn.execute("DELETE FROM facts_fts WHERE rowid = ?", row)
                self.conn.execute("DELETE FROM fts_pending WHERE fact_rowid = ?", row)
                self.conn.execute("DELETE FROM facts WHERE rowid = ?", row)
    # -- tree ----------------------------------------------------------------------------

    def tree_nodes(self) -> list[TreeNode]:
        """The nodes ordered by path, from memory once read (store.tree_rows says why and
        how they stay exact)."""
        version = self.data_version()
        rows = self.tree_rows
        # Read again when not read yet, or when another connection committed since.
        if rows is None or rows.version != version:
            rows = self.tree_rows = TreeRows(self.conn.execute(
                "SELECT path, description, warm_count, cold_count, last_access, created_at "
                "FROM tree_nodes"), version)
        return rows.nodes()

    def has_node(self, path: str) -> bool:
        rows = self.tree_rows
        if rows is not None and self.conn.in_transaction and rows.version == self._txn_version:
            return path in rows.rows            # no PRAGMA: remember asks on every call
        return self.conn.execute("SELECT 1 FROM tree_nodes WHERE path = ?", (path,)).fetchone() is not None

    # Every write to tree_nodes is one of the methods below, and each applies itself to the
    # rows in memory as well (a stale copy is dropped at its next read, not mended).

    def upsert_node(self, node: TreeNode) -> None:
        self.conn.execute(
            "INSERT INTO tree_nodes (path, description, warm_count, cold_count, last_access, "
            "created_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(path) DO UPDATE SET "
            "description = excluded.description, warm_count = excluded.warm_count, "
            "cold_count = excluded.cold_count, last_access = excluded.last_access",
            (node.path, node.description, node.warm_count, node.cold_count, node.last_access,
             node.created_at))
        if self.tree_rows is not None:
            self.tree_rows.upsert(node)

    def set_node_description(self, path: str, description: str) -> None:
        self.conn.execute("UPDATE tree_nodes SET description = ? WHERE path = ?",
                          (description, path))
        if self.tree_rows is not None:
            self.tree_rows.describe(path, description)

    def delete_node(self, path: str) -> None:
        self.conn.execute("DELETE FROM tree_nodes WHERE path = ?", (path,))
        if self.tree_rows is not None:
            self.tree_rows.delete(path)

    def adjust_counts(self, path: str, warm: int = 0, cold: int = 0) -> None:
        self.conn.execute("UPDATE tree_nodes SET warm_count = max(0, warm_count + ?), "
                          "cold_count = max(0, cold_count + ?) WHERE path = ?", (warm, cold, path))
        if self.tree_rows is not None:
            self.tree_rows.adjust_counts(path, warm, cold)

    def touch_nodes(self, paths: Iterable[str], now: float) -> None:
        paths = list(paths)
        self.conn.executemany("UPDATE tree_nodes SET last_access = ? WHERE path = ?",
                              [(now, p) for p in paths])
        if self.tree_rows is not None:
            self.tree_rows.touch(paths, now)

    def category_counts(self) -> dict[str, tuple[int, int]]:
        """(warm, cold) live fact counts per category, computed from the facts themselves."""
        out: dict[str, list[int]] = {}
        for category, tier, n in self.conn.execute(
                "SELECT category, tier, COUNT(*) FROM facts WHERE superseded_by IS NULL "
                "GROUP BY category, tier"):
            out.setdefault(category, [0, 0])[0 if tier == "warm" else 1] += n
        return {k: (v[0], v[1]) for k, v in out.items()}

    # tier IN (both tiers) lets the (tier, category) index answer: a full tree merges a leaf
    # per new path, and a scan of a 100k-fact table there was 11 ms per remember.
    _IN_CATEGORY = "FROM facts WHERE tier IN ('warm', 'cold') AND category = ?"

    def fact_ids_in_category(self, path: str) -> list[str]:
        return [r[0] for r in self.conn.execute(f"SELECT id {self._IN_CATEGORY}", (path,))]

    def facts_in_category(self, path: str) -> list[Fact]:
        """The facts fact_ids_in_category() names, read in the same query."""
        return [fact_from_row(r) for r in self.conn.execute(
            f"SELECT {FACT_AND_FLAGS} {self._IN_CATEGORY}", (path,))]

    def count_under(self, path: str) -> int:
        """Facts (any tier, superseded included) filed at `path` or below it."""
        return self.conn.execute(
            "SELECT COUNT(*) FROM facts WHERE category = ? OR substr(category, 1, ?) = ?",
            (path, len(path) + 1, path + "/")).fetchone()[0]

    # -- hot state -----------------------------------------------------------------------

    def load_hot(self) -> HotState:
        row = self.conn.execute("SELECT data FROM hot_state WHERE id = 1").fetchone()
        if not row:
            return HotState()
        try:
            return hot_decoder().decode(row[0])
        except msgspec.ValidationError:
            # One bad entry (an older release stored a NaN lesson as null) must not block
            # every command: keep what reads, drop the rest (the next save rewrites it).
            from evoclaw_memory import validate
            return validate.decode_salvaging(row[0], HotState)[0]

    def save_hot(self, state: HotState, now: float) -> None:
        self.conn.execute(
            "INSERT INTO hot_state (id, data, updated_at) VALUES (1, ?, ?) ON CONFLICT(id) "
            "DO UPDATE SET data = excluded.data, updated_at = excluded.updated_at",
            (encoder.encode(state).decode(), now))
    # -- metrics, audit, settings ----------------------------------------------------------

    def incr_metric(self, key: str, amount: float = 1) -> None:
        self.conn.execute("INSERT INTO metrics (key, value) VALUES (?, ?) ON CONFLICT(key) "
                          "DO UPDATE SET value = value + excluded.value", (key, amount))

    def set_metric(self, key: str, value: float) -> None:
        self.conn.execute("INSERT INTO metrics (key, value) VALUES (?, ?) ON CONFLICT(key) "
                          "DO UPDATE SET value = excluded.value", (key, value))

    def metrics(self) -> dict[str, float]:
        return dict(self.conn.execute("SELECT key, value FROM metrics ORDER BY key").fetchall())

    def audit(self, op: str, target: str, detail: str = "", now: Optional[float] = None) -> None:
        self.conn.execute("INSERT INTO audit (ts, op, target, detail) VALUES (?, ?, ?, ?)",
                          (now if now is not None else time.time(), op, target, detail))

    def audit_many(self, op: str, entries: Iterable[tuple[str, str]], now: float) -> None:
        """One audit row per (target, detail), all for the same operation and time."""
        self.conn.executemany("INSERT INTO audit (ts, op, target, detail) VALUES (?, ?, ?, ?)",
                              [(now, op, target, detail) for target, detail in entries])

    def audit_log(self, limit: int = 100) -> list[tuple[float, str, str, str]]:
        return self.conn.execute("SELECT ts, op, target, detail FROM audit ORDER BY id DESC "
                                 "LIMIT ?", (limit,)).fetchall()

    def get_setting(self, key: str) -> Optional[str]:
        row = self.conn.execute("SELECT value FROM kv WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def get_settings(self, *keys: str) -> dict[str, str]:
        """key -> value of the given keys that are set, in one query."""
        return dict(self.conn.execute(
            f"SELECT key, value FROM kv WHERE key IN ({','.join('?' * len(keys))})", keys))

    def set_setting(self, key: str, value: str) -> None:
        if key == KV_CURSOR:
            self.link_cursor = self.link_cursor_saved = int(value)
            self.link_cursor_check = False
        self.conn.execute("INSERT INTO kv (key, value) VALUES (?, ?) ON CONFLICT(key) "
                          "DO UPDATE SET value = excluded.value", (key, value))

    def replace_tree(self, nodes: list[TreeNode]) -> None:
        self.tree_rows = None
        self.conn.execute("DELETE FROM tree_nodes")
        for node in nodes:
            self.upsert_node(node)

    def wipe(self, keep_settings: Iterable[str] = ()) -> None:
        """Delete every row of this agent's memory (a revoked device, restore --force);
        `keep_settings` names kv entries to keep (restore keeps the keys it just unlocked)."""
        self._pending = self.link_cursor = self.link_cursor_saved = self.tree_rows = None
        self.entity_cache = self.entity_records = None
        # The entity graph and the proposals are the owner's too (names, relations, what a
        # sub-agent proposed); the links point at facts by rowid, which new facts reuse.
        for table in ("facts", "facts_fts", "fts_pending", "tree_nodes", "hot_state", "outbox",
                      "outbox_rejected", "metrics", "audit", "fact_versions", "forgotten",
                      "entity_facts", "entity_aliases", "entity_relations", "entities",
                      "proposals"):
            self.conn.execute(f"DELETE FROM {table}")
        kept = list(keep_settings)
        self.conn.execute(f"DELETE FROM kv WHERE key NOT IN ({','.join('?' * len(kept))})",
                          kept)

    def is_empty(self) -> bool:
        """True for a fresh device: no facts, no hot state, no tree."""
        return not (self.conn.execute("SELECT 1 FROM facts LIMIT 1").fetchone()
                    or self.conn.execute("SELECT 1 FROM hot_state LIMIT 1").fetchone()
                    or self.conn.execute("SELECT 1 FROM tree_nodes LIMIT 1").fetchone())
