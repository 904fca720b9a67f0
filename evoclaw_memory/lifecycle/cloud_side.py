"""The device's side of the cloud: which remote, its keys, sync, restore, merged state.

Memory's cloud methods delegate here; the protocol, the engine, restore and the keys are in
cloud/. Nothing here runs unless a cloud method is called (every cloud import is lazy: the
CLI's start-up must not pay for httpx or the crypto).
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Optional

import msgspec

from evoclaw_memory.errors import CryptoError, RemoteError

if TYPE_CHECKING:
    from evoclaw_memory.memory import Memory


# "<schema version> <cloud label>": the cloud schema this device verified for this cloud URL,
# so a sync sends no schema check (a missing table or column makes the remote check again).
KV_SCHEMA = "cloud.schema_verified"


def open_configured(config: Any) -> Any:
    """The Remote `config` names (Hrana, a file, or the embedded default file), unsecured;
    an unusable URL raises its clear configuration error instead of a parse of it."""
    from evoclaw_memory.cloud.remote import open_remote
    config.require_cloud()
    return open_remote(config.cloud_url, config.cloud_token, Path(config.home) / "cloud.db")


def configured_remote(mem: "Memory") -> Any:
    """This memory's configured Remote, unsecured, its schema trusted once verified."""
    from evoclaw_memory.store import migrate
    remote = open_configured(mem.config)
    if mem.store.get_setting(KV_SCHEMA) == f"{migrate.latest_version('cloud')} {remote.label}":
        remote.assume_schema()
    return remote


def held_remote(mem: "Memory") -> Any:
    """This memory's own remote: opened at its first use and kept, with its HTTP client and
    connection, until Memory.close() (a sync is then one request, no new handshake)."""
    remote = getattr(mem, "_remote", None)
    wanted = (mem.config.cloud_url, mem.config.cloud_token)
    if remote is not None and getattr(remote, "opened_for", None) != wanted:
        mem._remote = None          # the configured cloud changed: the old one goes
        remote.close()
        remote = None
    if remote is None:
        remote = configured_remote(mem)
        remote.opened_for = wanted
        mem._remote = remote
    return remote


def note_schema(mem: "Memory", remote: Any) -> None:
    """Remember the schema version `remote` verified in this process (inside a transaction)."""
    version = getattr(remote, "schema_version", None)
    if version is not None:
        value = f"{version} {remote.label}"
        if mem.store.get_setting(KV_SCHEMA) != value:
            mem.store.set_setting(KV_SCHEMA, value)


@contextlib.contextmanager
def retries(remote: Any, attempts_after_first: int) -> Iterator[None]:
    """Run the block with the remote's HTTP client retrying at most this many times."""
    client = getattr(getattr(remote, "sql", None), "inner", None)
    if client is None or not hasattr(client, "retries"):
        yield
        return
    before, client.retries = client.retries, attempts_after_first
    try:
        yield
    finally:
        client.retries = before


def open_secured(mem: "Memory", passphrase: Optional[str], recovery_key: Optional[str]) -> Any:
    """The configured remote with the agent's keys attached when encrypted (see
    secure_remote); closed again if securing it fails."""
    remote = configured_remote(mem)
    try:
        secure_remote(mem, remote, passphrase, recovery_key)
    except BaseException:
        remote.close()
        raise
    return remote


def secure_remote(mem: "Memory", remote: Any, passphrase: Optional[str] = None,
                  recovery_key: Optional[str] = None, probe: bool = False) -> Any:
    """Attach the agent's keyring to `remote` when this memory is (or must be) encrypted."""
    from evoclaw_memory.cloud import keys
    store = mem.store
    if not (passphrase or recovery_key):
        attached = keys.attach_local(remote, store)
        if attached is not None:
            return attached
    probed = remote.get_keyring(mem.agent_id) if probe else None
    encrypted_cloud = probed is not None
    if mem.config.encryption == "off":
        if encrypted_cloud:
            raise CryptoError("the cloud memory of this agent is end-to-end encrypted but "
                              "encryption is \"off\" here: set it to \"auto\" or \"on\"")
        return remote
    # A key init this device left unfinished: its keys may be in the cloud already.
    if encrypted_cloud or mem.config.wants_encryption or passphrase or recovery_key \
            or keys.pending_init(store) is not None:
        keys.attach(remote, keys.unlock_keys(store, remote, mem.agent_id,
                                             passphrase, recovery_key, record_text=probed))
    return remote


