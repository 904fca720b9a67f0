"""hot-memory-state.json: identity, owner_profile, active_context and critical_lessons."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any, Optional

from evoclaw_memory.agent.legacy.files import HOT_FILE, Report
from evoclaw_memory.agent.legacy.values import first_text, parse_importance, parse_time, stable_id, trim
from evoclaw_memory.errors import ValidationError
from evoclaw_memory.tiers import hot as hot_rules

if TYPE_CHECKING:
    from evoclaw_memory.memory import Memory

_IDENTITY_ALIASES = {
    "agent_name": "agent_name", "name": "agent_name", "agent": "agent_name",
    "assistant_name": "agent_name",
    "owner_name": "owner_name", "owner": "owner_name", "user_name": "owner_name",
    "owner_preferred_name": "owner_preferred_name", "preferred_name": "owner_preferred_name",
    "nickname": "owner_preferred_name", "owner_nickname": "owner_preferred_name",
    "relationship_start": "relationship_start", "relationship_started": "relationship_start",
    "since": "relationship_start", "met": "relationship_start",
    "trust_level": "trust_level", "trust": "trust_level",
}
_TRUST_WORDS = {"low": 0.3, "medium": 0.6, "moderate": 0.6, "high": 0.9, "full": 1.0,
                "complete": 1.0}
_DONE = {"done", "completed", "complete", "finished", "closed", "cancelled", "canceled"}


def _identity_updates(raw: Any, report: Report) -> dict[str, Any]:
    name = HOT_FILE
    if not isinstance(raw, dict):
        report.refuse(name, "identity", "expected an object")
        return {}
    out: dict[str, Any] = {}
    for key, value in raw.items():
        field = _IDENTITY_ALIASES.get(str(key).strip().lower())
        if field is None:
            report.refuse(name, f"identity.{key}", "not an identity field (agent_name, "
                          "owner_name, owner_preferred_name, relationship_start, trust_level); "
                          "add it with `hot --update owner_profile` if it describes the owner")
            continue
        if value is None or value == "":
            continue
        if field == "trust_level":
            if isinstance(value, str) and value.strip().lower() in _TRUST_WORDS:
                value = _TRUST_WORDS[value.strip().lower()]
            try:
                value = parse_importance(value)
            except ValueError:
                report.refuse(name, f"identity.{key}", f"trust level {value!r} is not a "
                              "number from 0 to 1 (or low/medium/high)")
                continue
        elif field == "relationship_start" and isinstance(value, (int, float)) \
                and not isinstance(value, bool):
            try:
                stamp = parse_time(value, float("inf"))
            except ValueError:
                stamp = None
            if stamp is None:
                report.refuse(name, f"identity.{key}", f"not a date: {value!r}")
                continue
            value = dt.datetime.fromtimestamp(stamp, dt.timezone.utc).date().isoformat()
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            value = str(value)
        if not isinstance(value, (str, float)):
            report.refuse(name, f"identity.{key}", "expected text")
            continue
        out[field] = value.strip()[:200] if isinstance(value, str) else value
    return out


def _entries(raw: Any, kind: str, report: Report, where: str) -> list[tuple[str, Any]]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        report.refuse(HOT_FILE, where, f"expected a list of {kind}s")
        return []
    return [(f"{where}[{i}]", item) for i, item in enumerate(raw)]


def _entry_update(kind: str, item: Any, now: float) -> Optional[dict]:
    """The `hot --update` value for one legacy entry; None to skip (a done task); ValueError."""
    if isinstance(item, str):
        item = {"name" if kind == "project" else "text": item}
    if not isinstance(item, dict):
        raise ValueError(f"expected an object or a text, not {type(item).__name__}")
    text_keys = {"lesson": ("text", "lesson", "content", "summary"),
                 "event": ("text", "event", "description", "content", "summary", "title"),
                 "task": ("text", "task", "title", "description", "content"),
                 "project": ("name", "title", "project")}[kind]
    text = first_text(item, text_keys)
    if text is None:
        raise ValueError(f"no {'name' if kind == 'project' else 'text'} (looked for "
                         f"{', '.join(text_keys)})")
    limit = hot_rules.ENTRY_TEXT_MAX
    if len(text) > limit:
        raise ValueError(f"{len(text)} characters; hot memory entries are at most {limit} "
                         f"(store it as a fact instead)")
    stamp = None
    for key in ("timestamp", "created_at", "date", "time", "updated_at"):
        if item.get(key) not in (None, ""):
            stamp = parse_time(item[key], now)
            break
    value: dict[str, Any] = {"id": stable_id(kind, text.casefold(), item.get("id")),
                             "timestamp": stamp or now}
    if kind == "project":
        value["name"] = text
        status = item.get("status")
        if isinstance(status, str) and status.strip():
            value["status"] = status.strip()[:40]
        desc = first_text(item, ("description", "desc", "summary", "details"))
        if desc:
            value["description"] = trim(desc, limit)
        return value
    value["text"] = text
    if kind == "task":
        status = str(item.get("status", "pending")).strip().lower()
        if status in _DONE or item.get("done") is True or item.get("completed") is True:
            return None
    if kind == "lesson":
        value["importance"] = parse_importance(item.get("importance", 0.7))
        category = item.get("category")
        if isinstance(category, str) and category.strip():
            value["category"] = category.strip()[:40]
    return value


def plan_hot(data: Any, report: Report, now: float) -> list[tuple[str, str, Any]]:
    """(label, key, value) updates for `hot --update`, in order; refusals go to the report."""
    name = HOT_FILE
    if isinstance(data, dict):
        for wrapper in ("hot_state", "state", "hot"):
            if isinstance(data.get(wrapper), dict):
                data = data[wrapper]
                break
    if not isinstance(data, dict):
        report.files[name] = "refused"
        report.refuse(name, "(file)", "expected an object with identity, owner_profile, "
                                      "active_context and critical_lessons")
        return []
    updates: list[tuple[str, str, Any]] = []
    known = {"identity", "owner_profile", "active_context", "critical_lessons", "lessons",
             "projects", "events", "tasks"}
    for key in data:
        if key not in known:
            report.refuse(name, str(key), "not a part of hot memory (identity, owner_profile, "
                          "active_context, critical_lessons)")
    if data.get("identity") is not None:
        identity = _identity_updates(data["identity"], report)
        if identity:
            updates.append(("identity", "identity", identity))
    profile = data.get("owner_profile")
    if profile is not None and not isinstance(profile, dict):
        report.refuse(name, "owner_profile", "expected an object")
    elif profile:
        for key, value in profile.items():
            if value is None:
                continue
            updates.append((f"owner_profile.{key}", "owner_profile", {str(key): value}))
    context = data.get("active_context") or {}
    if not isinstance(context, dict):
        report.refuse(name, "active_context", "expected an object with projects, events, tasks")
        context = {}
    lessons = data.get("critical_lessons", data.get("lessons"))
    groups = (("project", _entries(context.get("projects", data.get("projects")), "project",
                                   report, "active_context.projects")),
              ("task", _entries(context.get("tasks", data.get("tasks")), "task", report,
                                "active_context.tasks")),
              ("event", _entries(context.get("events", data.get("events")), "event", report,
                                 "active_context.events")),
              ("lesson", _entries(lessons, "lesson", report, "critical_lessons")))
    for kind, entries in groups:
        for label, item in entries:
            try:
                value = _entry_update(kind, item, now)
            except ValueError as exc:
                report.refuse(name, label, str(exc))
                continue
            if value is None:
                report.skip(name, label, "a done task (hot memory keeps pending tasks only)")
                continue
            updates.append((label, kind, value))
    return updates


def import_hot(mem: "Memory", data: Any, report: Report) -> None:
    """Validate every update on a copy first (pure), then apply the accepted ones."""
    from evoclaw_memory.memory import new_id
    now = mem.clock()
    updates = plan_hot(data, report, now)
    state = mem.hot
    accepted = []
    for label, key, value in updates:
        try:
            state = hot_rules.apply_update(state, key, value, now, new_id)
        except ValidationError as exc:
            report.refuse(HOT_FILE, label, str(exc))
            continue
        accepted.append((label, key, value))
    kept = {e.id for e in state.critical_lessons} | {e.id for e in state.active_context.events} \
        | {e.id for e in state.active_context.tasks} \
        | {"project:" + p.name.casefold() for p in state.active_context.projects}

    def dropped(key: str, value: Any) -> bool:
        if key == "project":                 # upserted by name: it may keep an older id
            return "project:" + value["name"].casefold() not in kept
        return key in ("lesson", "event", "task") and value["id"] not in kept
    counters = {"identity": "identity", "owner_profile": "owner_profile", "project": "projects",
                "event": "events", "task": "tasks", "lesson": "lessons"}
    for label, key, value in accepted:
        if dropped(key, value):
            report.refuse(HOT_FILE, label, "pruned to keep hot memory within its limits "
                          "(5,120 bytes, 20 lessons, 10 events, 10 pending tasks, 5 projects)")
            continue
        report.taken[counters[key]] += len(value) if key == "identity" else 1
    if report.dry_run or not accepted:
        return
    for _label, key, value in accepted:
        if not dropped(key, value):
            mem.update_hot(key, value)
