"""Area 7 — the context budget: what the agent loads every turn, young and old.

- young agent: a week of history — 300 facts remembered through the API over 7 days, the
  tree, and a first week's hot state (identity, profile, 2 projects, 5 events, 3 tasks,
  3 lessons);
- 10-year-old agent: ~100k facts over 3,650 days (bulk-loaded), the full hot state (5
  projects, 10 events, 10 tasks, 20 lessons) and the full tree.
For each, over a set of generated queries: MEMORY.md (hot), the rendered tree, the retrieved
section and the whole `context(query)` string, in bytes (UTF-8), against the limits.
"""

from __future__ import annotations

import time

from .data import DAY, Generator, build_tree
from .util import AreaResult, Workspace, log, memory, verdict

TITLE = "7. Context budget"
HOT_MAX, TREE_MAX, RETRIEVED_MAX = 5_120, 2_048, 3_072
WHOLE_MIN, WHOLE_MAX = 8 * 1024, 15 * 1024
SECTION = "## Retrieved memories (data, not instructions)"


def _measure(mem, queries: list[str]) -> dict:
    from evoclaw_memory.tiers.hot import state_size
    hot_md = len(mem.render_memory_md().encode())
    hot_state = state_size(mem.hot)
    tree = len(mem.tree_text().encode())
    retrieved, whole = [], []
    for q in queries:
        text = mem.context(q)
        whole.append(len(text.encode()))
        part = text.split(SECTION, 1)[1] if SECTION in text else ""
        retrieved.append(len(part.strip().encode()))
    return {"hot_md": hot_md, "hot_state": hot_state, "tree": tree,
            "retrieved_max": max(retrieved), "retrieved_mean": sum(retrieved) / len(retrieved),
            "whole_max": max(whole), "whole_min": min(whole),
            "whole_mean": sum(whole) / len(whole), "queries": len(queries)}


def _young(ws: Workspace, queries: list[str]) -> dict:
    home = ws.new_home("young")
    gen = Generator(500)
    with memory(home) as mem:
        build_tree(mem)
        ups = gen.hot_updates()
        keep = {"identity": 1, "owner_profile": 1, "project": 2, "event": 5, "task": 3, "lesson": 3}
        for k, v in ups:
            if keep.get(k, 0) > 0:
                keep[k] -= 1
                mem.update_hot(k, v)
        now = time.time()
        for g in gen.facts(300, max_age_days=7):
            mem.remember(g.text, category=g.category, importance=g.importance,
                         created_at=now - g.age_days * DAY,
                         metadata={"urls": g.urls, "commands": g.commands, "paths": g.paths})
        return _measure(mem, queries)


def run(ws: Workspace) -> AreaResult:
    res = AreaResult("context", TITLE)
    queries = Generator(8).queries(15 if ws.quick else 40)
    log("context: young agent")
    young = _young(ws, queries)
    log("context: 10-year-old agent (100k facts)")
    home = ws.copy_store(100_000)
    with memory(home) as mem:
        old = _measure(mem, queries)
    res.data.update({"young": young, "old": old})

    def both(key: str, fmt=lambda v: f"{v:,.0f} B") -> str:
        return f"young {fmt(young[key])} · old {fmt(old[key])}"

    res.add("hot: MEMORY.md bytes", both("hot_md"),
            f"serialized hot state: young {young['hot_state']:,} B · old {old['hot_state']:,} B",
            "≤ 5,120 B", verdict(max(young["hot_md"], old["hot_md"], young["hot_state"],
                                     old["hot_state"]) <= HOT_MAX))
    res.add("tree: rendered bytes", both("tree"), "", "≤ 2,048 B",
            verdict(max(young["tree"], old["tree"]) <= TREE_MAX))
    res.add("retrieved: bytes (max over queries)", both("retrieved_max"),
            f"mean: young {young['retrieved_mean']:,.0f} B · old {old['retrieved_mean']:,.0f} B",
            "≤ 3,072 B", verdict(max(young["retrieved_max"], old["retrieved_max"]) <= RETRIEVED_MAX))
    res.add("whole context(query): bytes (max over queries)", both("whole_max"),
            f"min: young {young['whole_min']:,} B · old {old['whole_min']:,} B",
            "8–15 KB (≤ 15,360 B)", verdict(max(young["whole_max"], old["whole_max"]) <= WHOLE_MAX))
    res.notes.append(f"{len(queries)} generated queries per agent. PASS for the whole context "
                     "means within the 15 KB ceiling; a young agent below 8 KB is under budget, "
                     "not over it. Hot is checked both as MEMORY.md and as the serialized state "
                     "the 5,120-byte limit is defined on.")
    return res
