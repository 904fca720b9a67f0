"""Restore: a new, empty device wakes up as the agent (SPEC §6).

Fast path (`restore`): the critical state (hot memory + tree) and the warm working set
(recent, non-frozen facts by score) — a handful of requests whatever the archive's size.
`--full` then mirrors the whole archive page by page; the cursor is saved after every page,
so an interrupted mirror continues where it stopped.

Nothing local is touched until everything the fast path needs has been fetched: then one
local transaction replaces the old memory (if any) with the restored one, so a wrong key, an
unreachable cloud or a network lost halfway leaves the device as it was. Changes still
waiting in the outbox are never discarded unless the caller says so (`discard_unsynced`).
"""

from __future__ import annotations

import contextlib
import gc
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterator, Optional, Protocol

import msgspec

from evoclaw_memory.errors import NotFoundError, ValidationError
from evoclaw_memory.models import Fact, HotState
from evoclaw_memory.tiers.scoring import score
from evoclaw_memory.store.local import LocalStore
from evoclaw_memory.text import alias_pairs
from evoclaw_memory.cloud.engine import (KV_CHANGE_CURSOR, KV_DEVICE_ID, KV_DEVICE_NAME,
                                         KV_PULL_CURSOR, KV_REMOTE_VERSION)
from evoclaw_memory.cloud.keys import KV_RECORD, KV_RING
from evoclaw_memory.cloud.codec import CriticalState, cloud_seconds
from evoclaw_memory.cloud.protocol import AgentSummary
from evoclaw_memory.cloud.remote import Remote

PAGE_SIZE = 10_000              # rows per request and per local transaction (~4 MB of JSON)
WARM_WINDOW_DAYS = 60           # warm candidates: younger facts (a 0.3 score needs age < ~57 d
                                # even at importance 1 with 10 accesses)
WARM_CANDIDATES = 3_000
KV_MIRROR_CURSOR = "restore.mirror_cursor"
KV_MIRROR_DONE = "restore.mirror_done"
# The id this device had before a restore replaced its memory (and so its id): the cloud
# forgets it as a device (Remote.retire), at once or, offline, at the next sync.
KV_RETIRE = "sync.retire_device_id"
# The keys unlocked for this restore (before anything was fetched) survive its wipe, and so
# does a name the owner gave this device.
KEEP_ON_WIPE = (KV_RING, KV_RECORD, KV_DEVICE_NAME)

Progress = Callable[[str, int, int], None]     # (stage, done, total)


class RestoreTarget(Protocol):
    """What restore needs from the device's memory (implemented by Memory)."""

    store: LocalStore

    def install_state(self, state: CriticalState, keep_counts: bool) -> None: ...

    def bulk_insert(self, facts: list[Fact], tier_by_score: bool) -> int: ...

    def prepare_bulk(self, facts: list[Fact], tier_by_score: bool) -> list[tuple]: ...

    def insert_prepared(self, rows: list[tuple], aliases: Optional[list] = None) -> int: ...

    def write_memory_md(self): ...


class RestoreReport(msgspec.Struct):
    agent_id: str
    remote_version: int
    warm_facts: int
    mirrored_facts: int
    archive_facts: int
    seconds: float
    complete_mirror: bool
    rejected: list[str] = []        # rows that failed authentication (tampered), skipped
    key_seconds: float = 0.0        # of `seconds`: finding and unlocking the keys (scrypt)
    discarded_unsynced: int = 0     # outbox entries dropped (only with discard_unsynced)
    local_facts: int = 0            # facts on this device once restored (warm + mirrored)


def _quiet(stage: str, done: int, total: int) -> None:
    pass


