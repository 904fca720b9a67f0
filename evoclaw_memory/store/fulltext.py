"""The full-text side of the store: FTS5 index upkeep, bulk loads and every search."""

from __future__ import annotations

import contextlib
import sqlite3
from itertools import chain
from typing import TYPE_CHECKING, Iterable, Iterator, Optional

import msgspec

from evoclaw_memory.errors import StoreError
from evoclaw_memory.models import Fact
from evoclaw_memory.store.rows import FACT_COLUMNS, encoder, fact_from_row
from evoclaw_memory.text import alias_pairs, fts_phrase

# A speaker with at most this many facts has its facts checked one by one against a word
# (each check ~5-20 µs), rather than the word's entries walked for that speaker's.
SPEAKER_DRIVEN_MAX = 64
_DEFERRED_INDEXES = "store.deferred_indexes"     # kv: index definitions dropped for a bulk load
# New facts' full-text entries are indexed this many at a time (see fts_pending).
FULLTEXT_BATCH = 64
# Rows per INSERT statement of a bulk load (store.fulltext.insert_values).
ROWS_PER_STATEMENT = 1000
# Leaf pages the daily merge of the full-text index writes per transaction.
FULLTEXT_MERGE_PAGES = 500
# kv: a forget deleted full-text entries whose words FTS5 still holds (see erase_forgotten_words).
KV_ERASE_PENDING = "fulltext.erase_pending"


def _varints(data: bytes) -> list[int]:
    """SQLite varints (big-endian, 7 bits a byte, the 9th byte whole), as FTS5 writes them."""
    out, value, count = [], 0, 0
    for byte in data:
        count += 1
        if count == 9:
            out.append((value << 8) | byte)
            value, count = 0, 0
        elif byte & 0x80:
            value = (value << 7) | (byte & 0x7F)
        else:
            out.append((value << 7) | byte)
            value, count = 0, 0
    return out


