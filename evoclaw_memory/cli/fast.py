"""The click-free path of the per-turn commands: `store`, `retrieve`, `context`, `hot`.

An agent runs one of these every turn, as a fresh process; on a Raspberry Pi importing
click alone costs more than the command's work. So `main()` first offers argv to `run()`
here: it parses the COMMON forms of these four commands by hand (the same flags, defaults
and checks as the click commands in cli.facts and cli.conversation) and runs the same
bodies (cli.plain), so output bytes, --json documents, error lines and exit statuses are the
same. Anything else returns without a side effect and click handles it: any other command,
--help, --version, an unknown or repeated flag, a value that looks like a flag, a value
click would reject (its error message is click's to write), a terminal on stdin for
`--text -`, EVOCLAW_DEBUG=1, an output stream that is not UTF-8. tests/test_cli_fast.py runs
each form through both paths and compares them.

This module imports only cli.plain (no click) and the library lazily through it, cli.relay
for the one question both paths must answer alike (relay.fast_output), cli.regex_cache
(the library's compiled patterns, kept between runs) and cli.code_cache (the byte code of
the library's modules, kept in one file).
"""

from __future__ import annotations

import os
import stat
import sys
from typing import Any, Optional

from evoclaw_memory.cli import code_cache, plain, regex_cache, relay

# What a flag takes: a value, a value that may repeat, nothing (a flag), or two values.
VALUE, MULTI, FLAG, PAIR = "value", "multi", "flag", "pair"

# command -> {flag spelling: (destination, kind)}; only the forms handled here. The
# shared --agent-id, --home and --json are on every command (cli.common.common_options).
_SHARED = {"--agent-id": ("agent_id", VALUE), "--home": ("home", VALUE),
           "--json": ("json", FLAG)}
_COMMANDS: dict[str, dict[str, tuple[str, str]]] = {
    "store": {"--text": ("text", VALUE), "-t": ("text", VALUE),
              "--category": ("category", VALUE), "-c": ("category", VALUE),
              "--importance": ("importance", VALUE), "-i": ("importance", VALUE),
              "--url": ("urls", MULTI), "--cmd": ("cmds", MULTI), "--path": ("paths", MULTI),
              "--created-at": ("created_at", VALUE), "--pin": ("pinned", FLAG),
              "--private": ("private", FLAG), "--shared": ("shared", FLAG)},
    "retrieve": {"--query": ("query_flag", VALUE), "-q": ("query_flag", VALUE),
                 "--limit": ("limit", VALUE), "-n": ("limit", VALUE)},
    "context": {"--limit": ("limit", VALUE), "-n": ("limit", VALUE),
                "--audience": ("audience", VALUE)},
    "hot": {"--update": ("update", PAIR), "--complete-task": ("complete_task", VALUE),
            "--rebuild": ("rebuild", FLAG)},
}
_POSITIONALS = {"store": 0, "retrieve": 1, "context": 1, "hot": 0}
_GLOBAL = {"--agent-id": ("agent_id", VALUE), "--home": ("home", VALUE),
           "--config": ("config_path", VALUE), "--json": ("json", FLAG)}


class _Unusual(Exception):
    """A form this module leaves to click."""


def run(argv: list[str], hard_exit: bool = False) -> None:
    """Run `argv` when it is a common form of a per-turn command (exits the process with
    its status); return, having done nothing, for anything else. `hard_exit` (the console
    script: a process of its own) ends it without the interpreter's teardown, see _end."""
    if not relay.fast_output():
        return
    try:
        st, command, opts, args = _parse(argv)
        call = _prepare(command, opts, args)
    except _Unusual:
        return
    if hard_exit:
        # A process of its own, over in a few tens of milliseconds: the cycle collector would
        # only walk the objects the imports made, again and again (~3 ms of a `context`),
        # finding nothing to free; reference counting still frees everything else.
        import gc
        gc.disable()
    patterns = regex_cache.load()
    modules = code_cache.load()
    _import_msgspec_lean()
    try:
        call(st, plain.echo)
        status = 0
    except BrokenPipeError:
        raise                   # main() handles it as it does for click's commands
    except (Exception, KeyboardInterrupt) as exc:
        status = plain.report(exc, st.json, plain.echo)
    _flush()
    regex_cache.save(patterns)      # after the output: only a run that compiled one waits
    code_cache.save(modules)        # the same: only a run that imported a module not kept
    _end(status, hard_exit)


