"""Hot memory rules: updates by key, limits, pruning and MEMORY.md rendering (SPEC §1).

Pure functions over HotState; the caller stores the result. Every function returns a new
state and never mutates its input.
"""

from __future__ import annotations

# `copy` is imported in the functions that use it: a CLI run of store/retrieve/context/hot
# starts without it (start-up time, one process per agent turn).

import datetime as dt
import os
from typing import Any, Callable, Optional

import msgspec

from evoclaw_memory import validate
from evoclaw_memory.errors import NoPendingTask, ValidationError
from evoclaw_memory.limits import (HOT_MAX_BYTES, HOT_MAX_EVENTS, HOT_MAX_LESSONS, HOT_MAX_PENDING_TASKS,
                     HOT_MAX_PROJECTS)
from evoclaw_memory.models import Event, HotState, Identity, Lesson, Project, Task

UPDATE_KEYS = ("identity", "owner_profile", "lesson", "event", "task", "project", "complete_task")
ENTRY_TEXT_MAX = 300          # one lesson, event, task or project description
PROFILE_VALUE_MAX_BYTES = 600  # one owner_profile value, serialized

_ENTRY_FIELDS = {
    "lesson": {"id", "text", "category", "importance", "timestamp", "private"},
    "event": {"id", "text", "timestamp", "when", "private"},
    "task": {"id", "text", "status", "timestamp", "when", "private"},
    "project": {"id", "name", "status", "description", "timestamp", "private"},
}
_encoder = msgspec.json.Encoder()


def state_size(state: HotState) -> int:
    """Serialized size in bytes, as the limit counts it (the sync `clock` excluded)."""
    return len(_encoder.encode(msgspec.structs.replace(state, clock={})))


def apply_update(state: HotState, key: str, value: Any, now: float,
                 new_id: Callable[[], str]) -> HotState:
    """Apply one `hot --update KEY JSON` and prune to the limits. Raises ValidationError."""
    if key not in UPDATE_KEYS:
        raise ValidationError(f"unknown hot memory key {key!r}; expected one of "
                              f"{', '.join(UPDATE_KEYS)}")
    if key == "complete_task":
        value = {"id": value} if isinstance(value, str) else value
    if not isinstance(value, dict):
        raise ValidationError(f"hot memory update {key!r} needs a JSON object")
    # Before anything else: a NaN or a lone surrogate saved here could never be read back.
    validate.json_value(f"hot {key}", value)
    state = state.copied()
    if key == "identity":
        _merge_identity(state, value, now)
    elif key == "owner_profile":
        _merge_profile(state, value, now)
    elif key == "complete_task":
        _complete_task(state, value, now)
    else:
        _add_entry(state, key, value, now, new_id)
    state = prune(state, now)
    if state_size(state) > HOT_MAX_BYTES:
        raise ValidationError(f"hot memory would be {state_size(state)} bytes, over the "
                              f"{HOT_MAX_BYTES}-byte limit even after pruning; shorten the update")
    return state


def _merge_identity(state: HotState, value: dict, now: float) -> None:
    allowed = set(Identity.__struct_fields__)
    unknown = sorted(set(value) - allowed)
    if unknown:
        raise ValidationError(f"unknown identity key(s) {', '.join(unknown)}; expected "
                              f"{', '.join(sorted(allowed))}")
    for field, item in value.items():
        if field == "trust_level":
            if item is not None:
                validate.finite("identity trust_level", item)
        elif item is not None:
            validate.text(f"identity {field}", item, max_len=ENTRY_TEXT_MAX)
    merged = {**msgspec.structs.asdict(state.identity), **value}
    try:
        state.identity = msgspec.convert(merged, Identity)
    except msgspec.ValidationError as exc:
        raise ValidationError(f"identity: {validate.plain_error(exc)}") from None
    for field in value:
        _stamp(state, f"identity.{field}", now)


def _merge_profile(state: HotState, value: dict, now: float) -> None:
    for field, item in value.items():
        if not isinstance(field, str) or not field.strip() or len(field) > 64:
            raise ValidationError("owner_profile keys must be non-empty strings of <= 64 chars")
        if item is None:                       # null removes a key
            state.owner_profile.pop(field, None)
        else:
            size = len(_encoder.encode(item))
            if size > PROFILE_VALUE_MAX_BYTES:
                raise ValidationError(f"owner_profile.{field} is {size} bytes; the limit is "
                                      f"{PROFILE_VALUE_MAX_BYTES}")
            state.owner_profile[field] = item
        _stamp(state, f"owner_profile.{field}", now)


