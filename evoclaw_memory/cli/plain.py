"""What the CLI needs that does not need click: the options state, error lines, output
(--json or human), stdin, and the bodies of the per-turn commands (store, retrieve,
context, hot).

Two callers: `cli.common` (and through it every click command) and `cli.fast`, the
click-free path that runs the per-turn commands an agent calls every turn; both run the
SAME bodies here, so they cannot drift apart. Only argument parsing differs (click's, or
fast's hand parser, which hands anything unusual to click).

This module imports no other cli module and no click; the library is imported lazily
inside the functions (start-up time: one run per agent turn on a Raspberry Pi), but for the
tiny errors module (every run loads it anyway), which EXIT_TABLE is built from.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import sys
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

from evoclaw_memory import errors
from evoclaw_memory.limits import INPUT_MAX_BYTES

EXIT_OK = 0
EXIT_OTHER = errors.EvoclawError.exit_code          # 1; also click's Abort, a failed check
EXIT_USAGE = 2              # click's usage error; no library error uses it
EXIT_INTERNAL = 70          # EX_SOFTWARE
EXIT_INTERRUPTED = 130


def _codes(*classes: type[errors.EvoclawError]) -> tuple[str, ...]:
    return tuple(cls.code() for cls in classes)


# Every exit status of `evoclaw-memory`: (status, the `code`s a --json error carries with
# it, meaning). The one source: docs/cli.md renders it, tests/test_exit_table.py provokes
# every row through the real CLI. (errors is a tiny module every run loads anyway.)
EXIT_TABLE: tuple[tuple[int, tuple[str, ...], str], ...] = (
    (EXIT_OK, (), "done"),
    (EXIT_OTHER, (errors.EvoclawError.code(), "aborted", errors.LauncherError.code()),
     "other failure; a question answered no; `validate` found warnings; `doctor` found a "
     "problem; `server` could not start sqld"),
    (EXIT_USAGE, ("usage",), "usage error: unknown command or option, missing or bad "
     "argument, a confirmation that needs --yes"),
    (errors.NotFoundError.exit_code, _codes(errors.NotFoundError),
     "no such fact, node, task, device or file"),
    (errors.StoreError.exit_code, _codes(errors.StoreError, errors.DamagedStoreError,
                                         errors.ReadOnlyStoreError),
     "the local database is unusable"),
    (errors.RemoteError.exit_code, _codes(errors.RemoteError, errors.AuthError,
                                          errors.Unavailable, errors.ConflictError,
                                          errors.DeviceRevoked),
     "the cloud failed (offline work stays queued)"),
    (errors.CryptoError.exit_code, _codes(errors.CryptoError),
     "wrong passphrase or recovery key, tampered data, missing key"),
    (errors.LLMError.exit_code, _codes(errors.LLMError),
     "the LLM failed (the library's LLMError; the CLI's LLM steps fall back to rule mode "
     "and say so)"),
    (errors.ValidationError.exit_code, _codes(errors.ValidationError, errors.NestingError,
                                              errors.LimitError),
     "input refused: bad JSON, value, path, id, size, or a limit"),
    (errors.ConfigError.exit_code, _codes(errors.ConfigError, errors.PortInUseError),
     "configuration unusable: config.toml, environment, a cloud URL (for the commands "
     "that need the cloud; the others work locally and warn), a port in use"),
    (EXIT_INTERNAL, ("internal",), "a bug: please report it"),
    (EXIT_INTERRUPTED, ("interrupted",), "Ctrl-C"),
)
# Read at most this much from a file or stdin (the library's INPUT_MAX_BYTES, plus one byte
# so that an oversized input is seen as oversized rather than silently cut).
READ_LIMIT = INPUT_MAX_BYTES + 1

# An `echo(message="", err=False, nl=True)`: click.echo on the click path, `echo` below on
# the fast path (the same bytes on a UTF-8 stream, which is the only kind fast runs on).
Echo = Callable[..., Any]


class State:
    """Options shared by every command; subcommand flags override the group's."""

    def __init__(self, agent_id: Optional[str] = None, home: Optional[str] = None,
                 config_path: Optional[str] = None, json: bool = False):
        self.agent_id = agent_id
        self.home = home
        self.config_path = config_path
        self.json = json
        self.llm_base_url: Optional[str] = None     # --llm-endpoint (the original's flag)
        # The environment the config is read from: this process's, or the CLI's whose
        # command serve runs for it (cli.relay_server).
        self.env: Optional[dict[str, str]] = None
        # The command being run (its top-level name: `devices`, not `devices list`); None on
        # the fast path, whose commands are all local. See CLOUD_COMMANDS.
        self.command: Optional[str] = None
        self.cloud_warned = False   # the unusable-cloud-URL line is printed once per run


