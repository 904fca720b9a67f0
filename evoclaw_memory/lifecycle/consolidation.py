"""Consolidation (SPEC §5): quick, daily, monthly and full, each building on the previous.

quick   rescore, evict/archive warm facts, promote lessons into hot memory, rebuild MEMORY.md
daily   ingest-daily first, then quick, then prune the tree and merge the full-text index
monthly daily + LLM tree rebuild (when an LLM is configured; see tree_rebuild) + recount from
        data + cold cleanup of expired frozen facts
full    monthly + an integrity check and a full report
Every mode returns counts and records itself in metrics (count, and last-run timestamp).
A dry run (monthly/full) only asks for the tree-rebuild plan and shows it: nothing changes.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Callable, Optional

from evoclaw_memory.tiers import hot as hot_rules
from evoclaw_memory.errors import ValidationError
from evoclaw_memory.limits import TIER_COLD
from evoclaw_memory.tiers.scoring import age_days, score
from evoclaw_memory.tiers.warm import eviction_plan

if TYPE_CHECKING:
    from evoclaw_memory.memory import Memory

MODES = ("quick", "daily", "monthly", "full")


# The steps of each mode, in order, for progress reports.
_STEPS = {
    "quick": ["rescoring and archiving"],
    "daily": ["reading daily notes", "rescoring and archiving", "pruning the tree"],
    "monthly": ["reading daily notes", "rescoring and archiving", "pruning the tree",
                "rebuilding the tree", "recounting", "cleaning the cold archive"],
}
_STEPS["full"] = _STEPS["monthly"] + ["checking integrity"]


def run_consolidation(mem: "Memory", mode: str, dry_run: bool = False,
                      progress: Optional[Callable[[str, int, int], None]] = None
                      ) -> dict[str, Any]:
    """Run `mode` on `mem` and return its report (dry_run: the tree-rebuild plan only).

    `progress(step, number, steps)` is called as each step starts, and once at the end."""
    if mode not in MODES:
        raise ValidationError(f"unknown consolidation mode {mode!r}; use {', '.join(MODES)}")
    started = time.perf_counter()
    report: dict[str, Any] = {"mode": mode}
    level = MODES.index(mode)
    steps = _STEPS[mode]

    def step(name: str) -> None:
        if progress:
            progress(name, steps.index(name), len(steps))

    if dry_run:
        if level < 2:
            raise ValidationError("a dry run shows the tree-rebuild plan of the monthly and "
                                  "full modes; use --mode monthly or --mode full")
        from evoclaw_memory.llm.rebuild import rebuild_tree
        report.update(dry_run=True, tree_rebuild=rebuild_tree(mem, dry_run=True))
        report["seconds"] = round(time.perf_counter() - started, 4)
        return report
    if level >= 1:
        step("reading daily notes")
        report["ingest"] = mem.ingest_daily()
    step("rescoring and archiving")
    report.update(quick(mem))
    if level == 0:
        mem.store.erase_forgotten_words()   # a daily consolidation merges the index anyway
    if level >= 1:
        step("pruning the tree")
        report["tree_pruned"] = mem.tree_prune()
        report["cloud_verify"] = verify_cloud(mem)
        # Index upkeep, reported under this step (the steps' names are part of the CLI's
        # progress): each flush left a full-text segment that every search reads.
        report["fulltext_merges"] = mem.store.merge_fulltext()
    if level >= 2:
        from evoclaw_memory.llm.rebuild import rebuild_tree
        step("rebuilding the tree")
        report["tree_rebuild"] = rebuild_tree(mem)
        step("recounting")
        report["tree_recounted"] = mem.recount_tree()
        step("cleaning the cold archive")
        report["cold_deleted"] = cold_cleanup(mem)
    if level >= 3:
        step("checking integrity")
        report["integrity"] = mem.store.quick_check()
        report["totals"] = mem.metrics()["sizes"]
    now = mem.clock()
    with mem.store.transaction():
        mem.store.incr_metric(f"consolidations.{mode}")
        mem.store.set_metric(f"last_consolidation.{mode}", now)
        mem.store.audit(f"consolidate.{mode}", "memory", str({k: v for k, v in report.items()
                                                             if isinstance(v, int)}), now)
    if progress:
        progress("done", len(steps), len(steps))
    report["seconds"] = round(time.perf_counter() - started, 4)
    return report


def verify_cloud(mem: "Memory") -> dict[str, Any]:
    """Daily: does the cloud still hold what it acknowledged? What it lost is re-queued for
    the next sync. Skipped on a device that never pushed; a cloud out of reach is reported,
    never a failed consolidation."""
    from evoclaw_memory.cloud.engine import KV_LAST_PUSH
    from evoclaw_memory.errors import EvoclawError
    if not mem.store.get_setting(KV_LAST_PUSH):
        return {"skipped": "this device has never pushed"}
    try:
        found = mem.verify_cloud()
    except EvoclawError as exc:
        return {"skipped": " ".join(str(exc).split())}
    return {"missing": found.missing, "state_missing": found.state_missing,
            "requeued": found.requeued}


def quick(mem: "Memory") -> dict[str, int]:
    """Rescore, archive what leaves warm, promote lesson facts, rebuild MEMORY.md."""
    cfg = mem.config
    now = mem.clock()
    with mem.store.transaction():
        plan = eviction_plan(mem.store.warm_rows(), now, max_bytes=cfg.warm_max_bytes,
                             retention_days=cfg.warm_retention_days, decay_days=cfg.decay_days,
                             access_boost=cfg.access_boost)
        mem.warm.archive(plan, now, op="evict.consolidate")
    promoted = promote_lessons(mem)
    mem.write_memory_md()
    linked = mem.link_new_facts(batch=None)     # what store calls left of a linking backlog
    return {"rescored": mem.store.count_facts("warm") + len(plan), "archived": len(plan),
            "promoted": promoted, "entities_linked": linked}


def is_lesson_category(category: str) -> bool:
    """Facts filed under a 'lessons' (or 'lesson') segment are lessons."""
    return any(seg in ("lessons", "lesson") for seg in category.split("/"))


def promote_lessons(mem: "Memory") -> int:
    """Copy warm lesson facts scoring >= 0.7 into hot memory's critical lessons (once each)."""
    now = mem.clock()
    state = mem.store.load_hot()
    have = {l.id for l in state.critical_lessons}
    promoted = 0
    for fact in mem.hot_candidates(now):
        if not is_lesson_category(fact.category) or f"fact-{fact.id}" in have:
            continue
        mem.update_hot("lesson", {"id": f"fact-{fact.id}", "text": fact.text[:hot_rules.ENTRY_TEXT_MAX],
                                  "category": fact.category.split("/")[-1],
                                  "importance": fact.importance})
        promoted += 1
    return promoted


def cold_cleanup(mem: "Memory") -> int:
    """Delete frozen facts older than the cold retention period (10 years by default)."""
    cfg = mem.config
    now = mem.clock()
    doomed = []
    for fact in mem.store.iter_facts(tier="cold"):
        value = score(fact.importance, fact.created_at, fact.access_count, now,
                      cfg.decay_days, cfg.access_boost)
        if value < TIER_COLD and age_days(fact.created_at, now) > cfg.cold_retention_days:
            doomed.append(fact)
    with mem.store.transaction():
        for fact in doomed:
            if fact.superseded_by is None:
                mem.store.adjust_counts(fact.category, cold=-1)
            mem.store.audit("cold.cleanup", fact.id, f"expired {fact.category}", now)
        mem.store.delete_facts([f.id for f in doomed])
        if doomed:
            mem.store.enqueue_state(now)
    return len(doomed)
