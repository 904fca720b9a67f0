"""Key management for end-to-end encryption: where keyrings live and how they are unlocked.

The wrapped record lives in the cloud (evoclaw_keys) so a new device can unlock it with the
passphrase or recovery key; the device keeps a copy of the record and of the unwrapped keys
in its own 0600 database, so syncing does not ask for the passphrase every time.
"""

from __future__ import annotations

import os
import sqlite3
import time
from typing import Callable, Optional

import msgspec

from evoclaw_memory.errors import CryptoError, StoreError
from evoclaw_memory.store.local import LocalStore
from evoclaw_memory.cloud.crypto import (PREFIX, SCRYPT_N, Keyring, decode_record, encode_record, is_sealed,
                     sealed_with)
from evoclaw_memory.cloud.codec import SealedCodec
from evoclaw_memory.cloud.remote import SqlRemote

KV_RING = "crypto.keyring"
KV_RECORD = "crypto.record"
# A `key init` under way: the new keyring, its record and the recovery key, written BEFORE the
# record goes to the cloud, so an init interrupted at any step is found and finished by the
# next sync or `key init` (the recovery key stays until `key init` has shown it:
# forget_pending).
KV_PENDING_INIT = "crypto.pending_init"
# A re-seal of the cloud archive under the current key: "init" (clear rows are the archive
# from before encryption) or "rotate" (a clear row there was written around the keys).
KV_RESEAL = "crypto.reseal"
KV_RESEAL_CURSOR = "crypto.reseal_cursor"       # the cloud rowid the walk has passed
KV_RESEAL_ROWS = "crypto.reseal_rows"           # rows re-sealed by the current/last walk
KV_RESEAL_UNREADABLE = "crypto.reseal_unreadable"
KV_RESEAL_REMAINING = "crypto.reseal_remaining"  # rows left when last counted
KV_RESEAL_FINISHED = "crypto.reseal_finished_at"
RESEAL_PAGE = 500

Progress = Callable[[str, int, int], None]      # (stage, done, total), as restore's


class PendingInit(msgspec.Struct):
    ring: str           # Keyring.export_local()
    record: str         # the record text as uploaded
    recovery: str


class ResealReport(msgspec.Struct):
    """Where the re-seal of the agent's cloud archive stands."""

    pending: bool               # rows may still be in clear or under an older key
    resealed: int = 0           # rows re-sealed by the current (or last) walk
    unreadable: int = 0         # rows that did not open (tampered; their ids are reported)
    remaining: int = 0          # rows left when last counted (0 once complete)
    finished_at: Optional[float] = None


def secrets_from_env() -> tuple[Optional[str], Optional[str]]:
    """(passphrase, recovery key) from EVOCLAW_PASSPHRASE / EVOCLAW_RECOVERY_KEY."""
    return os.environ.get("EVOCLAW_PASSPHRASE") or None, os.environ.get("EVOCLAW_RECOVERY_KEY") or None


def local_keyring(store: LocalStore) -> Optional[Keyring]:
    text = store.get_setting(KV_RING)
    return Keyring.import_local(text) if text else None


def _save_local(store: LocalStore, ring: Keyring, record_text: str) -> None:
    try:
        with store.transaction():
            store.set_setting(KV_RING, ring.export_local())
            store.set_setting(KV_RECORD, record_text)
    except sqlite3.Error as exc:
        raise StoreError(f"the keys could not be saved on this device ({exc}); the cloud "
                         "already has them: fix the local database, then run `evoclaw-memory "
                         "key init` again with the same passphrase (or sync) to finish") from exc


def pending_init(store: LocalStore) -> Optional[PendingInit]:
    """The `key init` this device started and has not finished showing, if any."""
    text = store.get_setting(KV_PENDING_INIT)
    return msgspec.json.decode(text, type=PendingInit) if text else None


