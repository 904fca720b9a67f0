"""The owner's control in `evoclaw-memory` (SPEC §5b): list, edit, forget, history,
unsupersede, export, import. Thin wrappers over the Memory methods of the same names."""

from __future__ import annotations

import sys
from typing import Any, Optional

import click

from evoclaw_memory.cli.common import (EXIT_USAGE, cli_state, common_options, emit, fact_json,
                                       fact_line, format_time, one_line, open_memory,
                                       time_option)


# --since/--until: epoch seconds or an ISO 8601 date (UTC when no zone is given).
_when = time_option("2025-11-30")


@click.command("list")
@click.option("--category", "-c", default=None, help="Only this tree path and below.")
@click.option("--tier", type=click.Choice(["warm", "cold"]), default=None)
@click.option("--since", callback=_when, metavar="EPOCH|ISO", help="Created at or after.")
@click.option("--until", callback=_when, metavar="EPOCH|ISO", help="Created before.")
@click.option("--limit", "-n", type=int, default=None, help="At most this many facts.")
@click.option("--offset", type=int, default=0, show_default=True)
@click.option("--superseded", is_flag=True, help="Include superseded facts.")
@click.option("--nl", is_flag=True, help="One JSON object per line (newline-delimited).")
@common_options
@click.pass_context
def list_(ctx: click.Context, category: Optional[str], tier: Optional[str], since: Any,
          until: Any, limit: Optional[int], offset: int, superseded: bool, nl: bool) -> None:
    """List stored facts, oldest first (ids for edit, forget and history)."""
    with open_memory(ctx) as mem:
        facts = mem.list_facts(category=category, tier=tier, since=since, until=until,
                               include_superseded=superseded, limit=limit, offset=offset)
    if nl:
        import msgspec
        for fact in facts:
            click.echo(msgspec.json.encode(fact_json(fact)).decode())
        return

    def human() -> None:
        for fact in facts:
            mark = " (superseded)" if fact.superseded_by else ""
            click.echo(f"{fact_line(fact)}{mark}")
        click.echo(f"{len(facts)} fact(s)")

    emit(ctx, {"facts": [fact_json(f) for f in facts], "count": len(facts)}, human)


@click.command()
@click.argument("fact_id")
@click.option("--text", "-t", default=None, help="The corrected text.")
@click.option("--category", "-c", default=None, help="File it under this tree path.")
@click.option("--importance", "-i", type=float, default=None, help="0 to 1.")
@click.option("--url", "urls", multiple=True, metavar="URL", help="Links (replace the old ones).")
@click.option("--cmd", "cmds", multiple=True, metavar="CMD", help="Commands (replace).")
@click.option("--path", "paths", multiple=True, metavar="PATH", help="File paths (replace).")
@common_options
@click.pass_context
def edit(ctx: click.Context, fact_id: str, text: Optional[str], category: Optional[str],
         importance: Optional[float], urls: tuple, cmds: tuple, paths: tuple) -> None:
    """Correct a fact; the old version stays in its history (not in search)."""
    metadata = None
    if urls or cmds or paths:
        metadata = {"urls": list(urls), "commands": list(cmds), "paths": list(paths)}
    with open_memory(ctx) as mem:
        fact = mem.edit(fact_id, text=text, category=category, importance=importance,
                        metadata=metadata)
    emit(ctx, {"edited": fact_json(fact)}, lambda: click.echo(f"edited {fact_line(fact)}"))


@click.command()
@click.argument("fact_ids", nargs=-1)
@click.option("--matching", metavar="QUERY", default=None,
              help="Forget every fact containing all these words (shown first).")
@click.option("--category", "-c", default=None, help="With --matching: only this path and below.")
@click.option("--yes", "-y", is_flag=True, help="Do not ask (for scripts).")
@common_options
@click.pass_context
def forget(ctx: click.Context, fact_ids: tuple, matching: Optional[str],
           category: Optional[str], yes: bool) -> None:
    """Erase facts by ID, or --matching QUERY: here, in the cloud and on the other devices."""
    if bool(fact_ids) == bool(matching):
        raise click.UsageError("give fact ids, or --matching QUERY (not both)")
    if category and not matching:
        raise click.UsageError("--category goes with --matching")
    with open_memory(ctx) as mem:
        if fact_ids:
            gone = mem.forget(list(fact_ids))
        else:
            found = mem.forget_matching(matching, category=category, dry_run=True)
            if found and not yes:
                if not sys.stdin.isatty() or cli_state(ctx).json:
                    _refuse_without_yes(ctx, found)
                for fact in found:
                    click.echo(match_line(fact), err=True)
                click.confirm(f"forget these {len(found)} fact(s)?", abort=True, err=True)
            gone = [f.id for f in mem.forget_matching(matching, category=category,
                                                      dry_run=False)] if found else []
    emit(ctx, {"forgotten": gone, "count": len(gone)},
         lambda: click.echo(f"forgot {len(gone)} fact(s)" +
                            (": " + " ".join(gone) if gone else "")))