def _stamp(state: HotState, key: str, now: float) -> None:
    """Record a change of `key` past the last one this device knows of (which may be another
    device's, from a clock ahead of ours): a change made after seeing a value wins over it in
    every merge (cloud.merge), whatever the clocks say."""
    state.clock[key] = max(now, state.clock.get(key, 0.0) + CLOCK_STEP)


CLOCK_STEP = 0.001


def _check_entry(kind: str, value: dict) -> None:
    unknown = sorted(set(value) - _ENTRY_FIELDS[kind])
    if unknown:
        raise ValidationError(f"unknown {kind} key(s) {', '.join(unknown)}; expected "
                              f"{', '.join(sorted(_ENTRY_FIELDS[kind]))}")
    text_field = "name" if kind == "project" else "text"
    text = value.get(text_field)
    if not isinstance(text, str) or not text.strip():
        raise ValidationError(f"a {kind} needs a non-empty {text_field!r}")
    for field in ("text", "name", "description"):
        if isinstance(value.get(field), str) and len(value[field]) > ENTRY_TEXT_MAX:
            raise ValidationError(f"{kind} {field} is {len(value[field])} characters; the limit "
                                  f"is {ENTRY_TEXT_MAX}")
    validate.importance(value.get("importance", 0.5), f"{kind} importance")
    if not isinstance(value.get("private", False), bool):
        raise ValidationError(f"{kind} private must be true or false")
    if "when" in value and "timestamp" in value:
        raise ValidationError(f"a {kind} takes 'when' or 'timestamp', not both")
    if "id" in value:
        validate.text(f"{kind} id", value["id"], max_len=64)
    for field in ("category", "status"):
        if field in value:
            validate.text(f"{kind} {field}", value[field], max_len=64)


def _add_entry(state: HotState, kind: str, value: dict, now: float,
               new_id: Callable[[], str]) -> None:
    _check_entry(kind, value)
    value = dict(value)
    # People write dates ("when": "2026-12-12 15:00"); the entry keeps epoch seconds.
    for field in ("when", "timestamp"):
        if field in value:
            value["timestamp"] = validate.when(f"{kind} {field}", value.pop(field))
    value = {"timestamp": now, **value}
    value.setdefault("id", new_id())
    kinds = {"lesson": Lesson, "event": Event, "task": Task, "project": Project}
    try:
        entry = msgspec.convert(value, kinds[kind])
    except msgspec.ValidationError as exc:
        raise ValidationError(f"{kind}: {validate.plain_error(exc)}") from None
    ctx = state.active_context
    if kind == "lesson":
        state.critical_lessons = _upsert(state.critical_lessons, entry)
    elif kind == "event":
        ctx.events = _upsert(ctx.events, entry)
    elif kind == "task":
        if entry.status == "done":
            _complete_task(state, {"id": entry.id}, now)
            return
        ctx.tasks = _upsert(ctx.tasks, entry)
    else:
        same_name = [p for p in ctx.projects if p.name.casefold() == entry.name.casefold()]
        if same_name:                                  # upsert by name, keeping its id
            entry = msgspec.structs.replace(entry, id=same_name[0].id)
        ctx.projects = _upsert(ctx.projects, entry)


def _upsert(entries: list, entry) -> list:
    """Replace the entry with the same id, or append it."""
    kept = [e for e in entries if e.id != entry.id]
    return kept + [entry]


def _complete_task(state: HotState, value: dict, now: float) -> None:
    task_id = value.get("id")
    tasks = state.active_context.tasks
    match = [t for t in tasks if t.id == task_id or (value.get("text") and t.text == value["text"])]
    if not match:
        raise NoPendingTask(f"no pending task {task_id or value.get('text')!r}")
    state.active_context.tasks = [t for t in tasks if t not in match]
    for task in match:
        _stamp(state, f"removed:{task.id}", now)    # done tasks leave; remember why for merges


