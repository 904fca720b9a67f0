"""Remote: what the sync engine needs from any cloud, and its one SQL implementation.

Like Litestream's ReplicaClient, the engine knows only this small interface. `SqlRemote`
implements it once over the SqlExecutor interface, so a Turso/sqld database (Hrana over HTTP)
and a local SQLite file (the embedded default, a backup drive) are peers running the same SQL.

Every push is ONE transaction in ONE request, and idempotent: facts are upserts by id and the
critical state is a compare-and-set on its version, so a retry after an unknown outcome (the
commit happened but the answer was lost) neither duplicates nor loses anything.

The codecs (clear or sealed rows, the critical state) are in `codec`, the SQL that is more
than a line in `statements`, the interface and its result types in `protocol`.
"""

from __future__ import annotations

import secrets
import time
from operator import itemgetter
from pathlib import Path
from typing import Any, Optional, Sequence, Union

import msgspec

from evoclaw_memory.cloud.codec import CriticalState, PlainCodec, cloud_seconds
from evoclaw_memory.cloud.sql import SqlExecutor, Stmt
from evoclaw_memory.store.change_clock import micros
from evoclaw_memory.cloud.statements import (AGENTS, BUCKET, CAS_STATE, CLEAR_SUPERSEDED, CLOUD_NOW, CLOUD_NOW_VALUE,
                                             DELETE_FORGOTTEN, DEVICE_AND_TOPS, FACT_COLS, KEPT,
                                             ROWID_MARK,
                                             LOG_CHANGES, MAX_CHANGE_SEQ, PAGE_AS_JSON, PAGE_AS_ROWS,
                                             PULL_CHANGES, PULL_NEW, PULL_TOMBSTONES, READ_BACK_STATE, ROW,
                                             STATEMENT_SPLIT, TOMBSTONE_IDS, UNLOG_FORGOTTEN, UPSERT_FACTS,
                                             UPSERT_ROWS)
from evoclaw_memory.errors import ConfigError, CryptoError, RemoteError, ValidationError
from evoclaw_memory.cloud.protocol import (AgentSummary, ArchiveCounts, Device, PushResult, Remote,
                                           RemoteState)
from evoclaw_memory.models import Fact

# CriticalState lives in codec; memory.py still imports it from here.
__all__ = [
    "AgentSummary", "ArchiveCounts", "CriticalState", "Device", "PushResult", "Remote", "RemoteState", "SqlRemote",
    "migrations_after", "open_remote", "split_statements",
]

_page_decoder = msgspec.json.Decoder(list[list])
_first = itemgetter(0)


def schema_missing(exc: BaseException) -> bool:
    """True when the cloud says a table or column is missing (a new or reset database)."""
    text = str(exc).lower()
    return "no such table" in text or "no such column" in text


class _SchemaHealing:
    """The remote's executor, re-checking the schema once when the cloud answers that a
    table or column is missing: a device that remembers a verified schema sends no check,
    so a database that was reset (or never migrated) is found by the first statement."""

    def __init__(self, executor: SqlExecutor, remote: "SqlRemote"):
        self.inner = executor
        self._remote = remote

    def execute(self, sql: str, args: Any = ()) -> Any:
        try:
            return self.inner.execute(sql, args)
        except RemoteError as exc:
            if not self._remote.heal_schema(exc):
                raise
        return self.inner.execute(sql, args)

    def transaction(self, stmts: list[Stmt]) -> Any:
        try:
            return self.inner.transaction(stmts)
        except RemoteError as exc:
            # A statement error rolls the whole batch back: the retry runs it once.
            if not self._remote.heal_schema(exc):
                raise
        return self.inner.transaction(stmts)

    def close(self) -> None:
        self.inner.close()

    def __getattr__(self, name: str) -> Any:       # pipeline_count, bytes_sent ...
        return getattr(self.inner, name)


