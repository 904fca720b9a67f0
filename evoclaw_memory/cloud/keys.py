"""Key management for end-to-end encryption: where keyrings live and how they are unlocked.

The wrapped record lives in the cloud (evoclaw_keys) so a new device can unlock it with the
passphrase or recovery key; the device keeps a copy of the record and of the unwrapped keys
in its own 0600 database, so syncing does not ask for the passphrase every time.
"""

from __future__ import annotations

import os
import time
from typing import Optional

from ..errors import CryptoError
from ..store import LocalStore
from .crypto import SCRYPT_N, Keyring, decode_record, encode_record
from .remote import SealedCodec, SqlRemote

KV_RING = "crypto.keyring"
KV_RECORD = "crypto.record"


def secrets_from_env() -> tuple[Optional[str], Optional[str]]:
    """(passphrase, recovery key) from EVOCLAW_PASSPHRASE / EVOCLAW_RECOVERY_KEY."""
    return os.environ.get("EVOCLAW_PASSPHRASE") or None, os.environ.get("EVOCLAW_RECOVERY_KEY") or None


def local_keyring(store: LocalStore) -> Optional[Keyring]:
    text = store.get_setting(KV_RING)
    return Keyring.import_local(text) if text else None


def _save_local(store: LocalStore, ring: Keyring, record_text: str) -> None:
    with store.transaction():
        store.set_setting(KV_RING, ring.export_local())
        store.set_setting(KV_RECORD, record_text)


def init_keys(store: LocalStore, remote: SqlRemote, agent_id: str, passphrase: str,
              scrypt_n: int = SCRYPT_N) -> str:
    """Create this agent's keyring in the cloud; returns the recovery key (show it ONCE)."""
    if remote.get_keyring(agent_id) is not None:
        raise CryptoError("encryption is already set up for this agent: unlock it with the "
                          "passphrase (EVOCLAW_PASSPHRASE) or restore with the recovery key")
    if not passphrase or len(passphrase) < 8:
        raise CryptoError("choose a passphrase of at least 8 characters")
    ring, record, recovery = Keyring.create(agent_id, passphrase, scrypt_n)
    text = encode_record(record)
    if not remote.put_keyring(agent_id, text, None):
        raise CryptoError("another device set up encryption at the same moment: unlock with "
                          "its passphrase")
    _save_local(store, ring, text)
    return recovery


def unlock_keys(store: LocalStore, remote: SqlRemote, agent_id: str,
                passphrase: Optional[str] = None, recovery_key: Optional[str] = None,
                record_text: Optional[str] = None) -> Keyring:
    """The keyring: the device's copy, or the cloud's record unlocked with a secret.

    `record_text`: the cloud's keyring record when the caller has just read it."""
    ring = local_keyring(store)
    if record_text is None:
        record_text = remote.get_keyring(agent_id)
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
    from .crypto import Wrap, _unwrap
    for sealed in record.keys:
        new._keys[sealed.key_id] = _unwrap(ring._master, Wrap(nonce=sealed.nonce, sealed=sealed.sealed),
                                           f"data:{sealed.key_id}", "keyring")
    _save_local(store, new, record_text)
    return new


def attach(remote: SqlRemote, ring: Keyring) -> SqlRemote:
    """Make `remote` seal everything it writes and open everything it reads with `ring`."""
    remote.codec = SealedCodec(ring)
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
    new_text = encode_record(ring.rotate(decode_record(record_text)))
    if not remote.put_keyring(agent_id, new_text, record_text):
        raise CryptoError("the keyring changed in the cloud meanwhile: try again")
    _save_local(store, ring, new_text)
    now = time.time()
    with store.transaction():        # re-encryption rides the outbox, in the background
        store.conn.execute("INSERT INTO outbox (kind, ref, created_at) VALUES ('resync', 'all', ?) "
                           "ON CONFLICT(kind, ref) DO NOTHING", (now,))
        store.set_setting("sync.resync_cursor", "0")
        store.set_setting("sync.resync_done", "0")
        store.enqueue_state(now)
    return ring.current
