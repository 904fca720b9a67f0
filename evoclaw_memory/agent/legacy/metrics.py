"""metrics.json: counters and timestamps, each file counted once."""

from __future__ import annotations

import hashlib
import math
import re
from typing import TYPE_CHECKING, Any

from evoclaw_memory.agent.legacy.files import METRICS_FILE, Report
from evoclaw_memory.agent.legacy.values import parse_time

if TYPE_CHECKING:
    from evoclaw_memory.memory import Memory

_COUNTERS = {
    "retrieval_count": "retrievals", "retrievals": "retrievals",
    "total_retrievals": "retrievals",
    "reinforcement_count": "reinforcements", "reinforcements": "reinforcements",
    "total_reinforcements": "reinforcements",
    "eviction_count": "evictions", "evictions": "evictions", "total_evictions": "evictions",
    "consolidation_count": "consolidations.legacy", "consolidations": "consolidations.legacy",
    "llm_calls": "llm_calls", "llm_call_count": "llm_calls",
    "sync_count": "syncs", "syncs": "syncs",
}
_TIMESTAMPS = {"last_consolidation": "last_consolidation.quick", "last_sync": "last_sync"}
_LIVE = re.compile(r"(_bytes|_kb|_size|_node_count|_memory_count)\Z|^(timestamp|agent_id)\Z")


def import_metrics(mem: "Memory", data: Any, raw_bytes: bytes, report: Report) -> None:
    name = METRICS_FILE
    if not isinstance(data, dict):
        report.files[name] = "refused"
        report.refuse(name, "(file)", "expected an object of counters")
        return
    marker = "legacy.metrics." + hashlib.sha256(raw_bytes).hexdigest()[:16]
    if mem.store.get_setting(marker):
        report.skip(name, "(file)", "these metrics were imported before")
        return
    now = mem.clock()
    counters: dict[str, float] = {}
    stamps: dict[str, float] = {}
    for key, value in data.items():
        low = str(key).strip().lower()
        if low.endswith("_today"):
            report.refuse(name, str(key), "a daily counter, not a total")
        elif low in _COUNTERS:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 \
                    or not math.isfinite(value):
                report.refuse(name, str(key), f"not a count: {value!r}")
                continue
            counters[_COUNTERS[low]] = counters.get(_COUNTERS[low], 0) + value
        elif low in _TIMESTAMPS:
            try:
                stamp = parse_time(value, now)
            except ValueError as exc:
                report.refuse(name, str(key), str(exc))
                continue
            if stamp is not None:
                stamps[_TIMESTAMPS[low]] = stamp
        elif _LIVE.search(low):
            report.refuse(name, str(key), "a live size: recomputed from the imported data")
        else:
            report.refuse(name, str(key), "not a metric evoclaw-memory keeps")
    report.taken["metrics"] = len(counters) + len(stamps)
    if report.dry_run:
        return
    with mem.store.transaction():
        existing = mem.store.metrics()
        for key, value in counters.items():
            mem.store.incr_metric(key, value)
        for key, value in stamps.items():
            if value > existing.get(key, 0):
                mem.store.set_metric(key, value)
        mem.store.set_setting(marker, repr(now))
        mem.store.audit("legacy.import", "metrics", str(sorted(counters)), now)