class SqlRemote:
    """Remote over any SqlExecutor (HranaClient for Turso/sqld, FileExecutor for a file)."""

    def __init__(self, executor: SqlExecutor, label: str, codec: Optional[PlainCodec] = None):
        self.sql: Any = _SchemaHealing(executor, self)
        self.label = label            # where it is, for messages (never holds a credential)
        self.codec = codec or PlainCodec()
        self.rejected: list[str] = []  # why rows failed to open (tampered), with their ids
        self._schema_checked = False
        self._migrating = False
        self.schema_version: Optional[int] = None   # verified by ensure_schema in this process
        # Whether the database's "now" is a clock of its own (a server's) that devices learn
        # their offset from; a local file's is the reading device's (FileExecutor).
        self.has_clock = bool(getattr(executor, "has_clock", True))

    def assume_schema(self) -> None:
        """Skip the schema check: this device verified this cloud's schema before (a missing
        table or column still triggers ensure_schema and one retry)."""
        self._schema_checked = True

    def heal_schema(self, exc: BaseException) -> bool:
        """After a 'no such table/column' answer: ensure the schema; True to retry once."""
        if self._migrating or not schema_missing(exc):
            return False
        self.ensure_schema()
        return True

    def __enter__(self) -> "SqlRemote":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _facts(self, rows: list[tuple]) -> list[Fact]:
        """Decode archive rows; a row that fails authentication is reported and skipped."""
        return [f for _, f in self._paged([(0, *row) for row in rows])]

    def _paged(self, rows: list[tuple], unreadable: Optional[list] = None) -> list[tuple[int, Fact]]:
        """Decode (rowid, ...) rows, skipping and recording the ones that do not open."""
        out = []
        for row in rows:
            try:
                out.append((int(row[0]), self.codec.fact(row[1:])))
            except (CryptoError, ValidationError) as exc:
                why = f"row {row[1]!r}: {exc}" if isinstance(exc, ValidationError) else str(exc)
                if why not in self.rejected:    # a restore reads a row for warm and the mirror
                    self.rejected.append(why)
                if unreadable is not None:
                    unreadable.append((int(row[0]), str(exc)))
        return out

    # -- schema ------------------------------------------------------------------------------

    def ensure_schema(self) -> int:
        """Apply pending cloud migrations (once per process); returns the schema version."""
        from evoclaw_memory.store import migrate
        self._migrating = True
        try:
            current = self._migrate(migrate)
        finally:
            self._migrating = False
        self._schema_checked = True
        self.schema_version = current
        return current

    def _migrate(self, migrate: Any) -> int:
        self.sql.execute("CREATE TABLE IF NOT EXISTS evoclaw_schema_version (version INTEGER "
                         "PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)")
        current = self.sql.execute(
            "SELECT COALESCE(MAX(version), 0) FROM evoclaw_schema_version").rows[0][0]
        known = migrate.latest_version("cloud")
        if current > known:
            raise RemoteError(f"the cloud database schema ({current}) is newer than this release "
                              f"understands ({known}); upgrade evoclaw-memory")
        for version, name, sql in migrations_after(current):
            stmts = [Stmt(s) for s in split_statements(sql)]
            stmts.append(Stmt("INSERT INTO evoclaw_schema_version VALUES (?, ?, ?)",
                              (version, name, int(time.time()))))
            try:
                self.sql.transaction(stmts)
            except RemoteError:
                # Another device may have migrated at the same moment: re-read and go on.
                again = self.sql.execute(
                    "SELECT COALESCE(MAX(version), 0) FROM evoclaw_schema_version").rows[0][0]
                if again < version:
                    raise
            current = version
        return current

    def _ready(self) -> None:
        if not self._schema_checked:
            self.ensure_schema()

    # -- push / pull ---------------------------------------------------------------------------

    def push(self, agent_id: str, device_id: str, device_name: str, facts: list[Fact],
             state: Optional[CriticalState], expected_version: int, pull_after: int,
             pull_limit: int = 200, forgotten: Sequence[str] = (), revived: Sequence[str] = (),
             tombstones_after: Optional[int] = None, changes_after: Optional[int] = None) -> PushResult:
        """Facts + critical state (CAS on version) + device heartbeat + pull, one transaction.

        `forgotten` ids are deleted with a tombstone each, `revived` ids lose their
        supersession, and with `tombstones_after` other devices' tombstones after that
        cursor come back (PushResult.tombstones), and with `changes_after` the facts other
        devices changed after that change cursor (PushResult.changed) — all in one request."""
        self._ready()
        now = int(time.time())
        stmts = [Stmt(
            "INSERT INTO devices (agent_id, device_id, name, registered_at, last_seen) "
            "VALUES (?, ?, ?, ?, ?) ON CONFLICT(agent_id, device_id) DO UPDATE SET "
            "last_seen = excluded.last_seen", (agent_id, device_id, device_name, now, now))]
        revoked = "SELECT 1 FROM devices WHERE agent_id = ? AND device_id = ? AND revoked_at IS NOT NULL"
        guard_args: tuple = (agent_id, device_id)
        if not self.codec.encrypted:
            # Never write clear text into an agent whose memory another device encrypted.
            revoked += " UNION ALL SELECT 1 FROM evoclaw_keys WHERE agent_id = ?"
            guard_args = (agent_id, device_id, agent_id)
        if forgotten:
            ids = msgspec.json.encode(list(forgotten)).decode()
            stmts.append(Stmt(ROWID_MARK.format(guard=revoked), guard_args))
            stmts.append(Stmt(TOMBSTONE_IDS.format(guard=revoked),
                              (agent_id, now, device_id, ids, *guard_args)))
            stmts.append(Stmt(DELETE_FORGOTTEN.format(guard=revoked), (agent_id, ids, *guard_args)))
            stmts.append(Stmt(UNLOG_FORGOTTEN.format(guard=revoked), (agent_id, ids, *guard_args)))
        if revived:
            stmts.append(Stmt(CLEAR_SUPERSEDED.format(guard=revoked),
                              (agent_id, msgspec.json.encode(list(revived)).decode(),
                               *guard_args)))
        if facts:
            # Which pushed facts change a row another device may hold: before the upserts.
            versions = msgspec.json.encode([[f.id, micros(f.content_changed_at),
                                              micros(f.flags_changed_at), f.superseded_by,
                                              micros(f.superseded_changed_at)]
                                             for f in facts]).decode()
            stmts.append(Stmt(LOG_CHANGES.format(guard=revoked),
                              (agent_id, device_id, versions, agent_id, *guard_args)))
        for start in range(0, len(facts), UPSERT_ROWS):
            # Many rows per statement keeps the request small (the SQL is sent once per chunk).
            # A revoked device writes nothing: the guard is inside the statement itself.
            chunk = facts[start:start + UPSERT_ROWS]
            args: list = []
            for fact in chunk:
                args += self.codec.fact_args(agent_id, device_id, fact)
            stmts.append(Stmt(UPSERT_FACTS.format(rows=", ".join([ROW] * len(chunk)),
                                                   guard=revoked), (*args, *guard_args, agent_id)))
        kept_at = len(stmts)
        if facts:
            stmts.append(Stmt(KEPT, (versions, agent_id)))
        new_version = expected_version + 1
        # A nonce per push, not per attempt: the client's own retry of this request after a
        # lost answer carries the same one, so a commit it cannot see still counts as ours.
        nonce = secrets.token_hex(8) if state is not None else None
        # The cloud's state (version, nonce) before this push: SyncEngine.state_lost tells
        # from it whether the cloud lost data since this device last synced.
        state_check_at = len(stmts)
        stmts.append(Stmt("SELECT version, push_nonce FROM critical_state WHERE agent_id = ?",
                          (agent_id,)))
        if state is not None:
            stmts.append(Stmt(
                CAS_STATE.format(guard=revoked),
                (agent_id, self.codec.state_data(state), now, new_version, device_id, nonce,
                 *guard_args, expected_version)))
        # Other devices' forgets after our cursor (read before the last three, which are
        # found from the end).
        tomb_at = len(stmts)
        if tombstones_after is not None:
            stmts.append(Stmt(PULL_TOMBSTONES, (agent_id, tombstones_after, device_id, pull_limit)))
        changes_at = len(stmts)
        if changes_after is not None:
            stmts.append(Stmt(PULL_CHANGES, (agent_id, changes_after, device_id, pull_limit)))
        # Read back: did THIS compare-and-set apply (our version and nonce), or what is the
        # cloud's state? Version and device alone would also match another sync of this
        # device, or an earlier push whose answer was lost: its state, not this one.
        # The data comes back only when it is news: a write other than ours, or a version
        # other than the one we just wrote (pushing) or already have (not pushing).
        stmts.append(Stmt(
            READ_BACK_STATE,
            (new_version if state is not None else expected_version, nonce, nonce, agent_id)))
        stmts.append(Stmt(DEVICE_AND_TOPS, (agent_id, device_id, agent_id, agent_id)))
        stmts.append(Stmt(CLOUD_NOW))
        stmts.append(Stmt(PULL_NEW, (agent_id, pull_after, device_id, pull_limit)))
        results = self.sql.transaction(stmts)
        state_rows, device_rows, pulled_rows = results[-4].rows, results[-3].rows, results[-1].rows
        cloud_now = results[-2].rows[0][0] if results[-2].rows and self.has_clock else None
        unreadable: list[tuple[int, str]] = []
        unreadable_changes: list[tuple[int, str]] = []
        needs_keys = False
        is_revoked = device_rows[0][0] is not None
        if device_rows[0][1] and not self.codec.encrypted:
            raise CryptoError("this agent's cloud memory is end-to-end encrypted (set up on "
                              "another device): unlock it here with the passphrase "
                              "(EVOCLAW_PASSPHRASE) before syncing; nothing was sent in clear")
        remote: Optional[RemoteState] = None
        version = 0
        state_pushed = False
        row_nonce: Optional[str] = None
        if state_rows:
            version, writer, data, updated, row_nonce = state_rows[0]
            version = int(version or 0)
            state_pushed = state is not None and data is None and version == new_version
            if data is not None:
                try:
                    remote = RemoteState(version=version, device_id=writer,
                                         state=self.codec.state(data),
                                         updated_at=float(updated or 0))
                except CryptoError as exc:
                    if "not in this keyring" not in str(exc):
                        raise
                    needs_keys = True           # another device rotated: refresh, retry
        return PushResult(facts=0 if is_revoked else len(facts), state_pushed=state_pushed,
                          remote=remote, version=version, revoked=is_revoked,
                          pulled=self._paged(pulled_rows, unreadable),
                          unreadable=unreadable, needs_keys=needs_keys, nonce=row_nonce,
                          tombstones=[] if tombstones_after is None else
                          [(int(r[0]), str(r[1])) for r in results[tomb_at].rows],
                          changed=[] if changes_after is None else
                          self._paged(results[changes_at].rows, unreadable_changes),
                          unreadable_changes=unreadable_changes,
                          tops=(int(device_rows[0][2] or 0), int(device_rows[0][3] or 0),
                                int(device_rows[0][4] or 0)),
                          kept=self._facts(results[kept_at].rows) if facts else [],
                          state_before=(int(results[state_check_at].rows[0][0] or 0),
                                        results[state_check_at].rows[0][1])
                          if results[state_check_at].rows else None,
                          cloud_now=float(cloud_now) if cloud_now is not None else None)

    def pull_state(self, agent_id: str) -> Optional[RemoteState]:
        self._ready()
        # One row whether or not the agent has a state: the cloud's clock comes with it.
        rows = self.sql.execute(f"SELECT c.version, c.device_id, c.data, c.updated_at, "
                                f"({CLOUD_NOW_VALUE}) FROM (SELECT 1) LEFT JOIN critical_state c "
                                f"ON c.agent_id = ?", (agent_id,)).rows
        version, writer, data, updated, cloud_now = rows[0]
        cloud_now = cloud_now if self.has_clock else None
        return RemoteState(version=int(version or 0), device_id=writer,
                           state=self.codec.state(data) if data is not None else None,
                           updated_at=float(updated or 0),
                           cloud_now=float(cloud_now) if cloud_now is not None else None)

    def fetch_facts(self, agent_id: str, after_rowid: int, limit: int) -> list[tuple[int, Fact]]:
        """A page of the archive in rowid order (restore --full resumes from the last rowid)."""
        return self.open_page(self.download_page(agent_id, after_rowid, limit))

    def download_page(self, agent_id: str, after_rowid: int, limit: int) -> Union[str, list]:
        """fetch_facts' network half: the page as it came, for open_page(). A download thread
        that runs only this mostly waits on the socket and leaves Python to the thread that
        decodes and writes (restore)."""
        self._ready()
        args = (agent_id, after_rowid, limit)
        try:
            # The page as ONE JSON value built by the server: a third of the bytes of Hrana's
            # typed per-value encoding, and one decode instead of eleven conversions a row.
            return self.sql.execute(PAGE_AS_JSON, args).rows[0][0] or "[]"
        except RemoteError as exc:
            if "blob" not in str(exc).lower():
                raise
            # JSON cannot carry BLOBs (a row some other tool wrote): the plain, typed way.
            return self.sql.execute(PAGE_AS_ROWS, args).rows

    def open_page(self, page: Union[str, list]) -> list[tuple[int, Fact]]:
        """(rowid, fact) pairs of a downloaded page; rows that do not open are skipped."""
        # JSON pages decode to lists, not tuples: the codecs only index and unpack a row.
        rows: list[Any] = sorted(_page_decoder.decode(page), key=_first) if isinstance(page, str) else page
        return self._paged(rows)

    def recent_candidates(self, agent_id: str, since: float, limit: int) -> list[tuple]:
        """(id, importance, created_at, access_count, stored text length, pinned) of live facts
        created since `since`, and of every pinned one (the vault is on every device): enough
        to score them, a fraction of the bytes of the rows themselves."""
        self._ready()
        return self.sql.execute(
            "SELECT id, importance, created_at, access_count, length(text), flags & 1 "
            "FROM cold_memories WHERE agent_id = ? AND (created_at >= ? OR flags & 1) AND "
            "superseded_by IS NULL ORDER BY flags & 1 DESC, created_at DESC LIMIT ?",
            (agent_id, int(since), limit)).rows

    def facts_by_ids(self, agent_id: str, ids: list[str]) -> list[Fact]:
        """Whole facts by id (in chunks, one request each)."""
        self._ready()
        out: list[Fact] = []
        for start in range(0, len(ids), 500):
            chunk = ids[start:start + 500]
            rows = self.sql.execute(
                f"SELECT {FACT_COLS} FROM cold_memories WHERE agent_id = ? AND id IN "
                f"({','.join('?' * len(chunk))})", (agent_id, *chunk)).rows
            out += self._facts(rows)
        return out

    def max_rowid(self, agent_id: str) -> int:
        """The archive's newest rowid for this agent (where a fresh device's pull cursor starts)."""
        self._ready()
        rows = self.sql.execute("SELECT rowid FROM cold_memories WHERE +agent_id = ? "
                                "ORDER BY rowid DESC LIMIT 1", (agent_id,)).rows
        return int(rows[0][0]) if rows else 0

    def max_change_seq(self, agent_id: str) -> int:
        """The change feed's newest seq for this agent (a restored device starts there: the
        rows it restores already hold every change up to it)."""
        self._ready()
        return int(self.sql.execute(MAX_CHANGE_SEQ, (agent_id,)).rows[0][0])

    def archive_buckets(self, agent_id: str, width: int) -> ArchiveCounts:
        """The agent's facts per created_at bucket of `width` seconds, the critical state's
        version and the newest rowid, in ONE request (sync --verify, daily consolidation)."""
        self._ready()
        rows = self.sql.execute(
            "SELECT 'state', push_nonce, version FROM critical_state WHERE agent_id = ? "
            "UNION ALL "
            # The table's newest rowid, not the agent's: a pull cursor at or below it misses
            # nothing written later (pull cursors move past other agents' rows too).
            "SELECT 'rowid', NULL, MAX(rowid) FROM cold_memories UNION ALL "
            f"SELECT 'bucket', {BUCKET} AS b, COUNT(*) FROM cold_memories WHERE agent_id = ? "
            "GROUP BY b", (agent_id, width, agent_id)).rows
        counts = ArchiveCounts()
        for kind, bucket, value in rows:
            if kind == "state":
                counts.state_version, counts.state_nonce = int(value or 0), bucket
            elif kind == "rowid":
                counts.max_rowid = int(value or 0)
            else:
                counts.buckets[int(bucket)] = int(value)
        return counts

    def ids_in_buckets(self, agent_id: str, buckets: list[int], width: int) -> set[str]:
        """Ids of the agent's facts in these created_at buckets (one request per 500)."""
        self._ready()
        found: set[str] = set()
        for start in range(0, len(buckets), 500):
            chunk = buckets[start:start + 500]
            found.update(r[0] for r in self.sql.execute(
                f"SELECT id FROM cold_memories WHERE agent_id = ? AND {BUCKET} IN "
                f"({','.join('?' * len(chunk))})", (agent_id, width, *chunk)).rows)
        return found

    def count_facts(self, agent_id: str) -> int:
        self._ready()
        return int(self.sql.execute("SELECT COUNT(*) FROM cold_memories WHERE agent_id = ?",
                                    (agent_id,)).rows[0][0])

    def query_cold(self, agent_id: str, text: Optional[str], categories: Optional[list[str]],
                   limit: int) -> list[Fact]:
        """Archive rows filed under any of `categories` and/or containing a text fragment,
        newest first. An encrypted archive filters categories by keyed hash in the database
        and text on the device, over the decrypted candidates."""
        self._ready()
        where, args = ["agent_id = ?", "superseded_by IS NULL"], [agent_id]
        if categories:
            ors = []
            for path in categories:
                token = self.codec.category(path)
                if self.codec.encrypted:        # "<token> <sealed path>": a range on the index
                    ors.append("(category > ? AND category < ?)")
                    args += [token + " ", token + "!"]
                else:
                    ors.append("category = ?")
                    args.append(token)
            where.append("(" + " OR ".join(ors) + ")")
        if text and not self.codec.encrypted:
            where.append("instr(lower(text), lower(?)) > 0")
            args.append(text)
        fetch = limit * 20 if text and self.codec.encrypted else limit
        rows = self.sql.execute(f"SELECT {FACT_COLS} FROM cold_memories WHERE "
                                f"{' AND '.join(where)} ORDER BY created_at DESC LIMIT ?",
                                (*args, fetch)).rows
        facts = self._facts(rows)
        if text and self.codec.encrypted:
            facts = [f for f in facts if text.lower() in f.text.lower()]
        return facts[:limit]

    # -- keys ----------------------------------------------------------------------------------

    def get_keyring(self, agent_id: str) -> Optional[str]:
        """The agent's wrapped-keyring record (JSON), if encryption was ever set up."""
        self._ready()
        rows = self.sql.execute("SELECT data FROM evoclaw_keys WHERE agent_id = ?",
                                (agent_id,)).rows
        return rows[0][0] if rows else None

    def put_keyring(self, agent_id: str, data: str, expected: Optional[str]) -> bool:
        """Store the keyring record if the cloud still holds `expected` (None: no record yet)."""
        self._ready()
        if expected is None:
            result = self.sql.execute("INSERT OR IGNORE INTO evoclaw_keys (agent_id, data, "
                                      "updated_at) VALUES (?, ?, ?)",
                                      (agent_id, data, int(time.time())))
        else:
            result = self.sql.execute("UPDATE evoclaw_keys SET data = ?, updated_at = ? WHERE "
                                      "agent_id = ? AND data = ?",
                                      (data, int(time.time()), agent_id, expected))
        return result.affected_row_count == 1

    def unsealed_page(self, agent_id: str, after_rowid: int, keep_prefix: str,
                      limit: int) -> list[tuple]:
        """(rowid, ...) rows of the agent after `after_rowid` whose text does not start with
        `keep_prefix` (today's sealed form under the current key): what a re-seal rewrites."""
        self._ready()
        return self.sql.execute(
            f"SELECT rowid, {FACT_COLS} FROM cold_memories WHERE +agent_id = ? AND rowid > ? "
            "AND substr(text, 1, ?) != ? ORDER BY rowid LIMIT ?",
            (agent_id, after_rowid, len(keep_prefix), keep_prefix, limit)).rows

    def state_row(self, agent_id: str) -> Optional[tuple[int, str]]:
        """(version, data as stored) of the agent's critical state, not opened."""
        self._ready()
        rows = self.sql.execute("SELECT version, data FROM critical_state WHERE agent_id = ?",
                                (agent_id,)).rows
        return (int(rows[0][0] or 0), rows[0][1]) if rows else None

    def count_unsealed(self, agent_id: str, after_rowid: int, keep_prefix: str) -> int:
        """How many rows unsealed_page() has left to give."""
        self._ready()
        return int(self.sql.execute(
            "SELECT COUNT(*) FROM cold_memories WHERE agent_id = ? AND rowid > ? AND "
            "substr(text, 1, ?) != ?",
            (agent_id, after_rowid, len(keep_prefix), keep_prefix)).rows[0][0])

    # -- devices -----------------------------------------------------------------------------

    def devices(self, agent_id: str) -> list[Device]:
        self._ready()
        rows = self.sql.execute("SELECT device_id, name, registered_at, last_seen, revoked_at "
                                "FROM devices WHERE agent_id = ? ORDER BY registered_at",
                                (agent_id,)).rows
        return [Device(device_id=r[0], name=r[1], registered_at=int(r[2]), last_seen=int(r[3]),
                       revoked_at=None if r[4] is None else int(r[4])) for r in rows]

    def revoke(self, agent_id: str, device_id: str) -> bool:
        """Mark a device revoked; it wipes its local memory at its next sync."""
        self._ready()
        result = self.sql.execute("UPDATE devices SET revoked_at = ? WHERE agent_id = ? AND "
                                  "device_id = ? AND revoked_at IS NULL",
                                  (int(time.time()), agent_id, device_id))
        return result.affected_row_count > 0

    def retire(self, agent_id: str, device_id: str, new_id: str, new_name: str,
               default_names: Sequence[str] = ()) -> bool:
        """Retire a device id its own device has replaced (a restore gives the device a new
        id): its row passes to `new_id`, so `devices list` shows the device once, under its
        new id, with the name the owner gave it (a default name, one of `default_names`,
        becomes `new_name`). A revoked id is left as it is (it stays locked out, and the new
        id does not inherit the revocation); a row the new id already has wins. An old id
        that pushes again registers again: it is plainly in use. One request; False when
        there was nothing to retire."""
        self._ready()
        now = int(time.time())
        names = list(default_names)
        results = self.sql.transaction([
            Stmt("UPDATE devices SET device_id = ?, last_seen = ?, name = CASE WHEN name = '' "
                 f"OR name IN ({','.join('?' * len(names)) or 'NULL'}) THEN ? ELSE name END "
                 "WHERE agent_id = ? AND device_id = ? AND revoked_at IS NULL AND NOT EXISTS "
                 "(SELECT 1 FROM devices WHERE agent_id = ? AND device_id = ?)",
                 (new_id, now, *names, new_name, agent_id, device_id, agent_id, new_id)),
            Stmt("DELETE FROM devices WHERE agent_id = ? AND device_id = ? AND revoked_at IS NULL",
                 (agent_id, device_id))])
        return any(r.affected_row_count for r in results)

    def agents(self) -> list[AgentSummary]:
        """Every agent this cloud holds, with its counts (one request, no key needed)."""
        self._ready()
        out = []
        for agent_id, devices, facts, seen, updated, has_state, keyring in \
                self.sql.execute(AGENTS).rows:
            # The newest heartbeat; an agent only the original skill wrote has its state's
            # time (in seconds, or milliseconds from a hand-written row).
            last = max(float(seen or 0), cloud_seconds(updated))
            out.append(AgentSummary(agent_id=str(agent_id), devices=int(devices or 0),
                                    facts=int(facts or 0), last_sync=last or None,
                                    encrypted=bool(keyring), has_state=bool(has_state)))
        return out

    def rename(self, agent_id: str, device_id: str, name: str) -> bool:
        """Give a registered device a new name; False when no such device."""
        self._ready()
        result = self.sql.execute("UPDATE devices SET name = ? WHERE agent_id = ? AND "
                                  "device_id = ?", (name, agent_id, device_id))
        return result.affected_row_count > 0

    def ping(self) -> float:
        """Seconds for a bare `SELECT 1` round trip."""
        started = time.perf_counter()
        self.sql.execute("SELECT 1")
        return time.perf_counter() - started

    def close(self) -> None:
        self.sql.close()


