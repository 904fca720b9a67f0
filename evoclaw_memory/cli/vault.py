"""The vault and gated writes in `evoclaw-memory` (issue 18): `pin ID`, `unpin ID`,
`proposals list|accept|reject`. Thin wrappers over the Memory methods of the same names."""

from __future__ import annotations

from typing import Optional

import click

from evoclaw_memory.cli.common import common_options, emit, fact_line, format_time, open_memory


@click.command("pin")
@click.argument("fact_id", metavar="ID")
@common_options
@click.pass_context
def pin(ctx: click.Context, fact_id: str) -> None:
    """Put a fact in the vault: it never decays and never leaves this device."""
    with open_memory(ctx) as mem:
        fact = mem.pin(fact_id)
        status = mem.vault_status()
    emit(ctx, {"fact": fact, "vault": status}, lambda: click.echo(
        f"pinned {fact_line(fact)}\nvault: {status['bytes']}/{status['max_bytes']} bytes"))


@click.command("unpin")
@click.argument("fact_id", metavar="ID")
@common_options
@click.pass_context
def unpin(ctx: click.Context, fact_id: str) -> None:
    """Take a fact out of the vault (from now on it decays like any other)."""
    with open_memory(ctx) as mem:
        fact = mem.unpin(fact_id)
    emit(ctx, {"fact": fact}, lambda: click.echo(f"unpinned {fact_line(fact)}"))


@click.group("proposals", invoke_without_command=True)
@click.pass_context
def proposals(ctx: click.Context) -> None:
    """What sub-agents proposed: list, accept or reject (only the main agent writes)."""
    if ctx.invoked_subcommand is None:
        ctx.invoke(list_proposals)


@proposals.command("list")
@click.option("--all", "all_", is_flag=True, help="Decided proposals too.")
@common_options
@click.pass_context
def list_proposals(ctx: click.Context, all_: bool = False) -> None:
    """Proposals waiting for a decision, oldest first."""
    with open_memory(ctx) as mem:
        found = mem.proposals(status=None if all_ else "pending")

    def human() -> None:
        for p in found:
            what = p.content.get("text") or f"hot {p.content.get('key')}: {p.content.get('value')}"
            click.echo(f"{p.id}  {p.status}  {p.actor}  {format_time(p.created_at)}  "
                       f"confidence {p.confidence:g}  [{p.store}] {what}")
        click.echo(f"{len(found)} proposal(s)")

    emit(ctx, {"proposals": found, "count": len(found)}, human)


@proposals.command("accept")
@click.argument("proposal_id", metavar="ID")
@common_options
@click.pass_context
def accept(ctx: click.Context, proposal_id: str) -> None:
    """Apply a proposal (the fact or hot update keeps the sub-agent as its actor)."""
    with open_memory(ctx) as mem:
        done = mem.accept(proposal_id)
    emit(ctx, done, lambda: click.echo(f"accepted {done.id}"
                                       + (f" -> fact {done.result}" if done.result else "")))


@proposals.command("reject")
@click.argument("proposal_id", metavar="ID")
@click.option("--reason", "-r", default=None, help="Why (kept with the proposal).")
@common_options
@click.pass_context
def reject(ctx: click.Context, proposal_id: str, reason: Optional[str]) -> None:
    """Turn a proposal down."""
    with open_memory(ctx) as mem:
        done = mem.reject(proposal_id, reason=reason or "")
    emit(ctx, done, lambda: click.echo(f"rejected {done.id}"))


COMMANDS = (pin, unpin, proposals)