def queue_reseal(store: LocalStore, mode: str) -> None:
    """Mark the cloud archive for re-sealing (call inside the transaction that records why),
    and queue every local fact and the state, as before."""
    now = time.time()
    if store.get_setting(KV_RESEAL) != "init":      # an unfinished init keeps accepting clear rows
        store.set_setting(KV_RESEAL, mode)
    store.set_setting(KV_RESEAL_CURSOR, "0")
    store.set_setting(KV_RESEAL_ROWS, "0")
    store.set_setting(KV_RESEAL_UNREADABLE, "0")
    store.conn.execute("INSERT INTO outbox (kind, ref, created_at) VALUES ('resync', 'all', ?) "
                       "ON CONFLICT(kind, ref) DO NOTHING", (now,))
    store.set_setting("sync.resync_cursor", "0")
    store.set_setting("sync.resync_done", "0")
    store.enqueue_state(now)


def _check_passphrase(passphrase: str) -> None:
    if not passphrase or len(passphrase) < 8:
        raise CryptoError("choose a passphrase of at least 8 characters")


def init_keys(store: LocalStore, remote: SqlRemote, agent_id: str, passphrase: str,
              scrypt_n: int = SCRYPT_N) -> Optional[str]:
    """Create this agent's keyring in the cloud; returns the recovery key (show it ONCE).

    Each step leaves a state the next sync or `key init` completes: the pending keyring and
    the re-seal are recorded locally before the record goes up. When the cloud already has
    a keyring this passphrase opens (an interrupted init, or another device's), it is
    adopted; the recovery key comes back only if this device made it and never showed it."""
    _check_passphrase(passphrase)
    existing = remote.get_keyring(agent_id)
    if existing is not None:
        return _adopt_existing(store, agent_id, passphrase, existing)
    ring, record, recovery = Keyring.create(agent_id, passphrase, scrypt_n)
    text = encode_record(record)
    pending = PendingInit(ring=ring.export_local(), record=text, recovery=recovery)
    with store.transaction():
        store.set_setting(KV_PENDING_INIT, msgspec.json.encode(pending).decode())
        queue_reseal(store, "init")
    # A retried insert whose first answer was lost finds its own record there: ours, too.
    if not remote.put_keyring(agent_id, text, None) and remote.get_keyring(agent_id) != text:
        raise CryptoError("another device set up encryption at the same moment: run `key init` "
                          "again with its passphrase")
    _save_local(store, ring, text)
    # The pending init (and its recovery key) stays until the owner has been shown the key
    # (forget_pending): a kill during the re-seal that follows must not lose it.
    return recovery


def forget_pending(store: LocalStore) -> None:
    """The recovery key of this device's `key init` has been shown: stop keeping it."""
    with store.transaction():
        store.conn.execute("DELETE FROM kv WHERE key = ?", (KV_PENDING_INIT,))


def _adopt_existing(store: LocalStore, agent_id: str, passphrase: str,
                    record_text: str) -> Optional[str]:
    """`key init` on an agent whose cloud already holds a keyring: unlock it and carry on."""
    try:
        ring = Keyring.unlock(agent_id, decode_record(record_text), passphrase=passphrase)
    except CryptoError as exc:
        raise CryptoError("encryption is already set up for this agent and this passphrase "
                          "does not open it: use the passphrase it was set up with "
                          "(EVOCLAW_PASSPHRASE), or restore with the recovery key") from exc
    pending = pending_init(store)
    mine = pending is not None and pending.record == record_text
    with store.transaction():
        # A finished init elsewhere may still have left rows unsealed (or under v1): walk once.
        queue_reseal(store, "init" if mine else "rotate")
    _save_local(store, ring, record_text)
    if not mine:
        forget_pending(store)       # a stale one, of an init that never went up
    return pending.recovery if mine and pending is not None else None


def unlock_keys(store: LocalStore, remote: SqlRemote, agent_id: str,
                passphrase: Optional[str] = None, recovery_key: Optional[str] = None,
                record_text: Optional[str] = None) -> Keyring:
    """The keyring: the device's copy, or the cloud's record unlocked with a secret.

    `record_text`: the cloud's keyring record when the caller has just read it."""
    ring = local_keyring(store)
    if record_text is None:
        record_text = remote.get_keyring(agent_id)
    pending = pending_init(store) if ring is None else None
    if pending is not None and pending.record == record_text:
        # This device's `key init` reached the cloud but stopped before saving: finish it.
        ring = Keyring.import_local(pending.ring)
        _save_local(store, ring, record_text)
        return ring
    if ring is not None and (record_text is None or record_text == store.get_setting(KV_RECORD)):
        return ring
    if record_text is None:
        raise CryptoError("encryption is on but no key is set up for this agent: run "
                          "`evoclaw-memory key init` (or set encryption = \"off\")")
    if ring is not None:
        # The cloud's record changed (a rotation or passphrase change on another device):
        # the master key we hold still opens its new data keys.
        try:
            return _adopt_record(store, ring, agent_id, record_text)
        except CryptoError:
            pass
    env_pass, env_recovery = secrets_from_env()
    ring = Keyring.unlock(agent_id, decode_record(record_text),
                          passphrase=passphrase or env_pass,
                          recovery_key=recovery_key or env_recovery)
    _save_local(store, ring, record_text)
    return ring


