"""The small SQL-executor interface the cloud code is written against, and its file version.

One body of SQL logic (migrations, push, pull, restore) runs unchanged over Hrana (Turso, a
self-hosted sqld) or over a local SQLite file (the embedded default, a backup drive), because
both implement `SqlExecutor`. Arguments are positional `?` values: None, int, float, str,
bytes; rows come back as tuples of the same types.
"""

from __future__ import annotations

import math
import os
import sqlite3
import threading
from pathlib import Path
from typing import Protocol, Sequence, runtime_checkable

import msgspec

from evoclaw_memory.config import private_dir
from evoclaw_memory.errors import RemoteError, ValidationError

Value = None | int | float | str | bytes
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


class Stmt(msgspec.Struct, frozen=True):
    """One SQL statement with positional `?` arguments."""

    sql: str
    args: tuple | list = ()


class ResultSet(msgspec.Struct):
    """What one statement returned: column names, rows, and write counters."""

    columns: list[str]
    rows: list[tuple]
    affected_row_count: int = 0
    last_insert_rowid: int | None = None


@runtime_checkable
class SqlExecutor(Protocol):
    """Run SQL against some database: a Hrana server or a local file."""

    def execute(self, sql: str, args: Sequence[Value] = ()) -> ResultSet:
        """Run one statement (outside any explicit transaction) and return its result."""
        ...

    def transaction(self, stmts: list[Stmt]) -> list[ResultSet]:
        """Run all statements as one all-or-nothing transaction (one request over Hrana)."""
        ...

    def close(self) -> None:
        """Release connections; the executor is unusable afterwards."""
        ...


def check_value(value: object) -> Value:
    """Return value as one of the five SQL value types, or raise ValidationError."""
    # bool is an int subclass: store it as 0/1 like SQLite does, identically on both sides.
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, float):
        # JSON (hence Hrana) cannot carry NaN or infinities; refuse them on both sides alike.
        if not math.isfinite(value):
            raise ValidationError(f"non-finite float {value} cannot be stored")
        return value
    if isinstance(value, int):
        if not INT64_MIN <= value <= INT64_MAX:
            raise ValidationError(f"integer {value} does not fit SQLite's 64-bit range")
        return int(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise ValidationError(f"unsupported SQL argument type {type(value).__name__}")


def statement_failure(index: int, sql: str, message: str) -> str:
    """One-line description of the statement that broke a transaction."""
    # Only the SQL text (which carries no argument values) is shown, shortened.
    snippet = " ".join(sql.split())
    if len(snippet) > 80:
        snippet = snippet[:77] + "..."
    return f"transaction rolled back: statement {index + 1} ({snippet}) failed: {message}"


def _remote_error(message: str, code: str | None) -> RemoteError:
    """A RemoteError carrying the SQLite/server error code as `.server_code`."""
    err = RemoteError(message)
    err.server_code = code
    return err


class FileExecutor:
    """SqlExecutor over a local SQLite file (stdlib sqlite3, WAL), thread-safe."""

    # Its "now" is the reading device's own clock, not a clock of the cloud's: no offset to
    # learn from it (store/cloud_time.py); devices on a file cloud keep their own clocks.
    has_clock = False

    def __init__(self, path: str | os.PathLike, *, busy_timeout: float = 10.0):
        self.path = Path(path)
        try:
            self._create_private(self.path)
            # Autocommit mode (isolation_level=None): transactions are exactly the BEGIN/COMMIT
            # we send, never ones the sqlite3 module opens behind our back.
            self._conn = sqlite3.connect(self.path, timeout=busy_timeout, isolation_level=None,
                                         check_same_thread=False)
            self._conn.execute("PRAGMA journal_mode=WAL")
        except (sqlite3.Error, OSError) as e:
            raise _remote_error(f"cannot open {self.path}: {e}", _code(e)) from None
        # One connection shared by threads (the sync engine runs in the background).
        self._lock = threading.Lock()

    @staticmethod
    def _create_private(path: Path) -> None:
        """Create a new database file 0600 inside a 0700 folder; leave existing ones alone."""
        if path.exists():
            return
        private_dir(path.parent)
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        except FileExistsError:
            pass  # another process created it first: fine, it is theirs to have set up

    def execute(self, sql: str, args: Sequence[Value] = ()) -> ResultSet:
        """Run one statement in autocommit mode."""
        with self._lock:
            try:
                return self._run(sql, args)
            except sqlite3.Error as e:
                raise _remote_error(f"{self.path.name}: {_describe(e)}", _code(e)) from None

    def transaction(self, stmts: list[Stmt]) -> list[ResultSet]:
        """Run statements between BEGIN IMMEDIATE and COMMIT; roll back everything on error."""
        if not stmts:
            return []
        with self._lock:
            try:
                # IMMEDIATE takes the write lock up front, so a concurrent writer makes us wait
                # (busy_timeout) at BEGIN instead of failing half-way through.
                self._conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as e:
                raise _remote_error(f"{self.path.name}: {_describe(e)}", _code(e)) from None
            results = []
            for i, stmt in enumerate(stmts):
                try:
                    results.append(self._run(stmt.sql, stmt.args))
                except (sqlite3.Error, ValidationError) as e:
                    self._rollback()
                    if isinstance(e, ValidationError):
                        raise
                    raise _remote_error(statement_failure(i, stmt.sql, _describe(e)),
                                        _code(e)) from None
            try:
                self._conn.execute("COMMIT")
            except sqlite3.Error as e:
                self._rollback()
                raise _remote_error(f"{self.path.name}: commit failed: {_describe(e)}",
                                    _code(e)) from None
            return results

    def _rollback(self) -> None:
        """Roll back if a transaction is still open (SQLite may already have ended it)."""
        if self._conn.in_transaction:
            self._conn.execute("ROLLBACK")

    def _run(self, sql: str, args: Sequence[Value]) -> ResultSet:
        """Execute one statement on the connection and collect its whole result."""
        values = [check_value(a) for a in args]
        before = self._conn.total_changes
        cur = self._conn.execute(sql, values)
        try:
            rows = cur.fetchall()
            columns = [d[0] for d in cur.description] if cur.description else []
            changed = self._conn.total_changes - before
            # Like sqld: a rowid only for statements that actually inserted rows, and the
            # count of changed rows (0 for reads and schema changes, not sqlite3's -1).
            inserted = changed > 0 and cur.lastrowid not in (None, 0) and _is_insert(sql)
            return ResultSet(columns=columns, rows=rows, affected_row_count=max(cur.rowcount, 0),
                             last_insert_rowid=cur.lastrowid if inserted else None)
        finally:
            cur.close()

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._conn.close()

    def __enter__(self) -> "FileExecutor":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"FileExecutor({str(self.path)!r})"


def _is_insert(sql: str) -> bool:
    """Whether a statement is an INSERT or REPLACE (sqld reports a rowid only for those)."""
    return sql.lstrip().upper().startswith(("INSERT", "REPLACE"))


def _code(e: BaseException) -> str | None:
    """SQLite's symbolic error code (e.g. SQLITE_CONSTRAINT_PRIMARYKEY) when known."""
    return getattr(e, "sqlite_errorname", None)


def _describe(e: BaseException) -> str:
    """`CODE: message` on one line."""
    code = _code(e)
    text = " ".join(str(e).split())
    return f"{code}: {text}" if code else text
