"""The root click group of `evoclaw-memory`: its global options, and the map of every
command to the module that defines it (imported when that command is looked up).

`cli.main` loads this module only when a run needs click: the common forms of the
per-turn commands (store, retrieve, context, hot) run without it (cli.fast).
"""

from __future__ import annotations

from typing import Optional

import click

from evoclaw_memory.cli.common import EvoGroup, State

# Command name -> "module:attribute" in evoclaw_memory.cli; each module lists the same
# commands in its COMMANDS (tests/test_cli_layout.py checks that the two agree).
LAZY_COMMANDS = {
    "store": "facts:store", "retrieve": "facts:retrieve", "context": "facts:context",
    "get": "facts:get", "supersede": "facts:supersede", "search-url": "facts:search_url",
    "distill": "conversation:distill", "hot": "conversation:hot",
    "ingest-daily": "conversation:ingest_daily", "validate": "conversation:validate",
    "extract-metadata": "conversation:extract_metadata_cmd",
    "consolidate": "conversation:consolidate",
    "tree": "tree:tree",
    "metrics": "observe:metrics", "config": "observe:config_group",
    "doctor": "doctor:doctor",
    "sync": "cloud:sync", "sync-critical": "cloud:sync_critical", "restore": "cloud:restore",
    "cold": "cloud:cold", "devices": "cloud:devices_group", "key": "cloud:key_group",
    "agents": "fleet:agents",
    "mcp": "agent:mcp_command", "serve": "agent:serve_command",
    "import-legacy": "agent:import_legacy_command",
    "list": "control:list_", "edit": "control:edit", "forget": "control:forget",
    "history": "control:history", "unsupersede": "control:unsupersede",
    "export": "control:export", "import": "control:import_",
    "server": "server:server",
    "pin": "vault:pin", "unpin": "vault:unpin", "proposals": "vault:proposals",
    "entity": "entity:entity",
    "ui": "ui:ui",
}


class LazyGroup(EvoGroup):
    """The root group: a command's module is imported when that command is looked up."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(LAZY_COMMANDS) | set(self.commands))

    def get_command(self, ctx: click.Context, cmd_name: str) -> Optional[click.Command]:
        if cmd_name not in self.commands and cmd_name in LAZY_COMMANDS:
            import importlib
            module, attr = LAZY_COMMANDS[cmd_name].split(":")
            command = getattr(importlib.import_module(f"evoclaw_memory.cli.{module}"), attr)
            self.commands[cmd_name] = command
        return self.commands.get(cmd_name)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"],
                                              "max_content_width": 100})
@click.option("--agent-id", metavar="ID", default=None,
              help="Agent whose memory to use [default: config / EVOCLAW_AGENT_ID / 'default'].")
@click.option("--home", metavar="DIR", default=None, type=click.Path(file_okay=False),
              help="Data folder (overrides EVOCLAW_HOME; default ~/.evoclaw).")
@click.option("--config", "config_path", metavar="PATH", default=None,
              type=click.Path(exists=True, dir_okay=False),
              help="TOML config file [default: <home>/config.toml].")
@click.option("--json", "json_", is_flag=True, help="Print one JSON document on stdout.")
@click.version_option(package_name="evoclaw-memory", prog_name="evoclaw-memory")
@click.pass_context
def cli(ctx: click.Context, agent_id: Optional[str], home: Optional[str],
        config_path: Optional[str], json_: bool) -> None:
    """Tiered long-term memory for AI agents: hot (MEMORY.md), warm (this device), cold
    (archive).

    \b
    Examples:
      evoclaw-memory store --text "Owner prefers tea" --category owner/preferences --importance 0.8
      evoclaw-memory retrieve "what does the owner drink" --json
      evoclaw-memory hot --update lesson '{"text": "Test on testnet first", "importance": 0.9}'
      evoclaw-memory consolidate --mode daily
    """
    ctx.obj = State(agent_id=agent_id, home=home, config_path=config_path, json=json_)