@contextlib.contextmanager
def remote_scope(mem: "Memory", remote: Any = None, secure: bool = True) -> Iterator[Any]:
    """The given remote, or the configured one: a network cloud's held remote (see
    held_remote), a file opened and closed around the block."""
    if remote is not None:
        yield mem.secure_remote(remote) if secure else remote
        return
    with scoped_remote(mem) as opened:
        yield mem.secure_remote(opened) if secure else opened


@contextlib.contextmanager
def scoped_remote(mem: "Memory") -> Iterator[Any]:
    """The configured remote, unsecured: held for a network cloud (one HTTP client and
    connection for the memory's life); a file is opened for the block only (no lock or
    WAL of the cloud file is kept between calls)."""
    if mem.config.cloud_is_network:
        yield held_remote(mem)
        return
    opened = configured_remote(mem)
    try:
        yield opened
    finally:
        opened.close()


def refresh_keys(mem: "Memory", remote: Any) -> None:
    """Adopt the cloud's newer keyring (a rotation on another device) and re-attach it."""
    from evoclaw_memory.cloud import keys
    if keys.local_keyring(mem.store) is not None:
        keys.attach(remote, keys.unlock_keys(mem.store, remote, mem.agent_id))


def init_encryption(mem: "Memory", passphrase: str, remote: Any = None,
                    scrypt_n: Optional[int] = None, progress: Any = None) -> Optional[str]:
    """Set up end-to-end encryption and re-seal the cloud archive; the recovery key or None."""
    from evoclaw_memory.cloud import keys
    owned = remote is None
    remote = remote or configured_remote(mem)
    try:
        kwargs = {"scrypt_n": scrypt_n} if scrypt_n else {}
        recovery = keys.init_keys(mem.store, remote, mem.agent_id, passphrase, **kwargs)
        with mem.store.transaction():
            mem.store.audit("key.init", "keyring", "", mem.clock())
        ring = keys.local_keyring(mem.store)
        if ring is None:        # init_keys has just saved it
            raise CryptoError("the new keyring was not saved on this device")
        reseal_now(mem, keys.attach(remote, ring), progress)
    finally:
        if owned:
            remote.close()
    return recovery


def reseal_now(mem: "Memory", remote: Any, progress: Any = None) -> None:
    """Run the pending re-seal; offline it stays pending for the next sync (the keys are
    already set up, and the caller still has a recovery key to show)."""
    try:
        mem.reseal(remote, progress)
    except RemoteError:
        pass


def reseal(mem: "Memory", remote: Any, progress: Any = None) -> Any:
    """Continue the pending re-seal of the agent's cloud archive (see cloud.keys.reseal)."""
    from evoclaw_memory.cloud import keys
    from evoclaw_memory.cloud.engine import device_id, device_name
    return keys.reseal(mem.store, remote, mem.agent_id, device_id(mem.store),
                       device_name(mem.store), progress)


def change_passphrase(mem: "Memory", current: str, new: str, remote: Any = None) -> None:
    """Rewrap the encryption keys under a new passphrase (no data is re-encrypted)."""
    from evoclaw_memory.cloud import keys
    with remote_scope(mem, remote, secure=False) as r:
        keys.change_passphrase(mem.store, r, mem.agent_id, current, new)
    with mem.store.transaction():
        mem.store.audit("key.change_passphrase", "keyring", "", mem.clock())


