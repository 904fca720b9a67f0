"""What every command module of `evoclaw-memory` shares: the options state, error translation,
the --agent-id/--json options, opening the config and the memory, the progress bar, output
(--json or human) and input (argument, --file or stdin).

This module imports only `cli.plain` (the click-free half it shares with the fast path of
the per-turn commands, `cli.fast`); every command module imports it (and only it).
Start-up time matters (one run per agent turn on a Raspberry Pi), so the library is imported
lazily inside the functions; only click and the tiny errors module load up front.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import sys
from typing import Any, Callable, Iterator, Optional

import click

from evoclaw_memory.cli import plain
# Re-exported: the command modules import these from here (their one cli import).
from evoclaw_memory.cli.plain import (EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_USAGE,  # noqa: F401
                                      State, one_line)


# -- errors ----------------------------------------------------------------------------------

def _fail(message: str, code: int, name: str = "error",
          as_json: bool = False) -> "click.exceptions.Exit":
    """One line on stderr; with --json also ONE JSON object on stdout, so an agent reading
    stdout always gets a document it can parse, success or not."""
    return click.exceptions.Exit(plain.fail(message, code, name, as_json, click.echo))


def translate(exc: BaseException, as_json: bool = False) -> "click.exceptions.Exit":
    """Turn an exception raised by a command into one stderr line and an exit status."""
    return click.exceptions.Exit(plain.report(exc, as_json, click.echo))


def _wants_json(args: list[str]) -> bool:
    """--json anywhere before `--`: a usage error can come before its callback has run."""
    for arg in args:
        if arg == "--":
            return False
        if arg == "--json":
            return True
    return False


def _credential_flag(args: list[str]) -> Optional[str]:
    """The original skill's --db-url / --auth-token, if given (refused, never read)."""
    for arg in args:
        if arg == "--":
            return None
        flag = arg.split("=", 1)[0]
        if flag in ("--db-url", "--auth-token"):
            return flag
    return None


class EvoGroup(click.Group):
    """A click group that turns every failure of a command into one clear line."""

    def main(self, args: Optional[Any] = None, prog_name: Optional[str] = None,
             complete_var: Optional[str] = None, standalone_mode: bool = True,
             **extra: Any) -> Any:
        """click's main, but a usage error is one line too (click prints a usage block and a
        hint on three), and with --json also the JSON error object."""
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, False, **extra)
        argv = list(sys.argv[1:] if args is None else args)
        refused = _credential_flag(argv)
        if refused:
            _fail(f"{refused} is not accepted: a credential in a flag lands in shell history and "
                  "process lists; set TURSO_DATABASE_URL and TURSO_AUTH_TOKEN (or [cloud] url and "
                  "auth_token in config.toml)", EXIT_USAGE, "usage", _wants_json(argv))
            sys.exit(EXIT_USAGE)
        try:
            status = super().main(argv, prog_name, complete_var, False, **extra)
        except click.exceptions.NoArgsIsHelpError as exc:   # a bare group shows its help
            click.echo(exc.ctx.get_help() if exc.ctx else str(exc), err=True)
            sys.exit(EXIT_USAGE)
        except click.ClickException as exc:
            where = getattr(getattr(exc, "ctx", None), "command_path", None)
            hint = f" (see `{where} --help`)" if where and isinstance(exc, click.UsageError) else ""
            _fail(exc.format_message() + hint, exc.exit_code,
                  "usage" if isinstance(exc, click.UsageError) else "error", _wants_json(argv))
            sys.exit(exc.exit_code)
        except click.exceptions.Abort:
            _fail("aborted", 1, "aborted", _wants_json(argv))
            sys.exit(1)
        sys.exit(status if isinstance(status, int) else 0)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort,
                BrokenPipeError):
            raise
        except (Exception, KeyboardInterrupt) as exc:
            if os.environ.get("EVOCLAW_DEBUG") == "1" and not isinstance(exc, KeyboardInterrupt):
                raise
            raise translate(exc, as_json=cli_state(ctx).json) from None


# -- shared options --------------------------------------------------------------------------

def cli_state(ctx: click.Context) -> State:
    """The global options of this run (created empty when a command runs without the group)."""
    return ctx.ensure_object(State)


def _set_agent_id(ctx: click.Context, _param: click.Parameter, value: Optional[str]) -> None:
    if value is not None:
        cli_state(ctx).agent_id = value


def _set_home(ctx: click.Context, _param: click.Parameter, value: Optional[str]) -> None:
    if value is not None:
        cli_state(ctx).home = value


