"""What the sync engine and restore need from any cloud (`Remote`), and what a push returns.

`cloud.remote.SqlRemote` is the one implementation (over Hrana or a local file); the engine,
restore and the key tools know only this interface. The names are re-exported by
`cloud.remote`, where they were first defined.
"""

from __future__ import annotations

from typing import Optional, Protocol, Sequence, Union

import msgspec

from evoclaw_memory.cloud.codec import CriticalState
from evoclaw_memory.models import Fact


class RemoteState(msgspec.Struct):
    """The cloud's critical state row: its version, who wrote it, and the state itself."""

    version: int
    device_id: Optional[str]
    state: Optional[CriticalState]
    updated_at: float = 0.0
    # The cloud's clock when it answered (None from a cloud that cannot tell): a restoring
    # device learns its own clock's offset from it, as a syncing one does from a push.
    cloud_now: Optional[float] = None


class PushResult(msgspec.Struct):
    """What one push did."""

    facts: int                               # fact rows upserted
    state_pushed: bool                       # our critical state is now the cloud's
    remote: Optional[RemoteState]            # the cloud's state when ours lost the CAS
    version: int                             # the cloud's critical-state version afterwards
    revoked: bool                            # this device has been revoked
    pulled: list[tuple[int, Fact]] = []      # other devices' facts after the cursor
    unreadable: list[tuple[int, str]] = []   # (rowid, why) of pulled rows that did not open
    needs_keys: bool = False                 # the cloud's state is sealed under a newer key
    nonce: Optional[str] = None              # the cloud's state row's push nonce afterwards
    tombstones: list[tuple[int, str]] = []   # (rowid, id) of facts other devices forgot
    changed: list[tuple[int, Fact]] = []     # (seq, fact as it now stands) other devices changed
    unreadable_changes: list[tuple[int, str]] = []   # (seq, why) of changed rows that did not open
    # The newest rowid of the archive, seq of the change feed, rowid of the tombstones, as
    # the push left them: where the pull cursors go once nothing of others' lies before.
    tops: tuple[int, int, int] = (0, 0, 0)
    # Pushed facts the cloud did not take whole (another device changed a part later, or
    # superseded the fact), as the cloud now holds them: the device merges them part by part
    # and pushes the merge (issue 26). Rows that did not open are left out.
    kept: list[Fact] = []
    cloud_now: Optional[float] = None        # the cloud's clock while it ran this push
    # The cloud's critical state (version, push nonce) before this push; None: it had none
    # (SyncEngine.state_lost: did the cloud lose data since this device last synced?).
    state_before: Optional[tuple[int, Optional[str]]] = None


class ArchiveCounts(msgspec.Struct):
    """What the cloud holds of one agent, cheaply: facts per created_at bucket, the critical
    state's version (None: no row) and push nonce, and the newest rowid."""

    buckets: dict[int, int] = {}
    state_version: Optional[int] = None
    state_nonce: Optional[str] = None
    max_rowid: int = 0           # the archive table's newest rowid (every agent's rows)


class Device(msgspec.Struct):
    device_id: str
    name: str
    registered_at: int
    last_seen: int
    revoked_at: Optional[int]


class AgentSummary(msgspec.Struct):
    """One agent the cloud holds, from counts and metadata only (readable without any key)."""

    agent_id: str
    devices: int                 # registered and not revoked
    facts: int                   # rows in the archive (superseded ones included)
    last_sync: Optional[float]   # epoch seconds of its newest push; None: it never synced
    encrypted: bool              # the agent has a keyring: its rows are end-to-end encrypted
    has_state: bool              # it has a critical state (hot memory + tree) to restore


class Remote(Protocol):
    """What the sync engine and restore need from a cloud."""

    def ensure_schema(self) -> int: ...

    def push(self, agent_id: str, device_id: str, device_name: str, facts: list[Fact],
             state: Optional[CriticalState], expected_version: int, pull_after: int,
             pull_limit: int = 200, forgotten: Sequence[str] = (),
             revived: Sequence[str] = (), tombstones_after: Optional[int] = None,
             changes_after: Optional[int] = None) -> PushResult: ...

    def pull_state(self, agent_id: str) -> Optional[RemoteState]:
        """The state row (its `state` None when the cloud has none), with the cloud's time."""

    def fetch_facts(self, agent_id: str, after_rowid: int, limit: int) -> list[tuple[int, Fact]]: ...

    def download_page(self, agent_id: str, after_rowid: int, limit: int) -> Union[str, list]: ...

    def open_page(self, page: Union[str, list]) -> list[tuple[int, Fact]]: ...

    def recent_candidates(self, agent_id: str, since: float, limit: int) -> list[tuple]: ...

    def facts_by_ids(self, agent_id: str, ids: list[str]) -> list[Fact]: ...

    def count_facts(self, agent_id: str) -> int: ...

    def archive_buckets(self, agent_id: str, width: int) -> ArchiveCounts: ...

    def ids_in_buckets(self, agent_id: str, buckets: list[int], width: int) -> set[str]: ...

    def max_rowid(self, agent_id: str) -> int: ...

    def max_change_seq(self, agent_id: str) -> int: ...

    def query_cold(self, agent_id: str, text: Optional[str], categories: Optional[list[str]],
                   limit: int) -> list[Fact]: ...

    def get_keyring(self, agent_id: str) -> Optional[str]: ...

    def put_keyring(self, agent_id: str, data: str, expected: Optional[str]) -> bool: ...

    def devices(self, agent_id: str) -> list[Device]: ...

    def revoke(self, agent_id: str, device_id: str) -> bool: ...

    def retire(self, agent_id: str, device_id: str, new_id: str, new_name: str,
               default_names: Sequence[str] = ()) -> bool: ...

    def agents(self) -> list[AgentSummary]: ...

    def rename(self, agent_id: str, device_id: str, name: str) -> bool: ...

    def ping(self) -> float: ...

    def close(self) -> None: ...
