"""What the CLI needs that does not need click: the options state, error lines, output
(--json or human), stdin, and the bodies of the per-turn commands (store, retrieve,
context, hot).

Two callers: `cli.common` (and through it every click command) and `cli.fast`, the
click-free path that runs the per-turn commands an agent calls every turn; both run the
SAME bodies here, so they cannot drift apart. Only argument parsing differs (click's, or
fast's hand parser, which hands anything unusual to click).

This module imports no other cli module and no click; the library is imported lazily
inside the functions (start-up time: one run per agent turn on a Raspberry Pi).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import sys
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

from evoclaw_memory.limits import INPUT_MAX_BYTES

EXIT_USAGE = 2              # click's usage error; no library error uses it
EXIT_INTERNAL = 70          # EX_SOFTWARE
EXIT_INTERRUPTED = 130
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

def state_config(st: State, agent_id: Optional[str] = None):
    """The effective config for this run (of `agent_id` instead, when given)."""
    from evoclaw_memory.config import load_config
    return load_config(home=st.home, agent_id=agent_id or st.agent_id, env=st.env,
                       config_path=Path(st.config_path) if st.config_path else None,
                       llm_base_url=st.llm_base_url)


@contextlib.contextmanager
def state_memory(st: State) -> Iterator[Any]:
    """The agent's `Memory`, open for the duration of the block."""
    from evoclaw_memory.memory import Memory
    config = state_config(st)
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
    with state_memory(st) as mem:
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
    with state_memory(st) as mem:
        results = mem.retrieve(query, limit=limit)
    data = [{"id": r.fact.id, "text": r.fact.text, "category": r.fact.category,
             "method": r.method, "path": r.path, "relevance": r.relevance, "score": r.score,
             "tier": r.fact.tier} for r in results]

    def human() -> None:
        if not results:
            say("no matching memories")
        for r in results:
            say(f"{r.relevance:.2f}  {r.method:<12}  {r.path or '-'}  {r.fact.text}")

    emit(st, say, data, human)


def context(st: State, say: Echo, query: str, limit: int, audience: str) -> None:
    with state_memory(st) as mem:
        text = mem.context(query, limit=limit, audience=audience)
    emit(st, say, {"context": text, "bytes": len(text.encode())},
         lambda: say(text, nl=False))


def hot(st: State, say: Echo, update: Optional[tuple], complete_task: Optional[str],
        rebuild: bool) -> None:
    with state_memory(st) as mem:
        if update or complete_task:
            key, value = update if update else ("complete_task", complete_task)
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