def _adopt_record(store: LocalStore, ring: Keyring, agent_id: str, record_text: str) -> Keyring:
    record = decode_record(record_text)
    new = Keyring(agent_id, ring._master, {}, record.current, record.keys[0].key_id)
    from evoclaw_memory.cloud.crypto import Wrap, _unwrap
    for sealed in record.keys:
        new._keys[sealed.key_id] = _unwrap(ring._master, Wrap(nonce=sealed.nonce, sealed=sealed.sealed),
                                           f"data:{sealed.key_id}", "keyring")
    _save_local(store, new, record_text)
    return new


def attach(remote: SqlRemote, ring: Keyring) -> SqlRemote:
    """Make `remote` seal everything it writes and open everything it reads with `ring`."""
    remote.codec = SealedCodec(ring)
    return remote


def attach_local(remote: SqlRemote, store: LocalStore) -> Optional[SqlRemote]:
    """Attach the device's own keyring to `remote` (None when this device holds no keys).

    A held remote keeps the codec it was given while the device's keys stay as they were:
    its derived subkeys and category tokens carry over, and every sync does not decode the
    keyring and derive them again (a quarter of an encrypted push's sealing). Keys that
    changed (a rotation, another device's record adopted) are a new text: a new codec."""
    text = store.get_setting(KV_RING)
    if not text:
        return None
    codec = getattr(remote, "codec", None)
    if isinstance(codec, SealedCodec) and codec.source == text:
        return remote
    codec = SealedCodec(Keyring.import_local(text))
    codec.source = text
    remote.codec = codec
    return remote


def change_passphrase(store: LocalStore, remote: SqlRemote, agent_id: str, current: str,
                      new_passphrase: str, scrypt_n: int = SCRYPT_N) -> None:
    """Rewrap the master key under a new passphrase; the data is not re-encrypted."""
    record_text = remote.get_keyring(agent_id)
    if record_text is None:
        raise CryptoError("encryption is not set up for this agent")
    if not new_passphrase or len(new_passphrase) < 8:
        raise CryptoError("choose a passphrase of at least 8 characters")
    ring = Keyring.unlock(agent_id, decode_record(record_text), passphrase=current)
    new_text = encode_record(ring.change_passphrase(decode_record(record_text), new_passphrase,
                                                    scrypt_n))
    if not remote.put_keyring(agent_id, new_text, record_text):
        raise CryptoError("the keyring changed in the cloud meanwhile: try again")
    _save_local(store, ring, new_text)


def rotate(store: LocalStore, remote: SqlRemote, agent_id: str) -> str:
    """Add a new data key and queue every fact and the state to be re-sealed under it."""
    ring = unlock_keys(store, remote, agent_id)
    record_text = remote.get_keyring(agent_id)
    if record_text is None:          # removed from the cloud since unlock_keys read it
        raise CryptoError("encryption is not set up for this agent")
    new_text = encode_record(ring.rotate(decode_record(record_text)))
    with store.transaction():        # before the new key goes up: a crash leaves it queued
        queue_reseal(store, "rotate")
    if not remote.put_keyring(agent_id, new_text, record_text):
        raise CryptoError("the keyring changed in the cloud meanwhile: try again")
    _save_local(store, ring, new_text)
    return ring.current


# -- re-seal of the cloud archive ------------------------------------------------------------