@contextlib.contextmanager
def _cyclic_gc_paused() -> Iterator[None]:
    """Pause Python's cycle collector for a bulk load: a mirror makes millions of short-lived
    objects and none of them in cycles, and each collection pass would walk every live one
    (measured: decoding 100k facts 0.73 s with it, 0.38 s without). Restored on the way out."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def resuming(store: LocalStore) -> bool:
    """True while a `--full` restore whose state has landed has not finished its mirror."""
    return store.get_setting(KV_MIRROR_CURSOR) is not None and \
        store.get_setting(KV_MIRROR_DONE) != "1"


def unsynced_at_risk(store: LocalStore) -> int:
    """Outbox entries a restore would discard now (none while resuming: nothing is wiped)."""
    return 0 if resuming(store) else store.outbox_depth()


def describe_unsynced(store: LocalStore) -> str:
    """What the outbox holds, as a person counts it: `3 facts and a hot memory/category tree
    change` (the outbox has one entry per fact and one for the whole hot memory and tree,
    which a new category changes too). Empty when nothing waits."""
    kinds = dict(store.conn.execute("SELECT kind, COUNT(*) FROM outbox GROUP BY kind").fetchall())
    parts = []
    if kinds.get("resync"):
        parts.append("every fact (a full re-send)")
    for kind, one, many in (("fact", "fact", "facts"), ("forget", "forgotten fact",
                                                          "forgotten facts"),
                            ("revive", "unsuperseded fact", "unsuperseded facts")):
        n = int(kinds.get(kind, 0))
        if n:
            parts.append(f"{n} {one if n == 1 else many}")
    if kinds.get("state"):
        parts.append("a hot memory/category tree change")
    if len(parts) > 1:
        return ", ".join(parts[:-1]) + " and " + parts[-1]
    return parts[0] if parts else ""


def no_memory(agent_id: str, held: list[AgentSummary]) -> NotFoundError:
    """The error for an agent the cloud does not hold, naming the ones it does (the owner
    whose old device is gone may not remember the name)."""
    others = [a.agent_id for a in held if a.agent_id != agent_id]
    if others:
        where = f"it holds: {', '.join(others)} (list them with `evoclaw-memory agents`)"
    elif held:
        where = "it holds no other agents"
    else:
        where = "it holds no agents"
    return NotFoundError(f"the cloud has no memory for agent {agent_id!r}; {where}")


def require_agent(remote: Remote, agent_id: str) -> None:
    """Refuse, in one request and before any key is looked for, a restore of an agent the
    cloud holds no memory for (no facts, no state): on an encrypted cloud the key lookup
    would otherwise say that no key is set up, and `key init` would start a new empty agent."""
    held = remote.agents()
    if not any(a.agent_id == agent_id and (a.facts or a.has_state) for a in held):
        raise no_memory(agent_id, held)


def preflight(store: LocalStore, force: bool, discard_unsynced: bool) -> int:
    """Refuse, before any request, a restore that would replace memory or drop unsynced
    changes without being told to; returns how many unsynced entries it will discard."""
    if resuming(store):
        return 0
    if not store.is_empty() and not force:
        raise ValidationError("this device already has a memory for this agent; restore "
                              "would overwrite it: use --force to replace it")
    unsynced = store.outbox_depth()
    if unsynced and not discard_unsynced:
        raise ValidationError(f"this device has {describe_unsynced(store)} not yet synced to "
                              "the cloud, which a restore would discard: run `evoclaw-memory "
                              "sync` first, or add --discard-unsynced to drop them")
    return unsynced


def restore(target: RestoreTarget, remote: Remote, agent_id: str, *, full: bool = False,
            force: bool = False, discard_unsynced: bool = False,
            warm_max_bytes: int = 50 * 1024, decay_days: float = 30.0,
            access_boost: float = 0.1, progress: Progress = _quiet) -> RestoreReport:
    """Rebuild hot memory, the tree, MEMORY.md and warm from `remote` (and mirror all if full).

    Every request of the fast path runs before the local memory is replaced (see above)."""
    started = time.perf_counter()
    store = target.store
    was_resuming = resuming(store)
    discarded = preflight(store, force, discard_unsynced)
    device_now = _device_time(target)
    state = remote.pull_state(agent_id)
    archive = remote.count_facts(agent_id)
    # The cloud's clock, not this device's: a new device whose clock is a year fast (or one
    # back in 1970) would otherwise find every fact too old, or none old enough, for warm.
    cloud_now = state.cloud_now if state is not None and state.cloud_now is not None \
        else device_now
    if (state is None or state.state is None) and archive == 0:
        raise no_memory(agent_id, remote.agents())
    progress("state", 1, 3)
    if not was_resuming:
        # Read before the facts: every change up to it is in the rows restored below.
        change_cursor = remote.max_change_seq(agent_id)
        chosen = _warm_facts(remote, agent_id, warm_max_bytes, decay_days, access_boost,
                             cloud_now)
        pull_cursor = remote.max_rowid(agent_id)
        old_id = store.get_setting(KV_DEVICE_ID)
        with store.transaction():       # the old memory goes only as the restored one lands
            store.wipe(keep_settings=KEEP_ON_WIPE)
            if old_id:                  # the device gets a new id: its old one is retired
                store.set_setting(KV_RETIRE, old_id)
            store.note_clock_offset(cloud_now - device_now, cloud_now)   # before any stamp
            target.install_state(state.state if state and state.state
                                 else CriticalState(hot=HotState()), keep_counts=True)
            warm = target.bulk_insert(chosen, tier_by_score=True)
            store.set_setting(KV_REMOTE_VERSION, str(state.version if state else 0))
            store.set_setting(KV_PULL_CURSOR, str(pull_cursor))
            store.set_setting(KV_CHANGE_CURSOR, str(change_cursor))
            if full:                    # from here on a rerun resumes the mirror
                store.set_setting(KV_MIRROR_CURSOR, "0")
        progress("warm", 2, 3)
        target.write_memory_md()
    else:
        warm = store.count_facts("warm")
    mirrored = _mirror(target, remote, agent_id, archive, progress) if full else 0
    progress("done", 3, 3)
    return RestoreReport(agent_id=agent_id, remote_version=state.version if state else 0,
                         warm_facts=warm, mirrored_facts=mirrored, archive_facts=archive,
                         seconds=round(time.perf_counter() - started, 3),
                         complete_mirror=full, rejected=list(getattr(remote, "rejected", [])),
                         discarded_unsynced=discarded, local_facts=store.count_facts())


def _device_time(target: RestoreTarget) -> float:
    """The restoring device's own clock, uncorrected (store/cloud_time.py)."""
    clock = getattr(target, "device_clock", None)
    return float(clock()) if callable(clock) else time.time()


