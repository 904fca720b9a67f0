"""The `evoclaw-memory` command: a thin skin over `Memory` (like sqlite-utils' cli.py).

This module holds only the root group, its global options, the registration of every command
module's commands and `main()`. The commands live in one module per job (facts,
conversation, tree, observe, doctor, cloud, agent, control); each imports only `cli.common`, never
another command module.

Start-up time matters (one run per agent turn on a Raspberry Pi), so the library is
imported lazily inside the commands; only click and the tiny errors module load up front.

Output is human-readable by default; `--json` prints exactly one JSON document on stdout.
Errors are one line on stderr (`error: ...`) and a non-zero exit status, never a traceback
(set EVOCLAW_DEBUG=1 to see one).
"""

from __future__ import annotations

import os
import sys
from typing import Optional

import click

from evoclaw_memory.cli import (agent, cloud, control, conversation, doctor, entity, facts,
                                observe, server, tree)
from evoclaw_memory.cli.common import EXIT_INTERRUPTED, EvoGroup, State


@click.group(cls=EvoGroup, context_settings={"help_option_names": ["-h", "--help"],
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


# Each command module lists its commands in COMMANDS; `--help` sorts them by name anyway.
for _module in (facts, conversation, tree, observe, doctor, cloud, agent, control, server,
                entity):
    for _command in _module.COMMANDS:
        cli.add_command(_command)
del _module, _command


def main(argv: Optional[list[str]] = None) -> None:
    """Console-script entry point."""
    try:
        cli.main(args=argv, prog_name="evoclaw-memory")
    except KeyboardInterrupt:
        sys.exit(EXIT_INTERRUPTED)
    except BrokenPipeError:
        # The reader went away (e.g. `| head`): stop quietly, without a second error on exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(1)


if __name__ == "__main__":  # pragma: no cover
    main()
