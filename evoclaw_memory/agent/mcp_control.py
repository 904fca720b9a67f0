"""The MCP server's tools for the owner's control (SPEC §5b): list, correct, forget (by id,
or matching a query after a dry run), history, unsupersede, export and import — the same
names and results as the Python API and the CLI's `--json`.

No `from __future__ import annotations` here: the SDK reads the tools' parameter types at
run time (see mcp_server). The hints tell hosts which tools to confirm with the user.
"""

import datetime as dt
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Callable, Literal, Optional

from pydantic import Field

from evoclaw_memory.agent.mcp_results import annotations_for, compact, plain
from evoclaw_memory.errors import ValidationError

if TYPE_CHECKING:
    from evoclaw_memory.memory import Memory

FactId = Annotated[str, Field(min_length=1, max_length=128,
                              description="A fact id, as list_facts or retrieve return it.")]
ExportFormat = Literal["jsonl", "markdown"]
EXPORTS_DIR = "exports"         # under the data folder: where an export without a path goes


def export_path(mem: "Memory", path: Optional[str], fmt: str) -> Path:
    """Where an MCP export is written. A path given must be absolute (the server's working
    folder is the host's, not the owner's) and new: a model's export never overwrites a
    file. Without one: $EVOCLAW_HOME/exports/AGENT-YYYYMMDDTHHMMSSZ.jsonl (or .md)."""
    if path is None:
        stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        suffix = ".md" if fmt == "markdown" else ".jsonl"
        target = Path(mem.config.home) / EXPORTS_DIR / f"{mem.config.agent_id}-{stamp}{suffix}"
    else:
        target = Path(path).expanduser()
        if not target.is_absolute():
            raise ValidationError(f"export path must be absolute, not {path!r} (or omit it: "
                                  f"the export goes to {Path(mem.config.home) / EXPORTS_DIR})")
    try:
        exists = target.exists()
    except (OSError, ValueError) as exc:       # a NUL byte, a name too long
        raise ValidationError(f"cannot use {path!r} as an export path: {exc}") from None
    if exists:
        raise ValidationError(f"{target} already exists; give a new file name (an export "
                              "never overwrites a file)")
    return target