def echo(message: str = "", err: bool = False, nl: bool = True) -> None:
    """click.echo for text on a UTF-8 stream: the message, a newline, a flush."""
    stream = sys.stderr if err else sys.stdout
    out = message + "\n" if nl else message
    if out:
        stream.write(out)
    stream.flush()


# -- errors ----------------------------------------------------------------------------------

def one_line(text: object) -> str:
    """`text` with every run of whitespace (newlines included) made one space."""
    return " ".join(str(text).split())


def fail(message: str, code: int, name: str, as_json: bool, say: Echo) -> int:
    """One line on stderr; with --json also ONE JSON object on stdout, so an agent reading
    stdout always gets a document it can parse, success or not. Returns the exit status."""
    from evoclaw_memory.validate import printable
    line = one_line(message)
    say(f"error: {printable(line)}", err=True)
    if as_json:
        import msgspec
        say(msgspec.json.encode({"error": line, "code": name, "exit": code}).decode())
    return code


def report(exc: BaseException, as_json: bool, say: Echo) -> int:
    """Print what a command's exception means (one stderr line); returns the exit status."""
    from evoclaw_memory.errors import EvoclawError
    if isinstance(exc, KeyboardInterrupt):
        say("", err=True)
        if as_json:
            return fail("interrupted", EXIT_INTERRUPTED, "interrupted", as_json, say)
        return EXIT_INTERRUPTED
    if isinstance(exc, EvoclawError):
        return fail(str(exc) or type(exc).__name__, exc.exit_code, exc.code(), as_json, say)
    import sqlite3
    if isinstance(exc, sqlite3.DatabaseError):
        # The library wraps what it expects; anything else means a damaged database.
        from evoclaw_memory.errors import StoreError
        return fail(f"database error: {exc}; run `evoclaw-memory doctor`", StoreError.exit_code,
                    StoreError.code(), as_json, say)
    return fail(f"internal error: {type(exc).__name__}: {exc}", EXIT_INTERNAL, "internal",
                as_json, say)


# -- the memory ------------------------------------------------------------------------------

# The commands that exist to reach the cloud. With a cloud URL that cannot be used (a typo
# in config.toml or TURSO_DATABASE_URL) these fail with the configuration error (exit 9);
# every other command works on the local memory and prints one warning line (offline first:
# a sync setting it cannot use must not stop the memory).
CLOUD_COMMANDS = frozenset({"sync", "sync-critical", "restore", "cold", "devices", "key",
                            "doctor", "agents"})


def state_config(st: State, agent_id: Optional[str] = None):
    """The effective config for this run (of `agent_id` instead, when given), as it is: an
    unusable cloud URL is only noted in it (see checked_config)."""
    from evoclaw_memory.config import load_config
    return load_config(home=st.home, agent_id=agent_id or st.agent_id, env=st.env,
                       config_path=Path(st.config_path) if st.config_path else None,
                       llm_base_url=st.llm_base_url)


def checked_config(st: State, say: Echo, agent_id: Optional[str] = None):
    """state_config for a command about to run: with an unusable cloud URL, ConfigError for a
    command in CLOUD_COMMANDS, else the warning line on stderr (once per run)."""
    config = state_config(st, agent_id)
    warning = config.cloud_warning()
    if warning:
        if st.command in CLOUD_COMMANDS:
            config.require_cloud()
        if not st.cloud_warned:
            st.cloud_warned = True
            from evoclaw_memory.validate import printable
            say(f"warning: {printable(one_line(warning))}", err=True)
    return config


@contextlib.contextmanager
def state_memory(st: State, say: Echo = echo) -> Iterator[Any]:
    """The agent's `Memory`, open for the duration of the block (`say` prints the warning
    about an unusable cloud URL, see checked_config)."""
    from evoclaw_memory.memory import Memory
    config = checked_config(st, say)
    with Memory.open(agent_id=config.agent_id, home=config.home, config=config) as mem:
        yield mem


# -- output ----------------------------------------------------------------------------------