class FullTextMixin:
    """LocalStore's full-text index: pending entries, bulk loads, searches."""

    conn: sqlite3.Connection
    _pending: Optional[int]
    _txn_version: Optional[int]
    fresh: Optional[list]
    if TYPE_CHECKING:
        def transaction(self) -> contextlib.AbstractContextManager[None]: ...
        def get_setting(self, key: str) -> Optional[str]: ...
        def set_setting(self, key: str, value: str) -> None: ...
        def warm_neutral(self) -> contextlib.AbstractContextManager[None]: ...

    def pending_fulltext(self, added: int = 0) -> int:
        """Rows waiting in fts_pending, after `added` more were just written: counted by
        this connection as it writes them (store.local.transaction() drops the count when
        anyone else wrote), so remember() need not count the table every call."""
        if self._pending is None:
            self._pending = self.conn.execute("SELECT count(*) FROM fts_pending").fetchone()[0]
        else:
            self._pending += added
        return self._pending

    def flush_fulltext(self) -> None:
        """Move the waiting full-text entries of new facts into facts_fts (one FTS5 segment).

        Every method that reads the full-text index calls this first, so searches always
        see every fact; it costs one small query when nothing waits."""
        if self._pending == 0 and self._txn_version is not None:
            return              # counted in this transaction: nothing waits
        if self.conn.execute("SELECT 1 FROM fts_pending LIMIT 1").fetchone() is None:
            return
        # Index upkeep leaves warm's total as it was: a conversation's write-time decisions
        # search between its facts, and must not make each next fact recount warm.
        with self.transaction(), self.warm_neutral():
            # A re-filed fact waits with its new body while its old entry stands (see
            # reindex_fact): the old entry goes in this same FTS5 transaction.
            replaced = self.conn.execute(
                "SELECT fact_rowid FROM fts_pending p WHERE EXISTS "
                "(SELECT 1 FROM facts_fts WHERE rowid = p.fact_rowid)").fetchall()
            if replaced:
                self.conn.executemany("DELETE FROM facts_fts WHERE rowid = ?", replaced)
            self.conn.execute("INSERT INTO facts_fts (rowid, body) "
                              "SELECT fact_rowid, body FROM fts_pending ORDER BY fact_rowid")
            self.conn.execute("DELETE FROM fts_pending")
            self._pending = 0
    def merge_fulltext(self, pages: int = FULLTEXT_MERGE_PAGES) -> int:
        """Merge the full-text index's segments into one, `pages` leaf pages per transaction;
        returns the transactions that did work (0: already one segment).

        Each flush (and each bulk load) leaves a segment; FTS5's own automerge only merges
        within a level, so an old store keeps a dozen or more, and every search reads a
        term's doclist once per segment (a 100k-fact store: retrieve ~16% faster on one
        segment than on 16). Run by the daily consolidation: short transactions, so a
        remember waits at most one step; about 0.2 s in all on 100k facts.

        With secure_delete on, so the pages the merge frees are zeroed: they hold the
        words of deleted (forgotten) entries, which then leave the file (see
        erase_forgotten_words, whose pending mark the merge clears)."""
        self.flush_fulltext()
        steps = 0
        secure = self.conn.execute("PRAGMA secure_delete").fetchone()[0]
        self.conn.execute("PRAGMA secure_delete = ON")
        try:
            while True:
                before = self.conn.total_changes
                with self.transaction(), self.warm_neutral():
                    # A negative count merges every segment, whatever their levels (FTS5
                    # 'merge').
                    self.conn.execute("INSERT INTO facts_fts (facts_fts, rank) VALUES "
                                      "('merge', ?)", (-pages,))
                    merged = self.conn.total_changes - before >= 2   # the FTS5 docs' test
                    if not merged:
                        self.conn.execute("DELETE FROM kv WHERE key = ?", (KV_ERASE_PENDING,))
                if not merged:
                    return steps
                steps += 1
        finally:
            self.conn.execute(f"PRAGMA secure_delete = {int(secure)}")

    def note_erasure(self) -> None:
        """Record, in the caller's transaction, that full-text entries were deleted."""
        self.set_setting(KV_ERASE_PENDING, "1")

    def erase_forgotten_words(self) -> bool:
        """Take a forgotten fact's words out of the full-text index's files, when a forget
        left some; returns whether it merged.

        Deleting an FTS5 entry only adds a delete marker: the words and the fact's rowid
        stay in the older segments until they merge (SQLite 3.44's 'secure-delete' option
        does better; older SQLite has no way). So after a forget the segments are merged
        into one with secure_delete on, which zeroes the freed pages: ~0.25 s on 100k
        facts, too much for each forget (whose p95 is a few ms), so it runs where the
        owner's action ends: at the end of a conversation, at a consolidation, when the
        memory closes (a CLI command's end), and after an MCP or window forget."""
        if self.get_setting(KV_ERASE_PENDING) is None:
            return False
        self.merge_fulltext()
        return True

    def insert_facts_bulk(self, rows: list[tuple[tuple, str]],
                          aliases: Optional[list[list[tuple[str, str]]]] = None) -> int:
        """Insert many bulk_row()s at once, skipping ids already present. `aliases`: each
        row's alias_pairs() of its text, when the caller worked them out already (a mirror
        does, while another page is written)."""
        if not rows:
            return 0
        self.fresh = None       # facts came another way: linking reads them back (see local)
        start = (self.conn.execute("SELECT COALESCE(MAX(rowid), 0) FROM facts").fetchone()[0]) + 1
        # The id's unique index finds the ids already present while inserting (a separate
        # lookup first would walk that index twice); only an id conflict is skipped, any
        # other constraint still fails loudly.
        inserted = self.insert_values(
            f"INSERT INTO facts (rowid, {FACT_COLUMNS}, norm_key, size, pinned, private, "
            "changed_at, content_changed_at, flags_changed_at, speaker, superseded_changed_at) "
            "VALUES {} ON CONFLICT (id) DO NOTHING",
            [(start + i, *values) for i, (values, _) in enumerate(rows)])
        bodies = [(start + i, body) for i, (_, body) in enumerate(rows)]
        if inserted < len(rows):        # some ids were known: index only the rows that landed
            landed = {r[0] for r in self.conn.execute(
                "SELECT rowid FROM facts WHERE rowid BETWEEN ? AND ?",
                (start, start + len(rows) - 1))}
            bodies = [b for b in bodies if b[0] in landed]
        self.insert_values("INSERT INTO facts_fts (rowid, body) VALUES {}", bodies)
        landed_ids = {b[0] for b in bodies}
        if aliases is None:
            aliases = [alias_pairs(values[1]) for values, _ in rows]
        self.insert_values(
            "INSERT OR IGNORE INTO aliases (name, alias, fact_rowid) VALUES {}",
            [(a, b, start + i) for i, pairs in enumerate(aliases) if start + i in landed_ids
             for a, b in pairs])
        return inserted

    def insert_values(self, sql: str, rows: list[tuple]) -> int:
        """executemany(sql with "VALUES (?, ..)", rows), as statements of many rows each
        (`sql` has "VALUES {}"); returns the rows changed. A statement of up to
        ROWS_PER_STATEMENT rows is one call into SQLite, which gives up the GIL for all of
        it: executemany takes it back for every row, so another thread's Python would stall
        a bulk write (restore's mirror writes one page while it prepares the next)."""
        if not rows:
            return 0
        width = len(rows[0])
        per = max(1, min(ROWS_PER_STATEMENT, self._variable_limit() // width))
        one = "(" + ",".join("?" * width) + ")"
        full = sql.format(",".join([one] * per))
        changed = 0
        for at in range(0, len(rows), per):
            chunk = rows[at:at + per]
            changed += self.conn.execute(
                full if len(chunk) == per else sql.format(",".join([one] * len(chunk))),
                list(chain.from_iterable(chunk))).rowcount
        return changed

    def _variable_limit(self) -> int:
        """The most ? a statement may hold (SQLite's default since 3.32: 32766; 999 before,
        and where Python cannot ask: before 3.11)."""
        getlimit = getattr(self.conn, "getlimit", None)
        which = getattr(sqlite3, "SQLITE_LIMIT_VARIABLE_NUMBER", None)
        return getlimit(which) if getlimit and which is not None else 999

    def newest_in_categories(self, categories: list[str], per_category: int) -> list[int]:
        """Rowids of the newest live facts filed exactly at each category, in each tier.

        Each (tier, category) is a backwards walk of the facts_tier_category index that
        stops after `per_category` live rows, whatever the store's size."""
        out: list[int] = []
        for category in categories:
            for tier in ("warm", "cold"):
                out += [r[0] for r in self.conn.execute(
                    "SELECT rowid FROM facts WHERE tier = ? AND category = ? "
                    "AND superseded_by IS NULL ORDER BY rowid DESC LIMIT ?",
                    (tier, category, per_category))]
        return out

    def add_aliases(self, rowid: Optional[int], text: str) -> None:
        """Keep the aliases `text` states ("Chen Li (Lily)") for query expansion."""
        pairs = alias_pairs(text)
        if pairs and rowid is not None:
            self.conn.executemany(
                "INSERT OR IGNORE INTO aliases (name, alias, fact_rowid) VALUES (?, ?, ?)",
                [(a, b, rowid) for a, b in pairs])

    def replace_aliases(self, fact_id: str, text: str) -> None:
        """A fact's text changed (an edit, another device's version): the aliases it states
        are its new text's, not the old one's."""
        row = self.conn.execute("SELECT rowid FROM facts WHERE id = ?", (fact_id,)).fetchone()
        if row is None:
            return
        self.conn.execute("DELETE FROM aliases WHERE fact_rowid = ?", (row[0],))
        self.add_aliases(row[0], text)

    def aliases_of(self, names: list[str]) -> dict[str, list[str]]:
        """name -> the other names live facts give it (both directions), for token strings."""
        if not names:
            return {}
        marks = ",".join("?" * len(names))
        out: dict[str, list[str]] = {}
        for name, other in self.conn.execute(
                f"SELECT a.name, a.alias FROM aliases a JOIN facts f ON f.rowid = a.fact_rowid "
                f"WHERE a.name IN ({marks}) AND f.superseded_by IS NULL "
                f"UNION SELECT a.alias, a.name FROM aliases a JOIN facts f "
                f"ON f.rowid = a.fact_rowid WHERE a.alias IN ({marks}) "
                f"AND f.superseded_by IS NULL LIMIT 64", names + names):
            out.setdefault(name, []).append(other)
        return out

    @contextlib.contextmanager
    def indexes_deferred(self) -> Iterator[None]:
        """Drop the facts table's secondary indexes for a long bulk load, build them after.

        Building an index once over sorted keys is several times cheaper than keeping it up to
        date row by row. The definitions are saved in kv in the same transaction as the drop,
        so a process killed mid-load gets its indexes back at the next open().
        """
        with self.transaction():
            indexes = self._facts_indexes()
            if self.get_setting(_DEFERRED_INDEXES) is None:
                self.set_setting(_DEFERRED_INDEXES, encoder.encode(indexes).decode())
            for name in indexes:
                self.conn.execute(f'DROP INDEX "{name}"')
        try:
            yield
        finally:
            self.rebuild_deferred_indexes()

    def rebuild_deferred_indexes(self) -> None:
        """Recreate the indexes indexes_deferred() dropped (a no-op when none are pending)."""
        saved = self.get_setting(_DEFERRED_INDEXES)
        if saved is None:
            return
        with self.transaction():
            present = self._facts_indexes()
            for name, sql in msgspec.json.decode(saved, type=dict[str, str]).items():
                if name not in present:
                    self.conn.execute(sql)
            self.conn.execute("DELETE FROM kv WHERE key = ?", (_DEFERRED_INDEXES,))

    def _facts_indexes(self) -> dict[str, str]:
        """The facts table's own indexes, name -> CREATE statement (not the implicit UNIQUE)."""
        return dict(self.conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'facts' "
            "AND sql IS NOT NULL"))

    def reindex_fact(self, fact_id: str, body: str) -> None:
        """Replace a fact's full-text entry (after its text or category changed)."""
        rowid = self.conn.execute("SELECT rowid FROM facts WHERE id = ?", (fact_id,)).fetchone()
        if rowid is None:
            return
        if self.conn.execute("UPDATE fts_pending SET body = ? WHERE fact_rowid = ?",
                             (body, rowid[0])).rowcount:
            return                                  # waiting already: the new body waits
        # Indexed: the new body waits with the new facts' and replaces the old entry at the
        # next flush, which every full-text read runs first. Replacing it now cost an FTS5
        # segment of its own (and the merges it sets off) for each fact a full tree's
        # remember re-files when it merges a leaf: ~0.6 ms and ~13 pages.
        self.conn.execute("INSERT INTO fts_pending (fact_rowid, body) VALUES (?, ?)",
                          (rowid[0], body))
        self.pending_fulltext(added=1)

    def search(self, match: str, *, tier: Optional[str] = None,
               categories: Optional[list[str]] = None, exclude: Iterable[str] = (),
               limit: int = 50) -> list[tuple[Fact, float]]:
        """Full-text search: (fact, bm25) best first; bm25 is negative, lower is better.

        `categories` keeps facts filed at those paths or below them. Superseded facts never
        come back.
        """
        self.flush_fulltext()
        where = ["facts_fts MATCH ?", "f.superseded_by IS NULL"]
        args: list = [match]
        if tier:
            where.append("f.tier = ?")
            args.append(tier)
        if categories:
            ors = []
            for path in categories:
                ors.append("(f.category = ? OR substr(f.category, 1, ?) = ?)")
                args += [path, len(path) + 1, path + "/"]
            where.append("(" + " OR ".join(ors) + ")")
        excluded = list(exclude)
        if excluded:
            where.append(f"f.id NOT IN ({','.join('?' * len(excluded))})")
            args += excluded
        args.append(limit)
        sql = (f"SELECT {', '.join('f.' + c.strip() for c in FACT_COLUMNS.split(','))}, "
               "bm25(facts_fts) AS rank FROM facts_fts JOIN facts f ON f.rowid = facts_fts.rowid "
               f"WHERE {' AND '.join(where)} ORDER BY rank LIMIT ?")
        try:
            rows = self.conn.execute(sql, args).fetchall()
        except sqlite3.OperationalError as exc:
            raise StoreError(f"full-text search failed: {exc}") from exc
        return [(fact_from_row(r[:11]), r[11]) for r in rows]

    def document_frequencies(self, terms: list[str], cap: Optional[int] = None) -> dict[str, int]:
        """How many facts contain each (already tokenised) term (absent terms are left out).

        Exact by default (the fts5vocab table, whose cost grows with the term's count). With
        `cap`, a term found in at least `cap` facts is estimated instead from the density of
        its `cap` newest entries, so a very common word costs no more than a rare one.
        """
        if not terms:
            return {}
        self.flush_fulltext()
        if cap is None:
            marks = ",".join("?" * len(terms))
            return dict(self.conn.execute(
                f"SELECT term, doc FROM facts_vocab WHERE term IN ({marks})", terms).fetchall())
        out: dict[str, int] = {}
        top = None
        for term in terms:
            count, oldest = self.conn.execute(
                "SELECT count(*), min(rowid) FROM (SELECT rowid FROM facts_fts WHERE facts_fts "
                "MATCH ? ORDER BY rowid DESC LIMIT ?)", (fts_phrase(term), cap)).fetchone()
            if count >= cap:
                if top is None:
                    top = self.conn.execute("SELECT max(rowid) FROM facts").fetchone()[0] or 0
                count = max(cap, round(count * top / max(1, top - oldest + 1)))
            if count:
                out[term] = count
        return out

    def corpus_stats(self) -> tuple[int, float]:
        """(indexed facts, mean tokens per fact) of the full-text index, as bm25 sees them.

        Read from FTS5's averages record (one small row) rather than counted."""
        self.flush_fulltext()
        try:
            row = self.conn.execute("SELECT block FROM facts_fts_data WHERE id = 1").fetchone()
            values = _varints(bytes(row[0])) if row and row[0] else []
            if len(values) >= 2 and values[0] > 0:
                return values[0], values[1] / values[0]
        except (sqlite3.Error, TypeError, ValueError):
            pass
        rows = self.conn.execute("SELECT count(*) FROM facts_fts").fetchone()[0]
        return rows, 20.0

    def match_rowids(self, match: str, *, order: str = "rank", limit: int = 50) -> list[int]:
        """Rowids of live (not superseded) indexed facts matching an FTS5 expression.

        order 'rank': best bm25 first (the index scores every matching row: keep the
        expression selective); 'recent': newest first, which stops after `limit` rows.
        Superseded facts are filtered here, inside the LIMIT, not by the caller: a fact
        updated fifty times would otherwise fill every slot with its old versions and
        leave none for the live one."""
        self.flush_fulltext()
        by = "facts_fts.rank" if order == "rank" else "facts_fts.rowid DESC"
        try:
            return [r[0] for r in self.conn.execute(
                "SELECT facts_fts.rowid FROM facts_fts JOIN facts f ON f.rowid = facts_fts.rowid "
                f"WHERE facts_fts MATCH ? AND f.superseded_by IS NULL ORDER BY {by} LIMIT ?",
                (match, limit))]
        except sqlite3.OperationalError as exc:
            raise StoreError(f"full-text search failed: {exc}") from exc

    def newest_live_texts(self, match: str, speaker: Optional[str],
                          limit: int) -> list[tuple[str, str]]:
        """(id, text) of the newest live facts said by `speaker` (None: the owner or nobody)
        that match an FTS5 expression. Newest first, so the walk stops after `limit` rows
        whatever the store's size (the write-time decision's candidates).

        Two plans, the same rows: the word's full-text entries newest first, each fact's
        speaker checked (the owner, or a speaker with many facts, stops within a few dozen
        entries); or, for a speaker with at most SPEAKER_DRIVEN_MAX facts, that speaker's
        facts newest first (schema 0014's index), each checked against the expression: a
        common word's list can run to thousands of entries, none of them the speaker's."""
        self.flush_fulltext()
        try:
            if speaker is not None and self._speaker_facts(speaker) <= SPEAKER_DRIVEN_MAX:
                return self.conn.execute(
                    "SELECT f.id, f.text FROM facts f CROSS JOIN facts_fts "
                    "ON facts_fts.rowid = f.rowid WHERE f.speaker = ? AND "
                    "f.superseded_by IS NULL AND facts_fts MATCH ? ORDER BY f.rowid DESC "
                    "LIMIT ?", (speaker, match, limit)).fetchall()
            return self.conn.execute(
                "SELECT f.id, f.text FROM facts_fts JOIN facts f ON f.rowid = facts_fts.rowid "
                "WHERE facts_fts MATCH ? AND f.superseded_by IS NULL AND f.speaker IS ? "
                "ORDER BY facts_fts.rowid DESC LIMIT ?", (match, speaker, limit)).fetchall()
        except sqlite3.OperationalError as exc:
            raise StoreError(f"full-text search failed: {exc}") from exc

    def _speaker_facts(self, speaker: str) -> int:
        """How many facts `speaker` said, counted up to SPEAKER_DRIVEN_MAX + 1 (an index
        range of at most that many entries)."""
        return self.conn.execute(
            "SELECT count(*) FROM (SELECT 1 FROM facts WHERE speaker = ? LIMIT ?)",
            (speaker, SPEAKER_DRIVEN_MAX + 1)).fetchone()[0]

    def live_rows_with_bodies(self, rowids: Iterable[int]) -> list[tuple]:
        """(rowid, *fact columns, index body, pinned) of the live facts among `rowids`; turn
        the columns into a Fact with `fact_from_row(row[1:12])`."""
        ids = list(rowids)
        self.flush_fulltext()
        out: list[tuple] = []
        for start in range(0, len(ids), 500):
            chunk = ids[start:start + 500]
            out += self.conn.execute(
                f"SELECT f.rowid, {', '.join('f.' + c.strip() for c in FACT_COLUMNS.split(','))}, "
                "x.body, f.pinned FROM facts f JOIN facts_fts x ON x.rowid = f.rowid "
                f"WHERE f.rowid IN ({','.join('?' * len(chunk))}) AND f.superseded_by IS NULL",
                chunk).fetchall()
        return out

    def search_metadata(self, fragment: str, limit: int = 20) -> list[Fact]:
        """Live facts one of whose urls, commands or paths, or whose text, contains `fragment`."""
        pattern = "%" + fragment.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        # Within the metadata's string values, not its JSON text: '"' or 'urls' would match
        # every fact with links.
        rows = self.conn.execute(
            f"SELECT {FACT_COLUMNS} FROM facts WHERE superseded_by IS NULL AND "
            "(text LIKE ?1 ESCAPE '\\' OR (metadata <> '{}' AND EXISTS (SELECT 1 FROM "
            "json_tree(CASE WHEN json_valid(metadata) THEN metadata ELSE '{}' END) "
            "WHERE type = 'text' AND value LIKE ?1 ESCAPE '\\'))) "
            "ORDER BY created_at DESC LIMIT ?2", (pattern, limit)).fetchall()
        return [fact_from_row(r) for r in rows]

