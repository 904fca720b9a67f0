"""Import the files of the original skill ("EvoClaw tiered memory", up to v2.2.0).

The skill kept one agent's memory as JSON files in its workspace: `memory/` for the
default agent and `memory/<agent>/` for the others:

    hot-memory-state.json   {identity, owner_profile, active_context{projects, events, tasks},
                             critical_lessons}
    warm-memory.json        a list of facts {id, text, category, importance, created_at,
                             access_count, ...} (or {"facts"|"memories": [...]}, or {id: fact})
    memory-tree.json        {path: {desc, children: [paths], ...}} with a "root" node, or a
                             nested {name: {description, children: {...}}}, or {"nodes": ...}
    metrics.json            counters {retrieval_count, consolidation_count, last_consolidation..}

Shapes vary between versions and hand edits, so every reader is tolerant (aliases, epoch
seconds / milliseconds / ISO times, importance on a 0-10 scale) and every item that does not
fit is refused with its own reason; nothing is silently dropped. Re-running an import is
safe: facts already stored (same id or same text) and hot entries (stable ids) are not
duplicated, and a metrics file is counted once.

The original's MEMORY.md is not imported: it is rendered from hot memory, and is re-rendered
from the imported state.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Optional

import msgspec

from evoclaw_memory.tiers import hot as hot_rules
from evoclaw_memory.tiers import tree as tree_rules
from evoclaw_memory.errors import LimitError, ValidationError
from evoclaw_memory.limits import FACT_MAX_TEXT, TREE_MAX_DEPTH, TREE_MAX_DESCRIPTION
from evoclaw_memory.models import Fact, Metadata

if TYPE_CHECKING:
    from evoclaw_memory.memory import Memory

HOT_FILE = "hot-memory-state.json"
WARM_FILE = "warm-memory.json"
TREE_FILE = "memory-tree.json"
METRICS_FILE = "metrics.json"
LEGACY_FILES = (HOT_FILE, WARM_FILE, TREE_FILE, METRICS_FILE)
FILE_MAX_BYTES = 64 * 1024 * 1024
Progress = Callable[[str, int, int], None]

_TEXT_KEYS = ("text", "content", "fact", "memory", "summary", "value")
_FACT_LIST_KEYS = ("facts", "memories", "warm", "warm_memories", "warm_memory", "items",
                   "entries", "data")
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


# -- the report --------------------------------------------------------------------------------

class Report:
    """What an import took, skipped (already there) and refused (with a reason each)."""

    def __init__(self, agent_id: str, source: Path, dry_run: bool):
        self.agent_id = agent_id
        self.source = source
        self.dry_run = dry_run
        self.files: dict[str, str] = {}
        self.taken: dict[str, int] = {k: 0 for k in (
            "facts", "tree_nodes", "identity", "owner_profile", "projects", "events", "tasks",
            "lessons", "metrics")}
        self.skipped: list[dict[str, str]] = []
        self.refused: list[dict[str, str]] = []
        self.notes: list[str] = []

    def refuse(self, file: str, item: str, reason: str) -> None:
        self.refused.append({"file": file, "item": item, "reason": reason})

    def skip(self, file: str, item: str, reason: str) -> None:
        self.skipped.append({"file": file, "item": item, "reason": reason})

    def as_dict(self) -> dict[str, Any]:
        return {"agent_id": self.agent_id, "source": str(self.source), "dry_run": self.dry_run,
                "files": self.files, "taken": self.taken, "skipped": self.skipped,
                "refused": self.refused, "notes": self.notes}


# -- finding the files -------------------------------------------------------------------------

def memory_root(workspace: Path) -> Path:
    """The folder holding the legacy files: <workspace>/memory, or the workspace itself."""
    workspace = Path(workspace).expanduser()
    if not workspace.is_dir():
        raise ValidationError(f"workspace {workspace} is not a folder")
    inner = workspace / "memory"
    return inner if inner.is_dir() else workspace


def _has_legacy_files(folder: Path) -> bool:
    return any((folder / name).is_file() for name in LEGACY_FILES)


def find_agents(workspace: Path) -> dict[str, Path]:
    """Legacy agent id -> its folder: memory/ is 'default', memory/<agent>/ the others."""
    root = memory_root(workspace)
    found = {}
    if _has_legacy_files(root):
        found["default"] = root
    for sub in sorted(p for p in root.iterdir() if p.is_dir()):
        if _has_legacy_files(sub):
            found[sub.name] = sub
    return found


def source_folder(workspace: Path, legacy_agent: str) -> Path:
    """Where the original skill kept `legacy_agent`'s files (NotFound-like ValidationError)."""
    root = memory_root(workspace)
    folder = root if legacy_agent == "default" else root / legacy_agent
    if not folder.is_dir() or not _has_legacy_files(folder):
        names = ", ".join(LEGACY_FILES)
        raise ValidationError(f"no legacy memory for agent {legacy_agent!r} in {folder} "
                              f"(looked for {names})")
    return folder


