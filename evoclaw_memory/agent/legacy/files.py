"""The legacy files: their names, the import's report, finding and reading them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

from evoclaw_memory.errors import ValidationError

HOT_FILE = "hot-memory-state.json"
WARM_FILE = "warm-memory.json"
TREE_FILE = "memory-tree.json"
METRICS_FILE = "metrics.json"
LEGACY_FILES = (HOT_FILE, WARM_FILE, TREE_FILE, METRICS_FILE)
FILE_MAX_BYTES = 64 * 1024 * 1024
Progress = Callable[[str, int, int], None]


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


def load_file(path: Path, report: Report) -> Any:
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