TOMBSTONE_DAYS = 30        # how long a removal is remembered for merging with other devices
TOMBSTONE_MAX = 64


def within_limits(state: HotState) -> bool:
    """Whether prune() would drop no entry (a state from elsewhere: an import)."""
    ctx = state.active_context
    return (len(state.critical_lessons) <= HOT_MAX_LESSONS and len(ctx.events) <= HOT_MAX_EVENTS
            and len(ctx.tasks) <= HOT_MAX_PENDING_TASKS and len(ctx.projects) <= HOT_MAX_PROJECTS
            and state_size(state) <= HOT_MAX_BYTES)


def prune(state: HotState, now: float) -> HotState:
    """Enforce the count limits, then drop entries until the size fits (SPEC §1 order)."""
    state = state.copied()
    ctx = state.active_context

    def drop(entries: list, victim) -> list:
        _stamp(state, f"removed:{victim.id}", now)
        return [e for e in entries if e is not victim]

    while len(state.critical_lessons) > HOT_MAX_LESSONS:
        state.critical_lessons = drop(state.critical_lessons, _least_important(state.critical_lessons))
    while len(ctx.events) > HOT_MAX_EVENTS:
        ctx.events = drop(ctx.events, min(ctx.events, key=lambda e: e.timestamp))
    while len(ctx.tasks) > HOT_MAX_PENDING_TASKS:
        ctx.tasks = drop(ctx.tasks, min(ctx.tasks, key=lambda t: t.timestamp))
    while len(ctx.projects) > HOT_MAX_PROJECTS:
        ctx.projects = drop(ctx.projects, min(ctx.projects, key=lambda p: p.timestamp))
    while state_size(state) > HOT_MAX_BYTES:
        if state.critical_lessons:
            state.critical_lessons = drop(state.critical_lessons,
                                          _least_important(state.critical_lessons))
        elif ctx.events:
            ctx.events = drop(ctx.events, min(ctx.events, key=lambda e: e.timestamp))
        elif ctx.tasks:
            ctx.tasks = drop(ctx.tasks, min(ctx.tasks, key=lambda t: t.timestamp))
        elif ctx.projects:
            ctx.projects = drop(ctx.projects, min(ctx.projects, key=lambda p: p.timestamp))
        else:
            break           # only identity/profile left: the caller refuses the update
    _forget_old_tombstones(state, now)
    return state


def _forget_old_tombstones(state: HotState, now: float) -> None:
    """Bound the sync bookkeeping: removals older than TOMBSTONE_DAYS (at most TOMBSTONE_MAX
    kept) and clocks of profile keys long deleted. A device offline for longer than that
    could bring a removed entry back at its next merge; the state stays small for everyone."""
    cutoff = now - TOMBSTONE_DAYS * 86_400
    removed = sorted((when, key) for key, when in state.clock.items() if key.startswith("removed:"))
    doomed = {key for when, key in removed if when < cutoff}
    doomed.update(key for _, key in removed[:max(0, len(removed) - TOMBSTONE_MAX)])
    for key, when in state.clock.items():
        if key.startswith("owner_profile.") and when < cutoff \
                and key.split(".", 1)[1] not in state.owner_profile:
            doomed.add(key)
    for key in doomed:
        del state.clock[key]


def _least_important(lessons: list[Lesson]) -> Lesson:
    """The lesson to drop first: lowest importance, the oldest among equals."""
    return min(lessons, key=lambda l: (l.importance, l.timestamp))


def owner_zone(state: HotState) -> Optional[dt.tzinfo]:
    """The owner's time zone: owner_profile.timezone when it names one ("Asia/Tokyo"), else
    None (this device's own). Event dates are the owner's days: a Tokyo breakfast at 08:00 is
    on that day, not on the day before, as it is in UTC."""
    name = state.owner_profile.get("timezone")
    if isinstance(name, str) and 0 < len(name) <= 64:
        if name == _device_zone_name():
            return None         # the device's own zone: the same days, without zoneinfo
        from evoclaw_memory import tzfile   # here: only such an owner needs it (~0.45 ms)
        zone = tzfile.system_zone(name)     # its tz file, read as zoneinfo reads it
        if zone is not None:
            return zone
        try:
            # Imported here: zoneinfo loads sysconfig and weakref (~2.7 ms of a CLI run),
            # and only a zone tzfile could not read needs it.
            from zoneinfo import ZoneInfo
            return ZoneInfo(name)
        except (KeyError, ValueError, OSError, ImportError):   # no zone by that name here
            return None
    return None