def rotate_key(mem: "Memory", passphrase: Optional[str], recovery_key: Optional[str],
               remote: Any = None, progress: Any = None) -> str:
    """Start a new data key and re-seal the cloud archive under it; returns its id."""
    from evoclaw_memory.cloud import keys
    with remote_scope(mem, remote, secure=False) as r:
        keys.unlock_keys(mem.store, r, mem.agent_id, passphrase, recovery_key)
        key_id = keys.rotate(mem.store, r, mem.agent_id)
        with mem.store.transaction():
            mem.store.audit("key.rotate", "keyring", key_id, mem.clock())
        ring = keys.local_keyring(mem.store)
        if ring is None:        # rotate has just saved it
            raise CryptoError("the rotated keyring was not saved on this device")
        reseal_now(mem, keys.attach(r, ring), progress)
    return key_id


def sync(mem: "Memory", remote: Any = None) -> Any:
    """Push the outbox, pull, continue a pending re-seal; count it in metrics."""
    from evoclaw_memory.cloud.keys import KV_RESEAL
    def count_it() -> None:
        mem.store.incr_metric("syncs")
        mem.store.set_metric("last_sync", mem.clock())
        note_schema(mem, scoped)

    with remote_scope(mem, remote) as scoped:
        retire_old_id(mem, scoped)      # after a restore that could not do it: one request
        # Counted in the commit that records the cloud's answer: one fsync less per sync.
        report = mem.sync_engine(scoped).sync(on_acknowledged=count_it)
        if mem.store.get_setting(KV_RESEAL):
            mem.reseal(scoped)     # after a key init/rotate, until it is complete
    return report


def sync_status(mem: "Memory") -> dict[str, Any]:
    """Outbox depth, last push, remote version, set-aside entries, re-seal (no network)."""
    from evoclaw_memory.cloud.engine import KV_LAST_PUSH, KV_REMOTE_VERSION, device_id
    store = mem.store
    last = store.get_setting(KV_LAST_PUSH)
    return {"outbox_depth": store.outbox_depth(),
            "last_push": float(last) if last else None,
            "remote_version": int(store.get_setting(KV_REMOTE_VERSION) or 0),
            "device_id": device_id(store), "rejected": store.rejected(),
            "reseal": msgspec.structs.asdict(mem.reseal_status())}


def restore(mem: "Memory", *, full: bool, force: bool, discard_unsynced: bool, remote: Any,
            progress: Any, passphrase: Optional[str], recovery_key: Optional[str]) -> Any:
    """Preflight, unlock the keys, then rebuild from the cloud (see cloud.restore)."""
    from evoclaw_memory.cloud.restore import preflight, require_agent, restore as restore_from
    preflight(mem.store, force, discard_unsynced)      # no scrypt, no request to refuse
    owned = remote is None
    if owned:
        remote = configured_remote(mem)
    try:
        began = time.perf_counter()
        # A missing agent is said as such, with the agents the cloud holds, before any key
        # is looked for (an encrypted cloud would otherwise say no key is set up).
        require_agent(remote, mem.agent_id)
        mem.secure_remote(remote, passphrase, recovery_key, probe=True)
        unlocked = time.perf_counter() - began
        kwargs = {"progress": progress} if progress else {}
        cfg = mem.config
        report = restore_from(mem, remote, mem.agent_id, full=full, force=force,
                              discard_unsynced=discard_unsynced,
                              warm_max_bytes=cfg.warm_max_bytes, decay_days=cfg.decay_days,
                              access_boost=cfg.access_boost, **kwargs)
        report.key_seconds = round(unlocked, 3)
        report.seconds = round(report.seconds + unlocked, 3)
        try:
            retire_old_id(mem, remote)
        except RemoteError:
            pass            # the restore stands; the next sync retires it
    finally:
        if owned:
            remote.close()
    if full:
        mem.recount_tree()
    # Restored facts join their entities. The warm set (inserted first) now; a full mirror's
    # archive (100k facts: ~20 s of linking) is left to store calls and consolidation, so a
    # new device is usable in seconds.
    if not full:
        mem.link_new_facts(batch=None)
    else:
        mem.link_backlog(report.warm_facts)
    return report


