"""The conversation lifecycle: what happens when an agent finishes a conversation.

    mem.context(query)             start: MEMORY.md + tree + facts for the system prompt
    mem.end_conversation(messages) end:   distill -> store facts -> hot updates -> MEMORY.md
                                          -> quick consolidation when due -> push where
                                          `sync` pushes: the cloud, or the local archive
                                          when none is configured (offline: queued)
                                          -> a report

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
    consolidate when due and push where `sync` pushes; returns the report.

    sync: None or True pushes where `sync` does (the configured cloud, or the local archive
    $EVOCLAW_HOME/cloud.db when none is configured, or `remote`); False does not push.
    consolidate: None runs a quick consolidation when one is due.
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
    if control["forgotten"]:
        mem.store.erase_forgotten_words()   # their words leave the full-text files now
    from evoclaw_memory.lifecycle.vault import pin_on_request     # "remember forever" pins
    vault = pin_on_request(mem, messages, [f for f in applied.get("added", []) +
                                           applied.get("reinforced", []) if hasattr(f, "id")])
    md_path = mem.write_memory_md()

    consolidation = None
    if consolidate or (consolidate is None and quick_consolidation_due(mem)):
        consolidation = mem.consolidate("quick")

    # Where `sync` pushes, so does the end of a conversation: the configured cloud, or with
    # none configured the local archive ($EVOCLAW_HOME/cloud.db, the embedded default).
    # A cloud URL that cannot be used (a typo) turns sync off, never the memory, and its
    # changes are not sent anywhere else meanwhile (config.cloud_url_problem).
    problem = getattr(mem.config, "cloud_url_problem", None) if remote is None else None
    if sync is False or problem:
        sync_report = {"status": "off", "target": None, "where": None,
                       "detail": f"not pushed: {problem}; the changes stay queued until it is "
                                 "fixed" if problem else
                                 "not pushed (sync=False); `sync` pushes the queued changes",
                       "outbox_depth": mem.store.outbox_depth()}
    else:
        sync_report = push(mem, remote)

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
    """Push the outbox now (as `sync` does, to the same place); never loses work.

    {'status': 'pushed'|'queued'|'failed', 'target': 'cloud'|'cloud file'|'local archive'
    (or None for a remote passed in), 'where': its URL or path, 'detail': what was done, in
    words, 'outbox_depth': ...}. DeviceRevoked propagates: the device has just wiped itself
    and must stop."""
    from evoclaw_memory.errors import DeviceRevoked, EvoclawError, Unavailable
    from evoclaw_memory.lifecycle.cloud_side import retries, scoped_remote
    target, where = push_target(mem) if remote is None else (None, getattr(remote, "label", None))
    place = _place(target, where)
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
        depth = mem.store.outbox_depth()
        return {"status": "queued", "target": target, "where": where,
                "detail": f"queued offline: {place} is unreachable ({exc}); {depth} "
                          "change(s) wait for the next sync", "outbox_depth": depth}
    except EvoclawError as exc:
        return {"status": "failed", "target": target, "where": where,
                "detail": f"not pushed to {place}: {exc}", "error": type(exc).__name__,
                "outbox_depth": mem.store.outbox_depth()}
    return {"status": "pushed", "target": target, "where": where,
            "detail": f"pushed {report.pushed_facts} fact(s)"
                      f"{' + critical state' if report.state_pushed else ''} to {place}, "
                      f"pulled {report.pulled_facts} fact(s)",
            "report": report, "outbox_depth": report.outbox_depth}


def push_target(mem: "Memory") -> tuple[str, str]:
    """(what, where) `sync` pushes to: ('cloud', its URL without credentials), ('cloud file',
    its path) or, with no cloud configured, ('local archive', $EVOCLAW_HOME/cloud.db)."""
    url = mem.config.cloud_url
    if not url:
        return "local archive", str(Path(mem.config.home) / "cloud.db")
    if getattr(mem.config, "cloud_url_problem", None):
        return "cloud", "(an unusable URL)"     # pushing fails with the configuration error
    if mem.config.cloud_is_network:
        from urllib.parse import urlsplit
        parts = urlsplit(url)
        host = parts.hostname or ""
        host = f"[{host}]" if ":" in host else host          # an IPv6 address
        port = f":{parts.port}" if parts.port else ""
        # No user, password or query (a token can hide in either): scheme, host and port.
        return "cloud", f"{parts.scheme}://{host}{port}"
    from evoclaw_memory.validate import cloud_target
    return "cloud file", cloud_target(url)[1]


def _place(target: Optional[str], where: Optional[str]) -> str:
    if target == "local archive":
        return f"the local archive {where} (no cloud configured)"
    if target is None:
        return f"{where or 'the given remote'}"
    return f"the {target} {where}"


def _size(messages: Union[str, list]) -> int:
    if isinstance(messages, str):
        return len(messages.encode())
    return len(json.dumps(messages, ensure_ascii=False, default=str).encode())


def _file_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