def _warm_facts(remote: Remote, agent_id: str, warm_max_bytes: int, decay_days: float,
                access_boost: float, now: float) -> list[Fact]:
    """The facts that fit warm, best score first, fetched (nothing is written locally)."""
    # Score the candidates from a few columns, then fetch only the facts that fit warm:
    # the rows themselves (sealed ones are twice as big) are the bulk of a restore.
    candidates = remote.recent_candidates(agent_id, now - WARM_WINDOW_DAYS * 86_400,
                                          WARM_CANDIDATES)
    # Pinned facts first and outside warm's budget: the vault has its own cap.
    ranked = sorted(candidates, key=lambda c: (-int(c[5] or 0) if len(c) > 5 else 0, -score(
        0.5 if c[1] is None else float(c[1]), cloud_seconds(c[2]), int(c[3] or 0), now,
        decay_days, access_boost)))
    wanted, used = [], 0
    sealed = getattr(getattr(remote, "codec", None), "encrypted", False)
    for fact_id, _, _, _, stored_length, *pinned in ranked:
        if pinned and pinned[0]:
            wanted.append(fact_id)
            continue
        length = int(stored_length or 0)
        if sealed:      # "enc:v1:<key>:" + base64(nonce + text + tag): back to the text
            length = max(0, (length - 20) * 3 // 4 - 28)
        size = length + 40
        if used + size > warm_max_bytes * 0.9:
            break
        wanted.append(fact_id)
        used += size
    return remote.facts_by_ids(agent_id, wanted)


_handover_lock = threading.Lock()
_handover: list = [0, None]        # mirrors running in this process, the interval before them


@contextlib.contextmanager
def _quick_gil_handover() -> Iterator[None]:
    """A thread that wants the GIL waits out the switch interval (5 ms) before the running
    one must hand it over; the mirror's writer wants it back after each statement. The
    interval is process-wide: mirrors running at once (a server's agents) share the change,
    and the last one to end puts back what was there before the first."""
    with _handover_lock:
        if _handover[0] == 0:
            _handover[1] = sys.getswitchinterval()
            sys.setswitchinterval(0.0002)
        _handover[0] += 1
    try:
        yield
    finally:
        with _handover_lock:
            _handover[0] -= 1
            if _handover[0] == 0:
                sys.setswitchinterval(_handover[1])


def _write_page(target: RestoreTarget, rows: list[tuple], aliases: list, cursor: int) -> int:
    """One page of the mirror and its cursor, in one transaction (a killed mirror resumes
    after the last page written whole); returns the facts it added."""
    store = target.store
    with store.transaction():
        added = target.insert_prepared(rows, aliases)
        store.set_setting(KV_MIRROR_CURSOR, str(cursor))
    return added


def _mirror(target: RestoreTarget, remote: Remote, agent_id: str, archive: int,
            progress: Progress) -> int:
    """Mirror the whole archive from the saved cursor on; returns the facts it added."""
    store = target.store
    with store.transaction():
        if store.get_setting(KV_MIRROR_CURSOR) is None:
            store.set_setting(KV_MIRROR_CURSOR, "0")
    cursor = int(store.get_setting(KV_MIRROR_CURSOR) or 0)
    done = store.count_facts()
    mirrored = 0
    # Three things at once, a page each: the next page downloads (sqld works on the other
    # core), this one is decoded and prepared here, and the one before is written by a
    # writer thread. Neither helper runs Python for long: SQLite gives up the GIL while it
    # works and must then wait to take it back, so the writer sends its rows in few large
    # statements (LocalStore.insert_values), and nothing here touches the store while it
    # writes. The secondary indexes are built once, at the end.
    with store.indexes_deferred(), _cyclic_gc_paused(), _quick_gil_handover(), \
            ThreadPoolExecutor(max_workers=1) as download, \
            ThreadPoolExecutor(max_workers=1) as writer:
        pending = download.submit(remote.download_page, agent_id, cursor, PAGE_SIZE)
        writing = None
        while True:
            page = remote.open_page(pending.result())
            if not page:
                break
            pending = download.submit(remote.download_page, agent_id, page[-1][0], PAGE_SIZE)
            rows = target.prepare_bulk([f for _, f in page], tier_by_score=False)
            aliases = [alias_pairs(values[1]) for values, _ in rows]
            if writing is not None:
                mirrored += writing.result()
                progress("mirror", min(done, archive), archive)
            writing = writer.submit(_write_page, target, rows, aliases, page[-1][0])
            done += len(page)
        if writing is not None:
            mirrored += writing.result()
            progress("mirror", min(done, archive), archive)
    with store.transaction():
        store.set_setting(KV_MIRROR_DONE, "1")
    return mirrored