def _import_msgspec_lean() -> None:
    """Import msgspec without typing_extensions, which it only tries (msgspec._utils falls
    back to `typing`, complete for our Structs on Python 3.10+). typing_extensions pulls in
    inspect, ast and tokenize: ~5 ms idle, ~12 ms on a busy box, a third of what is left of
    a per-turn run. Anything imported later may still import typing_extensions normally."""
    if "msgspec" in sys.modules or "typing_extensions" in sys.modules:
        return
    sys.modules["typing_extensions"] = None     # type: ignore[assignment]  # "not installed"
    try:
        import msgspec  # noqa: F401
    finally:
        if sys.modules.get("typing_extensions", 0) is None:
            del sys.modules["typing_extensions"]


def _end(status: int, hard_exit: bool) -> None:
    """Exit with `status`. A process of its own skips the interpreter's teardown (freeing
    ~150 modules costs 5-10 ms, a fifth of a per-turn run): the database is closed and every
    file written by then, so only the output is left, flushed here first (a reader gone
    away raises BrokenPipeError here, which main() handles)."""
    _flush()
    if hard_exit:
        os._exit(status)
    sys.exit(status)


def _flush() -> None:
    sys.stdout.flush()
    sys.stderr.flush()


def _take(argv: list[str], i: int, spec: dict[str, tuple[str, str]],
          opts: dict[str, Any]) -> int:
    """Read the flag at argv[i] into opts; returns the index after it."""
    token = argv[i]
    name, eq, attached = token.partition("=")
    if name not in spec or (eq and not name.startswith("--")):
        raise _Unusual(token)
    dest, kind = spec[name]
    if kind == FLAG:
        if eq:
            raise _Unusual(token)        # click: "option does not take a value"
        opts[dest] = True
        return i + 1
    if eq and kind == PAIR:
        raise _Unusual(token)
    if eq:
        values, after = [attached], i + 1
    else:
        width = 2 if kind == PAIR else 1
        values, after = argv[i + 1:i + 1 + width], i + 1 + width
        if len(values) < width or any(v.startswith("-") and v != "-" for v in values):
            raise _Unusual(token)        # missing, or a value click might read otherwise
    if kind == MULTI:
        opts.setdefault(dest, []).append(values[0])
    elif dest in opts:
        raise _Unusual(token)            # repeated: click keeps the last; leave it to click
    else:
        opts[dest] = tuple(values) if kind == PAIR else values[0]
    return after


def _parse(argv: list[str]) -> tuple[plain.State, str, dict[str, Any], list[str]]:
    """The global options, the command, its flags and its positional arguments."""
    top: dict[str, Any] = {}
    i = 0
    while i < len(argv) and argv[i].startswith("-"):
        i = _take(argv, i, _GLOBAL, top)
    if i == len(argv) or argv[i] not in _COMMANDS:
        raise _Unusual("not a per-turn command")
    command = argv[i]
    spec = {**_COMMANDS[command], **_SHARED}
    opts: dict[str, Any] = {}
    args: list[str] = []
    i += 1
    while i < len(argv):
        token = argv[i]
        if token.startswith("-") and token != "-":
            i = _take(argv, i, spec, opts)   # `--` and every unknown flag end up in click
        else:
            args.append(token)
            i += 1
    if len(args) > _POSITIONALS[command]:
        raise _Unusual("extra arguments")
    _check_home(top.get("home"))
    _check_home(opts.get("home"))
    _check_config(top.get("config_path"))
    st = plain.State(agent_id=top.get("agent_id"), home=top.get("home"),
                     config_path=top.get("config_path"), json=bool(top.get("json")))
    # The command's --agent-id, --home and --json win over the group's
    # (cli.common.common_options).
    if opts.get("agent_id") is not None:
        st.agent_id = opts["agent_id"]
    if opts.get("home") is not None:
        st.home = opts["home"]
    if opts.get("json"):
        st.json = True
    return st, command, opts, args


