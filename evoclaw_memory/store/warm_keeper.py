"""WarmKeeper: facts into the store and out of warm, with the tree's counts kept true.

The write path of `remember` (duplicate check, category, tier, insert, eviction) and the
archive to cold live here; the rules (fact size, eviction plan, what belongs in cold) are
pure functions in tiers.warm. Every method expects to run inside the store's transaction
(add() opens it itself).
"""

from __future__ import annotations

import collections
import os
from typing import Optional

from evoclaw_memory.config import Config
from evoclaw_memory.errors import ValidationError
from evoclaw_memory.models import Fact, Metadata
from evoclaw_memory.store.local import LocalStore
from evoclaw_memory.store.tree_keeper import TreeKeeper, index_body
from evoclaw_memory.text import normalized_key
from evoclaw_memory.tiers.warm import belongs_in_cold, eviction_plan, fact_size

# Below this share of the cap, eviction by size stops: evicting a batch at once keeps
# `remember` from re-planning eviction on every call once warm is full.
WARM_LOW_WATER = 0.9


def new_id() -> str:
    """A random fact/entry id (64 bits, hex): unique across devices without coordination."""
    return os.urandom(8).hex()      # = secrets.token_hex(8), without importing secrets


class WarmKeeper:
    """Inserts, reinforcements, eviction and archiving of one memory's facts."""

    def __init__(self, store: LocalStore, config: Config, tree: TreeKeeper):
        self.store = store
        self.config = config
        self.tree = tree

    def belongs_in_cold(self, importance: float, created_at: float, access_count: int,
                        now: float) -> bool:
        """True when a fact this old and weak goes straight to the cold archive."""
        cfg = self.config
        return belongs_in_cold(importance, created_at, access_count, now,
                               retention_days=cfg.warm_retention_days,
                               decay_days=cfg.decay_days, access_boost=cfg.access_boost)

    def add(self, text: str, category: str, importance: float, created: float,
            metadata: Metadata, source: str, now: float, *, pinned: bool = False,
            private: bool = False, actor: str = "manual") -> Fact:
        """Store a validated fact (or reinforce its exact duplicate) in one transaction.

        A pinned fact goes into the vault (checked against its cap) and stays warm."""
        store = self.store
        with store.transaction():
            warm_before = store.warm_bytes()     # before this call writes anything
            key = normalized_key(text)
            twin = store.find_live_by_norm_key(key)
            if twin is not None:
                self.reinforce([twin.id], now, op="remember.duplicate")
                return store.get_fact(twin.id)  # type: ignore[return-value]
            category = self.tree.ensure_category(category, now)
            fact = Fact(id=new_id(), text=text, category=category, importance=float(importance),
                        created_at=created, last_access=created,
                        metadata=metadata, source=source, pinned=pinned, private=private)
            if pinned:
                from evoclaw_memory.store.vault import VaultKeeper
                VaultKeeper(store).check_room(fact_size(text, metadata),
                                              self.config.vault_max_bytes)
            elif self.belongs_in_cold(fact.importance, created, 0, now):
                fact.tier = "cold"
            size = self.insert(fact, key, now, op="remember", actor=actor)
            if pinned:                  # the vault has its own cap: warm's total is unchanged
                size = 0
            if fact.tier == "warm" and fact.id in self.evict_over_cap(now, warm_before + size):
                fact.tier = "cold"
        return fact

    def insert(self, fact: Fact, key: str, now: float, op: str, enqueue: bool = True,
               actor: str = "manual") -> int:
        """Insert a new fact with its counts, outbox entry and audit row; returns its size."""
        size = fact_size(fact.text, fact.metadata)
        self.store.insert_fact(fact, key, size, index_body(fact))
        live = fact.superseded_by is None
        self.store.adjust_counts(fact.category, warm=live and fact.tier == "warm",
                                 cold=live and fact.tier == "cold")
        if enqueue:
            # The fact's entry also stands for the tree counts it changed: the sync engine
            # pushes the critical state with every batch of facts, so no state entry is
            # needed (deleting and re-adding it cost remember() about a page a call).
            self.store.enqueue_fact(fact.id, now)
        self.store.audit(op, fact.id, f"{fact.tier} {fact.category}"
                         + (" pinned" if fact.pinned else "") + f" actor={actor}", now)
        return size

    def reinforce(self, fact_ids: list[str], now: float, op: str) -> None:
        """Count one more use of these facts (their score rises), with an audit row."""
        self.store.reinforce(fact_ids, now)
        self.store.incr_metric("reinforcements", len(fact_ids))
        self.store.audit(op, ",".join(fact_ids)[:500], "reinforced", now)

    def supersede(self, old: Fact, new: Fact, now: float, actor: str = "manual") -> None:
        """Mark `old` superseded by `new` (kept for history, out of the counts and search).

        Refused when `new` is already (through a chain) superseded by `old`: the loop would
        hide both for good."""
        # Imported here: a per-turn CLI command that supersedes nothing then skips the
        # history module (issue 29).
        from evoclaw_memory.store.control import ControlKeeper
        if ControlKeeper(self.store, self.tree).would_cycle(old.id, new.id):
            raise ValidationError(f"{new.id} is already superseded (directly or through a chain) "
                                  f"by {old.id}; superseding {old.id} by it would hide both")
        with self.store.transaction():
            self.store.set_superseded(old.id, new.id)
            if old.superseded_by is None:
                self.store.adjust_counts(old.category, warm=-(old.tier == "warm"),
                                         cold=-(old.tier == "cold"))
            self.store.enqueue_change(old.id, now, part="supersession")
            self.store.enqueue_state(now)
            self.store.audit("supersede", old.id, f"by {new.id} actor={actor}", now)

    def evict_over_cap(self, now: float, warm_total: Optional[int] = None) -> list[str]:
        """Archive the weakest warm facts while warm is over its cap; returns their ids.

        `warm_total` is the warm bytes as the caller knows them after its own writes
        (default: the store's count). The total after eviction is left with the store, so the
        next remember() need not recount it."""
        total = self.store.warm_bytes() if warm_total is None else warm_total
        plan: list[str] = []
        if total > self.config.warm_max_bytes:
            rows = self.store.warm_rows()
            plan = eviction_plan(rows, now,
                                 max_bytes=int(self.config.warm_max_bytes * WARM_LOW_WATER),
                                 retention_days=self.config.warm_retention_days,
                                 decay_days=self.config.decay_days,
                                 access_boost=self.config.access_boost)
            self.archive(plan, now, op="evict.cap")
            gone = set(plan)
            total = sum(row[4] for row in rows if row[0] not in gone)
        self.store.note_warm_bytes(total)
        return plan

    def archive(self, fact_ids: list[str], now: float, op: str) -> None:
        """Move warm facts to the cold archive (never a drop) and keep counts true."""
        # One statement per kind of write, not per fact: an eviction round moves ~50 facts.
        moved = [f for f in self.store.facts_by_ids(fact_ids) if f.tier == "warm"]
        self.store.set_tier([f.id for f in moved], "cold")
        live_per_category = collections.Counter(f.category for f in moved
                                                if f.superseded_by is None)
        for category, n in live_per_category.items():
            self.store.adjust_counts(category, warm=-n, cold=n)
        # No outbox entry: the cloud archive already holds every fact, and warm/cold is
        # only where this device keeps it.
        self.store.audit_many(op, [(f.id, f"archived {f.category}") for f in moved], now)
        if fact_ids:
            self.store.incr_metric("evictions", len(fact_ids))
            self.store.enqueue_state(now, counts_only=True)
