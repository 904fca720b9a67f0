"""Opening the device database: create it private, tune and migrate it, and tell a new
device from damage (a marker file says the folder once held memory)."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from pathlib import Path
from typing import TYPE_CHECKING, cast

import msgspec

from evoclaw_memory import durable
from evoclaw_memory.config import private_dir
from evoclaw_memory.errors import DamagedStoreError, ReadOnlyStoreError, StoreError
from evoclaw_memory.store import migrate

if TYPE_CHECKING:
    from evoclaw_memory.store.local import LocalStore


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
        durable.write_new(marker, msgspec.json.encode(
            {"format": 1, "created_at": time.time(),
             "note": "this folder holds an evoclaw memory; keep this file"}) + b"\n")
    except OSError:         # a folder SQLite could use but we cannot add to
        return


class OpeningMixin:
    """LocalStore's constructors: open() with damage detection, and the placeholder that
    replaces a damaged file for restore --force."""

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
            # The mixin is only ever LocalStore's base: cls is LocalStore (or a subclass).
            store = cast("type[LocalStore]", cls)(conn, path)
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