def _check_home(home: Optional[str]) -> None:
    """What click.Path(file_okay=False) accepts: missing, or a readable non-file."""
    if home is None:
        return
    try:
        mode = os.stat(home).st_mode
    except OSError:
        return
    if stat.S_ISREG(mode) or not os.access(home, os.R_OK):
        raise _Unusual("--home")


def _check_config(path: Optional[str]) -> None:
    """What click.Path(exists=True, dir_okay=False) accepts: an existing readable non-folder."""
    if path is None:
        return
    try:
        mode = os.stat(path).st_mode
    except OSError:
        raise _Unusual("--config") from None
    if stat.S_ISDIR(mode) or not os.access(path, os.R_OK):
        raise _Unusual("--config")


def _count(value: Optional[str], default: int) -> int:
    """click.IntRange(1, 100), for plain digits only (int() would take '+5' and ' 5')."""
    if value is None:
        return default
    if not (value.isascii() and value.isdigit()) or not 1 <= int(value) <= 100:
        raise _Unusual("--limit")
    return int(value)


def _prepare(command: str, opts: dict[str, Any], args: list[str], stdin: Any = None) -> Any:
    """The call `(state, say)` that runs the command, once every check click would make has
    passed. `stdin` (default: this process's) is read by `store --text -`."""
    if command == "store":
        return _prepare_store(opts, sys.stdin if stdin is None else stdin)
    if command == "retrieve":
        query = args[0] if args else None
        if (query is None) == (opts.get("query_flag") is None):
            raise _Unusual("query given twice or not at all")
        query = query if query is not None else opts["query_flag"]
        limit = _count(opts.get("limit"), 5)
        return lambda st, say: plain.retrieve(st, say, query, limit)
    if command == "context":
        query = args[0] if args else ""
        limit = _count(opts.get("limit"), 8)
        audience = opts.get("audience", "owner")
        if audience not in ("owner", "shared"):
            raise _Unusual("--audience")
        return lambda st, say: plain.context(st, say, query, limit, audience)
    update, complete, rebuild = opts.get("update"), opts.get("complete_task"), \
        bool(opts.get("rebuild"))
    if sum(bool(x) for x in (update, complete, rebuild)) > 1:
        raise _Unusual("more than one of --update, --complete-task, --rebuild")
    return lambda st, say: plain.hot(st, say, update, complete, rebuild)


def _prepare_store(opts: dict[str, Any], stream: Any) -> Any:
    text = opts.get("text")
    if text is None or (opts.get("private") and opts.get("shared")):
        raise _Unusual("no --text, or both --private and --shared")
    try:
        importance = float(opts.get("importance", "0.5"))      # what click.FLOAT does
        created_at = None if opts.get("created_at") is None else \
            plain.parse_time(opts["created_at"])
    except ValueError:
        raise _Unusual("--importance or --created-at") from None
    if text == "-":
        if stream is None or stream.isatty():
            raise _Unusual("a terminal on stdin")      # click's usage error says what to do
    private = True if opts.get("private") else (False if opts.get("shared") else None)

    def call(st: plain.State, say: plain.Echo) -> None:
        body = plain.read_piped(stream) if text == "-" else text
        plain.store(st, say, body, opts.get("category", "general"), importance,
                    tuple(opts.get("urls", ())), tuple(opts.get("cmds", ())),
                    tuple(opts.get("paths", ())), created_at, bool(opts.get("pinned")),
                    private)
    return call
