"""`evoclaw-memory server`: a self-hosted libSQL server (sqld) on loopback, with its URL and a
token printed, for devices to sync to. The command's name and its `--data` / `--port`
options are a contract (documented in sync/README.md)."""

from __future__ import annotations

import sys
from typing import Optional

import click

from evoclaw_memory.cli.common import cli_state, common_options


@click.command("server")
@click.option("--data", "data_dir", required=True, metavar="DIR",
              type=click.Path(file_okay=False),
              help="Data folder: databases, the token-signing keys and sqld.log (kept across "
                   "restarts, so tokens stay valid).")
@click.option("--port", type=click.IntRange(0, 65535), default=8080, show_default=True,
              help="HTTP port (0 picks a free one).")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Listen address. Keep loopback and put a TLS proxy in front for other "
                   "machines: tokens must not cross a network in plain HTTP.")
@click.option("--expires-in", metavar="DURATION", default=None,
              help="Token lifetime: seconds, or 12h, 30d, 2w [default: tokens never expire].")
@click.option("--no-auth", is_flag=True, help="No JWT auth (loopback experiments only).")
@common_options
@click.pass_context
def server(ctx: click.Context, data_dir: str, port: int, host: str, expires_in: Optional[str],
           no_auth: bool) -> None:
    """Run a libSQL server (sqld, from the [server] extra) until Ctrl-C; print its URL and a
    read-write token (and a read-only one) to put in TURSO_DATABASE_URL / TURSO_AUTH_TOKEN.

    A port already in use is one error line and exit status 9, before any token. Ctrl-C or
    SIGTERM stops sqld, then prints one line (`stopped on SIGTERM; ...`) and exits 0.

    \b
    Example:
      evoclaw-memory server --data ~/sqld-data --port 8080 --expires-in 30d
    """
    from evoclaw_memory.cloud.sqld import (SqldServer, install_stop_handlers,
                                           run_until_stopped, stopped_line)
    from evoclaw_memory.validate import duration
    lifetime = duration("--expires-in", expires_in) if expires_in is not None else None
    sqld = SqldServer(data_dir, port or None, host=host, auth=not no_auth,
                      die_with_parent=False)
    # The line saying it stopped goes where the banner went; with --json, stdout is the one
    # JSON document, so it goes to stderr.
    out = sys.stderr if cli_state(ctx).json else sys.stdout
    install_stop_handlers()
    # Starting, announcing and waiting in ONE guarded block: a SIGTERM that came right after
    # the last announced line, before the wait had begun, escaped as Ctrl-C (exit 130)
    # between two blocks; now a stop at any point is a clean stop (0), and sqld never
    # outlives the command. start() checks the port before sqld starts (a taken port is
    # PortInUseError, exit 9: the program holding it would otherwise answer the health
    # check) and returns once sqld answers, so no token is printed for a server that is
    # not running.
    try:
        sqld.start()
        _announce(ctx, sqld, lifetime, expires_in)
        status = run_until_stopped(sqld, out)      # says how it ended, after sqld exited
    except KeyboardInterrupt as stop:              # a signal before the wait began
        sqld.stop()
        click.echo(stopped_line(stop, sqld), file=out)
        status = 0
    finally:
        sqld.stop()
    ctx.exit(status)


def _announce(ctx: click.Context, sqld, lifetime: Optional[float],
              expires_in: Optional[str]) -> None:
    """The URL and the tokens, as lines to copy or (--json) one JSON object."""
    tokens = {}
    if sqld.auth:
        tokens = {"token": sqld.mint_token("rw", lifetime),
                  "read_only_token": sqld.mint_token("ro", lifetime)}
    if cli_state(ctx).json:
        import msgspec
        click.echo(msgspec.json.encode({
            "url": sqld.url, "pid": sqld.pid, "data": str(sqld.data_dir.resolve()),
            "expires_in": lifetime, **tokens}).decode())
    else:
        click.echo(f"sqld {sqld.url}  (pid {sqld.pid}, data {sqld.data_dir.resolve()})")
        click.echo(f"TURSO_DATABASE_URL={sqld.url}")
        if tokens:
            click.echo(f"TURSO_AUTH_TOKEN={tokens['token']}")
            click.echo(f"read-only token:  {tokens['read_only_token']}")
            click.echo(f"tokens expire in {expires_in}" if lifetime else
                       "tokens never expire: use --expires-in 30d (for example) for ones that "
                       "do; deleting DATA/keys/ and restarting invalidates every token")
        click.echo("Ctrl-C to stop")
    sys.stdout.flush()


COMMANDS = (server,)
