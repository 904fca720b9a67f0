"""The whole import of one legacy agent: every file in order, then MEMORY.md."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from evoclaw_memory.agent.legacy.facts import import_facts
from evoclaw_memory.agent.legacy.files import (HOT_FILE, METRICS_FILE, TREE_FILE, WARM_FILE, Progress, Report,
                                               load_file)
from evoclaw_memory.agent.legacy.hot import import_hot
from evoclaw_memory.agent.legacy.metrics import import_metrics
from evoclaw_memory.agent.legacy.tree import import_tree

if TYPE_CHECKING:
    from evoclaw_memory.memory import Memory


def import_legacy(mem: "Memory", folder: Path, *, dry_run: bool = False,
                  progress: Optional[Progress] = None) -> dict[str, Any]:
    """Import one legacy agent's files from `folder` into `mem`; returns the report.

    Order: facts first (their categories become tree nodes), then the tree's descriptions
    and empty nodes (where the limits allow), then hot memory, then metrics; MEMORY.md is
    re-rendered at the end."""
    folder = Path(folder)
    report = Report(mem.agent_id, folder, dry_run)
    warm = load_file(folder / WARM_FILE, report)
    if warm is not None:
        import_facts(mem, warm, report, progress)
    tree = load_file(folder / TREE_FILE, report)
    if tree is not None:
        import_tree(mem, tree, report)
    hot = load_file(folder / HOT_FILE, report)
    if hot is not None:
        import_hot(mem, hot, report)
    metrics = load_file(folder / METRICS_FILE, report)
    if metrics is not None:
        import_metrics(mem, metrics, (folder / METRICS_FILE).read_bytes(), report)
    if not dry_run:
        if report.taken["facts"]:
            mem.recount_tree()
        mem.write_memory_md()
        with mem.store.transaction():
            mem.store.audit("legacy.import", str(folder)[:200],
                            json.dumps(report.taken, sort_keys=True), mem.clock())
    return report.as_dict()