def reseal_status(store: LocalStore) -> ResealReport:
    """Where the re-seal stands, from the device's own records (no network)."""
    finished = store.get_setting(KV_RESEAL_FINISHED)
    return ResealReport(pending=bool(store.get_setting(KV_RESEAL)),
                        resealed=int(store.get_setting(KV_RESEAL_ROWS) or 0),
                        unreadable=int(store.get_setting(KV_RESEAL_UNREADABLE) or 0),
                        remaining=int(store.get_setting(KV_RESEAL_REMAINING) or 0),
                        finished_at=float(finished) if finished else None)


def reseal(store: LocalStore, remote: SqlRemote, agent_id: str, device_id: str,
           device_name: str, progress: Optional[Progress] = None,
           page_size: int = RESEAL_PAGE) -> ResealReport:
    """Re-seal every cloud row of the agent that is in clear or not in today's form under the
    current key: read a page by rowid, open, seal, upsert; the cursor is saved after each page,
    so an interrupted walk resumes. Rows that do not open are reported and left alone."""
    mode = store.get_setting(KV_RESEAL)
    codec = remote.codec
    if not mode or not isinstance(codec, SealedCodec):
        return reseal_status(store)
    keep = sealed_with(codec.ring.current)
    cursor = int(store.get_setting(KV_RESEAL_CURSOR) or 0)
    done = int(store.get_setting(KV_RESEAL_ROWS) or 0)
    bad = int(store.get_setting(KV_RESEAL_UNREADABLE) or 0)
    remaining = remote.count_unsealed(agent_id, cursor, keep)
    report = progress or (lambda stage, n, total: None)
    report("re-sealing", 0, remaining)
    walked = 0
    while True:
        rows = remote.unsealed_page(agent_id, cursor, keep, page_size)
        facts = []
        for row in rows:
            try:
                facts.append(codec.fact_any(row[1:], allow_plain=mode == "init"))
            except CryptoError as exc:
                remote.rejected.append(str(exc))
                bad += 1
        if facts:
            expected = int(store.get_setting("sync.remote_version") or 0)
            result = remote.push(agent_id, device_id, device_name, facts, None, expected,
                                 2 ** 62, 0)
            if result.revoked:      # the next sync wipes this device; nothing more to do here
                return reseal_status(store)
        if rows:
            cursor = int(rows[-1][0])
            done += len(facts)
            walked += len(rows)
        if len(rows) < page_size:
            _reseal_state(store, remote, codec, agent_id, device_id, device_name, mode)
        with store.transaction():          # the page and the cursor that passed it, together
            store.set_setting(KV_RESEAL_CURSOR, str(cursor))
            store.set_setting(KV_RESEAL_ROWS, str(done))
            store.set_setting(KV_RESEAL_UNREADABLE, str(bad))
            store.set_setting(KV_RESEAL_REMAINING, str(max(0, remaining - walked)))
            if len(rows) < page_size:
                store.conn.execute("DELETE FROM kv WHERE key = ?", (KV_RESEAL,))
                store.set_setting(KV_RESEAL_FINISHED, repr(time.time()))
        report("re-sealing", min(walked, remaining), remaining)
        if len(rows) < page_size:
            return reseal_status(store)



def _reseal_state(store: LocalStore, remote: SqlRemote, codec: SealedCodec, agent_id: str,
                  device_id: str, device_name: str, mode: str) -> None:
    """The cloud's critical state re-sealed as it is there (compare-and-set on its version):
    it may be newer than this device's, which follows through the outbox as usual."""
    from evoclaw_memory.cloud.codec import decode_state
    row = remote.state_row(agent_id)
    if row is None or row[1].startswith(f"{PREFIX}{codec.ring.current}:"):
        return
    version, data = row
    try:
        if is_sealed(data):
            state = codec.state(data)
        elif mode == "init":
            state = decode_state(data)
        else:
            raise CryptoError("row critical_state: in clear in an encrypted memory (written "
                              "around the keys)")
    except CryptoError as exc:      # reported like a damaged row; our next state push replaces it
        remote.rejected.append(str(exc))
        return
    result = remote.push(agent_id, device_id, device_name, [], state, version, 2 ** 62, 0)
    if result.state_pushed and store.get_setting("sync.remote_version") == str(version):
        with store.transaction():
            store.set_setting("sync.remote_version", str(result.version))
