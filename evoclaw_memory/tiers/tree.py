"""The tree index of categories (SPEC §2): validation, limits, counts and rendering.

Pure functions over a list of TreeNode. The tree holds only nodes that exist; parents are
created with their children. Every function that changes the tree returns the new list or
raises LimitError, so a limit can never be broken by accident.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache
from itertools import chain
from typing import Iterable, Optional

import msgspec

from evoclaw_memory import validate
from evoclaw_memory.errors import LimitError, ValidationError
from evoclaw_memory.limits import (TREE_MAX_BYTES, TREE_MAX_CHILDREN, TREE_MAX_DESCRIPTION,
                     TREE_MAX_NODES, TREE_PRUNE_IDLE_DAYS)
from evoclaw_memory.models import TreeNode

SECONDS_PER_DAY = 86_400


def validate_path(path: str) -> str:
    """A normalized category path ('a/b/c', lower case, NFKC), or ValidationError saying why."""
    return validate.category(path)


@lru_cache(maxsize=4096)
def parent_of(path: str) -> Optional[str]:
    """'a/b/c' -> 'a/b'; None for a top-level path. Kept: the rules ask it of every node of
    the tree, several times for each change."""
    return path.rsplit("/", 1)[0] if "/" in path else None


def ancestors(path: str) -> list[str]:
    """'a/b/c' -> ['a', 'a/b'] (outermost first)."""
    parts = path.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts))]


def is_under(path: str, root: str) -> bool:
    """True when `path` is `root` or one of its descendants."""
    return path == root or path.startswith(root + "/")


def children_of(nodes: Iterable[TreeNode], parent: Optional[str]) -> list[TreeNode]:
    if parent is None:
        return [n for n in nodes if "/" not in n.path]
    prefix = parent + "/"
    start = len(prefix)
    return [n for n in nodes if n.path.startswith(prefix) and n.path.find("/", start) < 0]


def parents(nodes: Iterable[TreeNode]) -> set[str]:
    """The paths that have at least one child: one pass, so a leaf test is a set lookup
    (a test per node over all nodes made a full tree's `remember` quadratic in nodes)."""
    return {p for p in map(parent_of, [n.path for n in nodes]) if p is not None}


def subtree_counts(nodes: list[TreeNode]) -> dict[str, tuple[int, int]]:
    """(warm, cold) of each node including its descendants."""
    totals = {n.path: [n.warm_count, n.cold_count] for n in nodes}
    for node in nodes:
        warm, cold = node.warm_count, node.cold_count
        if warm or cold:            # an empty node adds nothing to its ancestors
            for path in _ancestors_of(node.path):
                if path in totals:
                    totals[path][0] += warm
                    totals[path][1] += cold
    return {p: (w, c) for p, (w, c) in totals.items()}


@lru_cache(maxsize=1024)
def _ancestors_of(path: str) -> tuple[str, ...]:
    """ancestors(), kept: a tree's paths are counted up again on every render."""
    return tuple(ancestors(path))


def add(nodes: list[TreeNode], path: str, description: str, now: float) -> list[TreeNode]:
    """The tree with `path` (and its missing parents) added; LimitError if a limit would break."""
    path = validate_path(path)
    # One line of plain text: a newline in a description would forge a line of the tree.
    description = " ".join(validate.text("node description", description or "").split())
    if len(description) > TREE_MAX_DESCRIPTION:
        raise ValidationError(f"node description is {len(description)} characters; the limit "
                              f"is {TREE_MAX_DESCRIPTION}")
    existing = {n.path: n for n in nodes}
    if path in existing:
        if description and description != existing[path].description:
            node = msgspec.structs.replace(existing[path], description=description)
            return _checked([node if n.path == path else n for n in nodes])
        return nodes
    new = [TreeNode(path=p, created_at=now, last_access=now)
           for p in ancestors(path) if p not in existing]
    new.append(TreeNode(path=path, description=description, created_at=now, last_access=now))
    if len(nodes) + len(new) > TREE_MAX_NODES:
        raise LimitError(f"the tree has {len(nodes)}/{TREE_MAX_NODES} nodes; adding {path!r} "
                         f"needs {len(new)} more")
    return _checked(nodes + new)


def _checked(nodes: list[TreeNode]) -> list[TreeNode]:
    """Return `nodes` sorted, or LimitError naming the first limit they break."""
    nodes = sorted(nodes, key=lambda n: n.path)
    paths = [n.path for n in nodes]
    kids = Counter(map(parent_of, paths))                   # one pass, not one per parent
    if max(kids.values(), default=0) > TREE_MAX_CHILDREN:
        for parent in [None] + paths:
            if kids[parent] > TREE_MAX_CHILDREN:
                raise LimitError(f"{parent or 'the root'} would have {kids[parent]} children; "
                                 f"the limit is {TREE_MAX_CHILDREN}")
    # render() fits when its most compact level does (each level is a shortening of the one
    # before), and when none fits it is that level: its size alone gives the same answer.
    size = compact_size(nodes)
    if size > TREE_MAX_BYTES:
        raise LimitError(f"the rendered tree would be {size} bytes; the limit is {TREE_MAX_BYTES}")
    return nodes


def remove(nodes: list[TreeNode], path: str, facts_under: int) -> list[TreeNode]:
    """The tree without `path` and its descendants; refused while any of them holds facts."""
    path = validate_path(path)
    if path not in {n.path for n in nodes}:
        raise ValidationError(f"no tree node {path!r}")
    if facts_under:
        raise LimitError(f"{path!r} holds {facts_under} fact(s) (itself or below); move or "
                         "archive them before removing it")
    return [n for n in nodes if not is_under(n.path, path)]


def prunable(nodes: list[TreeNode], now: float, holders: set[str],
             idle_days: float = TREE_PRUNE_IDLE_DAYS) -> list[str]:
    """Paths to prune: empty subtrees with no activity for `idle_days` (deepest first).

    `holders` are the categories that hold at least one fact (any tier).
    """
    cutoff = now - idle_days * SECONDS_PER_DAY
    busy = set()
    for category in holders:
        busy.add(category)
        busy.update(ancestors(category))
    idle = {n.path for n in nodes
            if n.path not in busy and max(n.last_access, n.created_at) < cutoff}
    # A node goes only when its whole subtree goes, so nothing is orphaned.
    result = [p for p in idle
              if all(c.path in idle for c in nodes if is_under(c.path, p))]
    return sorted(result, key=lambda p: -p.count("/"))


def least_used_leaf(nodes: list[TreeNode], protect: Iterable[str] = ()) -> Optional[TreeNode]:
    """The leaf to merge into its parent when the tree is full (fewest facts, least recent)."""
    protected = set(protect)
    for p in list(protected):
        protected.update(ancestors(p))
    paths = {n.path for n in nodes}
    inner = parents(nodes)
    # A leaf under a node of the tree (a top-level node has no parent to merge into).
    leaves = [n for n in nodes
              if n.path not in inner and n.path not in protected and parent_of(n.path) in paths]
    if not leaves:
        return None
    return min(leaves, key=lambda n: (n.warm_count + n.cold_count, n.last_access, n.path))


def rebalance_victim(nodes: list[TreeNode], path: str) -> Optional[TreeNode]:
    """The leaf whose merge into its parent makes room for `path`, or None if none can.

    A full parent frees a slot only by absorbing one of its own leaf children (the root
    cannot absorb anything); a full tree (nodes or bytes) by any least-used leaf."""
    existing = {n.path for n in nodes}
    parent = deepest_existing(nodes, path)
    if parent != path:
        kids = children_of(nodes, parent)
        if len(kids) >= TREE_MAX_CHILDREN:
            if parent is None:
                return None
            inner = parents(nodes)
            leaves = [k for k in kids if k.path not in inner]
            return least_used_leaf(leaves + [n for n in nodes if n.path == parent],
                                   protect=[path]) if leaves else None
    if len(existing) < TREE_MAX_NODES and render_size(nodes) < TREE_MAX_BYTES - 100:
        return None
    return least_used_leaf(nodes, protect=[path])


def closest_existing(nodes: list[TreeNode], path: str) -> str:
    """Where a fact goes when its path cannot be created: its deepest existing ancestor, else
    the top-level node sharing most words with it (then the busiest one)."""
    found = deepest_existing(nodes, path)
    if found is not None:
        return found
    words = set(re.split(r"[/_-]", path))
    tops = children_of(nodes, None)
    totals = subtree_counts(nodes)

    def affinity(node: TreeNode) -> tuple:
        mine = set(re.split(r"[/_\s-]", (node.path + " " + node.description).lower()))
        return (len(words & mine), node.path in ("general", "misc"), sum(totals[node.path]))
    return max(tops, key=affinity).path


def deepest_existing(nodes: list[TreeNode], path: str) -> Optional[str]:
    """`path` itself or its deepest ancestor present in the tree."""
    paths = {n.path for n in nodes}
    for candidate in [path] + ancestors(path)[::-1]:
        if candidate in paths:
            return candidate
    return None


# -- rendering ---------------------------------------------------------------------------

_DETAIL_LEVELS = ("full", "short", "brief", "bare")


def render(nodes: list[TreeNode], max_bytes: int = TREE_MAX_BYTES) -> str:
    """The tree as the agent sees it, at the most detailed level that fits `max_bytes`."""
    totals = subtree_counts(nodes)          # once for every level tried
    ordered = sorted(nodes, key=lambda n: n.path)
    for level in _DETAIL_LEVELS:
        text = _render_level(ordered, level, totals)
        if len(text.encode()) <= max_bytes:
            return text
    return text


def render_size(nodes: list[TreeNode]) -> int:
    return len(render(nodes).encode())


def _render_level(nodes: list[TreeNode], level: str,
                  totals: Optional[dict[str, tuple[int, int]]] = None) -> str:
    totals = subtree_counts(nodes) if totals is None else totals
    warm = sum(n.warm_count for n in nodes)
    cold = sum(n.cold_count for n in nodes)
    lines = [f"📂 Root (warm:{warm}, cold:{cold})"]
    for node in sorted(nodes, key=lambda n: n.path):
        depth = node.path.count("/") + 1
        name = node.path if level == "full" else node.path.rsplit("/", 1)[-1]
        desc = node.description
        if level == "brief":
            desc = desc[:32] + ("…" if len(desc) > 32 else "")
        elif level == "bare":
            desc = ""
        w, c = totals[node.path]
        label = f"{name} — {desc}" if desc else name
        lines.append(f"{'  ' * depth}📁 {label} (warm:{w}, cold:{c})")
    body = "\n".join(lines)
    footer = _footer(len(nodes))
    return body + "\n" + footer.format(_settled_size(len(body.encode()), footer))


def compact_size(nodes: list[TreeNode]) -> int:
    """The size in bytes of the most compact level, len(_render_level(nodes, "bare")
    .encode()) for a tree's nodes (unique paths), counted without writing it: adding a node
    checks it (a full tree's every fifth `remember` or so), and rendering it was ~110 µs of
    50 lines."""
    totals = subtree_counts(nodes)
    warm = sum(n.warm_count for n in nodes)
    cold = sum(n.cold_count for n in nodes)
    body = (len(f"📂 Root (warm:{warm}, cold:{cold})".encode())
            + sum(map(_bare_line_bytes, totals))
            + len("".join(map(str, chain.from_iterable(totals.values())))))   # the digits
    footer = _footer(len(nodes))
    return body + 1 + len(footer.format(_settled_size(body, footer)).encode())


@lru_cache(maxsize=1024)
def _bare_line_bytes(path: str) -> int:
    """The bytes of a bare line but its digits: the newline before it, the indent, the
    folder sign, the name and the count labels."""
    return _BARE_LINE + 2 * path.count("/") + len(path.rsplit("/", 1)[-1].encode())


# The bytes of a bare line other than its name and digits, with the newline before it and
# the first level's indent ("  ").
_BARE_LINE = len("\n  📁  (warm:, cold:)".encode())


def _footer(n_nodes: int) -> str:
    return f"Nodes: {n_nodes}/{TREE_MAX_NODES} · Size: {{}}/{TREE_MAX_BYTES} bytes"


def _settled_size(body_bytes: int, footer: str) -> int:
    """The size the footer states: of the whole text, footer included (its own digits
    count, so it is settled by going round)."""
    size = body_bytes + 1 + len(footer.format(0).encode())
    for _ in range(3):
        size = body_bytes + 1 + len(footer.format(size).encode())
    return size


def outline(nodes: list[TreeNode]) -> str:
    """Full paths, one per line, with descriptions and counts: the LLM navigator's view."""
    return _render_level(nodes, "full")
