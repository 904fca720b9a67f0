"""Commands that turn conversations and notes into memory, and keep it in shape: distill,
hot, ingest-daily, validate, extract-metadata, consolidate."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import click

from evoclaw_memory.cli.common import (cli_state, common_options, emit, fact_line,
                                       llm_endpoint_option, one_line, open_memory, plain,
                                       progress_bar, read_file, require_llm)

HOT_KEYS = ("identity", "owner_profile", "lesson", "event", "task", "project", "complete_task")
CONSOLIDATE_MODES = ("quick", "daily", "monthly", "full")


# -- distillation ----------------------------------------------------------------------------

def _conversation(raw: str) -> Any:
    """A JSON list of {role, content} messages (or {"messages": [...]}), else plain text."""
    from evoclaw_memory.errors import NestingError, ValidationError
    from evoclaw_memory.validate import loads_json, text
    stripped = text("conversation", raw).strip()
    if not stripped or stripped[0] not in "[{":
        return raw
    try:
        data = loads_json("conversation", stripped)
    except NestingError:
        raise
    except ValidationError:
        return raw          # not JSON after all: plain text that starts with a bracket
    if isinstance(data, dict) and isinstance(data.get("messages"), list):
        data = data["messages"]
    if not isinstance(data, list):
        return raw
    if not all(isinstance(m, dict) and isinstance(m.get("content"), str) for m in data):
        raise ValidationError("a conversation in JSON must be a list of {\"role\": ..., "
                              "\"content\": \"...\"} messages")
    # Who spoke and when are kept: facts name the speaker and resolve dates against the time.
    keep = ("name", "timestamp", "time", "created_at")
    return [{"role": str(m.get("role", "user")), "content": m["content"],
             **{k: m[k] for k in keep if m.get(k) is not None}} for m in data]


@click.command()
@click.option("--text", "-t", default=None, help="The conversation (JSON messages or plain text).")
@click.option("--file", "-f", "file_", default=None, metavar="FILE",
              help="Read the conversation from FILE ('-' for stdin).")
@click.option("--store", "store_", is_flag=True,
              help="Store the facts (end of conversation: distill, store, re-render MEMORY.md).")
@click.option("--llm/--rules", "llm", default=None,
              help="--llm: use the configured LLM (an error when none is); --rules: rule "
                   "mode only. Default: the LLM when one is configured, else rules.")
@click.option("--at", "at", default=None, metavar="EPOCH|ISO",
              help="When the conversation took place (epoch seconds or ISO 8601; default now): "
                   "relative dates such as 'yesterday' resolve against it.")
@llm_endpoint_option
@click.option("--core-summary", is_flag=True,
              help="Print only the one-line core summary (the original skill's flag).")
@common_options
@click.pass_context
def distill(ctx: click.Context, text: Optional[str], file_: Optional[str], store_: bool,
            llm: Optional[bool], at: Optional[str], core_summary: bool) -> None:
    """Distill a conversation into a structured record, a core summary and fact drafts.

    Input: --text, --file or stdin; a JSON list of {role, content} messages, or plain text.
    With an LLM: one call, which also proposes hot-memory updates and marks the stored
    facts a new one supersedes or duplicates; if it fails, rule mode runs and says so.
    """
    if text is not None and file_ is not None:
        raise click.UsageError("give either --text or --file, not both")
    raw = text if text is not None else read_file(file_ or "-")
    if not raw.strip():
        from evoclaw_memory.errors import ValidationError
        raise ValidationError("nothing to distill: the conversation is empty")
    if llm:
        require_llm(ctx)
    messages = _conversation(raw)
    if at is not None:
        from evoclaw_memory.validate import when
        when("--at", at)               # a bad time fails before the memory opens
    with open_memory(ctx) as mem:
        mem.distill_llm = llm          # end_conversation distills through mem.distill
        result = mem.end_conversation(messages, at=at) if store_ else mem.distill(messages, at=at)
    if core_summary:
        emit(ctx, {"core_summary": result["summary"]}, lambda: click.echo(result["summary"]))
        return

    def human() -> None:
        record = result["record"]
        mode = result.get("mode", "rules")
        if mode == "rules-fallback" and result.get("llm_error"):
            mode += f" (LLM failed: {result['llm_error']})"
        click.echo(f"summary: {result['summary']}")
        click.echo(f"fact:    {record.fact}")
        for label in ("emotion", "outcome"):
            if getattr(record, label):
                click.echo(f"{label + ':':<8} {getattr(record, label)}")
        for label in ("people", "topics", "actions"):
            if getattr(record, label):
                click.echo(f"{label + ':':<8} {', '.join(getattr(record, label))}")
        if mode != "rules":
            click.echo(f"mode:    {mode}")
        if store_:
            for fact in result["added"]:
                click.echo(f"stored      {fact_line(fact)}")
            for fact in result["reinforced"]:
                click.echo(f"reinforced  {fact_line(fact)}")
            for old_id in result.get("superseded", []):
                click.echo(f"superseded  {old_id}")
            for update in result.get("hot_updates", []):
                click.echo(hot_update_line(update))
            if not result["added"] and not result["reinforced"]:
                click.echo("no facts to store")
            if result.get("sync"):
                click.echo(f"sync:    {sync_line(result['sync'])}")
        else:
            if not result["facts"]:
                click.echo("no facts found")
            for index, draft in enumerate(result["facts"]):
                replaces = [s["old_id"] for s in result.get("supersedes", []) if s["fact"] == index]
                note = f"  (supersedes {replaces[0]})" if replaces else ""
                click.echo(f"- [{draft.category}] (importance {draft.importance:.2f}) "
                           f"{draft.text}{note}")
            for dup in result.get("duplicates", []):
                click.echo(f"= already known as {dup['old_id']}: {dup['text']}")
            for update in result.get("hot_updates", []):
                click.echo(hot_update_line(update))

    emit(ctx, result, human)


def hot_update_line(update: dict) -> str:
    """A proposed hot-memory update as a person reads it:
    `hot task: Renew the TLS certificate  (2026-12-04T12:00:00Z)`, never a Python dict
    with epoch seconds (--json keeps the value as update_hot takes it)."""
    value = update.get("value")
    if not isinstance(value, dict):
        return f"hot {update.get('key')}: {one_line(value)}"
    head = value.get("text", value.get("name"))
    rest = []
    for field, item in value.items():
        if field in ("text", "name") and item == head:
            continue
        if field in ("timestamp", "when"):
            field = "on"                # an entry's day (epoch seconds in the value)
            if isinstance(item, (int, float)):
                item = iso_time(item)
        elif field == "importance" and isinstance(item, (int, float)):
            item = f"{item:.2f}"
        rest.append(f"{field} {one_line(item)}")
    text = one_line(head) if head is not None else ""
    detail = ", ".join(rest)
    if text and detail:
        return f"hot {update.get('key')}: {text}  ({detail})"
    return f"hot {update.get('key')}: {text or detail}"


def iso_time(ts: float) -> str:
    """Epoch seconds as ISO 8601 in UTC: 2026-12-04T12:00:00Z."""
    import datetime as dt
    return dt.datetime.fromtimestamp(ts, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def sync_line(report: dict) -> str:
    """end_conversation's sync report in words (lifecycle.conversation.push says what it did
    and where: the cloud, the local archive, queued offline, failed, not asked for)."""
    return str(report.get("detail") or report.get("status"))


# -- hot memory ------------------------------------------------------------------------------

@click.command()
@click.option("--update", nargs=2, default=None, metavar="KEY VALUE",
              help=f"Apply one update; KEY is one of {', '.join(HOT_KEYS)}; VALUE a JSON "
                   "object, or plain text: a lesson's, event's or task's text, a project's "
                   "name, a task id for complete_task.")
@click.option("--complete-task", metavar="ID", default=None, help="Mark a pending task done.")
@click.option("--rebuild", is_flag=True, help="Write MEMORY.md and print its path.")
@common_options
@click.pass_context
def hot(ctx: click.Context, update: Optional[tuple], complete_task: Optional[str],
        rebuild: bool) -> None:
    """Show hot memory (MEMORY.md), update it, or rebuild MEMORY.md.

    \b
    Examples:
      evoclaw-memory hot --update owner_profile '{"timezone": "Australia/Sydney"}'
      evoclaw-memory hot --update lesson '{"text": "Test on testnet first", "importance": 0.9}'
      evoclaw-memory hot --update lesson 'Never deploy on Fridays'
      evoclaw-memory hot --update project '{"name": "EvoClaw", "status": "active"}'
      evoclaw-memory hot --complete-task 3f2a9c01d4e5b6a7
    """
    if sum(bool(x) for x in (update, complete_task, rebuild)) > 1:
        raise click.UsageError("use one of --update, --complete-task, --rebuild at a time")
    # The body is shared with the click-free fast path (cli.fast), so the two cannot differ.
    plain.hot(cli_state(ctx), click.echo, update, complete_task, rebuild)


# -- notes, metadata, consolidation ----------------------------------------------------------

@click.command("ingest-daily")
@click.option("--days", type=click.IntRange(1, 3650), default=2, show_default=True,
              help="How many days of notes to read.")
@click.option("--workspace", type=click.Path(file_okay=False), default=None,
              help="Agent workspace holding memory/YYYY-MM-DD*.md [default: from config].")
@click.option("--dry-run", is_flag=True, help="Report what would be stored; store nothing.")
@llm_endpoint_option
@common_options
@click.pass_context
def ingest_daily(ctx: click.Context, days: int, workspace: Optional[str], dry_run: bool) -> None:
    """Store the facts of the last N days of daily notes (memory/YYYY-MM-DD*.md).

    A note is markdown named by its date (memory/2025-11-30.md, memory/2025-11-30-standup.md);
    each line or bullet that says something becomes a fact candidate."""
    with open_memory(ctx) as mem, progress_bar(ctx, "reading daily notes") as bar:
        report = mem.ingest_daily(days=days, workspace=Path(workspace) if workspace else None,
                                  progress=bar.update, dry_run=dry_run)
    first, last = report["dates"]
    emit(ctx, report, lambda: click.echo(
        f"looked in {report['folder']}"
        f"{'' if Path(report['folder']).is_dir() else ' (no such folder)'} for "
        f"YYYY-MM-DD*.md from {first} to {last}: "
        f"files scanned: {report['files']}, facts found: {report['found']}, "
        f"{'would store' if dry_run else 'stored'}: {report['stored']}, "
        f"skipped: {report['skipped']}"))


def _warning_field(warning: Any, name: str, index: int) -> Any:
    if isinstance(warning, dict):
        return warning.get(name)
    if isinstance(warning, (tuple, list)):
        return warning[index] if index < len(warning) else None
    return getattr(warning, name, None)


@click.command()
@click.argument("file", metavar="FILE", required=False, default=None)
@click.option("--file", "-f", "file_flag", default=None, metavar="FILE",
              help="The note as a flag (the original skill's form; '-' reads stdin).")
@common_options
@click.pass_context
def validate(ctx: click.Context, file: Optional[str], file_flag: Optional[str]) -> None:
    """Check a daily note for missing links, commands and next steps ('-' reads stdin).

    Exit status 0 when clean, 1 when there are warnings.
    """
    from evoclaw_memory.distill.notes import validate_note
    if file is not None and file_flag is not None:
        raise click.UsageError("give the note once: `validate FILE` or `validate --file FILE`")
    file = file if file is not None else (file_flag or "-")
    warnings = list(validate_note(read_file(file)))
    rows = [{"line": _warning_field(w, "line", 0), "kind": _warning_field(w, "kind", 1),
             "message": _warning_field(w, "message", 2),
             "suggestion": _warning_field(w, "suggestion", 3)} for w in warnings]

    def human() -> None:
        for row in rows:
            hint = f" ({row['suggestion']})" if row["suggestion"] else ""
            click.echo(f"{row['line']}: {row['kind']}: {row['message']}{hint}")
        if not rows:
            # Silence on success reads as "did it run at all?": say what was checked.
            click.echo(f"{'stdin' if file == '-' else file}: complete (no tool without a "
                       "link, no action without a command, no decision without a next step)")

    emit(ctx, rows, human)
    if rows:
        ctx.exit(1)


@click.command("extract-metadata")
@click.argument("text", required=False, default=None)
@click.option("--file", "-f", "file_", default=None, metavar="FILE",
              help="Read the text from FILE ('-' for stdin).")
@common_options
@click.pass_context
def extract_metadata_cmd(ctx: click.Context, text: Optional[str], file_: Optional[str]) -> None:
    """List the URLs, shell commands and file paths in TEXT (or --file, or stdin)."""
    if text is not None and file_ is not None:
        raise click.UsageError("give either TEXT or --file, not both")
    if text is None or text == "-":
        text = read_file(file_ or "-")
    from evoclaw_memory.errors import ValidationError
    from evoclaw_memory.limits import INPUT_MAX_BYTES
    if len(text.encode()) > INPUT_MAX_BYTES:
        raise ValidationError(f"text is over {INPUT_MAX_BYTES} bytes")
    from evoclaw_memory.distill.metadata import extract_metadata
    found = extract_metadata(text)
    data = {"urls": list(found.urls), "commands": list(found.commands),
            "paths": list(found.paths)}

    def human() -> None:
        for label, items in data.items():
            click.echo(f"{label}:" if items else f"{label}: (none)")
            for item in items:
                click.echo(f"  {item}")

    emit(ctx, data, human)


def _report_lines(data: dict, indent: str = "") -> list[str]:
    lines = []
    for key, value in data.items():
        if isinstance(value, dict):
            lines.append(f"{indent}{key}:")
            lines += _report_lines(value, indent + "  ")
        elif isinstance(value, list):
            lines.append(f"{indent}{key}: {len(value)}" + (f" ({', '.join(map(str, value))})"
                                                          if value else ""))
        else:
            lines.append(f"{indent}{key}: {value}")
    return lines


@click.command()
@click.option("--mode", "-m", type=click.Choice(CONSOLIDATE_MODES), default="quick",
              show_default=True,
              help="quick: rescore/evict/rebuild; daily: +ingest notes, prune tree; "
                   "monthly: +tree rebuild, cold cleanup; full: +recount and report.")
@click.option("--dry-run", is_flag=True,
              help="monthly/full: show the LLM's tree-rebuild plan and change nothing.")
@llm_endpoint_option
@common_options
@click.pass_context
def consolidate(ctx: click.Context, mode: str, dry_run: bool) -> None:
    """Rescore, archive, promote lessons and rebuild MEMORY.md (more in bigger modes)."""
    with open_memory(ctx) as mem, progress_bar(ctx, "consolidating") as bar:
        report = mem.consolidate(mode, dry_run=dry_run, progress=bar.update)

    def human() -> None:
        rebuild = report.get("tree_rebuild")
        plain = {k: v for k, v in report.items() if k != "tree_rebuild"}
        click.echo("\n".join(_report_lines(plain)))
        if rebuild is not None:
            ops = rebuild.get("operations", [])
            click.echo("\n".join(_report_lines(
                {"tree_rebuild": {k: v for k, v in rebuild.items() if k != "operations"}})))
            for op in ops:
                target = f" -> {op['target']}" if op.get("target") else ""
                verdict = "ok" if op.get("status") == "ok" else f"rejected: {op.get('why', '')}"
                click.echo(f"    {op['op']} {op['path']}{target}  [{verdict}]"
                           + (f"  ({op['reason']})" if op.get("reason") else ""))

    emit(ctx, report, human)


COMMANDS = (distill, hot, ingest_daily, validate, extract_metadata_cmd, consolidate)