def split_statements(sql: str) -> list[str]:
    """The statements of a migration file (ours end each statement with ';' at a line end)."""
    body = "\n".join(line for line in sql.splitlines() if not line.strip().startswith("--"))
    return [s.strip() for s in STATEMENT_SPLIT.split(body + "\n") if s.strip()]


def migrations_after(version: int) -> list[tuple[int, str, str]]:
    from evoclaw_memory.store import migrate
    return [m for m in migrate.migrations("cloud") if m[0] > version]


def open_remote(url: Optional[str], token: Optional[str], default_file: Path,
                timeout: float = 10.0, retries: int = 4) -> SqlRemote:
    """The Remote for a configured URL: libsql://, https://, http:// (Hrana), file: or an
    absolute or ./-relative path (a local file), or `default_file` when nothing is configured
    (validate.cloud_target refuses anything else)."""
    if not url:
        from evoclaw_memory.cloud.sql import FileExecutor
        return SqlRemote(FileExecutor(default_file), label=f"file {default_file}")
    from evoclaw_memory.validate import cloud_target
    try:
        kind, target = cloud_target(url)
    except ValidationError as exc:
        raise ConfigError(str(exc)) from None
    if kind == "network":
        from evoclaw_memory.cloud.hrana import HranaClient
        client = HranaClient(target, token, timeout=timeout, retries=retries)
        return SqlRemote(client, label=client.base_url)
    url = target
    path = Path(url).expanduser()
    if not path.parent.exists():
        raise ConfigError(f"cloud file folder {path.parent} does not exist")
    from evoclaw_memory.cloud.sql import FileExecutor
    return SqlRemote(FileExecutor(path), label=f"file {path}")
