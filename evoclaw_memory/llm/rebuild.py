"""LLM tree rebuild (SPEC §5, monthly and full consolidation).

One LLM call proposes merge / add / remove / rename operations. Each is checked in turn
against the tree as the earlier ones left it (`plan`, pure) and applied only when every
limit holds afterwards: facts move with a merge or a rename, a node that holds facts (any
tier, superseded ones included) is never removed. A dry run stops after the plan.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

import msgspec

from evoclaw_memory.tiers import tree as tree_rules
from evoclaw_memory.errors import EvoclawError, LimitError, ValidationError
from evoclaw_memory.limits import (TREE_MAX_BYTES, TREE_MAX_CHILDREN, TREE_MAX_DESCRIPTION,
                     TREE_MAX_NODES)
from evoclaw_memory.llm.rebuild_prompts import TreeOp, parse_rebuild, rebuild_messages, rebuild_schema
from evoclaw_memory.models import TreeNode

if TYPE_CHECKING:
    from evoclaw_memory.llm.client import LLMClient
    from evoclaw_memory.memory import Memory

REBUILD_MAX_TOKENS = 700


class PlannedOp(msgspec.Struct):
    """A proposed operation and the verdict on it."""

    op: str
    path: str
    target: Optional[str] = None
    description: Optional[str] = None
    reason: str = ""
    status: str = "ok"                 # "ok" or "rejected"
    why: str = ""                      # why it was rejected
    moves: int = 0                     # categories whose facts move


# -- validation (pure) -----------------------------------------------------------------------

def check_limits(nodes: list[TreeNode]) -> list[TreeNode]:
    """`nodes` sorted, or LimitError naming the first limit they break."""
    paths = {n.path for n in nodes}
    if len(nodes) > TREE_MAX_NODES:
        raise LimitError(f"the tree would have {len(nodes)} nodes; the limit is {TREE_MAX_NODES}")
    children: dict[Optional[str], int] = {}
    for node in nodes:
        tree_rules.validate_path(node.path)
        parent = tree_rules.parent_of(node.path)
        if parent is not None and parent not in paths:
            raise LimitError(f"{node.path!r} would have no parent node")
        if len(node.description) > TREE_MAX_DESCRIPTION:
            raise LimitError(f"the description of {node.path!r} is over "
                             f"{TREE_MAX_DESCRIPTION} characters")
        children[parent] = children.get(parent, 0) + 1
        if children[parent] > TREE_MAX_CHILDREN:
            raise LimitError(f"{parent or 'the root'} would have over {TREE_MAX_CHILDREN} "
                             "children")
    if tree_rules.render_size(nodes) > TREE_MAX_BYTES:
        raise LimitError(f"the rendered tree would be over {TREE_MAX_BYTES} bytes")
    return sorted(nodes, key=lambda n: n.path)


def simulate(nodes: list[TreeNode], held: dict[str, int], op: TreeOp,
             now: float) -> tuple[list[TreeNode], dict[str, str]]:
    """(tree after `op`, {old category: new category} for the facts that move).

    Raises ValidationError (LimitError included) saying why `op` cannot be applied."""
    existing = {n.path: n for n in nodes}
    path = tree_rules.validate_path(op.path)
    target = tree_rules.validate_path(op.target) if op.target else None
    description = (op.description or "").strip()[:TREE_MAX_DESCRIPTION]
    if op.op == "add":
        if path in existing and not description:
            raise ValidationError(f"{path!r} already exists")
        return tree_rules.add(nodes, path, description, now), {}
    if path not in existing:
        raise ValidationError(f"no node {path!r}")
    subtree = [n for n in nodes if tree_rules.is_under(n.path, path)]
    if op.op == "remove":
        under = sum(held.get(n.path, 0) for n in subtree)
        return tree_rules.remove(nodes, path, under), {}
    if target is None:
        raise ValidationError(f"{op.op} needs a target path")
    if tree_rules.is_under(target, path):
        raise ValidationError(f"{target!r} is inside {path!r}")
    rest = [n for n in nodes if not tree_rules.is_under(n.path, path)]
    if op.op == "merge":
        if target not in existing:
            raise ValidationError(f"no node {target!r} to merge into")
        if description:
            rest = [msgspec.structs.replace(n, description=description) if n.path == target
                    else n for n in rest]
        return check_limits(rest), {n.path: target for n in subtree}
    # rename: the subtree moves under its new path; missing parents are created.
    if target in existing:
        raise ValidationError(f"{target!r} already exists (merge into it instead)")
    moves = {n.path: target + n.path[len(path):] for n in subtree}
    for new in moves.values():
        tree_rules.validate_path(new)
    moved = [msgspec.structs.replace(n, path=moves[n.path],
                                     description=description if n.path == path and description
                                     else n.description) for n in subtree]
    have = {n.path for n in rest}
    parents = [TreeNode(path=p, created_at=now, last_access=now)
               for p in tree_rules.ancestors(target) if p not in have]
    return check_limits(rest + parents + moved), moves


def plan(nodes: list[TreeNode], held: dict[str, int], ops: list[TreeOp],
         now: float) -> list[PlannedOp]:
    """The verdict on each operation, each checked against the tree the earlier ones left."""
    verdicts = []
    current = list(nodes)
    for op in ops:
        verdict = PlannedOp(op=op.op, path=op.path, target=op.target,
                            description=op.description, reason=op.reason)
        try:
            current, moves = simulate(current, held, op, now)
        except ValidationError as exc:
            verdict.status, verdict.why = "rejected", str(exc)
        else:
            verdict.moves = len(moves)
            # Facts that moved are now held by their new category.
            for old, new in moves.items():
                if old in held:
                    held = {**held, new: held.get(new, 0) + held[old]}
                    held.pop(old)
        verdicts.append(verdict)
    return verdicts


# -- the call and its application -----------------------------------------------------------

def propose(client: "LLMClient", nodes: list[TreeNode]) -> list[TreeOp]:
    """One LLM call: the operations it proposes (LLMError on failure)."""
    value = client.chat_json(rebuild_messages(nodes), rebuild_schema(), name="tree_rebuild",
                             purpose="tree-rebuild", max_tokens=REBUILD_MAX_TOKENS)
    return parse_rebuild(value)


def held_counts(mem: "Memory") -> dict[str, int]:
    """Facts filed at each category, every tier and superseded ones included."""
    return dict(mem.store.conn.execute(
        "SELECT category, COUNT(*) FROM facts GROUP BY category").fetchall())


def rebuild_tree(mem: "Memory", dry_run: bool = False) -> dict[str, Any]:
    """Ask the LLM for a better tree and apply what validates (or only show it: dry run)."""
    client = getattr(mem, "llm", None)
    nodes = mem.store.tree_nodes()
    if client is None:
        return {"status": "skipped", "reason": "no LLM configured"}
    if not nodes:
        return {"status": "skipped", "reason": "the tree is empty"}
    try:
        ops = propose(client, nodes)
    except EvoclawError as exc:
        return {"status": "failed", "reason": str(exc)}
    now = mem.clock()
    verdicts = plan(nodes, held_counts(mem), ops, now)
    report: dict[str, Any] = {
        "status": "dry-run" if dry_run else "applied",
        "proposed": len(verdicts),
        "accepted": sum(v.status == "ok" for v in verdicts),
        "rejected": sum(v.status != "ok" for v in verdicts),
        "operations": [msgspec.to_builtins(v) for v in verdicts],
    }
    if dry_run or not report["accepted"]:
        return report
    with mem.store.transaction():
        for verdict, op in zip(verdicts, ops):
            if verdict.status == "ok":
                apply_op(mem, op, now)
        mem.store.incr_metric("tree_rebuild.operations", report["accepted"])
    mem.recount_tree()
    return report


def apply_op(mem: "Memory", op: TreeOp, now: float) -> None:
    """Apply one validated operation: move its facts, then save the new tree."""
    old = mem.store.tree_nodes()
    new, moves = simulate(old, held_counts(mem), op, now)
    for source, destination in moves.items():
        for fact_id in mem.store.fact_ids_in_category(source):
            mem.trees.recategorize(fact_id, destination, now)
    mem.trees.save(old, new, op=f"tree.rebuild.{op.op}")
