"""TreeKeeper: the category tree as stored, kept true to the facts filed in it.

The rules (limits, paths, rebalancing, pruning) are pure functions in tiers.tree; this class
applies them to a LocalStore with their counts, outbox entry and audit rows. Every method
expects to run inside the store's transaction (the public ones open it themselves).
"""

from __future__ import annotations

from typing import Callable, Optional

import msgspec

from evoclaw_memory.errors import LimitError, ValidationError
from evoclaw_memory.models import Fact, TreeNode
from evoclaw_memory.store.local import LocalStore
from evoclaw_memory.text import key_and_body
from evoclaw_memory.tiers import tree as tree_rules


def index_body(fact: Fact) -> str:
    """What the full-text index holds for a fact: text, category words, links and commands."""
    return key_and_body_of(fact)[1]


def key_and_body_of(fact: Fact) -> tuple[str, str]:
    """The fact's duplicate key and its full-text index body, from one tokenisation."""
    meta = fact.metadata
    extra = "" if meta.is_empty() else " ".join(meta.urls + meta.commands + meta.paths)
    return key_and_body(fact.text, fact.category, extra)


def valid_path(path: str) -> bool:
    """True when `path` is a category path the tree accepts."""
    try:
        tree_rules.validate_path(path)
        return True
    except ValidationError:
        return False