MATCH_LINE_MAX = 100      # characters of a fact's text in forget's list of matches


def match_line(fact: Any) -> str:
    """A fact `forget --matching` would erase, on one line: id, category, text (cut short)."""
    text = one_line(fact.text)
    if len(text) > MATCH_LINE_MAX:
        text = text[:MATCH_LINE_MAX - 1].rstrip() + "\u2026"
    return f"{fact.id}  [{fact.category}]  {text}"


def _refuse_without_yes(ctx: click.Context, found: list) -> None:
    """No --yes and no terminal to ask on: show what would go (the facts, or with --json the
    document holding them) and stop with the usage status. Nothing is erased."""
    where = "in matching" if cli_state(ctx).json else "above"
    message = f"{len(found)} fact(s) match (listed {where}); add --yes to forget them"
    data = {"error": message, "code": "usage", "exit": EXIT_USAGE, "count": len(found),
            "matching": [{"id": f.id, "category": f.category, "text": f.text} for f in found]}

    def human() -> None:
        for fact in found:
            click.echo(match_line(fact))

    emit(ctx, data, human)
    click.echo(f"error: {message}", err=True)
    ctx.exit(EXIT_USAGE)


@click.command()
@click.argument("fact_id")
@common_options
@click.pass_context
def history(ctx: click.Context, fact_id: str) -> None:
    """A fact's versions, supersessions, reinforcements and forget, with times and actors."""
    with open_memory(ctx) as mem:
        hist = mem.history(fact_id)

    def human() -> None:
        if hist.fact is not None:
            click.echo(fact_line(hist.fact))
        else:
            click.echo(f"{hist.fact_id}  (forgotten {format_time(hist.forgotten_at)})")
        for v in hist.versions:
            click.echo(f"  v{v.version} until {format_time(v.replaced_at)} by {v.actor}: "
                       f"[{v.category}] {v.text}")
        if hist.superseded_by:
            click.echo(f"  superseded by {hist.superseded_by}")
        for other in hist.supersedes:
            click.echo(f"  supersedes {other}")
        for e in hist.events:
            click.echo(f"  {format_time(e.ts)}  {e.op:<18} {e.actor:<10} {e.detail}")

    emit(ctx, hist, human)


@click.command()
@click.argument("fact_id")
@common_options
@click.pass_context
def unsupersede(ctx: click.Context, fact_id: str) -> None:
    """Bring a superseded fact back into search."""
    with open_memory(ctx) as mem:
        fact = mem.unsupersede(fact_id)
    emit(ctx, {"fact": fact_json(fact)}, lambda: click.echo(f"restored {fact_line(fact)}"))


@click.command()
@click.option("--format", "fmt", type=click.Choice(["jsonl", "markdown"]), default="jsonl",
              show_default=True)
@click.option("--output", "-o", metavar="FILE", default=None, help="[default: stdout]")
@common_options
@click.pass_context
def export(ctx: click.Context, fmt: str, output: Optional[str]) -> None:
    """Export the memory: facts, tree, hot memory, entities (jsonl: for `import`, loses
    nothing; markdown: for reading)."""
    with open_memory(ctx) as mem:
        if output is None:
            mem.export(sys.stdout, format=fmt)
            return
        count = mem.export(output, format=fmt)
    emit(ctx, {"exported": count, "file": output, "format": fmt},
         lambda: click.echo(f"exported {count} fact(s) to {output}"))


@click.command("import")
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True))
@common_options
@click.pass_context
def import_(ctx: click.Context, file: str) -> None:
    """Import a jsonl export (ids already here are skipped, hot memory is merged; facts go to
    the cloud next sync)."""
    with open_memory(ctx) as mem:
        report = mem.import_jsonl(sys.stdin if file == "-" else file)
    emit(ctx, report, lambda: click.echo(
        f"imported {report['facts']} fact(s), skipped {report['skipped']} already here"
        + (f", {report['forgotten']} forgotten" if report["forgotten"] else "")
        + (f", {report['entities']} new entit{'y' if report['entities'] == 1 else 'ies'}"
           if report["entities"] else "")
        + (", hot memory merged" if report["hot"] else "")))


COMMANDS = (list_, edit, forget, history, unsupersede, export, import_)
