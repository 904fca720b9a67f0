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
from typing import Callable, Optional, Protocol

import msgspec

from evoclaw_memory.errors import (AuthError, ConflictError, DeviceRevoked, EvoclawError, RemoteError,
                      Unavailable, ValidationError)
from evoclaw_memory.models import Fact
from evoclaw_memory.store.local import LocalStore
from evoclaw_memory.store.outbox import KV_STATE_OWED
from evoclaw_memory.cloud.codec import CriticalState
from evoclaw_memory.cloud.protocol import PushResult
from evoclaw_memory.cloud.remote import Remote

BATCH_SIZE = 500             # facts per request: keeps one request well under a megabyte
PULL_PAGE = 200              # rows of each feed one push brings back
MAX_CONFLICT_ROUNDS = 5      # merges in one sync before giving up (another device is busy)
MAX_MERGE_ROUNDS = 3         # rounds in one sync that push a merge of facts the cloud kept
OUTBOX_MAX_FACTS = 100_000   # offline queue bound; past it, facts are re-sent from the store

KV_REMOTE_VERSION = "sync.remote_version"
KV_PULL_CURSOR = "sync.pull_cursor"
KV_LAST_PUSH = "sync.last_push"
KV_DEVICE_ID = "device_id"
KV_TOMBSTONE_CURSOR = "sync.tombstone_cursor"   # rowid of the last pulled cloud tombstone
KV_DEVICE_NAME = "device_name"
KV_CHANGE_CURSOR = "sync.change_cursor"   # seq of the last pulled cloud change (cold_changes)
KV_STATE_NONCE = "sync.state_nonce"   # the push nonce of the cloud state at KV_REMOTE_VERSION
VERIFY_BUCKET_SECONDS = 86_400   # one day of created_at: a few hundred counts for years of facts


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
    rejected: int = 0            # entries the cloud refused for good, set aside this sync
    forgotten: int = 0           # local facts deleted because another device forgot them
    changed: int = 0             # local facts updated to another device's newer version
    # The push found the cloud had lost this agent's state: the sync checked the archive
    # (verify) and re-pushed what it lacked, this many facts and states.
    repaired: int = 0


class VerifyReport(msgspec.Struct):
    """What a check of the cloud against this device found (and re-queued)."""

    buckets: int = 0             # created_at buckets of this device's acknowledged facts
    missing: int = 0             # acknowledged facts the cloud no longer holds
    state_missing: bool = False  # the cloud's critical state is gone, older or replaced
    requeued: int = 0            # outbox entries queued again (facts + state)
    requests: int = 0


def device_id(store: LocalStore) -> str:
    """This device's id, made once and kept in the local database."""
    found = store.get_setting(KV_DEVICE_ID)
    if found:
        return found
    with store.transaction():
        return store.device_id()


def device_name(store: LocalStore) -> str:
    """The name this device registers with: the one its owner gave it, else the default
    (default_device_name)."""
    return store.get_setting(KV_DEVICE_NAME) or default_device_name(device_id(store))