# -- value parsing (pure) ------------------------------------------------------------------------

def parse_time(value: Any, now: float) -> Optional[float]:
    """Epoch seconds from epoch s/ms (number or numeric text) or ISO 8601; None if empty.

    Naive ISO times are local time (the skill wrote datetime.now().isoformat()); a time in
    the future becomes now. ValueError when unreadable."""
    if value is None or value == "" or value == 0:
        return None
    if isinstance(value, bool):
        raise ValueError(f"not a time: {value!r}")
    if isinstance(value, str):
        text = value.strip()
        try:
            value = float(text)
        except ValueError:
            try:
                stamp = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
            except ValueError:
                raise ValueError(f"not a time: {text[:40]!r}") from None
            value = stamp.timestamp()          # naive -> local time
    if not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ValueError(f"not a time: {value!r}")
    seconds = float(value) / 1000.0 if value > 1e11 else float(value)   # ms after ~5138 AD
    return min(seconds, now) if seconds else None


def parse_importance(value: Any) -> float:
    """0..1, accepting a 0-10 scale and numeric text; ValueError otherwise."""
    if value is None:
        return 0.5
    if isinstance(value, bool):
        raise ValueError(f"importance {value!r} is not a number")
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            raise ValueError(f"importance {value[:20]!r} is not a number") from None
    if not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ValueError(f"importance {value!r} is not a number from 0 to 1")
    if value > 1:
        if value <= 10:
            return round(value / 10.0, 4)
        raise ValueError(f"importance {value!r} is outside 0-1 (and 0-10)")
    return float(value)


def normalize_category(raw: Any) -> str:
    """A valid tree path from a legacy category ('Projects.EvoClaw' -> 'projects/evoclaw')."""
    if not isinstance(raw, str) or not raw.strip():
        return "general"
    text = raw.strip().lower()
    text = re.sub(r"[\\.:>|]+", "/", text)
    text = re.sub(r"\s+", "-", text)
    segments = []
    for seg in text.split("/"):
        seg = re.sub(r"[^\w-]", "", seg, flags=re.UNICODE)
        seg = re.sub(r"^[_-]+", "", seg)[:32]
        if seg:
            segments.append(seg)
    if segments and segments[0] == "root":
        segments = segments[1:]
    if not segments:
        return "general"
    path = "/".join(segments[:TREE_MAX_DEPTH])
    try:
        return tree_rules.validate_path(path)
    except ValidationError:
        return "general"


def _first_text(item: dict, keys: Iterable[str] = _TEXT_KEYS) -> Optional[str]:
    for key in keys:
        value = item.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def _stable_id(kind: str, text: str, given: Any = None) -> str:
    """The legacy entry's own id when sane, else one derived from its text (re-import safe)."""
    if isinstance(given, (str, int)) and not isinstance(given, bool):
        given = str(given).strip()
        if re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}", given):
            return given
    return "lg-" + hashlib.sha1(f"{kind}\0{text}".encode()).hexdigest()[:14]