def _device_zone_name() -> Optional[str]:
    """The IANA name of this device's zone when it is sure ("Europe/Lisbon": /etc/localtime
    links to its tz file and no TZ variable overrides it), else None. A local date then is
    the one ZoneInfo(name) gives: the C library reads the same file (PYTHONTZPATH could
    point ZoneInfo at another one)."""
    if "TZ" in os.environ or "PYTHONTZPATH" in os.environ:
        return None
    try:
        target = os.readlink("/etc/localtime")
    except (OSError, AttributeError, NotImplementedError):
        return None
    _, sep, name = target.rpartition("/zoneinfo/")
    return name if sep else None


def _when(ts: float, zone: Optional[dt.tzinfo]) -> str:
    return dt.datetime.fromtimestamp(ts, zone).strftime("%Y-%m-%d") if ts else ""


def render_markdown(state: HotState, now: float, max_bytes: int = HOT_MAX_BYTES) -> str:
    """MEMORY.md: the hot state as markdown, never over `max_bytes`."""
    text = _render(state, now)
    trimmed = state
    # Markdown is usually smaller than the JSON it comes from, but headers can tip it over:
    # drop entries in the pruning order until it fits, and as a last resort cut the text.
    while len(text.encode()) > max_bytes:
        smaller = _drop_one(trimmed)
        if smaller is None:
            cut = text.encode()[:max_bytes - 20].decode("utf-8", "ignore")
            return cut + "\n…(truncated)\n"
        trimmed = smaller
        text = _render(trimmed, now)
    return text


def _drop_one(state: HotState) -> HotState | None:
    state = state.copied()
    ctx = state.active_context
    if state.critical_lessons:
        victim = _least_important(state.critical_lessons)
        state.critical_lessons = [l for l in state.critical_lessons if l is not victim]
    elif ctx.events:
        ctx.events = sorted(ctx.events, key=lambda e: e.timestamp)[1:]
    elif ctx.tasks:
        ctx.tasks = sorted(ctx.tasks, key=lambda t: t.timestamp)[1:]
    elif ctx.projects:
        ctx.projects = sorted(ctx.projects, key=lambda p: p.timestamp)[1:]
    else:
        return None
    return state


def _render(state: HotState, now: float) -> str:
    ident = state.identity
    lines = ["# MEMORY", ""]
    lines.append("## Agent identity")
    shown = [(k, getattr(ident, k)) for k in Identity.__struct_fields__ if getattr(ident, k) is not None]
    lines += [f"- {k.replace('_', ' ')}: {v}" for k, v in shown] or ["- (not set)"]
    lines += ["", "## Owner profile"]
    lines += [f"- {k}: {_plain(v)}" for k, v in sorted(state.owner_profile.items())] or ["- (empty)"]
    ctx = state.active_context
    if ctx.projects:
        lines += ["", "## Active projects"]
        lines += [f"- **{p.name}** ({p.status})" + (f": {p.description}" if p.description else "")
                  for p in sorted(ctx.projects, key=lambda p: -p.timestamp)]
    if ctx.tasks:
        lines += ["", "## Pending tasks"]
        lines += [f"- [ ] {t.text} `{t.id}`" for t in sorted(ctx.tasks, key=lambda t: t.timestamp)]
    if ctx.events:
        lines += ["", "## Recent events"]
        zone = owner_zone(state)
        lines += [f"- {_when(e.timestamp, zone)} {e.text}".strip()
                  for e in sorted(ctx.events, key=lambda e: -e.timestamp)]
    if state.critical_lessons:
        lines += ["", "## Critical lessons"]
        lines += [f"- [{l.category}] {l.text}"
                  for l in sorted(state.critical_lessons, key=lambda l: (-l.importance, -l.timestamp))]
    stamp = dt.datetime.fromtimestamp(now, dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines += ["", f"_Generated at {stamp} by evoclaw-memory._", ""]
    return "\n".join(lines)


def _plain(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return ", ".join(_plain(v) for v in value)
    return _encoder.encode(value).decode()
