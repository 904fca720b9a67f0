"""warm-memory.json: a list of facts (or {"facts"|"memories": [...]}, or {id: fact})."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Optional

import msgspec

from evoclaw_memory.agent.legacy.files import WARM_FILE, Progress, Report
from evoclaw_memory.agent.legacy.values import (TEXT_KEYS, first_text, legacy_metadata, normalize_category,
                                                parse_importance, parse_time, stable_id)
from evoclaw_memory.errors import LimitError, ValidationError
from evoclaw_memory.limits import FACT_MAX_TEXT
from evoclaw_memory.models import Fact, Metadata

if TYPE_CHECKING:
    from evoclaw_memory.memory import Memory

_FACT_LIST_KEYS = ("facts", "memories", "warm", "warm_memories", "warm_memory", "items",
                   "entries", "data")


def _fact_items(data: Any) -> Optional[list[tuple[str, Any]]]:
    """(label, item) pairs of a warm file in any of its shapes; None when none fits."""
    if isinstance(data, list):
        return [(f"[{i}]", item) for i, item in enumerate(data)]
    if not isinstance(data, dict):
        return None
    for key in _FACT_LIST_KEYS:
        if isinstance(data.get(key), list):
            return [(f"{key}[{i}]", item) for i, item in enumerate(data[key])]
    if data and all(isinstance(v, dict) for v in data.values()):       # {id: fact}
        return [(str(k), {"id": k, **v}) for k, v in data.items()]
    if not data:
        return []
    return None


def plan_fact(item: Any, now: float) -> Fact:
    """A Fact (id, tier and counts from the legacy record) or ValueError saying why not."""
    if isinstance(item, str):
        item = {"text": item}
    if not isinstance(item, dict):
        raise ValueError(f"a fact must be an object or a text, not {type(item).__name__}")
    text = first_text(item)
    if text is None:
        raise ValueError("no text (looked for " + ", ".join(TEXT_KEYS) + ")")
    if len(text) > FACT_MAX_TEXT:
        raise ValueError(f"text is {len(text)} characters; a fact is at most {FACT_MAX_TEXT} "
                         "(distill it and store the result)")
    importance = parse_importance(item.get("importance", item.get("priority")))
    created = None
    for key in ("created_at", "timestamp", "created", "date", "time"):
        if item.get(key) not in (None, ""):
            created = parse_time(item[key], now)
            break
    created = now if created is None else created
    last = None
    for key in ("last_access", "last_accessed", "accessed_at", "updated_at"):
        if item.get(key) not in (None, ""):
            try:
                last = parse_time(item[key], now)
            except ValueError:
                last = None
            break
    count = item.get("access_count", item.get("accesses", 0)) or 0
    if isinstance(count, bool) or not isinstance(count, (int, float)) or count < 0 \
            or not math.isfinite(count):
        raise ValueError(f"access_count {count!r} is not a count")
    meta = item.get("metadata")
    if not isinstance(meta, dict):          # top-level links (not "path": a category alias)
        meta = {k: item[k] for k in ("urls", "url", "commands", "command", "paths")
                if k in item}
    legacy_tier = str(item.get("tier", "")).lower()
    fact = Fact(id=stable_id("fact", text, item.get("id")), text=text,
                category=normalize_category(item.get("category", item.get("path"))),
                importance=importance, created_at=created,
                last_access=max(created, last or created), access_count=int(count),
                metadata=legacy_metadata(meta) or Metadata(), source="legacy",
                tier="cold" if legacy_tier in ("cold", "frozen", "archived") else "warm")
    return fact


def import_facts(mem: "Memory", data: Any, report: Report, progress: Optional[Progress]) -> None:
    from evoclaw_memory.text import normalized_key
    from evoclaw_memory.tiers.warm import belongs_in_cold
    name = WARM_FILE
    items = _fact_items(data)
    if items is None:
        report.files[name] = "refused"
        report.refuse(name, "(file)", "expected a list of facts, {\"facts\": [...]}, "
                                      "{\"memories\": [...]} or {id: fact}")
        return
    now = mem.clock()
    seen_keys: set[str] = set()
    cfg = mem.config
    for done, (label, item) in enumerate(items, 1):
        if progress:
            progress("importing facts", done, len(items))
        try:
            fact = plan_fact(item, now)
            raw_category = item.get("category") if isinstance(item, dict) else None
            fact = msgspec.structs.replace(fact, text=mem._check_text(fact.text))
        except (ValueError, ValidationError) as exc:
            report.refuse(name, label, str(exc))
            continue
        if isinstance(raw_category, str) and raw_category.strip() \
                and raw_category.strip().lower() != fact.category:
            report.notes.append(f"{name} {label}: category {raw_category[:60]!r} filed as "
                                f"{fact.category!r}")
        key = normalized_key(fact.text)
        if key in seen_keys or mem.store.get_fact(fact.id) is not None \
                or mem.store.find_live_by_norm_key(key) is not None:
            report.skip(name, label, "already stored")
            continue
        seen_keys.add(key)
        if report.dry_run:
            report.taken["facts"] += 1
            continue
        try:
            with mem.store.transaction():
                category = mem.trees.ensure_category(fact.category, now)
                meta = mem._metadata(fact.text, fact.metadata)
                cold = fact.tier == "cold" or belongs_in_cold(
                    fact.importance, fact.created_at, fact.access_count, now,
                    retention_days=cfg.warm_retention_days, decay_days=cfg.decay_days,
                    access_boost=cfg.access_boost)
                fact = msgspec.structs.replace(fact, category=category, metadata=meta,
                                               tier="cold" if cold else "warm")
                mem.warm.insert(fact, key, now, op="legacy.import")
                if fact.tier == "warm":
                    mem.warm.evict_over_cap(now)
        except (ValidationError, LimitError) as exc:
            report.refuse(name, label, str(exc))
            continue
        report.taken["facts"] += 1