def _trim(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"


def _metadata(raw: Any) -> Optional[Metadata]:
    if not isinstance(raw, dict):
        return None
    out: dict[str, list[str]] = {"urls": [], "commands": [], "paths": []}
    for field, aliases in (("urls", ("urls", "url", "links", "link")),
                           ("commands", ("commands", "command", "cmds", "cmd")),
                           ("paths", ("paths", "path", "files", "file"))):
        for alias in aliases:
            value = raw.get(alias)
            values = [value] if isinstance(value, str) else value if isinstance(value, list) else []
            out[field] += [v.strip() for v in values if isinstance(v, str) and v.strip()]
    if not any(out.values()):
        return None
    return Metadata(urls=out["urls"][:10], commands=out["commands"][:5], paths=out["paths"][:10])


def _load(path: Path, report: Report) -> Any:
    """The parsed JSON of a legacy file, or None (recorded in the report)."""
    name = path.name
    if not path.is_file():
        report.files[name] = "missing"
        return None
    try:
        size = path.stat().st_size
        if size > FILE_MAX_BYTES:
            report.files[name] = "refused"
            report.refuse(name, "(file)", f"{size} bytes; the limit is {FILE_MAX_BYTES}")
            return None
        data = json.loads(path.read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError) as exc:
        report.files[name] = "refused"
        report.refuse(name, "(file)", f"cannot read it: {exc}")
        return None
    except ValueError as exc:
        report.files[name] = "refused"
        report.refuse(name, "(file)", f"not valid JSON: {exc}")
        return None
    except RecursionError:
        report.files[name] = "refused"
        report.refuse(name, "(file)", "JSON nested too deeply to be memory")
        return None
    report.files[name] = "read"
    return data


# -- facts ---------------------------------------------------------------------------------------

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
    text = _first_text(item)
    if text is None:
        raise ValueError("no text (looked for " + ", ".join(_TEXT_KEYS) + ")")
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
    fact = Fact(id=_stable_id("fact", text, item.get("id")), text=text,
                category=normalize_category(item.get("category", item.get("path"))),
                importance=importance, created_at=created,
                last_access=max(created, last or created), access_count=int(count),
                metadata=_metadata(meta) or Metadata(), source="legacy",
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
                category = mem._ensure_category(fact.category, now)
                meta = mem._metadata(fact.text, fact.metadata)
                cold = fact.tier == "cold" or belongs_in_cold(
                    fact.importance, fact.created_at, fact.access_count, now,
                    retention_days=cfg.warm_retention_days, decay_days=cfg.decay_days,
                    access_boost=cfg.access_boost)
                fact = msgspec.structs.replace(fact, category=category, metadata=meta,
                                               tier="cold" if cold else "warm")
                mem._insert(fact, key, now, op="legacy.import")
                if fact.tier == "warm":
                    mem._evict_over_cap(now)
        except (ValidationError, LimitError) as exc:
            report.refuse(name, label, str(exc))
            continue
        report.taken["facts"] += 1


# -- hot memory ----------------------------------------------------------------------------------

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
    text = _first_text(item, text_keys)
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
    value: dict[str, Any] = {"id": _stable_id(kind, text.casefold(), item.get("id")),
                             "timestamp": stamp or now}
    if kind == "project":
        value["name"] = text
        status = item.get("status")
        if isinstance(status, str) and status.strip():
            value["status"] = status.strip()[:40]
        desc = _first_text(item, ("description", "desc", "summary", "details"))
        if desc:
            value["description"] = _trim(desc, limit)
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
    for label, key, value in accepted:
        if not dropped(key, value):
            mem.update_hot(key, value)


# -- tree ----------------------------------------------------------------------------------------

def _tree_nodes(data: Any) -> Optional[list[tuple[str, str]]]:
    """(raw path, description) of every node in any of the tree file's shapes."""
    if isinstance(data, dict):
        for wrapper in ("nodes", "tree", "tree_nodes"):
            if isinstance(data.get(wrapper), (dict, list)) and len(data) <= 3:
                data = data[wrapper]
                break
    out: list[tuple[str, str]] = []
    if isinstance(data, list):
        for item in data:
            if isinstance(item, str):
                out.append((item, ""))
            elif isinstance(item, dict):
                path = item.get("path") or item.get("name")
                if isinstance(path, str):
                    out.append((path, _description(item)))
                    if isinstance(item.get("children"), (list, dict)):
                        out += _walk(item["children"], path)
        return out
    if isinstance(data, dict):
        return _walk(data, "")
    return None


def _description(node: Any) -> str:
    if isinstance(node, str):
        return node
    if isinstance(node, dict):
        for key in ("description", "desc", "summary", "label"):
            if isinstance(node.get(key), str):
                return node[key].strip()
    return ""


def _walk(obj: Any, prefix: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    if isinstance(obj, list):
        for child in obj:
            if isinstance(child, str):
                out.append((child if "/" in child or not prefix else f"{prefix}/{child}", ""))
            elif isinstance(child, dict) and isinstance(child.get("path") or child.get("name"), str):
                name = child.get("path") or child.get("name")
                path = name if "/" in name or not prefix else f"{prefix}/{name}"
                out.append((path, _description(child)))
                out += _walk(child.get("children"), path)
        return out
    if not isinstance(obj, dict):
        return out
    for key, node in obj.items():
        key = str(key)
        if key.lower() == "root" and not prefix:
            if isinstance(node, dict) and isinstance(node.get("children"), dict):
                out += _walk(node["children"], "")
            continue
        path = key if "/" in key or not prefix else f"{prefix}/{key}"
        out.append((path, _description(node)))
        if isinstance(node, dict) and isinstance(node.get("children"), (dict, list)):
            children = node["children"]
            # A flat file lists children as full paths that are keys of their own too.
            if isinstance(children, list) and all(isinstance(c, str) and c in obj
                                                  for c in children):
                continue
            out += _walk(children, path)
    return out


def import_tree(mem: "Memory", data: Any, report: Report) -> None:
    name = TREE_FILE
    nodes = _tree_nodes(data)
    if nodes is None:
        report.files[name] = "refused"
        report.refuse(name, "(file)", "expected {path: {desc, children}}, a nested "
                                      "{name: {description, children}} or {\"nodes\": ...}")
        return
    current = mem.tree
    now = mem.clock()
    seen: set[str] = set()
    for raw, desc in sorted(nodes, key=lambda n: str(n[0]).count("/")):
        path = normalize_category(raw)
        if path == "general" and str(raw).strip().lower() != "general":
            report.refuse(name, str(raw)[:80], "not a usable category path")
            continue
        if path in seen:
            continue
        seen.add(path)
        if path != str(raw).strip().lower():
            report.notes.append(f"{name}: {str(raw)[:60]!r} imported as {path!r}")
        if len(desc) > TREE_MAX_DESCRIPTION:
            report.notes.append(f"{name}: description of {path!r} shortened to "
                                f"{TREE_MAX_DESCRIPTION} characters")
            desc = _trim(desc, TREE_MAX_DESCRIPTION)
        existing = {n.path: n for n in current}
        if path in existing and (not desc or existing[path].description == desc):
            report.skip(name, path, "already in the tree")
            continue
        try:
            current = tree_rules.add(current, path, desc, now)
            if not report.dry_run:
                mem.tree_add(path, desc)
        except (ValidationError, LimitError) as exc:
            report.refuse(name, path, str(exc))
            continue
        report.taken["tree_nodes"] += 1
    if not report.dry_run and report.taken["tree_nodes"]:
        report.notes.append("tree counts are recomputed from the imported facts, not copied")


# -- metrics -------------------------------------------------------------------------------------

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


# -- the whole import ----------------------------------------------------------------------------

def import_legacy(mem: "Memory", folder: Path, *, dry_run: bool = False,
                  progress: Optional[Progress] = None) -> dict[str, Any]:
    """Import one legacy agent's files from `folder` into `mem`; returns the report.

    Order: facts first (their categories become tree nodes), then the tree's descriptions
    and empty nodes (where the limits allow), then hot memory, then metrics; MEMORY.md is
    re-rendered at the end."""
    folder = Path(folder)
    report = Report(mem.agent_id, folder, dry_run)
    warm = _load(folder / WARM_FILE, report)
    if warm is not None:
        import_facts(mem, warm, report, progress)
    tree = _load(folder / TREE_FILE, report)
    if tree is not None:
        import_tree(mem, tree, report)
    hot = _load(folder / HOT_FILE, report)
    if hot is not None:
        import_hot(mem, hot, report)
    metrics = _load(folder / METRICS_FILE, report)
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
