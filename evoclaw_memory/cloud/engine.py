"""SyncEngine: drains the local outbox to a Remote, in order, and pulls what others wrote.

One round = ONE Remote.push (one request, one transaction) carrying up to `batch_size` queued
facts, the coalesced critical state, a device heartbeat and a pull of other devices' facts.
Outbox rows are acknowledged only after the cloud committed, in the same local transaction
that records the new remote version, so a crash anywhere means a retry, never a loss; and
the push is idempotent, so a retry never duplicates.
"""

from __future__ import annotations

import socket
import time
from typing import Protocol

import msgspec

from ..errors import DeviceRevoked, RemoteError
from ..models import Fact
from ..store import LocalStore
from .remote import CriticalState, Remote

BATCH_SIZE = 500             # facts per request: keeps one request well under a megabyte
MAX_CONFLICT_ROUNDS = 5      # merges in one sync before giving up (another device is busy)
OUTBOX_MAX_FACTS = 100_000   # offline queue bound; past it, facts are re-sent from the store

KV_REMOTE_VERSION = "sync.remote_version"
KV_PULL_CURSOR = "sync.pull_cursor"
KV_LAST_PUSH = "sync.last_push"
KV_DEVICE_ID = "device_id"


class LocalSide(Protocol):
    """What the engine needs from the device's memory (implemented by Memory)."""

    store: LocalStore

    def critical_state(self) -> CriticalState: ...

    def adopt_remote_state(self, remote: CriticalState) -> bool: ...

    def insert_pulled(self, facts: list[Fact]) -> int: ...

    def wipe_local(self) -> None: ...


class SyncReport(msgspec.Struct):
    """What one sync moved."""

    pushed_facts: int = 0
    state_pushed: bool = False
    pulled_facts: int = 0
    merged: bool = False
    remote_version: int = 0
    requests: int = 0
    outbox_depth: int = 0
    seconds: float = 0.0


def device_id(store: LocalStore) -> str:
    """This device's id, made once and kept in the local database."""
    found = store.get_setting(KV_DEVICE_ID)
    if found:
        return found
    import secrets
    new = "dev-" + secrets.token_hex(6)
    with store.transaction():
        store.set_setting(KV_DEVICE_ID, new)
    return new


