"""Facts and state that arrive from elsewhere: pulled from other devices, restored or bulk
loaded. None of it is queued back to the cloud (it came from there)."""

from __future__ import annotations

from typing import Any

import msgspec

from evoclaw_memory.models import Fact
from evoclaw_memory.store.local import LocalStore
from evoclaw_memory.store.tree_keeper import key_and_body_of
from evoclaw_memory.store.warm_keeper import WarmKeeper
from evoclaw_memory.text import normalized_key
from evoclaw_memory.tiers import hot as hot_rules
from evoclaw_memory.tiers import tree as tree_rules
from evoclaw_memory.tiers.warm import belongs_in_cold, fact_size


def insert_pulled(warm: WarmKeeper, facts: list[Fact], now: float) -> int:
    """Store facts another device pushed, skipping known ids; returns how many landed."""
    store, tree = warm.store, warm.tree
    added = 0
    with store.transaction():
        for fact in facts:
            known = store.get_fact(fact.id)
            if known is not None and (known.pinned, known.private) != (fact.pinned, fact.private):
                _adopt_flags(warm, known, fact, now)      # pinned or marked on another device
            if known is not None or store.conn.execute(
                    "SELECT 1 FROM forgotten WHERE id = ?", (fact.id,)).fetchone():
                continue        # known, or forgotten here (its tombstone may not be out yet)
            category = tree.ensure_category(tree_rules.validate_path(fact.category), now)
            tier = "cold" if not fact.pinned and warm.belongs_in_cold(
                fact.importance, fact.created_at, fact.access_count, now) else "warm"
            fact = msgspec.structs.replace(fact, category=category, tier=tier)
            warm.insert(fact, normalized_key(fact.text), now, op="sync.pull", enqueue=False,
                        actor="sync")
            added += 1
        if added:
            warm.evict_over_cap(now)
    return added


def _adopt_flags(warm: WarmKeeper, known: Fact, pulled: Fact, now: float) -> None:
    """Take another device's pin and privacy of a fact this device already holds; a pinned
    fact comes back onto the device (the vault is never only in the cloud)."""
    store = warm.store
    to_warm = pulled.pinned and known.tier == "cold"
    store.conn.execute("UPDATE facts SET pinned = ?, private = ?, tier = ? WHERE id = ?",
                       (int(pulled.pinned), int(pulled.private),
                        "warm" if to_warm else known.tier, known.id))
    if to_warm and known.superseded_by is None:
        store.adjust_counts(known.category, warm=1, cold=-1)
    store.audit("sync.flags", known.id, f"pinned={int(pulled.pinned)} "
                f"private={int(pulled.private)} actor=sync", now)


def install_state(warm: WarmKeeper, state: Any, keep_counts: bool, now: float) -> None:
    """Replace hot memory and the tree with a restored critical state (`state.hot`,
    `state.tree`); the tree's counts are zeroed unless `keep_counts`."""
    store = warm.store
    with store.transaction():
        store.save_hot(hot_rules.prune(state.hot, now), now)
        installed = warm.tree.install(state.tree, keep_counts)
        store.audit("restore", "hot", f"{installed} tree nodes", now)


def prepare_bulk(warm: WarmKeeper, facts: list[Fact], tier_by_score: bool,
                 now: float) -> list[tuple]:
    """The CPU half of a bulk insert (tier, duplicate key, size, index body); touches no
    database. With `tier_by_score` each fact goes where its score puts it, else cold."""
    cfg = warm.config
    rows = []
    for fact in facts:
        # A pinned fact lives on the device whatever its age (the vault never decays).
        cold = not fact.pinned and (not tier_by_score or belongs_in_cold(
            fact.importance, fact.created_at, fact.access_count, now,
            retention_days=cfg.warm_retention_days, decay_days=cfg.decay_days,
            access_boost=cfg.access_boost))
        tier = "cold" if cold else "warm"
        if fact.tier != tier:
            fact = msgspec.structs.replace(fact, tier=tier)
        key, body = key_and_body_of(fact)
        rows.append(LocalStore.bulk_row(fact, key, fact_size(fact.text, fact.metadata), body))
    return rows


def insert_prepared(store: LocalStore, rows: list[tuple]) -> int:
    """The database half of a bulk insert: rows from prepare_bulk(), skipping known ids."""
    with store.transaction():
        return store.insert_facts_bulk(rows)
