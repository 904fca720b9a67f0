"""LocalStore: the device database of one agent (SQLite, WAL), and nothing but I/O.

Rules (hot, warm, tree) live in their own modules as pure functions; this class only reads
and writes rows. Every mutating method expects to run inside `transaction()`, so a change,
its outbox entry and its audit row land together or not at all.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from pathlib import Path
from typing import Any, Iterable, Iterator, Optional

import msgspec

from evoclaw_memory.store import migrate
from evoclaw_memory.config import private_dir
from evoclaw_memory.errors import StoreError
from evoclaw_memory.models import Fact, HotState, Metadata, TreeNode
from evoclaw_memory.text import fts_phrase, key_digest, normalized_key

_FACT_COLUMNS = ("id, text, category, importance, created_at, last_access, access_count, "
                 "metadata, source, tier, superseded_by")
_metadata_decoder = msgspec.json.Decoder(Metadata)
_hot_decoder = msgspec.json.Decoder(HotState)
_encoder = msgspec.json.Encoder()
_DEFERRED_INDEXES = "store.deferred_indexes"     # kv: index definitions dropped for a bulk load
# New facts' full-text entries are indexed this many at a time (see fts_pending).
FULLTEXT_BATCH = 64


def _fact_from_row(row: tuple) -> Fact:
    return Fact(id=row[0], text=row[1], category=row[2], importance=row[3],
                created_at=row[4], last_access=row[5], access_count=row[6],
                metadata=_metadata_decoder.decode(row[7]), source=row[8], tier=row[9],
                superseded_by=row[10])


fact_from_row = _fact_from_row      # for callers of live_rows_with_bodies


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


def _private_file(path: Path) -> None:
    """Create the folder 0700 and the file 0600 before SQLite opens it (it would use 0644)."""
    private_dir(path.parent)
    if not path.exists():
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))


# A file beside the database, written once it holds a migrated memory: from then on a
# missing, empty or unreadable database is damage to report, not a new device to start.
MARKER_SUFFIX = ".marker"
# kv: set on the empty placeholder that replaces a damaged database; a restore clears it.
KV_NEEDS_RESTORE = "store.needs_restore"


class DamagedStoreError(StoreError):
    """The database of an agent folder that held memory is missing, empty or unreadable."""


class ReadOnlyStoreError(StoreError):
    """The database or its folder cannot be written by this process."""


def marker_path(db_path: Path) -> Path:
    """The marker file that says this database has held memory (memory.db.marker)."""
    return db_path.with_name(db_path.name + MARKER_SUFFIX)


def _damaged_message(path: Path, why: str) -> str:
    return (f"{path} is empty or damaged ({why}); restore with `evoclaw-memory restore "
            f"--force` (the damaged file is moved aside, never deleted)")


def _read_only_message(path: Path) -> str:
    return (f"{path} is read-only here (the file or its folder {path.parent} cannot be "
            "written): make both writable for this user; nothing was changed, and every "
            "change not yet synced is still in it")


def _has_schema(conn: sqlite3.Connection) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND "
                        "name = 'schema_version'").fetchone() is not None


def _is_damage(exc: sqlite3.DatabaseError) -> bool:
    """A file that is not (or no longer) a database, as opposed to one that is busy, locked
    or unwritable: only the first may be set aside by restore --force."""
    name = getattr(exc, "sqlite_errorname", None)       # Python 3.11+
    if name is not None:
        return name.startswith(("SQLITE_NOTADB", "SQLITE_CORRUPT"))
    return type(exc) is sqlite3.DatabaseError            # busy, locked... are OperationalError


def _read_only(path: Path) -> bool:
    """True when this process cannot write the database or create its WAL beside it (tried
    for real: a permission check would pass for root on an immutable or read-only mount)."""
    import errno
    import tempfile
    refused = (errno.EACCES, errno.EPERM, errno.EROFS)
    try:
        if path.exists():
            os.close(os.open(path, os.O_RDWR))
        with tempfile.TemporaryFile(dir=path.parent):
            pass
    except OSError as exc:
        return exc.errno in refused
    return False


def _write_marker(marker: Path) -> None:
    if marker.exists():
        return
    try:
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except OSError:         # exists already, or a folder SQLite could use but we cannot add to
        return
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(msgspec.json.encode({"format": 1, "created_at": time.time(),
                                          "note": "this folder holds an evoclaw memory; "
                                                  "keep this file"}).decode() + "\n")


class LocalStore:
    """One agent's SQLite database: facts, full-text index, tree, hot state, outbox, audit."""

    def __init__(self, conn: sqlite3.Connection, path: Optional[Path]):
        self.conn = conn
        self.path = path
        # The warm total as of a write stamp, and one noted inside the open transaction as of
        # its total_changes; see warm_bytes().
        self._warm_total: Optional[tuple[tuple[int, int], int]] = None
        self._warm_noted: Optional[tuple[int, int]] = None

    @classmethod
    def open(cls, path: Path | str, *, recover: bool = False) -> "LocalStore":
        """Open (creating and migrating if needed) the database at `path`.

        A database that once held this agent's memory (its marker file exists) and is now
        missing, empty or unreadable is damage, never a fresh start: StoreError, unless
        `recover` (restore --force), which moves the damaged files aside (never deletes
        them) for an empty placeholder that stays refused until a restore lands in it."""
        path = Path(path)
        try:
            return cls._open(path, recover)
        except DamagedStoreError:
            if not recover:
                raise
        try:
            cls._replace_with_placeholder(path)
        except OSError as exc:
            raise StoreError(f"cannot move the damaged {path} aside: {exc.strerror}") from exc
        return cls._open(path, recover)

    @classmethod
    def _open(cls, path: Path, recover: bool) -> "LocalStore":
        marker = marker_path(path)
        held_memory = marker.exists()
        if held_memory and (not path.exists() or path.stat().st_size == 0):
            raise DamagedStoreError(_damaged_message(path, "the file is missing or 0 bytes"))
        try:
            _private_file(path)
        except OSError as exc:
            if _read_only(path):
                raise ReadOnlyStoreError(_read_only_message(path)) from exc
            raise StoreError(f"cannot create the database at {path}: {exc.strerror}") from exc
        try:
            store = cls._connect(path, check_schema=held_memory)
        except sqlite3.DatabaseError as exc:
            if _read_only(path):
                raise ReadOnlyStoreError(_read_only_message(path)) from exc
            if held_memory and _is_damage(exc):
                raise DamagedStoreError(_damaged_message(
                    path, f"not a usable evoclaw database: {exc}")) from exc
            raise StoreError(f"{path} is not a usable evoclaw database ({exc}); move it aside "
                             "(do not delete it) and run `evoclaw-memory restore`") from exc
        pending = store.get_setting(KV_NEEDS_RESTORE)
        if pending is not None and not recover:
            store.close()
            raise DamagedStoreError(_damaged_message(path, "no restore has completed since the "
                                                    f"damaged file was set aside as {pending}"))
        _write_marker(marker)
        return store

    @classmethod
    def _connect(cls, path: Path, check_schema: bool = False) -> "LocalStore":
        """Connect, tune and migrate; `check_schema` refuses a file without our tables."""
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        try:
            conn.execute("PRAGMA busy_timeout = 5000")
            if check_schema and not _has_schema(conn):
                # Migrating would silently turn a replaced or blanked file into a new memory.
                raise DamagedStoreError(_damaged_message(path, "it holds no evoclaw tables"))
            conn.execute("PRAGMA journal_mode = WAL")
            # FULL: the WAL is fsynced at every COMMIT, so a remember() that returned
            # survives a power cut (the usual way a Raspberry Pi stops). NORMAL would fsync
            # only at checkpoints and could lose the last commits. Measured on the write
            # bench: remember x10k ~1.6 s NORMAL -> ~3.3 s FULL here (target < 5 s).
            conn.execute("PRAGMA synchronous = FULL")
            # Checkpoint every ~16 MB of WAL rather than SQLite's 4 MB: each checkpoint is two
            # fsyncs, and remember() commits ~12 pages (facts and 2 indexes, the queued
            # full-text entry, audit, outbox, tree), so the default fsynced every ~80 calls
            # (measured when a call wrote ~24 pages: 10k remembers 5.3 s -> 4.3 s here).
            # journal_size_limit hands the space back after each checkpoint.
            conn.execute("PRAGMA wal_autocheckpoint = 4000")
            conn.execute("PRAGMA journal_size_limit = 16777216")
            migrate.apply_local(conn)
            store = cls(conn, path)
            store.rebuild_deferred_indexes()        # after a bulk load that was killed
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                conn.close()
            raise
        return store

    @classmethod
    def _replace_with_placeholder(cls, path: Path) -> None:
        """Build an empty, migrated database flagged 'needs restore' beside `path`, then move
        the damaged files aside and put it in their place: at no moment does the folder hold
        an unflagged empty memory that would pass for a new one."""
        stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
        aside = path.with_name(f"{path.name}.damaged-{stamp}")
        n = 1
        while aside.exists():           # never overwrite an earlier damaged copy
            n += 1
            aside = path.with_name(f"{path.name}.damaged-{stamp}-{n}")
        new = path.with_name(path.name + ".placeholder")
        for extra in ("", "-wal", "-shm"):
            new.with_name(new.name + extra).unlink(missing_ok=True)
        _private_file(new)
        store = cls._connect(new)
        with store.transaction():
            store.set_setting(KV_NEEDS_RESTORE, aside.name if path.exists() else "(missing)")
        store.close()                   # the last connection checkpoints and drops its WAL
        for extra in ("", "-wal", "-shm"):
            source = path.with_name(path.name + extra)
            if source.exists():
                os.replace(source, aside.with_name(aside.name + extra))
        os.replace(new, path)

    def close(self) -> None:
        self.conn.close()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """BEGIN IMMEDIATE .. COMMIT; nested calls join the outer transaction."""
        if self.conn.in_transaction:
            yield
            return
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield
            # A warm total noted after the transaction's last write holds after the commit.
            # Its stamp: data_version read while we still hold the write lock (another
            # connection committing right after us must still move it), total_changes read
            # after COMMIT (which moves it: FTS5 writes its pending terms then).
            noted = self._warm_noted
            holds = noted is not None and noted[0] == self.conn.total_changes
            version = self._data_version() if holds else 0
            self.conn.execute("COMMIT")
            self._warm_total = ((version, self.conn.total_changes), noted[1]) if noted and holds \
                else None
        except BaseException:
            self._warm_total = None        # it may count rows the rollback takes back
            # SQLite may have rolled back already (disk full, I/O error); a failed COMMIT
            # must not leave the transaction open for the next caller to join.
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            raise
        finally:
            self._warm_noted = None

    def _write_stamp(self) -> tuple[int, int]:
        """Changes as of now: data_version moves when another connection commits,
        total_changes when this one writes a row (a rollback moves neither)."""
        return self._data_version(), self.conn.total_changes

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
            f"INSERT INTO facts ({_FACT_COLUMNS}, norm_key, size) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (fact.id, fact.text, fact.category, fact.importance, fact.created_at,
             fact.last_access, fact.access_count, _encoder.encode(fact.metadata).decode(),
             fact.source, fact.tier, fact.superseded_by, key_digest(norm_key), size))
        self.conn.execute("INSERT INTO fts_pending (fact_rowid, body) VALUES (?, ?)",
                          (cur.lastrowid, body))
        if self.conn.execute("SELECT count(*) FROM fts_pending").fetchone()[0] >= FULLTEXT_BATCH:
            self.flush_fulltext()

    def flush_fulltext(self) -> None:
        """Move the waiting full-text entries of new facts into facts_fts (one FTS5 segment).

        Every method that reads the full-text index calls this first, so searches always
        see every fact; it costs one small query when nothing waits."""
        if self.conn.execute("SELECT 1 FROM fts_pending LIMIT 1").fetchone() is None:
            return
        with self.transaction():
            self.conn.execute("INSERT INTO facts_fts (rowid, body) "
                              "SELECT fact_rowid, body FROM fts_pending ORDER BY fact_rowid")
            self.conn.execute("DELETE FROM fts_pending")

    @staticmethod
    def bulk_row(fact: Fact, norm_key: str, size: int, body: str) -> tuple[tuple, str]:
        """A fact as insert_facts_bulk() takes it: (column values, full-text body)."""
        return ((fact.id, fact.text, fact.category, fact.importance, fact.created_at,
                 fact.last_access, fact.access_count,
                 "{}" if fact.metadata.is_empty() else _encoder.encode(fact.metadata).decode(),
                 fact.source, fact.tier, fact.superseded_by, key_digest(norm_key), size), body)

    def insert_facts_bulk(self, rows: list[tuple[tuple, str]]) -> int:
        """Insert many bulk_row()s at once, skipping ids already present."""
        if not rows:
            return 0
        start = (self.conn.execute("SELECT COALESCE(MAX(rowid), 0) FROM facts").fetchone()[0]) + 1
        # The id's unique index finds the ids already present while inserting (a separate
        # lookup first would walk that index twice); only an id conflict is skipped, any
        # other constraint still fails loudly.
        inserted = self.conn.executemany(
            f"INSERT INTO facts (rowid, {_FACT_COLUMNS}, norm_key, size) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
            [(start + i, *values) for i, (values, _) in enumerate(rows)]).rowcount
        bodies = [(start + i, body) for i, (_, body) in enumerate(rows)]
        if inserted < len(rows):        # some ids were known: index only the rows that landed
            landed = {r[0] for r in self.conn.execute(
                "SELECT rowid FROM facts WHERE rowid BETWEEN ? AND ?",
                (start, start + len(rows) - 1))}
            bodies = [b for b in bodies if b[0] in landed]
        self.conn.executemany("INSERT INTO facts_fts (rowid, body) VALUES (?, ?)", bodies)
        return inserted

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
                self.set_setting(_DEFERRED_INDEXES, _encoder.encode(indexes).decode())
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
            return                                  # not indexed yet: the new body waits
        self.conn.execute("DELETE FROM facts_fts WHERE rowid = ?", rowid)
        self.conn.execute("INSERT INTO facts_fts (rowid, body) VALUES (?, ?)", (rowid[0], body))

    def get_fact(self, fact_id: str) -> Optional[Fact]:
        row = self.conn.execute(f"SELECT {_FACT_COLUMNS} FROM facts WHERE id = ?",
                                (fact_id,)).fetchone()
        return _fact_from_row(row) if row else None

    def facts_by_ids(self, ids: list[str]) -> list[Fact]:
        """Facts with these ids, in no particular order (missing ids are skipped)."""
        out: list[Fact] = []
        for start in range(0, len(ids), 500):
            chunk = ids[start:start + 500]
            marks = ",".join("?" * len(chunk))
            out += [_fact_from_row(r) for r in self.conn.execute(
                f"SELECT {_FACT_COLUMNS} FROM facts WHERE id IN ({marks})", chunk)]
        return out

    def find_live_by_norm_key(self, norm_key: str) -> Optional[Fact]:
        """The live fact whose normalized text is `norm_key` (an exact duplicate), if any."""
        for row in self.conn.execute(
                f"SELECT {_FACT_COLUMNS} FROM facts WHERE norm_key = ? AND superseded_by IS NULL",
                (key_digest(norm_key),)):
            if normalized_key(row[1]) == norm_key:      # the digest matched; so must the text
                return _fact_from_row(row)
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
        for row in self.conn.execute(f"SELECT {_FACT_COLUMNS} FROM facts {clause} "
                                     "ORDER BY rowid", args):
            yield _fact_from_row(row)

    def warm_rows(self) -> list[tuple[str, float, float, int, int, str]]:
        """(id, importance, created_at, access_count, size, category) of every warm fact."""
        return self.conn.execute(
            "SELECT id, importance, created_at, access_count, size, category FROM facts "
            "WHERE tier = 'warm'").fetchall()

    def warm_bytes(self) -> int:
        """Bytes the warm tier holds (the sum of its facts' sizes).

        remember() asks on every call; summing ~300 rows each time was ~7% of its cost. So a
        caller that knows the total after its own writes leaves it with note_warm_bytes(),
        and the next call takes it as long as nothing else wrote since: any other write, here
        or from another connection, changes the stamp and forces a recount.
        """
        if self._warm_total is not None and self._warm_total[0] == self._write_stamp():
            return self._warm_total[1]
        total = self.conn.execute(
            "SELECT COALESCE(SUM(size), 0) FROM facts WHERE tier = 'warm'").fetchone()[0]
        self._warm_total = (self._write_stamp(), total)
        return total

    def note_warm_bytes(self, total: int) -> None:
        """Record the warm total as of now, after writes whose effect on it the caller knows.

        In a transaction it is kept only if nothing else is written before the commit."""
        if self.conn.in_transaction:
            self._warm_noted = (self.conn.total_changes, total)
        else:
            self._warm_total = (self._write_stamp(), total)

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
        for fact_id in fact_ids:
            row = self.conn.execute("SELECT rowid FROM facts WHERE id = ?", (fact_id,)).fetchone()
            if row:
                self.conn.execute("DELETE FROM facts_fts WHERE rowid = ?", row)
                self.conn.execute("DELETE FROM fts_pending WHERE fact_rowid = ?", row)
                self.conn.execute("DELETE FROM facts WHERE rowid = ?", row)

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
        sql = (f"SELECT {', '.join('f.' + c.strip() for c in _FACT_COLUMNS.split(','))}, "
               "bm25(facts_fts) AS rank FROM facts_fts JOIN facts f ON f.rowid = facts_fts.rowid "
               f"WHERE {' AND '.join(where)} ORDER BY rank LIMIT ?")
        try:
            rows = self.conn.execute(sql, args).fetchall()
        except sqlite3.OperationalError as exc:
            raise StoreError(f"full-text search failed: {exc}") from exc
        return [(_fact_from_row(r[:11]), r[11]) for r in rows]

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

    def live_rows_with_bodies(self, rowids: Iterable[int]) -> list[tuple]:
        """(rowid, *fact columns, index body) of the live facts among `rowids`; turn the
        columns into a Fact with `fact_from_row(row[1:12])`."""
        ids = list(rowids)
        self.flush_fulltext()
        out: list[tuple] = []
        for start in range(0, len(ids), 500):
            chunk = ids[start:start + 500]
            out += self.conn.execute(
                f"SELECT f.rowid, {', '.join('f.' + c.strip() for c in _FACT_COLUMNS.split(','))}, "
                "x.body FROM facts f JOIN facts_fts x ON x.rowid = f.rowid "
                f"WHERE f.rowid IN ({','.join('?' * len(chunk))}) AND f.superseded_by IS NULL",
                chunk).fetchall()
        return out

    def search_metadata(self, fragment: str, limit: int = 20) -> list[Fact]:
        """Live facts one of whose urls, commands or paths, or whose text, contains `fragment`."""
        pattern = "%" + fragment.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        # Within the metadata's string values, not its JSON text: '"' or 'urls' would match
        # every fact with links.
        rows = self.conn.execute(
            f"SELECT {_FACT_COLUMNS} FROM facts WHERE superseded_by IS NULL AND "
            "(text LIKE ?1 ESCAPE '\\' OR (metadata <> '{}' AND EXISTS (SELECT 1 FROM "
            "json_tree(CASE WHEN json_valid(metadata) THEN metadata ELSE '{}' END) "
            "WHERE type = 'text' AND value LIKE ?1 ESCAPE '\\'))) "
            "ORDER BY created_at DESC LIMIT ?2", (pattern, limit)).fetchall()
        return [_fact_from_row(r) for r in rows]

    # -- tree ----------------------------------------------------------------------------

    def tree_nodes(self) -> list[TreeNode]:
        return [TreeNode(path=r[0], description=r[1], warm_count=r[2], cold_count=r[3],
                         last_access=r[4], created_at=r[5])
                for r in self.conn.execute(
                    "SELECT path, description, warm_count, cold_count, last_access, created_at "
                    "FROM tree_nodes ORDER BY path")]

    def has_node(self, path: str) -> bool:
        return self.conn.execute("SELECT 1 FROM tree_nodes WHERE path = ?", (path,)).fetchone() is not None

    def upsert_node(self, node: TreeNode) -> None:
        self.conn.execute(
            "INSERT INTO tree_nodes (path, description, warm_count, cold_count, last_access, "
            "created_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(path) DO UPDATE SET "
            "description = excluded.description, warm_count = excluded.warm_count, "
            "cold_count = excluded.cold_count, last_access = excluded.last_access",
            (node.path, node.description, node.warm_count, node.cold_count, node.last_access,
             node.created_at))

    def delete_node(self, path: str) -> None:
        self.conn.execute("DELETE FROM tree_nodes WHERE path = ?", (path,))

    def adjust_counts(self, path: str, warm: int = 0, cold: int = 0) -> None:
        self.conn.execute("UPDATE tree_nodes SET warm_count = max(0, warm_count + ?), "
                          "cold_count = max(0, cold_count + ?) WHERE path = ?", (warm, cold, path))

    def touch_nodes(self, paths: Iterable[str], now: float) -> None:
        self.conn.executemany("UPDATE tree_nodes SET last_access = ? WHERE path = ?",
                              [(now, p) for p in paths])

    def category_counts(self) -> dict[str, tuple[int, int]]:
        """(warm, cold) live fact counts per category, computed from the facts themselves."""
        out: dict[str, list[int]] = {}
        for category, tier, n in self.conn.execute(
                "SELECT category, tier, COUNT(*) FROM facts WHERE superseded_by IS NULL "
                "GROUP BY category, tier"):
            out.setdefault(category, [0, 0])[0 if tier == "warm" else 1] += n
        return {k: (v[0], v[1]) for k, v in out.items()}

    def fact_ids_in_category(self, path: str) -> list[str]:
        return [r[0] for r in self.conn.execute("SELECT id FROM facts WHERE category = ?", (path,))]

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
            return _hot_decoder.decode(row[0])
        except msgspec.ValidationError:
            # One bad entry (an older release stored a NaN lesson as null) must not block
            # every command: keep what reads, drop the rest (the next save rewrites it).
            from evoclaw_memory import validate
            return validate.decode_salvaging(row[0], HotState)[0]

    def save_hot(self, state: HotState, now: float) -> None:
        self.conn.execute(
            "INSERT INTO hot_state (id, data, updated_at) VALUES (1, ?, ?) ON CONFLICT(id) "
            "DO UPDATE SET data = excluded.data, updated_at = excluded.updated_at",
            (_encoder.encode(state).decode(), now))

    # -- outbox --------------------------------------------------------------------------

    def enqueue_fact(self, fact_id: str, now: float) -> None:
        """Queue a fact for the cloud; a fact already queued keeps its place, one version on."""
        # The version bump marks a change made while the entry may be in flight: the engine
        # acknowledges only the version it sent, so this change stays queued (ack_sent).
        self.conn.execute("INSERT INTO outbox (kind, ref, created_at) VALUES ('fact', ?, ?) "
                          "ON CONFLICT(kind, ref) DO UPDATE SET version = version + 1",
                          (fact_id, now))

    def enqueue_state(self, now: float) -> None:
        """Queue the critical state (hot + tree); coalesced: one entry, moved to the end."""
        self.conn.execute("DELETE FROM outbox WHERE kind = 'state'")
        self.conn.execute("INSERT INTO outbox (kind, ref, created_at) VALUES ('state', 'state', ?)",
                          (now,))

    def outbox(self, limit: Optional[int] = None) -> list[tuple[int, str, str]]:
        """(seq, kind, ref) in drain order."""
        sql = "SELECT seq, kind, ref FROM outbox ORDER BY seq"
        if limit:
            return self.conn.execute(sql + " LIMIT ?", (limit,)).fetchall()
        return self.conn.execute(sql).fetchall()

    def outbox_depth(self) -> int:
        return self.conn.execute("SELECT COUNT(*) FROM outbox").fetchone()[0]

    def ack_outbox(self, seqs: list[int]) -> None:
        self.conn.executemany("DELETE FROM outbox WHERE seq = ?", [(s,) for s in seqs])

    def outbox_entries(self, limit: int) -> list[tuple[int, str, str, int]]:
        """(seq, kind, ref, version) in drain order: what ack_sent needs to acknowledge."""
        return self.conn.execute("SELECT seq, kind, ref, version FROM outbox ORDER BY seq "
                                 "LIMIT ?", (limit,)).fetchall()

    def ack_sent(self, sent: list[tuple[int, int]]) -> None:
        """Delete the (seq, version) entries that were sent; one changed since stays queued."""
        self.conn.executemany("DELETE FROM outbox WHERE seq = ? AND version = ?", sent)

    def set_aside(self, kind: str, reasons: dict[str, str], now: float) -> None:
        """Move entries the cloud refused for good out of the queue, keeping why."""
        self.conn.executemany("DELETE FROM outbox WHERE kind = ? AND ref = ?",
                              [(kind, ref) for ref in reasons])
        self.conn.executemany("INSERT OR REPLACE INTO outbox_rejected (kind, ref, reason, "
                              "rejected_at) VALUES (?, ?, ?, ?)",
                              [(kind, ref, why, now) for ref, why in reasons.items()])

    def rejected(self) -> list[dict[str, Any]]:
        """Entries set aside (kind, ref, reason, rejected_at), oldest first."""
        rows = self.conn.execute("SELECT kind, ref, reason, rejected_at FROM outbox_rejected "
                                 "ORDER BY rejected_at, ref").fetchall()
        return [{"kind": k, "ref": r, "reason": why, "rejected_at": at} for k, r, why, at in rows]

    def clear_rejected(self, kind: str, refs: list[str]) -> None:
        """Forget set-aside entries that have since reached the cloud (a later fix)."""
        if refs and self.conn.execute("SELECT 1 FROM outbox_rejected LIMIT 1").fetchone():
            self.conn.executemany("DELETE FROM outbox_rejected WHERE kind = ? AND ref = ?",
                                  [(kind, ref) for ref in refs])

    # A fact's created_at bucket exactly as the cloud computes it (cloud.remote._BUCKET),
    # so that a value past 1e12 (taken for milliseconds there) lands in the same bucket.
    _BUCKET = ("CAST(CASE WHEN created_at > 1000000000000 THEN CAST(created_at AS INTEGER) / 1000 "
               "ELSE created_at END AS INTEGER) / ?")
    # Facts the cloud has acknowledged: neither waiting in the outbox nor set aside.
    _SETTLED = ("FROM facts WHERE id NOT IN (SELECT ref FROM outbox WHERE kind = 'fact') "
                "AND id NOT IN (SELECT ref FROM outbox_rejected WHERE kind = 'fact')")

    def settled_buckets(self, width: int) -> dict[int, int]:
        """Acknowledged facts per created_at bucket of `width` seconds (SQLite's integer
        division, as the cloud computes it)."""
        rows = self.conn.execute(f"SELECT {self._BUCKET}, COUNT(*) "
                                 f"{self._SETTLED} GROUP BY 1", (width,)).fetchall()
        return {int(b): int(n) for b, n in rows}

    def settled_ids_in_buckets(self, buckets: list[int], width: int) -> list[str]:
        """Ids of the acknowledged facts in these created_at buckets."""
        out: list[str] = []
        for start in range(0, len(buckets), 500):
            chunk = buckets[start:start + 500]
            out += [r[0] for r in self.conn.execute(
                f"SELECT id {self._SETTLED} AND {self._BUCKET} IN "
                f"({','.join('?' * len(chunk))}) ORDER BY rowid", (width, *chunk))]
        return out

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

    def set_setting(self, key: str, value: str) -> None:
        self.conn.execute("INSERT INTO kv (key, value) VALUES (?, ?) ON CONFLICT(key) "
                          "DO UPDATE SET value = excluded.value", (key, value))

    def replace_tree(self, nodes: list[TreeNode]) -> None:
        self.conn.execute("DELETE FROM tree_nodes")
        for node in nodes:
            self.upsert_node(node)

    def wipe(self, keep_settings: Iterable[str] = ()) -> None:
        """Delete every row of this agent's memory (a revoked device, restore --force);
        `keep_settings` names kv entries to keep (restore keeps the keys it just unlocked)."""
        for table in ("facts", "facts_fts", "fts_pending", "tree_nodes", "hot_state", "outbox",
                      "outbox_rejected", "metrics", "audit"):
            self.conn.execute(f"DELETE FROM {table}")
        kept = list(keep_settings)
        self.conn.execute(f"DELETE FROM kv WHERE key NOT IN ({','.join('?' * len(kept))})",
                          kept)

    def is_empty(self) -> bool:
        """True for a fresh device: no facts, no hot state, no tree."""
        return not (self.conn.execute("SELECT 1 FROM facts LIMIT 1").fetchone()
                    or self.conn.execute("SELECT 1 FROM hot_state LIMIT 1").fetchone()
                    or self.conn.execute("SELECT 1 FROM tree_nodes LIMIT 1").fetchone())
