"""The conversation lifecycle: what happens when an agent finishes a conversation.

    mem.context(query)             start: MEMORY.md + tree + facts for the system prompt
    mem.end_conversation(messages) end:   distill -> store facts -> hot updates -> MEMORY.md
                                          -> quick consolidation when due -> push when a
                                          cloud is configured (offline: queued) -> a report

`Memory.end_conversation` delegates here so the steps and their report live in one place.
Nothing here is lost on failure: every step lands in the local database first, and a push
that cannot reach the cloud leaves the work in the outbox for the next sync.
"""

from __future__ import annotations

import contextlib
import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, Union

if TYPE_CHECKING:
    from evoclaw_memory.memory import Memory

# A quick consolidation (rescore, archive, promote lessons) runs at the end of a
# conversation when the last one is older than this; the background service keeps the same
# rhythm on an always-on device.
QUICK_CONSOLIDATION_EVERY = 4 * 3600.0
# End-of-conversation pushes give up fast: the agent is waiting, and the outbox keeps the
# work for the next sync (the service retries with backoff). The held client's timeout is
# open_remote's 10 s.
PUSH_RETRIES = 1


def quick_consolidation_due(mem: "Memory", now: Optional[float] = None,
                            every: float = QUICK_CONSOLIDATION_EVERY) -> bool:
    """True when no quick (or bigger) consolidation ran in the last `every` seconds."""
    now = mem.clock() if now is None else now
    last = last_consolidation(mem, "quick")
    return last is None or now - last >= every


def last_consolidation(mem: "Memory", mode: str) -> Optional[float]:
    """When `mode` or a bigger mode (each includes the smaller ones) last ran, if ever."""
    from evoclaw_memory.lifecycle.consolidation import MODES
    stamps = mem.store.metrics()
    found = [stamps[f"last_consolidation.{m}"] for m in MODES[MODES.index(mode):]
             if f"last_consolidation.{m}" in stamps]
    return max(found) if found else None


def end_conversation(mem: "Memory", messages: Union[str, list], *, at: Optional[float] = None,
                     sync: Optional[bool] = None, consolidate: Optional[bool] = None,
                     remote=None) -> dict[str, Any]:
    """Distill `messages`, store what they teach, keep hot memory and MEMORY.md current,
    consolidate when due and push when a cloud is configured; returns the report.

    sync: None pushes only when a cloud URL is configured (or `remote` is given); True/False
    force it. consolidate: None runs a quick consolidation when one is due.
    DeviceRevoked propagates (the device has wiped itself); any other cloud failure is
    reported in `sync` and the work stays queued."""
    started = time.perf_counter()
    result = mem.distill(messages, at=at)
    applied = _apply(mem, result)
    # "forget about X", "scratch that": act on clear matches, report the rest (SPEC §5b).
    from evoclaw_memory.lifecycle.control import act_on_triggers
    control = act_on_triggers(mem, messages, exclude=[getattr(f, "id", "") for f in
                                                      applied.get("added", [])],
                              llm_forget=result.get("forget_ops") or [],
                              llm_correct=result.get("correct_ops") or [])
    from evoclaw_memory.lifecycle.vault import pin_on_request     # "remember forever" pins
    vault = pin_on_request(mem, messages, [f for f in applied.get("added", []) +
                                           applied.get("reinforced", []) if hasattr(f, "id")])
    md_path = mem.write_memory_md()

    consolidation = None
    if consolidate or (consolidate is None and quick_consolidation_due(mem)):
        consolidation = mem.consolidate("quick")

    wants_sync = sync if sync is not None else bool(mem.config.cloud_url or remote is not None)
    sync_report = push(mem, remote) if wants_sync else {"status": "off", "detail":
                                                        "no cloud configured; run `sync`"}

    added = list(applied.get("added", []))
    reinforced = list(applied.get("reinforced", []))
    superseded = list(applied.get("superseded", []))
    duplicates = list(applied.get("duplicates", []))
    hot_updates = list(applied.get("hot_updates", []))
    hot_rejected = list(applied.get("hot_rejected", []))
    report = {
        "mode": result.get("mode", "rules"),
        "summary": result.get("summary", ""),
        "record": result.get("record"),
        "added": added,
        "reinforced": reinforced,
        "superseded": superseded,
        "duplicates": duplicates,
        "hot_updates": hot_updates,
        "hot_rejected": hot_rejected,
        "counts": {"added": len(added), "reinforced": len(reinforced) + len(duplicates),
                   "superseded": len(superseded), "hot_updates": len(hot_updates),
                   "hot_rejected": len(hot_rejected)},
        "bytes": {"conversation": _size(messages),
                  "facts": sum(len(getattr(f, "text", "").encode()) for f in added),
                  "memory_md": _file_size(md_path)},
        "llm_calls": int(result.get("llm_calls", 0) or 0),
        "consolidation": consolidation,
        "sync": sync_report,
        "outbox_depth": mem.store.outbox_depth(),
        "seconds": round(time.perf_counter() - started, 4),
        "forgotten": control["forgotten"],
        "forget_candidates": control["forget_candidates"],
        "pinned": vault["pinned"],
        "pin_refused": vault["pin_refused"],
    }
    if result.get("llm_error"):
        report["llm_error"] = result["llm_error"]      # the LLM failed; rules were used
    return report


def _apply(mem: "Memory", result: dict) -> dict:
    """Store the distilled facts (and, with the LLM path, its supersedes and hot updates)."""
    if hasattr(mem, "apply_distillation"):
        applied = mem.apply_distillation(result)
        return applied if isinstance(applied, dict) else {}
    return mem.store_drafts(result.get("facts", []))


def push(mem: "Memory", remote=None) -> dict[str, Any]:
    """Push the outbox now: {'status': 'pushed'|'queued'|'failed', ...}; never loses work.

    DeviceRevoked propagates: the device has just wiped itself and must stop."""
    from evoclaw_memory.errors import DeviceRevoked, EvoclawError, Unavailable
    from evoclaw_memory.lifecycle.cloud_side import retries, scoped_remote
    try:
        # A network cloud's held remote: its connection and the verified schema carry over,
        # so a post-conversation push is ONE request.
        with contextlib.ExitStack() as stack:
            if remote is None:
                remote = stack.enter_context(scoped_remote(mem))
            stack.enter_context(retries(remote, PUSH_RETRIES))
            report = mem.sync(remote=remote)
    except DeviceRevoked:
        raise
    except Unavailable as exc:
        return {"status": "queued", "detail": str(exc), "outbox_depth": mem.store.outbox_depth()}
    except EvoclawError as exc:
        return {"status": "failed", "detail": str(exc), "error": type(exc).__name__,
                "outbox_depth": mem.store.outbox_depth()}
    return {"status": "pushed", "detail": "", "report": report,
            "outbox_depth": report.outbox_depth}


def _size(messages: Union[str, list]) -> int:
    if isinstance(messages, str):
        return len(messages.encode())
    return len(json.dumps(messages, ensure_ascii=False, default=str).encode())


def _file_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
