"""A small migration runner: numbered .sql files applied in order, once each.

Used for the device database (schema/local) and, by the cloud side, for the cloud database
(schema/cloud). Re-running is a no-op; a database migrated by a newer release is refused.
"""

from __future__ import annotations

import re
import sqlite3
import time
from pathlib import Path
from typing import Any

import msgspec

from evoclaw_memory.errors import StoreError
from evoclaw_memory.models import Metadata
from evoclaw_memory.text import alias_pairs, key_and_body, key_digest, normalized_key

_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql\Z")
_SCHEMA = Path(__file__).resolve().parent.parent / "schema"


def _folder(kind: str) -> Any:
    """The migrations folder: a plain folder beside the package (checked first: every open
    of the store lists it, and importlib.resources costs start-up), else package data."""
    plain = _SCHEMA / kind
    if plain.is_dir():
        return plain
    from importlib import resources
    return resources.files("evoclaw_memory") / "schema" / kind


def _entries(kind: str) -> list[tuple[int, Any]]:
    found = []
    for entry in _folder(kind).iterdir():
        match = _NAME.match(entry.name)
        if match:
            found.append((int(match.group(1)), entry))
    return sorted(found, key=lambda item: item[0])


def migrations(kind: str) -> list[tuple[int, str, str]]:
    """(version, file name, sql) of every migration of `kind` ('local' or 'cloud'), in order."""
    return [(v, e.name, e.read_text(encoding="utf-8")) for v, e in _entries(kind)]


def latest_version(kind: str) -> int:
    """The highest migration number this release knows (file names only: nothing is read)."""
    entries = _entries(kind)
    return entries[-1][0] if entries else 0


def apply_local(conn: sqlite3.Connection) -> int:
    """Bring a device database up to date; returns its version. Raises StoreError if newer."""
    # SQL functions the migration files may call (deterministic, so indexes could use them).
    conn.create_function("evoclaw_key_digest", 1, key_digest, deterministic=True)
    conn.create_function("evoclaw_normalized_key", 1, normalized_key, deterministic=True)
    conn.create_function("evoclaw_index_body", 3, _index_body, deterministic=True)
    conn.create_function("evoclaw_alias_pairs", 1,
                         lambda text: msgspec.json.encode(alias_pairs(text or "")).decode(),
                         deterministic=True)
    conn.execute("CREATE TABLE IF NOT EXISTS schema_version "
                 "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at REAL NOT NULL)")
    current = conn.execute("SELECT COALESCE(MAX(version), 0) FROM schema_version").fetchone()[0]
    entries = _entries("local")
    known = entries[-1][0] if entries else 0
    if current > known:
        raise StoreError(f"database schema version {current} is newer than this release "
                         f"understands ({known}); upgrade evoclaw-memory")
    # Every migration not recorded yet, in order, not only those above the highest: numbers
    # are reserved per feature, so a database can hold 0009 before 0008 exists (a build of
    # one branch) and must still get 0008 when it arrives.
    applied = {row[0] for row in conn.execute("SELECT version FROM schema_version")}
    for version, entry in entries:
        if version in applied:
            continue
        name, sql = entry.name, entry.read_text(encoding="utf-8")
        # executescript commits first; wrap the file in its own transaction so a failed
        # migration leaves the database at the previous version.
        try:
            conn.executescript(f"BEGIN;\n{sql}\nINSERT INTO schema_version VALUES "
                               f"({version}, '{name}', {time.time()!r});\nCOMMIT;")
        except sqlite3.Error as exc:
            conn.execute("ROLLBACK") if conn.in_transaction else None
            raise StoreError(f"migration {name} failed: {exc}") from exc
        current = max(current, version)
    return current


def _index_body(text: str, category: str, metadata: str) -> str:
    """A stored fact's full-text body, as tree_keeper.index_body makes it for a new fact."""
    try:
        meta = msgspec.json.decode(metadata or "{}", type=Metadata)
    except msgspec.MsgspecError:
        meta = Metadata()         # an unreadable metadata column still gets its text indexed
    extra = "" if meta.is_empty() else " ".join(meta.urls + meta.commands + meta.paths)
    return key_and_body(text or "", category or "", extra)[1]