def add_control_tools(server: Any, mem: "Memory", guarded: Callable) -> None:
    """Register the owner's control tools on `server` (each call through `guarded`)."""

    @server.tool(title="List facts", annotations=annotations_for("List facts", read_only=True),
                 description="List stored facts, oldest first, optionally under a category "
                             "path (and below) or of one tier (warm, cold).")
    @guarded
    def list_facts(category: Annotated[Optional[str], Field(max_length=200, description=(
                       "Only facts under this tree path (and below)."))] = None,
                   tier: Annotated[Optional[Literal["warm", "cold"]], Field(description=(
                       "Only the device's working set (warm) or the archive (cold)."))] = None,
                   limit: Annotated[int, Field(ge=1, le=500, description=(
                       "Most facts to return (1-500)."))] = 50,
                   offset: Annotated[int, Field(ge=0, description=(
                       "Facts to skip, for the next page."))] = 0) -> dict[str, Any]:
        facts = mem.facts(category=category, tier=tier, limit=limit, offset=offset)
        return compact({"facts": [plain(f) for f in facts], "count": len(facts)})

    @server.tool(title="A fact's history", annotations=annotations_for(
                 "A fact's history", read_only=True),
                 description="A fact's history: versions, supersessions, reinforcements and "
                             "its forget, with times and who did it.")
    @guarded
    def history(fact_id: FactId) -> dict[str, Any]:
        return compact(plain(mem.history(fact_id)))

    @server.tool(title="Forget facts", annotations=annotations_for(
                 "Forget facts", destructive=True, idempotent=True, open_world=True),
                 description="Erase stored facts by id (from list_facts or retrieve), here, "
                             "in the cloud and on the owner's other devices. Only when the "
                             "user asks to forget.")
    @guarded
    def forget(fact_ids: Annotated[list[str], Field(min_length=1, max_length=1000, description=(
                   "The ids of the facts to erase."))]) -> dict[str, Any]:
        gone = mem.forget(fact_ids, by="mcp")
        mem.store.erase_forgotten_words()     # their words leave the full-text files now
        return compact({"forgotten": gone, "count": len(gone)})

    @server.tool(title="Forget facts matching words", annotations=annotations_for(
                 "Forget facts matching words", destructive=True, idempotent=True,
                 open_world=True),
                 description="The facts holding every word of `query` (under `category`): "
                             "first call it as it is (a dry run: nothing is erased) and show "
                             "the user the list; only when they confirm, call it again with "
                             "dry_run=false to erase them here, in the cloud and on the other "
                             "devices.")
    @guarded
    def forget_matching(query: Annotated[str, Field(min_length=1, max_length=2000, description=(
                            "Words every fact to forget holds."))],
                        category: Annotated[Optional[str], Field(max_length=200, description=(
                            "Only facts under this tree path (and below)."))] = None,
                        dry_run: Annotated[bool, Field(description=(
                            "true: only list the matches; false: erase them."))] = True
                        ) -> dict[str, Any]:
        found = mem.forget_matching(query, category=category, dry_run=dry_run, by="mcp")
        matching = [{"id": f.id, "category": f.category, "text": f.text} for f in found]
        if dry_run:
            return compact({"dry_run": True, "matching": matching, "count": len(found)})
        mem.store.erase_forgotten_words()
        return compact({"dry_run": False, "forgotten": [f.id for f in found],
                        "count": len(found)})

    @server.tool(title="Correct a fact", annotations=annotations_for(
                 "Correct a fact", destructive=True, idempotent=True),
                 description="Correct a stored fact (text, category, importance); the old "
                             "version is kept in its history, out of search.")
    @guarded
    def edit_fact(fact_id: FactId,
                  text: Annotated[Optional[str], Field(max_length=2000, description=(
                      "The corrected text (omit to keep it)."))] = None,
                  category: Annotated[Optional[str], Field(max_length=200, description=(
                      "A new tree path (omit to keep it)."))] = None,
                  importance: Annotated[Optional[float], Field(ge=0.0, le=1.0, description=(
                      "A new importance 0..1 (omit to keep it)."))] = None) -> dict[str, Any]:
        return compact({"fact": plain(mem.edit(fact_id, text=text, category=category,
                                               importance=importance, by="mcp"))})

    @server.tool(title="Bring back a superseded fact", annotations=annotations_for(
                 "Bring back a superseded fact", idempotent=True, open_world=True),
                 description="Bring a superseded fact back into search (here, in the cloud "
                             "and on the other devices): when the user says the old value "
                             "still holds.")
    @guarded
    def unsupersede(fact_id: FactId) -> dict[str, Any]:
        return compact({"fact": plain(mem.unsupersede(fact_id, by="mcp"))})

    @server.tool(title="Export the memory", annotations=annotations_for(
                 "Export the memory", idempotent=False),
                 description="Write the whole memory to a new file on this machine: jsonl "
                             "(for import_jsonl or `evoclaw-memory import`: loses nothing) or "
                             "markdown (for reading). Returns the file and the facts written; "
                             "the file holds the owner's private memory (mode 0600).")
    @guarded
    def export(format: Annotated[ExportFormat, Field(description=(
                   "jsonl (complete, for import) or markdown (for reading)."))] = "jsonl",
               path: Annotated[Optional[str], Field(max_length=4096, description=(
                   "An absolute path for a new file; omit for one in the data folder's "
                   "exports/."))] = None) -> dict[str, Any]:
        target = export_path(mem, path, format)
        count = mem.export(target, format=format)
        return compact({"exported": count, "file": str(target), "format": format})

    @server.tool(title="Import an export", annotations=annotations_for(
                 "Import an export", idempotent=True),
                 description="Load a jsonl export from a file on this machine: ids already "
                             "here are skipped, hot memory is merged, forgotten facts stay "
                             "forgotten; a bad line names itself and nothing is written.")
    @guarded
    def import_jsonl(path: Annotated[str, Field(min_length=1, max_length=4096, description=(
                         "The export file's absolute path."))]) -> dict[str, Any]:
        source = Path(path).expanduser()
        if not source.is_absolute():
            raise ValidationError(f"import path must be absolute, not {path!r}")
        return compact(mem.import_jsonl(source))
