"""`evoclaw-memory agents`: the agents the configured cloud holds.

For the owner whose old device (and its config.toml) is gone and who must find the agent's
name to restore it. Reads counts and metadata only, so no key is unlocked, and opens no
agent's memory here (listing creates no agent folder).
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Optional

import click

from evoclaw_memory.cli.common import command_config, common_options, emit


def _iso(ts: Optional[float]) -> Optional[str]:
    """ISO 8601 UTC (`2026-12-03T13:20:05Z`), or None."""
    if not ts:
        return None
    return dt.datetime.fromtimestamp(ts, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def agent_json(agent: Any) -> dict:
    """One agent as `agents --json` prints it."""
    return {"agent_id": agent.agent_id, "devices": agent.devices, "facts": agent.facts,
            "last_sync": _iso(agent.last_sync), "encrypted": agent.encrypted}


def agent_line(agent: Any, width: int = 0) -> str:
    """`sam  2 devices  15 facts  last sync 2026-12-03 13:20 UTC  encrypted` (the name
    padded to `width`, so the columns of several agents line up)."""
    when = (dt.datetime.fromtimestamp(agent.last_sync, dt.timezone.utc)
            .strftime("last sync %Y-%m-%d %H:%M UTC") if agent.last_sync else "never synced")
    return "  ".join([agent.agent_id.ljust(width), _plural(agent.devices, "device"),
                      _plural(agent.facts, "fact"), when,
                      "encrypted" if agent.encrypted else "not encrypted"])


@click.command("agents")
@common_options
@click.pass_context
def agents(ctx: click.Context) -> None:
    """List the agents the configured cloud holds: devices, facts, last sync, encrypted.

    No key is needed. Restore one on a new device with
    `evoclaw-memory restore --agent-id NAME`."""
    from evoclaw_memory.lifecycle.cloud_side import cloud_agents
    found = cloud_agents(command_config(ctx))

    def human() -> None:
        if not found:
            click.echo("(the cloud holds no agents yet)")
        width = max((len(a.agent_id) for a in found), default=0)
        for agent in found:
            click.echo(agent_line(agent, width))
    emit(ctx, [agent_json(a) for a in found], human)


COMMANDS = (agents,)