def default_device_name(device: str, host: str = "") -> str:
    """`<hostname>-<first 4 hex of the device id>`: two devices both called `vm` or
    `raspberrypi`, or one device before and after a restore, can be told apart in
    `devices list` (`devices rename` gives a name people choose)."""
    short = device.removeprefix("dev-")[:4]
    host = (host or socket.gethostname() or "device").strip()[:64 - len(short) - 1]
    return f"{host}-{short}" if short else host


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
        self.device_name = device_name(self.store)

    def status(self) -> dict:
        """Outbox depth, last push time, last known remote version (no network)."""
        last = self.store.get_setting(KV_LAST_PUSH)
        return {"outbox_depth": self.store.outbox_depth(),
                "last_push": float(last) if last else None,
                "remote_version": int(self.store.get_setting(KV_REMOTE_VERSION) or 0),
                "device_id": self.device_id, "rejected": self.store.rejected()}

    def verify(self, repair: bool = True) -> VerifyReport:
        """Does the cloud still hold what it acknowledged? Compares this agent's facts per
        created_at bucket (one request), lists the ids of the buckets that came up short,
        and with `repair` re-queues what the cloud lost (facts, the critical state) for the
        next sync. Facts the device never held are no concern of its check."""
        counts = self.remote.archive_buckets(self.agent_id, VERIFY_BUCKET_SECONDS)
        local = self.store.settled_buckets(VERIFY_BUCKET_SECONDS)
        short = sorted(b for b, n in local.items() if counts.buckets.get(b, 0) < n)
        # A bucket the cloud lost entirely needs no id list: every fact of it is missing.
        partial = [b for b in short if counts.buckets.get(b, 0) > 0]
        present = (self.remote.ids_in_buckets(self.agent_id, partial, VERIFY_BUCKET_SECONDS)
                   if partial else set())
        missing = [i for i in self.store.settled_ids_in_buckets(short, VERIFY_BUCKET_SECONDS)
                   if i not in present]
        known = int(self.store.get_setting(KV_REMOTE_VERSION) or 0)
        state_missing = self._state_lost(
            known, self.store.get_setting(KV_STATE_NONCE) or None,
            None if counts.state_version is None
            else (counts.state_version, counts.state_nonce))
        cursor = int(self.store.get_setting(KV_PULL_CURSOR) or 0)
        report = VerifyReport(buckets=len(local), missing=len(missing),
                              state_missing=state_missing,
                              requests=1 + (len(partial) + 499) // 500)
        if repair and (missing or state_missing or counts.max_rowid < cursor):
            now = time.time()
            with self.store.transaction():
                for fact_id in missing:
                    self.store.enqueue_fact(fact_id, now)
                if state_missing:
                    # No row: the next push creates it. A row: expect one version behind it,
                    # so the next push finds the cloud's state as news and merges it (another
                    # device may have written it) instead of overwriting it blind.
                    behind = 0 if counts.state_version is None else counts.state_version - 1
                    self.store.set_setting(KV_REMOTE_VERSION, str(behind))
                    self.store.enqueue_state(now)
                if counts.max_rowid < cursor:
                    # Rows written after the loss get rowids at or below the old cursor
                    # (SQLite's new rowid is the table's largest + 1): pull them.
                    self.store.set_setting(KV_PULL_CURSOR, str(counts.max_rowid))
                self.store.audit("sync.verify", "cloud", f"{len(missing)} missing fact(s)"
                                 f"{', critical state missing' if state_missing else ''}")
            report.requeued = len(missing) + int(state_missing)
        return report

    @staticmethod
    def _state_lost(known: int, known_nonce: Optional[str],
                    found: Optional[tuple[int, Optional[str]]]) -> bool:
        """Did the cloud lose this agent's state since this device last synced? `known`,
        `known_nonce`: the version this device acknowledged and its push nonce; `found`: the
        cloud's (version, nonce), or None.
        Lost: no row, an older version (versions only grow), or the version we know written
        by another push (the cloud started again from nothing and another device counted up
        to it)."""
        if known <= 0:
            return False
        if found is None:
            return True
        return found[0] < known or (found[0] == known and known_nonce is not None
                                    and found[1] != known_nonce)

    def _apply_pulled(self, report: SyncReport, pulled: list[Fact], changed: list[Fact],
                      tombstones: list[tuple[int, str]], cursors: tuple[int, int, int],
                      before: tuple[int, int, int]) -> None:
        """Store what a push brought back and move the pull cursors, in one transaction."""
        with self.store.transaction(), self.store.state_deferred():
            if pulled:
                report.pulled_facts += self.local.insert_pulled(pulled)
            if changed and hasattr(self.local, "apply_changes"):
                report.changed += self.local.apply_changes(changed)
            if tombstones and hasattr(self.local, "apply_tombstones"):
                report.forgotten += self.local.apply_tombstones([i for _, i in tombstones])
            self._move_cursors(cursors, before)

    def _move_cursors(self, cursors: tuple[int, int, int], before: tuple[int, int, int]) -> None:
        """Write the pull cursors (new facts, changes, tombstones) that moved."""
        for key, value, old in zip((KV_PULL_CURSOR, KV_CHANGE_CURSOR, KV_TOMBSTONE_CURSOR),
                                   cursors, before):
            if value != old:
                self.store.set_setting(key, str(value))

    def sync(self, on_acknowledged: Optional[Callable[[], None]] = None) -> SyncReport:
        """Drain the outbox and pull; raises Unavailable (work stays queued) or DeviceRevoked.

        `on_acknowledged` runs once, inside the transaction that records the first answer
        (the caller's bookkeeping, e.g. metrics, rides that commit instead of an fsync of
        its own)."""
        started = time.perf_counter()
        report = SyncReport()
        compact_outbox(self.store, OUTBOX_MAX_FACTS)
        conflicts = 0
        merge_rounds = 0
        refreshed = False
        verified = False
        while True:
            entries = self.store.outbox_entries(limit=self.batch_size + 1)
            # (seq, version) pairs: acknowledged exactly as read, so an entry changed while
            # its push is in flight (its version moved on) stays queued for the next round.
            fact_entries = [(seq, ref, ver) for seq, kind, ref, ver in entries
                            if kind == "fact"][:self.batch_size]
            state_entry = next(((seq, ver) for seq, kind, _, ver in entries if kind == "state"),
                               None)
            resync = next((seq for seq, kind, _, _ in entries if kind == "resync"), None)
            # The owner's forgets and unsupersedes ride in the same request (SPEC §5b).
            forgets = [(seq, ref, ver) for seq, kind, ref, ver in entries if kind == "forget"]
            revives = [(seq, ref, ver) for seq, kind, ref, ver in entries if kind == "revive"]
            facts = self.store.facts_by_ids([ref for _, ref, _ in fact_entries] +
                                            [ref for _, ref, _ in revives])
            resync_at: Optional[tuple[int, bool]] = None
            if resync is not None and len(facts) < self.batch_size:
                queued = {f.id for f in facts}
                page, resync_at = self._resync_page(self.batch_size - len(facts))
                facts += [f for f in page if f.id not in queued]
            # The version and cursors this round pushes against, in one read.
            kv = self.store.get_settings(KV_REMOTE_VERSION, KV_STATE_NONCE, KV_PULL_CURSOR,
                                         KV_TOMBSTONE_CURSOR, KV_CHANGE_CURSOR)
            expected = int(kv.get(KV_REMOTE_VERSION) or 0)
            nonce_before = kv.get(KV_STATE_NONCE) or None
            cursor = int(kv.get(KV_PULL_CURSOR) or 0)
            # New facts change the tree's counts, so the state goes with every batch of facts
            # (remember() queues the fact alone; see WarmKeeper.insert).
            # A forget changes the counts too (ControlKeeper.forget queues no state entry).
            state = self.local.critical_state() if state_entry is not None or facts or forgets \
                else None
            tomb_cursor = int(kv.get(KV_TOMBSTONE_CURSOR) or 0)
            change_cursor = int(kv.get(KV_CHANGE_CURSOR) or 0)
            # Unavailable propagates: nothing was acknowledged, the outbox keeps the work.
            sent_at = self._device_time()
            try:
                result = self.remote.push(self.agent_id, self.device_id, self.device_name,
                                          facts, state, expected, cursor,
                                          forgotten=[ref for _, ref, _ in forgets],
                                          revived=[ref for _, ref, _ in revives],
                                          pull_limit=PULL_PAGE, tombstones_after=tomb_cursor,
                                          changes_after=change_cursor)
            except (ValidationError, RemoteError) as exc:
                report.requests += 1
                if not facts or not refused_for_good(exc):
                    raise
                # One entry the cloud will never take must not hold back the rest: find it,
                # set it aside (with the reason), and push the others in the next round.
                report.rejected += self._set_aside_refused(facts, expected, cursor, exc, report)
                continue
            report.requests += 1
            if result.revoked:
                self.local.wipe_local()
                raise DeviceRevoked("this device was revoked by its owner: its local memory "
                                    "has been wiped; restore on a trusted device")
            pulled, changed, cursors, newer_key = _after_pull(result, cursor, change_cursor,
                                                              tomb_cursor)
            # The usual push pulls nothing: its cursors (moved past this device's own rows)
            # ride the acknowledging commit. What was pulled moves them with its own commit.
            took = bool(pulled or changed or result.tombstones)
            with self.store.transaction():
                self.store.ack_sent([(seq, ver) for seq, _, ver in fact_entries + forgets + revives])
                self.store.clear_rejected("fact", [ref for _, ref, _ in fact_entries])
                if result.state_pushed and state_entry is not None:
                    self.store.ack_sent([state_entry])   # a newer change has a newer seq
                if result.state_pushed:
                    # The tree it carried holds every node an earlier pull owed the cloud.
                    self.store.conn.execute("DELETE FROM kv WHERE key = ?", (KV_STATE_OWED,))
                self.store.set_setting(KV_REMOTE_VERSION, str(result.version))
                if result.state_pushed or result.version != expected:
                    # Kept while the version stands still, so that verify() can tell the
                    # state we acknowledged from another one under the same version number.
                    self.store.set_setting(KV_STATE_NONCE, result.nonce or "")
                self.store.set_setting(KV_LAST_PUSH, repr(time.time()))
                if result.cloud_now is not None and sent_at is not None:
                    # The cloud's clock against ours, at the middle of the request.
                    answered_at = self._device_time() or sent_at
                    self.store.note_clock_offset(result.cloud_now - (sent_at + answered_at) / 2,
                                                 result.cloud_now)
                if on_acknowledged is not None:
                    on_acknowledged()
                    on_acknowledged = None
                if not took:
                    self._move_cursors(cursors, (cursor, change_cursor, tomb_cursor))
                if resync is not None and resync_at is not None:
                    # The resync page moves on only now that the cloud has committed it.
                    self.store.set_setting("sync.resync_cursor", str(resync_at[0]))
                    if resync_at[1]:
                        self.store.ack_outbox([resync])
                        self.store.set_setting("sync.resync_cursor", "0")
            report.pushed_facts += result.facts
            report.state_pushed = report.state_pushed or result.state_pushed
            report.remote_version = result.version
            # What the pull does to the tree queues no push of the state (one request per
            # sync): see LocalStore.state_deferred and docs/sync.md "Changes on several
            # devices".
            # The pull cursors move in the SAME transaction as what they pulled is stored: a
            # crash (or an error) in between would otherwise skip those rows for good on this
            # device. If applying fails, nothing moves and the next sync pulls them again.
            if took:
                self._apply_pulled(report, pulled, changed, result.tombstones, cursors,
                                   (cursor, change_cursor, tomb_cursor))
            if result.kept and hasattr(self.local, "apply_changes"):
                # Pushed facts the cloud did not take whole (another device changed a part
                # later, or superseded them): merged here part by part; a merge newer than the
                # cloud's row is queued and goes in the next round of this sync.
                with self.store.transaction(), self.store.state_deferred():
                    report.changed += self.local.apply_changes(result.kept)
                merge_rounds += 1
                if merge_rounds > MAX_MERGE_ROUNDS:
                    # A merge newer in every part is always taken, so this needs a cloud that
                    # keeps moving a row under us; the merges stay queued for the next sync.
                    break
            if not verified and self._state_lost(expected, nonce_before, result.state_before):
                # The cloud lost data (its state row is gone): what else it lost is found
                # and queued now, and goes in the next rounds of this sync. Requests beyond
                # the one only in this case.
                verified = True
                found = self.verify(repair=True)
                report.repaired += found.requeued
                report.requests += found.requests
                if found.requeued:
                    continue
            if result.remote is not None and result.remote.state is not None:
                # Another device wrote a newer state (or won the race): merge, then push the
                # merge if it differs from theirs, against their version.
                conflicts += 1
                report.merged = True
                with self.store.transaction():
                    self.store.set_setting(KV_REMOTE_VERSION, str(result.remote.version))
                # Nodes their tree adds to ours need no push back; needs_push tells whether
                # ours now holds anything theirs lacks (a node a pull added included).
                with self.store.state_deferred():
                    needs_push = self.local.adopt_remote_state(result.remote.state)
                with self.store.transaction():
                    self.store.conn.execute("DELETE FROM kv WHERE key = ?", (KV_STATE_OWED,))
                if needs_push:
                    with self.store.transaction():
                        self.store.enqueue_state(time.time())
                elif state_entry is not None:
                    with self.store.transaction():
                        self.store.ack_sent([state_entry])
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
            more_pull = (len(result.pulled) + len(result.unreadable) >= PULL_PAGE
                         or len(result.tombstones) >= PULL_PAGE
                         or len(result.changed) + len(result.unreadable_changes) >= PULL_PAGE) \
                and not newer_key
            if not self.store.outbox(limit=1) and not more_pull:
                break
            if not (fact_entries or forgets or revives) and state_entry is None \
                    and resync is None and not more_pull:
                break
        if self.store.get_setting(KV_STATE_OWED):
            # A pull added a node while the cloud's state did not move (its pusher sent no
            # state): whether that state holds the node is unknown, so ours goes with the
            # next sync's request (not another one now).
            with self.store.transaction():
                self.store.enqueue_state(time.time())
                self.store.conn.execute("DELETE FROM kv WHERE key = ?", (KV_STATE_OWED,))
        report.outbox_depth = self.store.outbox_depth()
        report.seconds = round(time.perf_counter() - started, 4)
        return report

    def _device_time(self) -> Optional[float]:
        """This device's own clock, uncorrected (a test's or a host's own, as its memory
        reads it before the cloud's offset: store/cloud_time.py)."""
        clock = getattr(self.local, "device_clock", None)
        return float(clock()) if callable(clock) else None

    def _resync_page(self, limit: int) -> tuple[list[Fact], tuple[int, bool]]:
        """The next page of every local fact, for an outbox that overflowed while offline, and
        (the cursor after it, whether it was the last page) to record once it is pushed."""
        cursor = int(self.store.get_setting("sync.resync_cursor") or 0)
        rows = self.store.conn.execute(
            "SELECT rowid, id FROM facts WHERE rowid > ? AND id NOT IN (SELECT ref FROM "
            "outbox_rejected WHERE kind = 'fact') ORDER BY rowid LIMIT ?",
            (cursor, limit)).fetchall()
        after = rows[-1][0] if rows else cursor
        return self.store.facts_by_ids([r[1] for r in rows]), (after, len(rows) < limit)

    def _set_aside_refused(self, facts: list[Fact], expected: int, cursor: int,
                           error: EvoclawError, report: SyncReport) -> int:
        """Bisect a refused batch down to the facts the cloud refuses for good and set their
        entries aside; returns how many. Costs ~2·log2(n) fact-only pushes, only on failure."""
        # An empty push refused too: the cloud refuses everything, no row is to blame.
        self._probe([], expected, cursor, report)
        refused: dict[str, str] = {}
        halves = [facts] if len(facts) == 1 else [facts[:len(facts) // 2],
                                                   facts[len(facts) // 2:]]
        for half in halves:
            self._find_refused(half, expected, cursor, refused, report)
        if not refused:
            raise error                 # every part goes through alone: not one row's fault
        with self.store.transaction():
            self.store.set_aside("fact", refused, time.time())
            for fact_id, why in refused.items():
                self.store.audit("sync.rejected", fact_id, why)
        return len(refused)

    def _find_refused(self, facts: list[Fact], expected: int, cursor: int,
                      refused: dict[str, str], report: SyncReport) -> None:
        """Push `facts` alone; when refused for good, split until the refused ones are single."""
        try:
            self._probe(facts, expected, cursor, report)
            return
        except (ValidationError, RemoteError) as exc:
            if not refused_for_good(exc):
                raise
            if len(facts) == 1:
                refused[facts[0].id] = _one_line(str(exc))
                return
        middle = len(facts) // 2
        self._find_refused(facts[:middle], expected, cursor, refused, report)
        self._find_refused(facts[middle:], expected, cursor, refused, report)

    def _probe(self, facts: list[Fact], expected: int, cursor: int, report: SyncReport) -> None:
        """A facts-only push (no state, no pull): upserts are idempotent, so the parts that go
        through are simply sent again, with the state, in the next round."""
        report.requests += 1
        self.remote.push(self.agent_id, self.device_id, self.device_name, facts, None,
                         expected, cursor, pull_limit=0)


def _after_pull(result: PushResult, cursor: int, change_cursor: int, tomb_cursor: int
                ) -> tuple[list[Fact], list[Fact], tuple[int, int, int], list[int]]:
    """What a push pulled that this device takes now, where its three pull cursors go, and
    the rows under a data key it has not seen (rowids or seqs; empty when none)."""
    top_rowid, top_change, top_tomb = result.tops
    pulled, cursor_after, newer_key = _feed(result.pulled, result.unreadable, cursor,
                                            top_rowid, past_unreadable=False)
    changed, change_after, newer_changes = _feed(result.changed, result.unreadable_changes,
                                                 change_cursor, top_change, past_unreadable=True)
    tomb_after = max([tomb_cursor] + [r for r, _ in result.tombstones])
    if len(result.tombstones) < PULL_PAGE:
        tomb_after = max(tomb_after, top_tomb)
    return pulled, changed, (cursor_after, change_after, tomb_after), newer_key or newer_changes


def _feed(rows: list[tuple[int, Fact]], unreadable: list[tuple[int, str]], cursor: int,
          top: int, past_unreadable: bool) -> tuple[list[Fact], int, list[int]]:
    """One feed's answer (new facts by rowid, or changes by seq): the facts taken, where its
    cursor goes, and the positions sealed under a data key this device has not seen.

    Rows under a newer key (a rotation on another device) are not skipped: the cursor stops
    before them, the keyring is refreshed and they are pulled again. Other unreadable rows
    are stepped past at once where `past_unreadable` (changes), else only by the top rule.
    A feed that gave less than a page holds nothing more of other devices after the cursor,
    so the cursor moves to the feed's top, past this device's own rows: the next pull reads
    only what was written since (before, a one-device agent's cursor never moved, and every
    push read every row of the archive after it)."""
    after = max([cursor] + [r for r, _ in rows])
    newer = [r for r, why in unreadable if "not in this keyring" in why]
    if newer:
        after = max(cursor, min(newer) - 1)
        return [f for r, f in rows if r <= after], after, newer
    if past_unreadable and unreadable:
        after = max([after] + [r for r, _ in unreadable])
    if len(rows) + len(unreadable) < PULL_PAGE:
        after = max(after, top)
    return [f for _, f in rows], after, newer


def refused_for_good(exc: BaseException) -> bool:
    """A refusal no retry can fix: a value SQLite cannot hold, a SQL error on a row, a 400.
    Not the network, the credentials or a revocation (those keep the work queued)."""
    if isinstance(exc, ValidationError):
        return True
    return isinstance(exc, RemoteError) and not isinstance(
        exc, (Unavailable, AuthError, DeviceRevoked, ConflictError))


def _one_line(text: str, limit: int = 300) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[:limit - 3] + "..."


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
