"""Facts and state that arrive from elsewhere: pulled from other devices, restored or bulk
loaded. None of it is queued back to the cloud (it came from there)."""

from __future__ import annotations

from typing import Any, Optional

import msgspec

from evoclaw_memory.models import Fact
from evoclaw_memory.store.local import LocalStore
from evoclaw_memory.store.rows import encoder
from evoclaw_memory.store.tree_keeper import key_and_body_of
from evoclaw_memory.store.warm_keeper import WarmKeeper
from evoclaw_memory.text import key_digest, normalized_key
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
            if known is not None and _flags(known) != _flags(fact) \
                    and fact.flags_changed_at >= known.flags_changed_at:
                _adopt_flags(warm, known, fact, now)      # pinned or marked on another device
            if known is not None or store.conn.execute(
                    "SELECT 1 FROM forgotten WHERE id = ?", (fact.id,)).fetchone():
                continue        # known, or forgotten here (its tombstone may not be out yet)
            fact = not_from_the_future(fact, now)
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


FUTURE_SLACK = 300.0      # seconds a stamp may run ahead of now (clocks and round trips)
CLOCK_UNSET = 1_000_000_000.0   # 2001-09-09: an earlier time is a clock that was never set


def not_from_the_future(fact: Fact, now: float) -> Fact:
    """`fact` with a creation or last use later than now (made by a device whose clock ran
    ahead before it ever synced) moved back to now: a fact stamped 2100 would otherwise never
    age on any device. One created before 2001 (a clock never set, as a Raspberry Pi without
    a clock boots in 1970) counts as created now, when now itself is a set clock's."""
    unset = fact.created_at < CLOCK_UNSET <= now
    if not unset and fact.created_at <= now + FUTURE_SLACK \
            and fact.last_access <= now + FUTURE_SLACK:
        return fact
    created = now if unset else min(fact.created_at, now)
    return msgspec.structs.replace(fact, created_at=created,
                                   last_access=max(created, min(fact.last_access, now)))


def _adopt_flags(warm: WarmKeeper, known: Fact, pulled: Fact, now: float) -> None:
    """Take another device's pin and privacy of a fact this device already holds; a pinned
    fact comes back onto the device (the vault is never only in the cloud)."""
    store = warm.store
    to_warm = pulled.pinned and known.tier == "cold"
    store.conn.execute("UPDATE facts SET pinned = ?, private = ?, tier = ?, flags_changed_at = ? "
                       "WHERE id = ?", (int(pulled.pinned), int(pulled.private),
                                        "warm" if to_warm else known.tier,
                                        pulled.flags_changed_at, known.id))
    if to_warm and known.superseded_by is None:
        store.adjust_counts(known.category, warm=1, cold=-1)
    store.audit("sync.flags", known.id, f"pinned={int(pulled.pinned)} "
                f"private={int(pulled.private)} actor=sync", now)


def apply_changed(warm: WarmKeeper, facts: list[Fact], now: float) -> int:
    """Take other devices' changes of facts (pulled from the cloud's change feed); returns
    how many local facts changed.

    The rule (docs/sync.md "Changes on several devices", merge_versions): the content (text,
    category, importance, metadata) comes from the version whose content changed later, the
    flags (pin, privacy) from the one whose flags did, the supersession from the one whose
    supersession did. When the result is not the version the cloud holds (the two devices
    changed different parts at once, or ours is newer), it is queued as a change of this
    device, so the cloud and the other devices get the merge. A forget wins over any change:
    its tombstone is applied after these, and a fact forgotten here is never brought back. A
    fact this device does not hold is left in the archive, unless it is pinned (the vault is
    on every device). Nothing else is queued back: it came from the cloud."""
    store = warm.store
    changed, vault = 0, []
    with store.transaction():
        for fact in facts:
            known = store.get_fact(fact.id)
            if known is None:
                if fact.pinned:
                    vault.append(fact)       # insert_pulled skips what was forgotten here
                continue
            merged = merge_versions(known, fact)
            if merged is not known:
                _replace(warm, known, merged, now)
                changed += 1
            if not _same_version(merged, fact):
                # Not the cloud's version (each device changed a different part, or ours is
                # newer): the merge goes back to the cloud, and from there to the others.
                store.enqueue_change(known.id, now, part=None)
    return changed + (insert_pulled(warm, vault, now) if vault else 0)


def _flags(fact: Fact) -> tuple[bool, bool]:
    return fact.pinned, fact.private


def _content(fact: Fact) -> tuple:
    return fact.text, fact.category, fact.importance, fact.metadata


def _parts(fact: Fact) -> tuple:
    return _content(fact), _flags(fact), fact.superseded_by