class SyncEngine:
    """Pushes the outbox of one agent's LocalSide to a Remote and pulls back."""

    def __init__(self, local: LocalSide, remote: Remote, agent_id: str,
                 batch_size: int = BATCH_SIZE):
        self.local = local
        self.store = local.store
        self.remote = remote
        self.agent_id = agent_id
        self.batch_size = batch_size
        self.device_id = device_id(self.store)
        self.device_name = socket.gethostname()[:64]

    def status(self) -> dict:
        """Outbox depth, last push time, last known remote version (no network)."""
        last = self.store.get_setting(KV_LAST_PUSH)
        return {"outbox_depth": self.store.outbox_depth(),
                "last_push": float(last) if last else None,
                "remote_version": int(self.store.get_setting(KV_REMOTE_VERSION) or 0),
                "device_id": self.device_id}

    def sync(self) -> SyncReport:
        """Drain the outbox and pull; raises Unavailable (work stays queued) or DeviceRevoked."""
        started = time.perf_counter()
        report = SyncReport()
        compact_outbox(self.store, OUTBOX_MAX_FACTS)
        conflicts = 0
        refreshed = False
        while True:
            entries = self.store.outbox(limit=self.batch_size + 1)
            fact_entries = [(seq, ref) for seq, kind, ref in entries if kind == "fact"][:self.batch_size]
            state_entry = next((seq for seq, kind, _ in entries if kind == "state"), None)
            resync = next((seq for seq, kind, _ in entries if kind == "resync"), None)
            facts = self.store.facts_by_ids([ref for _, ref in fact_entries])
            if resync is not None and len(facts) < self.batch_size:
                queued = {f.id for f in facts}
                facts += [f for f in self._resync_page(self.batch_size - len(facts))
                          if f.id not in queued]
            expected = int(self.store.get_setting(KV_REMOTE_VERSION) or 0)
            cursor = int(self.store.get_setting(KV_PULL_CURSOR) or 0)
            # New facts change the tree's counts, so the state goes with every batch of facts
            # (remember() queues the fact alone; see Memory._insert).
            state = self.local.critical_state() if state_entry is not None or facts else None
            # Unavailable propagates: nothing was acknowledged, the outbox keeps the work.
            result = self.remote.push(self.agent_id, self.device_id, self.device_name, facts,
                                      state, expected, cursor)
            report.requests += 1
            if result.revoked:
                self.local.wipe_local()
                raise DeviceRevoked("this device was revoked by its owner: its local memory "
                                    "has been wiped; restore on a trusted device")
            pulled = [f for _, f in result.pulled]
            cursor_after = max([cursor] + [r for r, _ in result.pulled])
            # Rows sealed under a data key this device has not seen (a rotation on another
            # device) are not skipped: the cursor stops before them, the keyring is refreshed
            # and they are pulled again.
            newer_key = [r for r, why in result.unreadable if "not in this keyring" in why]
            if newer_key:
                cursor_after = max(cursor, min(newer_key) - 1)
                pulled = [f for r, f in result.pulled if r <= cursor_after]
            with self.store.transaction():
                self.store.ack_outbox([seq for seq, _ in fact_entries])
                if result.state_pushed and state_entry is not None:
                    self.store.ack_outbox([state_entry])   # a newer change has a newer seq
                self.store.set_setting(KV_REMOTE_VERSION, str(result.version))
                self.store.set_setting(KV_PULL_CURSOR, str(cursor_after))
                self.store.set_setting(KV_LAST_PUSH, repr(time.time()))
                if resync is not None and self.store.get_setting("sync.resync_done") == "1":
                    self.store.ack_outbox([resync])
                    self.store.set_setting("sync.resync_done", "0")
                    self.store.set_setting("sync.resync_cursor", "0")
            report.pushed_facts += result.facts
            report.state_pushed = report.state_pushed or result.state_pushed
            report.remote_version = result.version
            if pulled:
                report.pulled_facts += self.local.insert_pulled(pulled)
            if result.remote is not None and result.remote.state is not None:
                # Another device wrote a newer state (or won the race): merge, then push the
                # merge if it differs from theirs, against their version.
                conflicts += 1
                report.merged = True
                with self.store.transaction():
                    self.store.set_setting(KV_REMOTE_VERSION, str(result.remote.version))
                needs_push = self.local.adopt_remote_state(result.remote.state)
                if needs_push:
                    with self.store.transaction():
                        self.store.enqueue_state(time.time())
                elif state_entry is not None:
                    with self.store.transaction():
                        self.store.ack_outbox([state_entry])
                if conflicts > MAX_CONFLICT_ROUNDS:
                    raise RemoteError("another device keeps changing the critical state; "
                                      "sync again in a moment")
                if needs_push or self.store.outbox(limit=1):
                    continue
                break
            if (newer_key or result.needs_keys) and not refreshed \
                    and hasattr(self.local, "refresh_keys"):
                refreshed = True
                self.local.refresh_keys(self.remote)
                continue
            more_pull = len(result.pulled) + len(result.unreadable) >= 200 and not newer_key
            if not self.store.outbox(limit=1) and not more_pull:
                break
            if not fact_entries and state_entry is None and resync is None and not more_pull:
                break
        report.outbox_depth = self.store.outbox_depth()
        report.seconds = round(time.perf_counter() - started, 4)
        return report

    def _resync_page(self, limit: int) -> list[Fact]:
        """The next page of every local fact, for an outbox that overflowed while offline."""
        cursor = int(self.store.get_setting("sync.resync_cursor") or 0)
        rows = self.store.conn.execute("SELECT rowid, id FROM facts WHERE rowid > ? ORDER BY rowid "
                                       "LIMIT ?", (cursor, limit)).fetchall()
        with self.store.transaction():
            if rows:
                self.store.set_setting("sync.resync_cursor", str(rows[-1][0]))
            if len(rows) < limit:
                self.store.set_setting("sync.resync_done", "1")
        return self.store.facts_by_ids([r[1] for r in rows])


def compact_outbox(store: LocalStore, max_facts: int) -> bool:
    """Bound the offline queue: past `max_facts` fact entries, replace them by one 'resync'
    entry that re-sends every local fact (upserts are idempotent). The state entry stays."""
    depth = store.conn.execute("SELECT COUNT(*) FROM outbox WHERE kind = 'fact'").fetchone()[0]
    if depth <= max_facts:
        return False
    with store.transaction():
        store.conn.execute("DELETE FROM outbox WHERE kind = 'fact'")
        store.conn.execute("INSERT INTO outbox (kind, ref, created_at) VALUES ('resync', 'all', ?) "
                           "ON CONFLICT(kind, ref) DO NOTHING", (time.time(),))
        store.set_setting("sync.resync_cursor", "0")
        store.set_setting("sync.resync_done", "0")
    return True
