"""Merging two devices' critical states (SPEC §6): pure functions, no I/O.

Fields (identity, owner_profile) keep their newest change, by the per-field `clock`.
Lists (lessons, events, tasks, projects) are merged by entry id, the newer entry winning; an
entry removed on either side (a `removed:<id>` tombstone: a task done, an entry pruned) stays
removed whatever its own time says (a task due next week is done today). Clocks are stamped
past the value a device knew (tiers.hot), so a change made after seeing another one wins. The result is pruned
to the usual limits, so a merge can never break one.
"""

from __future__ import annotations

import copy

import msgspec

from evoclaw_memory.tiers import hot as hot_rules
from evoclaw_memory.models import HotState, Identity, TreeNode


def merge_hot(local: HotState, remote: HotState, now: float) -> HotState:
    """The union of two hot states, newest change per field and per list entry."""
    clock = dict(remote.clock)
    for key, when in local.clock.items():
        clock[key] = max(when, clock.get(key, 0.0))
    merged = HotState(clock=clock)

    ident: dict = {}
    for field in Identity.__struct_fields__:
        mine, theirs = getattr(local.identity, field), getattr(remote.identity, field)
        key = f"identity.{field}"
        ident[field] = mine if _newer_or_same(local.clock.get(key, 0), remote.clock.get(key, 0),
                                              mine, theirs) else theirs
        if ident[field] is None:
            ident[field] = mine if mine is not None else theirs
    merged.identity = Identity(**ident)

    profile: dict = {}
    for field in set(local.owner_profile) | set(remote.owner_profile):
        key = f"owner_profile.{field}"
        newest_is_local = _newer_or_same(local.clock.get(key, 0), remote.clock.get(key, 0),
                                         local.owner_profile.get(field),
                                         remote.owner_profile.get(field))
        source = local if newest_is_local else remote
        if field in source.owner_profile:
            profile[field] = source.owner_profile[field]
        # else: the newest change removed it
    merged.owner_profile = profile

    def union(mine: list, theirs: list) -> list:
        by_id: dict = {}
        for entry in list(theirs) + list(mine):
            if f"removed:{entry.id}" in clock:
                continue                # sticky: a completed task never comes back
            current = by_id.get(entry.id)
            if current is None or entry.timestamp >= current.timestamp:
                by_id[entry.id] = entry
        return sorted(by_id.values(), key=lambda e: (e.timestamp, e.id))

    merged.critical_lessons = union(local.critical_lessons, remote.critical_lessons)
    ctx, rctx = local.active_context, remote.active_context
    merged.active_context.events = union(ctx.events, rctx.events)
    merged.active_context.tasks = union(ctx.tasks, rctx.tasks)
    merged.active_context.projects = union(ctx.projects, rctx.projects)
    return hot_rules.prune(merged, now)


def _newer_or_same(mine: float, theirs: float, my_value, their_value) -> bool:
    """Whether this device's value of a field wins: the later change, and between two
    changes stamped alike (truly concurrent) the same one on every device (by value)."""
    if mine != theirs:
        return mine > theirs
    return repr(my_value) >= repr(their_value)


def merge_tree(local: list[TreeNode], remote: list[TreeNode]) -> list[TreeNode]:
    """Paths present on either side; a node's description from whichever side has one.

    Counts are not merged: the caller recomputes them from the facts it holds.
    """
    nodes = {n.path: copy.copy(n) for n in local}
    for node in remote:
        mine = nodes.get(node.path)
        if mine is None:
            nodes[node.path] = msgspec.structs.replace(node, warm_count=0, cold_count=0)
        else:
            if not mine.description and node.description:
                mine.description = node.description
            mine.last_access = max(mine.last_access, node.last_access)
    return sorted(nodes.values(), key=lambda n: n.path)


def same_state(a: HotState, b: HotState) -> bool:
    """True when two states hold the same memory (bookkeeping clocks aside)."""
    return msgspec.structs.replace(a, clock={}) == msgspec.structs.replace(b, clock={})