def merge_versions(known: Fact, pulled: Fact) -> Fact:
    """This device's version of a fact merged with another device's (docs/sync.md, "Changes
    on several devices"): the content from the version whose content changed later, the flags
    from the one whose flags did, the supersession from the one whose supersession did (an
    unsupersede made after seeing a supersession undoes it; an edit never touches it, so an
    edit made without seeing one cannot), each with its clock; two changes stamped alike
    (truly concurrent) resolve by value, the same way on every device (a supersession over
    none: sticky). Returns `known` itself when the pulled version brings nothing newer."""

    def theirs(mine: float, other: float, my_value: tuple, other_value: tuple) -> bool:
        if other != mine:
            return other > mine
        return repr(other_value) > repr(my_value)

    take_content = theirs(known.content_changed_at, pulled.content_changed_at,
                          _content(known), _content(pulled))
    take_flags = theirs(known.flags_changed_at, pulled.flags_changed_at,
                        _flags(known), _flags(pulled))
    take_link = theirs(known.superseded_changed_at, pulled.superseded_changed_at,
                       (known.superseded_by or "",), (pulled.superseded_by or "",))
    content = pulled if take_content else known
    flags = pulled if take_flags else known
    link = pulled if take_link else known
    merged = msgspec.structs.replace(
        content, pinned=flags.pinned, private=flags.private, superseded_by=link.superseded_by,
        flags_changed_at=flags.flags_changed_at,
        content_changed_at=content.content_changed_at,
        superseded_changed_at=link.superseded_changed_at,
        changed_at=max(known.changed_at, pulled.changed_at),
        access_count=max(known.access_count, pulled.access_count),
        last_access=max(known.last_access, pulled.last_access),
        speaker=known.speaker or pulled.speaker, tier=known.tier)
    return known if _same_version(merged, known) else merged


def _same_version(a: Fact, b: Fact) -> bool:
    """The same parts with the same clocks (counters aside)."""
    return _parts(a) == _parts(b) and a.content_changed_at == b.content_changed_at \
        and a.flags_changed_at == b.flags_changed_at \
        and a.superseded_changed_at == b.superseded_changed_at


def _replace(warm: WarmKeeper, known: Fact, pulled: Fact, now: float) -> None:
    """Overwrite a local fact with another device's newer version: the old version kept in
    history (as an edit keeps it), the full-text entry and the tree's counts follow."""
    store, conn = warm.store, warm.store.conn
    category = warm.tree.ensure_category(tree_rules.validate_path(pulled.category), now)
    tier = "warm" if pulled.pinned else known.tier       # the vault lives on the device
    new = msgspec.structs.replace(pulled, category=category, tier=tier,
                                  access_count=max(known.access_count, pulled.access_count),
                                  last_access=max(known.last_access, pulled.last_access),
                                  speaker=pulled.speaker or known.speaker)   # (an older release's has none)
    content = [name for name in ("text", "category", "importance", "metadata")
               if getattr(new, name) != getattr(known, name)]
    if content:
        version = conn.execute("SELECT COALESCE(MAX(version), 0) + 1 FROM fact_versions "
                               "WHERE fact_id = ?", (known.id,)).fetchone()[0]
        conn.execute("INSERT INTO fact_versions (fact_id, version, text, category, importance, "
                     "metadata, replaced_at, actor) VALUES (?, ?, ?, ?, ?, ?, ?, 'sync')",
                     (known.id, version, known.text, known.category, known.importance,
                      encoder.encode(known.metadata).decode(), now))
    key, body = key_and_body_of(new)
    conn.execute("UPDATE facts SET text = ?, category = ?, importance = ?, metadata = ?, "
                 "norm_key = ?, size = ?, superseded_by = ?, pinned = ?, private = ?, tier = ?, "
                 "changed_at = ?, flags_changed_at = ?, content_changed_at = ?, access_count = ?, "
                 "last_access = ?, speaker = ?, superseded_changed_at = ? WHERE id = ?",
                 (new.text, new.category, new.importance, encoder.encode(new.metadata).decode(),
                  key_digest(key), fact_size(new.text, new.metadata), new.superseded_by,
                  int(new.pinned), int(new.private), new.tier, new.changed_at,
                  new.flags_changed_at, new.content_changed_at, new.access_count,
                  new.last_access, new.speaker, new.superseded_changed_at, known.id))
    if content:
        store.reindex_fact(known.id, body)
        if new.text != known.text:
            store.replace_aliases(known.id, new.text)
    # The counts hold live facts per (category, tier): take the old place out, the new one in.
    if known.superseded_by is None:
        store.adjust_counts(known.category, warm=-(known.tier == "warm"), cold=-(known.tier == "cold"))
    if new.superseded_by is None:
        store.adjust_counts(new.category, warm=new.tier == "warm", cold=new.tier == "cold")
    flags = [f"{name}={int(getattr(new, name))}" for name in ("pinned", "private")
             if getattr(new, name) != getattr(known, name)]
    if new.superseded_by != known.superseded_by:
        flags.append(f"superseded_by={new.superseded_by or 'none'}")
    store.audit("sync.change", known.id, f"({','.join(content + flags)}) actor=sync", now)


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
        fact = not_from_the_future(fact, now)
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


def insert_prepared(store: LocalStore, rows: list[tuple],
                    aliases: Optional[list] = None) -> int:
    """The database half of a bulk insert: rows from prepare_bulk(), skipping known ids."""
    with store.transaction():
        return store.insert_facts_bulk(rows, aliases)
