"""`evoclaw-memory ui`: the owner's window, a local web page to see and steer the memory
(issue 28; the page itself is evoclaw_memory.ui, which needs the optional extra [ui])."""

from __future__ import annotations

from typing import Any, Optional

import click

from evoclaw_memory.cli.common import cli_state, command_config, common_options, emit

DEFAULT_PORT = 8377          # evoclaw_memory.ui.server.DEFAULT_PORT (not imported: no extra needed)


@click.command("ui")
@click.option("--port", type=click.IntRange(0, 65535), default=DEFAULT_PORT, show_default=True,
              help="Port to listen on (0: any free one).")
@click.option("--host", default=None, metavar="HOST",
              help="Address to listen on [default: 127.0.0.1]. Another address makes the page "
                   "reachable from other machines (a warning is printed).")
@click.option("--open", "open_", is_flag=True, help="Open the page in the default browser.")
@common_options
@click.pass_context
def ui(ctx: click.Context, port: int, host: Optional[str], open_: bool) -> None:
    """Serve the owner's window: see and steer what the agent remembers (needs the [ui] extra).

    Prints one URL carrying a fresh access token; only a browser that opened it gets in.
    Runs until Ctrl-C. Every change made on the page is audited as `owner:ui`.
    """
    from evoclaw_memory.ui import require_extra
    require_extra()                        # one line naming the extra, before anything else
    from evoclaw_memory.ui.server import exposure_warning, serve
    config = command_config(ctx)

    def ready(running: Any) -> None:
        warning = exposure_warning(running.host)
        if warning:
            click.echo(warning, err=True)
        emit(ctx, {"url": running.url, "host": running.host, "port": running.port},
             lambda: click.echo(running.url))
        if not cli_state(ctx).json:
            click.echo("the owner's window is open at the URL above; Ctrl-C stops it", err=True)
        if open_:
            import webbrowser
            webbrowser.open(running.url)

    serve(config, host=host, port=port, on_ready=ready)


COMMANDS = (ui,)
