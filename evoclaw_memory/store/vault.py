"""VaultKeeper: pinned facts (never decay, never leave the device) and privacy marks, as rows.

A pin moves a cold fact back onto the device (the vault is on the device by definition) and
is refused past the vault's own cap; pin, unpin and a privacy change each go to the cloud
through the fact's outbox entry (the flags are a column of its row) with an audit row that
names the actor. Validation happens above (lifecycle.vault).
"""

from __future__ import annotations

import msgspec

from evoclaw_memory.errors import LimitError, ValidationError
from evoclaw_memory.models import Fact
from evoclaw_memory.store.local import LocalStore


class VaultKeeper:
    """Pin, unpin and mark private over one LocalStore."""

    def __init__(self, store: LocalStore):
        self.store = store

    def vault_bytes(self) -> int:
        """Bytes the pinned facts hold (text and metadata, as warm counts them)."""
        return self.store.conn.execute(
            "SELECT COALESCE(SUM(size), 0) FROM facts WHERE pinned = 1").fetchone()[0]

    def pinned(self) -> list[str]:
        return [r[0] for r in self.store.conn.execute(
            "SELECT id FROM facts WHERE pinned = 1 ORDER BY rowid")]

    def check_room(self, size: int, max_bytes: int) -> None:
        """LimitError when `size` more bytes would take the vault past its cap."""
        used = self.vault_bytes()
        if used + size > max_bytes:
            raise LimitError(f"the vault is full: pinned facts hold {used} of {max_bytes} bytes "
                             f"and this one needs {size}; unpin one (`evoclaw-memory unpin ID`) "
                             "or raise [vault] max_bytes in config.toml")

    def pin(self, fact: Fact, actor: str, now: float, max_bytes: int) -> Fact:
        if fact.pinned:
            return fact
        if fact.superseded_by is not None:
            raise ValidationError(f"fact {fact.id!r} is superseded by {fact.superseded_by}; "
                                  "pin the fact that replaced it")
        store = self.store
        with store.transaction():
            size = store.conn.execute("SELECT size FROM facts WHERE id = ?",
                                      (fact.id,)).fetchone()[0]
            self.check_room(int(size), max_bytes)
            store.conn.execute("UPDATE facts SET pinned = 1, tier = 'warm' WHERE id = ?",
                               (fact.id,))
            if fact.tier == "cold":          # back onto the device, where the vault lives
                store.adjust_counts(fact.category, warm=1, cold=-1)
                store.enqueue_state(now)
            store.enqueue_change(fact.id, now, part="flags")
            store.audit("pin", fact.id, f"{size} bytes actor={actor}", now)
        return msgspec.structs.replace(fact, pinned=True, tier="warm")

    def unpin(self, fact: Fact, actor: str, now: float) -> Fact:
        if not fact.pinned:
            return fact
        with self.store.transaction():
            # It stays warm for now; from here on it decays and may be evicted like any fact.
            self.store.conn.execute("UPDATE facts SET pinned = 0 WHERE id = ?", (fact.id,))
            self.store.enqueue_change(fact.id, now, part="flags")
            self.store.audit("unpin", fact.id, f"actor={actor}", now)
        return msgspec.structs.replace(fact, pinned=False)

    def set_private(self, fact: Fact, private: bool, actor: str, now: float) -> Fact:
        if fact.private == private:
            return fact
        with self.store.transaction():
            self.store.conn.execute("UPDATE facts SET private = ? WHERE id = ?",
                                    (int(private), fact.id))
            self.store.enqueue_change(fact.id, now, part="flags")
            self.store.audit("private" if private else "shared", fact.id, f"actor={actor}", now)
        return msgspec.structs.replace(fact, private=private)
