"""The `evoclaw-memory` command: a thin skin over `Memory` (like sqlite-utils' cli.py).

This module holds only `main()`; the root group, its global options and the map of every
command to the module that defines it are in `cli.root` (`cli`, `LazyGroup` and
`LAZY_COMMANDS` are still importable from here). The commands live in one module per job
(facts, conversation, tree, observe, doctor, cloud, agent, control, server, vault, entity);
each imports only `cli.common`, never another command module.

Start-up time matters (one run per agent turn on a Raspberry Pi), so a run imports only the
module of the command it runs (`--help` imports them all, to list them with their help),
and the library is imported lazily inside the commands. The per-turn commands (store,
retrieve, context, hot) are first offered to the agent's running `serve` (`cli.relay`:
nothing of the library is imported then); in their common forms they then run without
click (`cli.fast`, with the same bodies); everything else goes to click.

Output is human-readable by default; `--json` prints exactly one JSON document on stdout.
Errors are one line on stderr (`error: ...`) and a non-zero exit status, never a traceback
(set EVOCLAW_DEBUG=1 to see one).
"""

from __future__ import annotations

import os
import sys

# typing costs a per-turn run several milliseconds; mypy reads the names below all the same.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Optional


def __getattr__(name: str) -> Any:
    """`cli`, `LazyGroup`, `LAZY_COMMANDS` from cli.root, loaded (with click) on first use."""
    if name in ("cli", "LazyGroup", "LAZY_COMMANDS"):
        from evoclaw_memory.cli import root
        return getattr(root, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main(argv: Optional[list[str]] = None) -> None:
    """Console-script entry point."""
    try:
        if argv is None:
            # The console script's own process: a per-turn command runs in this agent's
            # `serve` when one is running and takes it (and this process exits here).
            from evoclaw_memory.cli import relay
            relay.offer(sys.argv[1:])
        # The common forms of store/retrieve/context/hot run here without click (and exit:
        # at once when this is the console script's own process); everything else returns
        # untouched to click.
        from evoclaw_memory.cli import fast
        fast.run(list(sys.argv[1:] if argv is None else argv), hard_exit=argv is None)
        from evoclaw_memory.cli.root import cli
        cli.main(args=argv, prog_name="evoclaw-memory")
    except KeyboardInterrupt:
        from evoclaw_memory.cli.plain import EXIT_INTERRUPTED
        sys.exit(EXIT_INTERRUPTED)
    except BrokenPipeError:
        # The reader went away (e.g. `| head`): stop quietly, without a second error on exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(1)


if __name__ == "__main__":  # pragma: no cover
    main()