class TreeKeeper:
    """The stored tree of one memory: nodes, their fact counts, and moves between them."""

    def __init__(self, store: LocalStore, clock: Callable[[], float]):
        self.store = store
        self.clock = clock

    def ensure_category(self, category: str, now: float) -> str:
        """The category to file under: `category`, created if needed (rebalancing a full tree).

        A fact is never refused for want of room: when the tree cannot take the path even
        after rebalancing, the fact goes to the closest existing node."""
        if self.store.has_node(category):
            return category
        nodes = self.store.tree_nodes()
        merged = False
        for _ in range(tree_rules.TREE_MAX_NODES):
            try:
                new_nodes = tree_rules.add(nodes, category, "", now)
            except LimitError:
                victim = tree_rules.rebalance_victim(nodes, category)
                gained = self._merge(victim, now, queue_state=False) if victim else None
                if victim is None or gained is None:
                    break
                merged = True
                nodes = _after_merge(nodes, victim, *gained) or self.store.tree_nodes()
                continue
            self.save(nodes, new_nodes, op="tree.add")     # queues the state, for the merges too
            return category
        if merged:
            self.store.enqueue_state(now)
        return tree_rules.closest_existing(nodes, category)

    def merge_into_parent(self, node: TreeNode, now: float) -> bool:
        """Rebalance: move a leaf's facts to its parent and remove the leaf."""
        return self._merge(node, now) is not None

    def _merge(self, node: TreeNode, now: float,
               queue_state: bool = True) -> Optional[tuple[int, int]]:
        """merge_into_parent(); returns the (warm, cold) counts the parent gained (None: no
        parent), so the caller knows the tree after it without reading it back.
        `queue_state`: False when the caller queues the critical state itself (once for the
        merges and the node they made room for: each queuing is a delete and an insert)."""
        parent = tree_rules.parent_of(node.path)
        if parent is None:
            return None
        moved = self.store.facts_in_category(node.path)
        warm = cold = 0
        for fact in moved:
            gained = self._refile(fact, parent, now)
            warm, cold = warm + gained[0], cold + gained[1]
        self.store.delete_node(node.path)
        if queue_state:
            self.store.enqueue_state(now)
        self.store.audit("tree.rebalance", node.path, f"merged into {parent} ({len(moved)} facts)", now)
        return warm, cold

    def recategorize(self, fact_id: str, category: str, now: float) -> tuple[int, int]:
        """File one fact under `category`: counts, full-text entry and outbox follow.
        Returns the (warm, cold) counts `category` gained."""
        fact = self.store.get_fact(fact_id)
        return (0, 0) if fact is None else self._refile(fact, category, now)

    def _refile(self, fact: Fact, category: str, now: float) -> tuple[int, int]:
        """recategorize() of a fact already read."""
        if fact.category == category:
            return 0, 0
        fact_id = fact.id
        self.store.set_category(fact_id, category)
        live = fact.superseded_by is None
        warm, cold = int(live and fact.tier == "warm"), int(live and fact.tier == "cold")
        self.store.adjust_counts(fact.category, warm=-warm, cold=-cold)
        self.store.adjust_counts(category, warm=warm, cold=cold)
        self.store.reindex_fact(fact_id, index_body(msgspec.structs.replace(fact, category=category)))
        self.store.enqueue_change(fact_id, now)
        return warm, cold

    def save(self, old: list[TreeNode], new: list[TreeNode], op: str) -> None:
        """Write the difference between two trees (nodes changed, added, removed) and queue
        the critical state."""
        now = self.clock()
        old_paths = {n.path: n for n in old}
        for node in new:
            if old_paths.get(node.path) != node:
                self.store.upsert_node(node)
                self.store.audit(op, node.path, node.description, now)
        for path in set(old_paths) - {n.path for n in new}:
            self.store.delete_node(path)
            self.store.audit(op, path, "removed", now)
        self.store.enqueue_state(now)

    def add(self, path: str, description: str = "") -> TreeNode:
        """Add a node (and missing parents); LimitError when a limit would break."""
        with self.store.transaction():
            old = self.store.tree_nodes()
            new = tree_rules.add(old, path, description, self.clock())
            self.save(old, new, op="tree.add")
        clean = tree_rules.validate_path(path)
        return next(n for n in new if n.path == clean)

    def remove(self, path: str) -> None:
        """Remove a node and its empty descendants; refused while any of them holds facts."""
        with self.store.transaction():
            old = self.store.tree_nodes()
            clean = tree_rules.validate_path(path)
            new = tree_rules.remove(old, clean, self.store.count_under(clean))
            self.save(old, new, op="tree.remove")

    def prune(self, idle_days: Optional[float] = None) -> list[str]:
        """Remove empty nodes idle long enough; returns the removed paths."""
        now = self.clock()
        with self.store.transaction():
            old = self.store.tree_nodes()
            holders = {c for c, _ in self.store.conn.execute(
                "SELECT DISTINCT category, 1 FROM facts")}
            kwargs = {} if idle_days is None else {"idle_days": idle_days}
            gone = tree_rules.prunable(old, now, holders, **kwargs)
            if gone:
                self.save(old, [n for n in old if n.path not in gone], op="tree.prune")
        return gone

    def recount(self) -> int:
        """Recompute every node's counts from the facts; returns how many nodes changed."""
        counts = self.store.category_counts()
        changed = 0
        now = self.clock()
        with self.store.transaction():
            nodes = self.store.tree_nodes()
            known = {n.path for n in nodes}
            strays = set(counts) - known
            for category in strays:                 # facts filed outside the tree: adopt them
                target = self.ensure_category(category, now)
                if target != category:
                    for fact_id in self.store.fact_ids_in_category(category):
                        self.recategorize(fact_id, target, now)
            if strays:              # counting scans every fact: only again if facts moved
                counts = self.store.category_counts()
            for node in self.store.tree_nodes():
                warm, cold = counts.get(node.path, (0, 0))
                if (warm, cold) != (node.warm_count, node.cold_count):
                    self.store.upsert_node(msgspec.structs.replace(node, warm_count=warm,
                                                                  cold_count=cold))
                    changed += 1
            if changed:
                self.store.enqueue_state(now)
        return changed

    def join(self, nodes: list[TreeNode], wanted: list[TreeNode], now: float, op: str) -> None:
        """Add the `wanted` nodes ours lack, each only within the limits (a merged tree)."""
        for node in wanted:
            if node.path in {n.path for n in nodes}:
                continue
            try:
                new = tree_rules.add(nodes, node.path, node.description, now)
            except (LimitError, ValidationError):
                continue
            self.save(nodes, new, op=op)
            nodes = new

    def install(self, nodes: list[TreeNode], keep_counts: bool) -> int:
        """Replace the tree with restored nodes (the valid ones); returns how many."""
        nodes = [n for n in nodes if valid_path(n.path)]
        if not keep_counts:
            nodes = [msgspec.structs.replace(n, warm_count=0, cold_count=0) for n in nodes]
        self.store.replace_tree(nodes)
        return len(nodes)


def _after_merge(nodes: list[TreeNode], victim: TreeNode, warm: int,
                 cold: int) -> Optional[list[TreeNode]]:
    """The stored tree after _merge(victim): without the leaf, its parent's counts up by
    what it gained (adjust_counts adds them as they are); None when the parent is not in
    `nodes` (then the caller reads the tree again)."""
    parent = tree_rules.parent_of(victim.path)
    if parent not in {n.path for n in nodes}:
        return None
    return [msgspec.structs.replace(n, warm_count=n.warm_count + warm,
                                    cold_count=n.cold_count + cold) if n.path == parent else n
            for n in nodes if n.path != victim.path]
