"""The outbox: what the sync engine owes the cloud, what it set aside, and what the cloud
has acknowledged (for verify)."""

from __future__ import annotations

import contextlib
import sqlite3
from _thread import get_ident    # threading's, without importing threading
from typing import Any, Iterator, Optional

from evoclaw_memory.store.change_clock import device_tag, next_stamp

# Set (in the change's own transaction) when a change pulled from the cloud moved this
# device's tree (a node, the counts) while the state push was held back: see state_deferred.
KV_STATE_OWED = "sync.state_owed"
KV_CLOCK_OFFSET = "sync.clock_offset"
KV_DEVICE_ID = "device_id"
CLOCK_JUMP = 300.0        # an offset change (s) that is a clock set, not drift or latency
CLOCK_UNSET = 1_000_000_000.0   # 2001-09-09: an earlier time is a clock that was never set


class OutboxMixin:
    """LocalStore's queue for the cloud (facts and the coalesced critical state)."""

    conn: sqlite3.Connection
    _state_deferred_by: Optional[int] = None     # the thread inside state_deferred()

    def enqueue_fact(self, fact_id: str, now: float) -> None:
        """Queue a fact for the cloud; a fact already queued keeps its place, one version on."""
        # The version bump marks a change made while the entry may be in flight: the engine
        # acknowledges only the version it sent, so this change stays queued (ack_sent).
        self.conn.execute("INSERT INTO outbox (kind, ref, created_at) VALUES ('fact', ?, ?) "
                          "ON CONFLICT(kind, ref) DO UPDATE SET version = version + 1",
                          (fact_id, now))

    def clock_offset(self) -> float:
        """How far the cloud's clock is ahead of this device's (seconds; 0 before any sync):
        learnt at every sync (SyncEngine), so that the changes of a device whose clock is off
        are stamped with the time the cloud's clock would have given them."""
        offset = getattr(self, "_clock_offset", None)
        if offset is None:
            found = self.conn.execute("SELECT value FROM kv WHERE key = ?",
                                      (KV_CLOCK_OFFSET,)).fetchone()
            offset = self._clock_offset = float(found[0]) if found else 0.0
        return offset

    def note_clock_offset(self, offset: float, cloud_now: float) -> None:
        """Keep the offset a sync or a restore measured, the cloud's clock reading `cloud_now`
        (in the caller's transaction). When it moved by more than a few minutes (this
        device's clock was set: it ran ahead, or had never been set, as on a Raspberry Pi
        without a clock that booted in 1970), the facts it stamped in the future or before
        2001 are brought to now and queued, so that they age, and are restored, as facts of
        today everywhere."""
        moved = abs(offset - self.clock_offset()) > CLOCK_JUMP
        self._clock_offset = offset
        self.conn.execute("INSERT INTO kv (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE "
                          "SET value = excluded.value", (KV_CLOCK_OFFSET, repr(offset)))
        if not moved or cloud_now < CLOCK_UNSET:
            return
        late = cloud_now + CLOCK_JUMP
        wrong = [row[0] for row in self.conn.execute(
            "SELECT id FROM facts WHERE created_at > ? OR created_at < ? OR last_access > ?",
            (late, CLOCK_UNSET, late))]
        for fact_id in wrong:
            self.conn.execute(
                "UPDATE facts SET created_at = CASE WHEN created_at > ? OR created_at < ? "
                "THEN ? ELSE created_at END, last_access = min(last_access, ?) WHERE id = ?",
                (late, CLOCK_UNSET, cloud_now, cloud_now, fact_id))
            self.enqueue_fact(fact_id, cloud_now)

    def device_id(self) -> str:
        """This device's id, made once and kept in the local database (its changes' stamps
        end in it, store/change_clock.py; the cloud knows the device by it)."""
        found = self.conn.execute("SELECT value FROM kv WHERE key = ?", (KV_DEVICE_ID,)).fetchone()
        if found and found[0]:
            return str(found[0])
        import secrets
        new = "dev-" + secrets.token_hex(6)
        self.conn.execute("INSERT INTO kv (key, value) VALUES (?, ?) ON CONFLICT(key) DO NOTHING",
                          (KV_DEVICE_ID, new))
        return str(self.conn.execute("SELECT value FROM kv WHERE key = ?",
                                     (KV_DEVICE_ID,)).fetchone()[0])

    def enqueue_change(self, fact_id: str, now: float, part: Optional[str] = "content") -> None:
        """Queue a change of a stored fact (content, flags, supersession, category) for the
        cloud and the owner's other devices. The changed part's clock ("content", "flags" or
        "supersession"; None for a merge of two devices' versions, whose parts keep the
        clocks they came with) moves on first, to a stamp (store/change_clock.py): `now` (the
        memory's time, corrected by the cloud's: store/cloud_time.py), and always past the
        fact's last stamp this device holds (maybe another device's, from a clock ahead of
        ours), so a change made after seeing a version wins over that version everywhere."""
        if part is not None:
            column = {"content": "content_changed_at", "flags": "flags_changed_at",
                      "supersession": "superseded_changed_at"}[part]
            row = self.conn.execute("SELECT changed_at FROM facts WHERE id = ?",
                                    (fact_id,)).fetchone()
            if row is not None:
                stamp = next_stamp(now, float(row[0] or 0.0), device_tag(self.device_id()))
                self.conn.execute(f"UPDATE facts SET changed_at = ?, {column} = ? WHERE id = ?",
                                  (stamp, stamp, fact_id))
        self.enqueue_fact(fact_id, now)

    def enqueue_state(self, now: float, counts_only: bool = False) -> None:
        """Queue the critical state (hot + tree); coalesced: one entry, moved to the end.

        Inside state_deferred() nothing is queued: a change of the tree's nodes only notes
        KV_STATE_OWED, and one of its counts alone (`counts_only`) nothing at all."""
        if self._state_deferred_by == get_ident():
            if counts_only:
                return
            self.conn.execute("INSERT INTO kv (key, value) VALUES (?, '1') ON CONFLICT(key) "
                              "DO UPDATE SET value = '1'", (KV_STATE_OWED,))
            return
        self.conn.execute("DELETE FROM outbox WHERE kind = 'state'")
        self.conn.execute("INSERT INTO outbox (kind, ref, created_at) VALUES ('state', 'state', ?)",
                          (now,))

    @contextlib.contextmanager
    def state_deferred(self) -> Iterator[None]:
        """Apply changes pulled from the cloud without queuing a push of the critical state.

        What a pull does to the tree is what the pushing device already did to its own, and
        pushed with its state in the same request: the counts follow from the same facts on
        every device, so they need not go back at once (they travel with this device's next
        push of the state). Whether the cloud's state lacks a node the pull added is decided
        by the sync engine, which sees that state in the same answer (KV_STATE_OWED). Only
        the calling thread is affected (a store may be shared by a server's threads)."""
        before, self._state_deferred_by = self._state_deferred_by, get_ident()
        try:
            yield
        finally:
            self._state_deferred_by = before

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