def _set_json(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value:
        cli_state(ctx).json = True


def _set_llm_endpoint(ctx: click.Context, _param: click.Parameter,
                      value: Optional[str]) -> Optional[str]:
    if value is not None:
        from evoclaw_memory.validate import text
        url = text("--llm-endpoint", value, max_len=2048).strip()
        if not url.lower().startswith(("http://", "https://")):
            raise click.BadParameter("use an http(s):// URL of an OpenAI-compatible API, e.g. "
                                     "http://127.0.0.1:11434/v1")
        cli_state(ctx).llm_base_url = url
    return value


def llm_endpoint_option(f: Callable) -> Callable:
    """--llm-endpoint URL: the LLM for this run (overrides EVOCLAW_LLM_BASE_URL / [llm])."""
    return click.option("--llm-endpoint", metavar="URL", expose_value=False,
                        callback=_set_llm_endpoint,
                        help="OpenAI-compatible API base URL for this run (overrides "
                             "EVOCLAW_LLM_BASE_URL and [llm] base_url).")(f)


def require_llm(ctx: click.Context) -> None:
    """--llm asks for the LLM: an error (never a silent rule-mode run) when none is set."""
    from evoclaw_memory.errors import ConfigError
    if not command_config(ctx).llm_base_url:
        raise ConfigError("no LLM configured: set EVOCLAW_LLM_BASE_URL and EVOCLAW_LLM_MODEL "
                          "(or [llm] base_url in config.toml, or --llm-endpoint URL), or drop "
                          "--llm")


def common_options(f: Callable) -> Callable:
    """--agent-id, --home and --json on a subcommand too (agents put flags anywhere); these
    win over the group's."""
    f = click.option("--json", "json_", is_flag=True, expose_value=False, callback=_set_json,
                     help="Print one JSON document on stdout (for scripts and agents).")(f)
    f = click.option("--home", metavar="DIR", expose_value=False, callback=_set_home,
                     type=click.Path(file_okay=False),
                     help="Data folder (overrides the global option and EVOCLAW_HOME).")(f)
    f = click.option("--agent-id", metavar="ID", expose_value=False, callback=_set_agent_id,
                     help="Agent whose memory to use (overrides the global option).")(f)
    return f


def command_state(ctx: click.Context) -> State:
    """The run's options, knowing which command runs (for plain.CLOUD_COMMANDS)."""
    st = cli_state(ctx)
    top = ctx
    while top.parent is not None and top.parent.parent is not None:
        top = top.parent            # `devices list` -> `devices`: the root's child
    st.command = top.info_name
    return st


def command_config(ctx: click.Context, agent_id: Optional[str] = None):
    """The effective config for this run (of `agent_id` instead, when given). An unusable
    cloud URL fails a command that needs the cloud (exit 9) and is one warning line for
    any other, which then works locally (plain.checked_config)."""
    return plain.checked_config(command_state(ctx), click.echo, agent_id)


@contextlib.contextmanager
def open_memory(ctx: click.Context) -> Iterator[Any]:
    """The agent's `Memory`, open for the duration of the block."""
    with plain.state_memory(command_state(ctx), click.echo) as mem:
        yield mem


class ProgressBar:
    """A progress bar on stderr for long work (only on a terminal): update(stage, done, total)."""

    def __init__(self, enabled: bool, label: str = "working"):
        self.enabled = enabled
        self.label = label
        self._bar: Any = None
        self._shown = 0

    def update(self, stage: str, done: int, total: int) -> None:
        if not self.enabled or total <= 0:
            return
        if self._bar is None:
            self._bar = click.progressbar(length=total, label=stage or self.label,
                                          file=sys.stderr)
            self._bar.__enter__()
        self._bar.label = stage or self.label
        step = max(0, min(done, total) - self._shown)
        self._bar.update(step)
        self._shown += step

    def close(self) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)
            self._bar = None


@contextlib.contextmanager
def progress_bar(ctx: click.Context, label: str) -> Iterator[ProgressBar]:
    """A progress bar on stderr for long work: drawn on a terminal only, never with --json."""
    bar = ProgressBar(enabled=sys.stderr.isatty() and not cli_state(ctx).json, label=label)
    try:
        yield bar
    finally:
        bar.close()


# -- output ----------------------------------------------------------------------------------

_builtins = plain.builtins
_Printable = plain.Printable


def emit(ctx: click.Context, data: Any, human: Callable[[], None]) -> None:
    """Print `data` as one JSON document with --json, else run the `human` printer."""
    plain.emit(cli_state(ctx), click.echo, data, human)


def format_time(ts: Optional[float]) -> str:
    """An epoch time as `YYYY-MM-DD HH:MM:SS UTC`, or `-` when there is none."""
    if not ts:
        return "-"
    return dt.datetime.fromtimestamp(ts, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def fact_json(fact: Any) -> dict:
    """A fact as plain JSON-able data (every field)."""
    return _builtins(fact)


def fact_line(fact: Any) -> str:
    """A fact on one line: id, category, text."""
    return f"{fact.id}  [{fact.category}]  {fact.text}"


# -- input -----------------------------------------------------------------------------------

def read_stdin() -> str:
    """Piped stdin as text (a usage error on a terminal: there is nothing to read)."""
    stream = sys.stdin
    if stream is None or stream.isatty():
        raise click.UsageError("nothing to read: give the text as an argument or option, "
                               "--file, or pipe it on stdin")
    return plain.read_piped(stream)


def read_file(path: str) -> str:
    """The text of `path` ('-' reads stdin)."""
    if path == "-":
        return read_stdin()
    try:
        with open(path, "rb") as handle:
            data = handle.read(plain.READ_LIMIT)
    except FileNotFoundError:
        from evoclaw_memory.errors import NotFoundError
        raise NotFoundError(f"no such file: {path}") from None      # exit 3, like a fact
    except OSError as exc:
        from evoclaw_memory.errors import ValidationError
        raise ValidationError(f"cannot read {path}: {exc.strerror}") from exc
    return data.decode("utf-8", errors="replace")


def time_option(example: str) -> Callable[[click.Context, click.Parameter, Optional[str]], Any]:
    """A click callback for a time flag: epoch seconds or ISO 8601 (UTC when no zone is
    given); a bad value is a usage error that shows `example`."""
    def parse(_ctx: click.Context, _param: click.Parameter, value: Optional[str]) -> Any:
        if value is None:
            return None
        try:
            return plain.parse_time(value)
        except ValueError:
            raise click.BadParameter(f"use epoch seconds or ISO 8601, e.g. {example}") from None
    return parse
