"""Where agents live: `mcp` (MCP server on stdio), `serve` (background service) and
`import-legacy` (the original skill's files)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import click

from evoclaw_memory.cli.common import (cli_state, command_config, common_options, emit,
                                       open_memory, progress_bar)

# -- mcp -------------------------------------------------------------------------------------


@click.command("mcp")
@click.option("--actor", default=None, metavar="subagent:NAME",
              help="Serve a sub-agent: it reads everything and only proposes writes.")
@common_options
@click.pass_context
def mcp_command(ctx: click.Context, actor: Optional[str] = None) -> None:
    """Run the MCP server on stdio for desktop apps and agent hosts (needs the [mcp] extra).

    \b
    Tools: get_context, retrieve, remember, end_conversation, update_hot, show_tree,
    entities, list_facts, history, export, sync_status, and for the main agent sync,
    forget, forget_matching, edit_fact, unsupersede, import_jsonl; a sub-agent (--actor)
    gets propose_memory instead of those six.
    Resources: evoclaw://memory/MEMORY.md, evoclaw://memory/tree,
    evoclaw://memory/tree.json. Logs go to stderr; stdout carries the protocol.
    """
    from evoclaw_memory.errors import ValidationError
    if cli_state(ctx).json:
        # stdout carries the MCP protocol: a JSON document there would corrupt it.
        raise ValidationError("mcp speaks the MCP protocol on stdout; --json does not apply")
    from evoclaw_memory.agent.mcp_server import serve_stdio
    serve_stdio(command_config(ctx), actor=actor)


# -- serve -----------------------------------------------------------------------------------

@click.command("serve")
@click.option("--heartbeat", type=click.FloatRange(min=0.05), default=60.0, show_default=True,
              metavar="SECONDS", help="Sync every SECONDS (push the outbox, pull other devices).")
@click.option("--quick-every", type=click.FloatRange(min=0.05), default=4 * 3600.0,
              show_default=True, metavar="SECONDS", help="Quick consolidation interval.")
@click.option("--retry-min", type=click.FloatRange(min=0.05), default=5.0, show_default=True,
              metavar="SECONDS", help="First retry delay when offline (doubles up to the "
                                      "heartbeat).")
@click.option("--no-consolidate", is_flag=True, help="Only sync; no scheduled consolidation.")
@click.option("--no-sync", is_flag=True, help="Only consolidate; never contact the cloud.")
@click.option("--once", is_flag=True, help="Do one round of whatever is due, then exit.")
@click.option("--ui", "ui_", is_flag=True,
              help="Also serve the owner's window (the `ui` page; needs the [ui] extra).")
@click.option("--ui-port", type=click.IntRange(0, 65535), default=8377, show_default=True,
              metavar="PORT", help="Port of the owner's window.")
@click.option("--ui-host", default=None, metavar="HOST",
              help="Address of the owner's window [default: 127.0.0.1].")
@common_options
@click.pass_context
def serve_command(ctx: click.Context, heartbeat: float, quick_every: float, retry_min: float,
                  no_consolidate: bool, no_sync: bool, once: bool, ui_: bool = False,
                  ui_port: int = 8377, ui_host: Optional[str] = None) -> None:
    """Keep this agent's memory synced and consolidated (for an always-on device).

    Syncs on a heartbeat (default 60 s) and soon after the network returns; consolidates
    quick every 4 h, daily after local midnight, monthly after the 1st. One log line per
    action on stderr. SIGTERM / SIGINT stop it cleanly: queued work stays in the outbox.
    """
    from evoclaw_memory.agent.service import configure_logging, log, run_service
    from evoclaw_memory.cli.relay_server import RelayServer
    if cli_state(ctx).json:
        from evoclaw_memory.errors import ValidationError
        # serve is a long-running service logging one line per action on stderr: there is
        # no single document to print.
        raise ValidationError("serve logs one line per action on stderr; --json does not "
                              "apply (use `sync --status --json` or `metrics --json`)")
    page = None
    if ui_:
        # The owner's window in a thread of this process (it opens its own Memory per
        # request, like the CLI); printed as `ui` prints it: one URL carrying its token.
        from evoclaw_memory.ui import require_extra
        require_extra()
        from evoclaw_memory.ui.server import exposure_warning, start_in_thread
        page = start_in_thread(command_config(ctx), host=ui_host, port=ui_port)
        warning = exposure_warning(page.host)
        if warning:
            click.echo(warning, err=True)
        click.echo(page.url)
    try:
        with open_memory(ctx) as mem:
            configure_logging(mem.agent_id)
            # The per-turn CLI commands of this agent run in this process while it lives (no
            # start-up to pay); see cli.relay.
            status = run_service(mem, once=once, heartbeat=heartbeat, quick_every=quick_every,
                                 retry_min=retry_min, consolidate=not no_consolidate,
                                 sync=not no_sync,
                                 relay=RelayServer(mem.agent_id, mem.config.home, logger=log))
    finally:
        if page is not None:
            page.stop()
    ctx.exit(status)


# -- import-legacy ---------------------------------------------------------------------------

@click.command("import-legacy")
@click.option("--workspace", required=True, type=click.Path(file_okay=False, exists=True),
              help="The original skill's workspace (holding memory/).")
@click.option("--from-agent", default=None, metavar="ID",
              help="The original skill's agent id [default: the same as --agent-id].")
@click.option("--all", "all_agents", is_flag=True,
              help="Import every agent found: memory/ as 'default', memory/<agent>/ as <agent>.")
@click.option("--dry-run", is_flag=True, help="Report what would be imported; change nothing.")
@common_options
@click.pass_context
def import_legacy_command(ctx: click.Context, workspace: str, from_agent: Optional[str],
                          all_agents: bool, dry_run: bool) -> None:
    """Import the original skill's memory files (hot state, warm facts, tree, metrics).

    Reports what it took, what was already there, and what it refused (with a reason each).
    Safe to run again: nothing is imported twice.
    """
    from evoclaw_memory.config import validate_agent_id
    from evoclaw_memory.errors import ValidationError
    from evoclaw_memory.agent.legacy import find_agents, source_folder
    from evoclaw_memory.memory import Memory
    root = Path(workspace)
    if all_agents and from_agent:
        raise click.UsageError("use --all or --from-agent, not both")
    config = command_config(ctx)
    if all_agents:
        found = find_agents(root)
        if not found:
            raise ValidationError(f"no legacy memory files in {root}")
        jobs = list(found.items())
    else:
        legacy = from_agent or config.agent_id
        jobs = [(legacy, source_folder(root, legacy))]
    reports: list[dict[str, Any]] = []
    for legacy_id, folder in jobs:
        target = config.agent_id if not all_agents else legacy_id
        try:
            validate_agent_id(target)
        except ValidationError as exc:
            reports.append({"agent_id": target, "source": str(folder), "error": str(exc)})
            continue
        agent_config = config if target == config.agent_id else command_config(ctx, target)
        with Memory.open(config=agent_config) as mem, \
                progress_bar(ctx, f"importing {target}") as bar:
            from evoclaw_memory.agent.legacy import import_legacy
            reports.append(import_legacy(mem, folder, dry_run=dry_run, progress=bar.update))

    def human() -> None:
        for rep in reports:
            if "error" in rep:
                click.echo(f"{rep['agent_id']}: refused: {rep['error']}")
                continue
            taken = ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in rep["taken"].items() if v)
            verb = "would import" if rep["dry_run"] else "imported"
            click.echo(f"{rep['agent_id']} (from {rep['source']}): {verb} {taken or 'nothing'}")
            files = ", ".join(f"{name} {state}" for name, state in rep["files"].items())
            click.echo(f"  files: {files}")
            if rep["skipped"]:
                click.echo(f"  already there: {len(rep['skipped'])}")
            for item in rep["refused"]:
                click.echo(f"  refused {item['file']} {item['item']}: {item['reason']}")
            for note in rep["notes"]:
                click.echo(f"  note: {note}")

    emit(ctx, reports if all_agents else reports[0], human)
    if any("error" in r for r in reports):
        ctx.exit(1)


COMMANDS = (mcp_command, serve_command, import_legacy_command)
