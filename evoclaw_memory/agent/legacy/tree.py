"""memory-tree.json: {path: {desc, children}}, a nested {name: {...}} or {"nodes": ...}."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from evoclaw_memory.agent.legacy.files import TREE_FILE, Report
from evoclaw_memory.agent.legacy.values import normalize_category, trim
from evoclaw_memory.errors import LimitError, ValidationError
from evoclaw_memory.limits import TREE_MAX_DESCRIPTION
from evoclaw_memory.tiers import tree as tree_rules

if TYPE_CHECKING:
    from evoclaw_memory.memory import Memory


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
            elif isinstance(child, dict) and isinstance(name := child.get("path") or child.get("name"), str):
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
            desc = trim(desc, TREE_MAX_DESCRIPTION)
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