def retire_old_id(mem: "Memory", remote: Any) -> None:
    """Retire in the cloud the id this device had before a restore gave it a new one (see
    Remote.retire): no ghost of it is left in `devices list` for the owner to revoke while
    this device syncs under its new id. Nothing to do (no request) when none is pending."""
    import socket
    from evoclaw_memory.cloud.engine import default_device_name, device_id, device_name
    from evoclaw_memory.cloud.restore import KV_RETIRE
    old = mem.store.get_setting(KV_RETIRE)
    if not old:
        return
    new = device_id(mem.store)
    if old != new:                      # never this device's own id
        # Names nobody chose: this release's default for the old id, an older release's
        # bare hostname; the new id's default replaces them.
        remote.retire(mem.agent_id, old, new, device_name(mem.store),
                      (default_device_name(old), socket.gethostname()[:64]))
    with mem.store.transaction():
        mem.store.conn.execute("DELETE FROM kv WHERE key = ?", (KV_RETIRE,))
        mem.store.audit("device.retire", "device", old, mem.clock())


def cloud_agents(config: Any) -> list[Any]:
    """The agents the configured cloud holds (Remote.agents), opened from the config alone:
    listing them creates no agent folder here, and needs no key."""
    with open_configured(config) as remote:
        return remote.agents()


def critical_state(mem: "Memory") -> Any:
    """Hot memory + tree, as pushed to the cloud's critical_state row."""
    from evoclaw_memory.cloud.engine import device_id
    from evoclaw_memory.cloud.remote import CriticalState
    return CriticalState(hot=mem.store.load_hot(), tree=mem.store.tree_nodes(),
                         updated_at=mem.clock(), device_id=device_id(mem.store),
                         entities=mem.entity_records(), entity_removals=mem.entity_removals())


def adopt_remote_state(mem: "Memory", remote_state: Any) -> bool:
    """Merge another device's critical state into ours; True if ours now differs from it."""
    from evoclaw_memory.cloud.merge import merge_hot, merge_tree, same_state
    store = mem.store
    now = mem.clock()
    with store.transaction():
        merged = merge_hot(store.load_hot(), remote_state.hot, now)
        store.save_hot(merged, now)
        nodes = store.tree_nodes()
        # their nodes join ours only within the limits
        mem.trees.join(nodes, merge_tree(nodes, remote_state.tree), now, op="sync.merge")
        store.audit("sync.merge", "hot", f"remote device {remote_state.device_id}", now)
    mem.install_entities(remote_state.entities, remote_state.entity_removals)
    mem.write_memory_md()
    ours = {n.path for n in store.tree_nodes()}
    theirs = {n.path for n in remote_state.tree}
    # A removal theirs lacks must reach the cloud, or its next adopter brings the name back.
    removals_owed = any(remote_state.entity_removals.get(key, float("-inf")) < when
                        for key, when in mem.entity_removals().items())
    return not same_state(merged, remote_state.hot) or not ours <= theirs or removals_owed


def rename_device(mem: "Memory", device: str, name: str, remote: Any = None) -> bool:
    """Name a device. This device's name is also kept locally (it registers with it), so
    it holds even before the first sync; another device must be registered already."""
    from evoclaw_memory import validate
    from evoclaw_memory.cloud.engine import KV_DEVICE_NAME, device_id
    name = validate.device_name(name)
    device = validate.text("device id", device, max_len=64)
    own = device == device_id(mem.store)
    if own:
        with mem.store.transaction():
            mem.store.set_setting(KV_DEVICE_NAME, name)
    with remote_scope(mem, remote, secure=False) as scoped:
        return scoped.rename(mem.agent_id, device, name) or own