def builtins(obj: Any) -> Any:
    """Plain JSON-able data, every Struct field included (omit_defaults would drop some)."""
    import msgspec
    if isinstance(obj, msgspec.Struct):
        return {k: builtins(v) for k, v in msgspec.structs.asdict(obj).items()}
    if isinstance(obj, dict):
        return {str(k): builtins(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [builtins(v) for v in obj]
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, (dt.datetime, dt.date)):
        return obj.isoformat()
    return obj


class Printable:
    """stdout for human output: control characters (an OSC or CSI sequence hidden in a
    stored fact) are written as visible escapes, never sent to the terminal."""

    def __init__(self, stream: Any):
        self._stream = stream

    def write(self, text: str) -> int:
        from evoclaw_memory.validate import printable
        return self._stream.write(printable(text))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def emit(st: State, say: Echo, data: Any, human: Callable[[], None]) -> None:
    """Print `data` as one JSON document with --json, else run the `human` printer."""
    if st.json:
        import msgspec
        say(msgspec.json.encode(msgspec.to_builtins(builtins(data))).decode())
    else:
        # Every human printer runs through here, so one wrapper covers them all (JSON
        # output escapes control characters itself). A `say` that does not write to this
        # process's stdout (serve's, for a relayed command: cli.relay_server) escapes the
        # same way inside its own `human_output()`.
        own = getattr(say, "human_output", None)
        with own() if own is not None else contextlib.redirect_stdout(Printable(sys.stdout)):
            human()


# -- input -----------------------------------------------------------------------------------

def read_piped(stream: Any) -> str:
    """All of a piped stdin (up to READ_LIMIT) as text; the caller checked it is no terminal."""
    binary = getattr(stream, "buffer", None)
    if binary is None:
        return stream.read(READ_LIMIT)
    return binary.read(READ_LIMIT).decode("utf-8", errors="replace")


def parse_time(value: str) -> Any:
    """A time flag's value: epoch seconds (float) or ISO 8601 (UTC when no zone is given);
    ValueError when it is neither."""
    try:
        return float(value)
    except ValueError:
        pass
    stamp = dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    return stamp if stamp.tzinfo else stamp.replace(tzinfo=dt.timezone.utc)


# -- the per-turn commands (their flags are parsed by cli.facts / cli.conversation, or
# -- by cli.fast; every check that is a usage error happens there, before these run) ---------

def store(st: State, say: Echo, text: str, category: str, importance: float,
          urls: tuple, cmds: tuple, paths: tuple, created_at: Any, pinned: bool,
          private: Optional[bool]) -> None:
    metadata = None
    if urls or cmds or paths:
        metadata = {"urls": list(urls), "commands": list(cmds), "paths": list(paths)}
    with state_memory(st, say) as mem:
        fact = mem.remember(text, category=category, importance=importance,
                            created_at=created_at, metadata=metadata, pinned=pinned,
                            private=private)
    # A freshly stored fact has never been accessed; a duplicate was just reinforced.
    status = "reinforced" if fact.access_count > 0 else "stored"

    def human() -> None:
        say(fact.id)
        if status == "reinforced":
            say(f"note: duplicate of an existing fact; reinforced it "
                f"(accessed {fact.access_count} times)", err=True)

    emit(st, say, {"id": fact.id, "status": status, "fact": fact}, human)


def retrieve(st: State, say: Echo, query: str, limit: int) -> None:
    with state_memory(st, say) as mem:
        results = mem.retrieve(query, limit=limit)
    data = [{"id": r.fact.id, "text": r.fact.text, "category": r.fact.category,
             "method": r.method, "path": r.path, "relevance": r.relevance, "score": r.score,
             "coverage": r.coverage, "tier": r.fact.tier} for r in results]

    def human() -> None:
        if not results:
            say("no matching memories")
        for r in results:
            say(f"{r.relevance:.2f}  {r.method:<12}  {r.path or '-'}  {r.fact.text}")

    emit(st, say, data, human)


def context(st: State, say: Echo, query: str, limit: int, audience: str) -> None:
    with state_memory(st, say) as mem:
        text = mem.context(query, limit=limit, audience=audience)
    emit(st, say, {"context": text, "bytes": len(text.encode())},
         lambda: say(text, nl=False))


def hot(st: State, say: Echo, update: Optional[tuple], complete_task: Optional[str],
        rebuild: bool) -> None:
    if update or complete_task:
        from evoclaw_memory.tiers.hot_input import hot_value     # read before the memory opens
        key, value = update if update else ("complete_task", complete_task)
        value = hot_value(key, value)
    with state_memory(st, say) as mem:
        if update or complete_task:
            state = mem.update_hot(key, value)
            path = mem.config.memory_md_path
            emit(st, say, state, lambda: say(f"updated {key}; MEMORY.md rewritten: {path}"))
            return
        if rebuild:
            written = mem.write_memory_md()
            size = written.stat().st_size
            emit(st, say, {"path": written, "bytes": size}, lambda: say(str(written)))
            return
        state = mem.hot
        text = mem.render_memory_md()
    emit(st, say, state, lambda: say(text, nl=False))
