"""Hand a per-turn command to this agent's running `serve`, when there is one (the client).

A fresh `evoclaw-memory store` pays the interpreter, then ~60-100 ms of imports (msgspec,
the store, the distiller, their regexes) before a few milliseconds of work; on a Raspberry Pi
that is ×5-10, every turn. `serve`, the always-on service of a device, has all of it loaded:
it listens on a socket in the agent's folder (cli.relay_server) and runs the per-turn
commands for the CLI. This side imports nothing of the library: it sends argv, the
environment that decides the configuration, and stdin for `--text -`; serve runs the command
exactly as cli.fast would (same parser, same bodies, a fresh `Memory` per command) and sends
back what it wrote, in order, and the exit status, which this process writes and exits with.

Everything else runs here as before, and so does any command serve declines: no socket or a
stale one (serve not running), a serve that does not say READY within READY_TIMEOUT
(stopped, wedged, all its workers busy), another installation or version, another HOME or
TZ, a relative --home or --config, another agent, a form that cli.fast leaves to click. serve
reads the configuration from the environment sent (EVOCLAW_*, TURSO_*), not from its own.
If serve goes away before it answers, the command runs here; a `store` that serve had
committed is then found as a duplicate and reinforced, not stored twice.

The agent and home are found as the configuration finds them (flags anywhere before `--`,
the environment, the config file's `agent_id`), so a command relays however they were
chosen. Kept to what the interpreter has loaded at start-up (os, sys, io, marshal) plus
`_socket` and the package's constants (limits); tomllib only for a config file whose
`agent_id` is not written the plain way.
"""

from __future__ import annotations

import marshal
import os
import sys

from evoclaw_memory.limits import INPUT_MAX_BYTES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Optional

PROTOCOL = 1
SOCKET_NAME = "serve.sock"
# sun_path holds 108 bytes on Linux, 104 on macOS; a longer socket path is reached through
# its folder's descriptor (/proc/self/fd/N/serve.sock) where there is /proc, else not relayed.
MAX_SOCKET_PATH = 100
CONNECT_TIMEOUT = 1.0
# serve says READY when a worker takes the connection; the request is sent only then, so a
# serve that is stopped (SIGSTOP), wedged or saturated costs this wait, never a command run
# twice: a request never sent is never run.
READY = b"\x01"
READY_TIMEOUT = 2.0
FRAME_MAX = 64 << 20
# What decides the configuration besides the flags and the file (config.ENV_VARS), and what
# else of the environment the library reads (Path.home(), the local time zone).
ENV_PREFIXES = ("EVOCLAW_", "TURSO_")
ENV_NAMES = ("HOME", "TZ")
# At most this much of stdin is read for `--text -` (as cli.plain reads it).
READ_LIMIT = INPUT_MAX_BYTES + 1
PER_TURN = ("store", "retrieve", "context", "hot")
CONFIG_NAME = "config.toml"     # config.config_file
CONFIG_READ_LIMIT = 1 << 16     # a config.toml is a few hundred bytes


def relevant_env(environ: "Any") -> dict[str, str]:
    """The part of an environment that can change what a command does."""
    return {k: v for k, v in environ.items() if k.startswith(ENV_PREFIXES) or k in ENV_NAMES}


def installation() -> str:
    """Which copy of the package this is: serve only runs commands for its own."""
    import evoclaw_memory
    return f"{evoclaw_memory.__version__} {os.path.dirname(os.path.abspath(evoclaw_memory.__file__))}"


def socket_path(home: str, agent_id: str) -> str:
    """Where the serve of `agent_id` under `home` listens (config.Config.agent_dir)."""
    return os.path.join(home, "agents", agent_id, SOCKET_NAME)


def offer(argv: list[str]) -> None:
    """Run `argv` in serve and exit this process with its status when serve takes it;
    return, having written nothing, otherwise (stdin read for `--text -` is put back)."""
    if not _candidate(argv):
        return
    path = _socket_for(argv)
    if path is None or not os.path.exists(path):
        return
    data: Optional[bytes] = None
    if _reads_stdin(argv):
        stdin = sys.stdin
        if stdin is None or stdin.isatty() or getattr(stdin, "buffer", None) is None:
            return          # a terminal: the local run says what to do
        data = stdin.buffer.read(READ_LIMIT)
    request = marshal.dumps({"protocol": PROTOCOL, "installation": installation(),
                             "argv": list(argv), "env": relevant_env(os.environ),
                             "stdin": data})
    reply = exchange(path, request)
    if not (isinstance(reply, dict) and isinstance(reply.get("writes"), list)
            and isinstance(reply.get("status"), int)):
        if data is not None:
            _put_back_stdin(data)
        return
    for stream, text in reply["writes"]:
        out = sys.stderr if stream == 2 else sys.stdout
        out.write(text)
        out.flush()
    os._exit(reply["status"])


def address(path: str) -> tuple[Optional[str], Optional[int]]:
    """What to bind or connect to for `path`, and the folder descriptor it goes through
    (the caller closes it); (None, None) when a long path cannot be reached."""
    if len(os.fsencode(path)) <= MAX_SOCKET_PATH:
        return path, None
    if not os.path.isdir("/proc/self/fd"):
        return None, None
    try:
        folder = os.open(os.path.dirname(path), os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return None, None
    return f"/proc/self/fd/{folder}/{os.path.basename(path)}", folder


def connect(sock: "Any", path: str) -> None:
    """Connect `sock` to the socket at `path` (OSError when it cannot be reached)."""
    target, folder = address(path)
    try:
        if target is None:
            raise OSError(f"socket path too long: {path}")
        sock.connect(target)
    finally:
        if folder is not None:
            os.close(folder)


def exchange(path: str, request: bytes) -> "Any":
    """Wait for serve's READY, send one request frame and read one reply frame; None if any
    of it fails (the caller then runs the command itself)."""
    import _socket
    if not hasattr(_socket, "AF_UNIX"):
        return None
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(CONNECT_TIMEOUT)
        connect(sock, path)
        sock.settimeout(READY_TIMEOUT)
        if _read_exactly(sock, len(READY)) != READY:
            return None
        sock.settimeout(None)       # the command runs as long as it runs, as it would here
        send_frame(sock, request)
        frame = read_frame(sock)
        return None if frame is None else marshal.loads(frame)
    except (OSError, ValueError, EOFError, TypeError):
        return None
    finally:
        sock.close()


def send_frame(sock: "Any", payload: bytes) -> None:
    sock.sendall(len(payload).to_bytes(4, "big") + payload)


def read_frame(sock: "Any") -> Optional[bytes]:
    """One length-prefixed frame; None on a short read or an oversized length."""
    head = _read_exactly(sock, 4)
    if head is None:
        return None
    size = int.from_bytes(head, "big")
    return None if size > FRAME_MAX else _read_exactly(sock, size)


def _read_exactly(sock: "Any", size: int) -> Optional[bytes]:
    chunks, left = [], size
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def fast_output() -> bool:
    """Whether this run's output is the kind cli.fast writes itself (and so serve may write
    for it): no EVOCLAW_DEBUG=1 (a traceback is wanted), and UTF-8 stdout and stderr (click
    re-wraps a stream whose encoding is ASCII; such runs keep click's output). cli.fast asks
    the same question here, so the two paths cannot disagree on it."""
    return os.environ.get("EVOCLAW_DEBUG") != "1" and all(
        (getattr(s, "encoding", None) or "").lower().replace("-", "").replace("_", "") == "utf8"
        for s in (sys.stdout, sys.stderr))


def _candidate(argv: list[str]) -> bool:
    """Worth asking serve: a per-turn command, output the fast path would write itself."""
    return any(a in PER_TURN for a in argv) and fast_output()


def _socket_for(argv: list[str]) -> Optional[str]:
    """The socket of the agent and home this run would use, chosen as config.load_config
    chooses them: --home and --agent-id anywhere before `--` (the last one wins, as the
    command's own flag wins over the group's), then EVOCLAW_HOME and EVOCLAW_AGENT_ID, then
    the top-level `agent_id` of the config file (--config, else HOME/config.toml), then
    "default". serve checks all of it again (relay_server._admit), so a wrong guess here
    costs a round trip, never a command run for another agent; None: not worth asking."""
    if "--" in argv:
        argv = argv[:argv.index("--")]
    home = _last_value(argv, "--home")
    if home is not None and not os.path.isabs(home):
        return None             # relative to this process's folder, not serve's
    home = os.path.expanduser(home or os.environ.get("EVOCLAW_HOME") or "~/.evoclaw")
    if not os.path.isabs(home):
        return None             # EVOCLAW_HOME relative to this process's folder
    agent = _last_value(argv, "--agent-id") or os.environ.get("EVOCLAW_AGENT_ID")
    if not agent:
        config = _last_value(argv, "--config")
        if config is not None and not os.path.isabs(config):
            return None         # serve declines a relative --config
        agent = configured_agent(config or os.path.join(home, CONFIG_NAME)) or "default"
    if "/" in agent or agent.startswith("."):
        return None
    return socket_path(home, agent)


def configured_agent(path: str) -> Optional[str]:
    """The top-level `agent_id` of the config file at `path` (None: none, or no file).

    The usual way of writing it (`agent_id = "sam"` before any [table]) is read here line
    by line: tomllib costs ~9 ms of imports (typing, datetime, re), a fifth of a relayed
    command. Any other form of the file is left to tomllib."""
    try:
        with open(path, "rb") as f:
            raw = f.read(CONFIG_READ_LIMIT)
    except OSError:
        return None
    if b"agent_id" not in raw:
        return None
    text = raw.decode("utf-8", "replace")
    if '"""' in text or "'''" in text or len(raw) == CONFIG_READ_LIMIT:
        return _agent_by_tomllib(text)      # multi-line strings could hide a [table] line
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("["):
            return None                     # the top-level keys are behind
        key, eq, value = line.partition("=")
        if not eq or key.strip().strip("\"'") != "agent_id":
            continue
        value = value.strip()
        quote = value[:1]
        end = value.find(quote, 1) if quote in ("'", '"') else -1
        if end < 0 or (quote == '"' and "\\" in value[1:end]):
            return _agent_by_tomllib(text)  # not a plain string (or an escape in it)
        rest = value[end + 1:].strip()
        if rest and not rest.startswith("#"):
            return _agent_by_tomllib(text)
        return value[1:end]
    return None


def _agent_by_tomllib(text: str) -> Optional[str]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # Python 3.10, as config._read_file
        import tomli as tomllib
    try:
        agent = tomllib.loads(text).get("agent_id")
    except tomllib.TOMLDecodeError:
        return None             # serve declines it too; the local run says what is wrong
    return agent if isinstance(agent, str) else None


def _last_value(argv: list[str], flag: str) -> Optional[str]:
    value = None
    for i, token in enumerate(argv):
        if token == flag and i + 1 < len(argv):
            value = argv[i + 1]
        elif token.startswith(flag + "="):
            value = token[len(flag) + 1:]
    return value


def _reads_stdin(argv: list[str]) -> bool:
    """`store --text -` (or -t -, --text=-): the text comes on stdin."""
    return "--text=-" in argv or any(
        token in ("--text", "-t") and argv[i + 1:i + 2] == ["-"] for i, token in enumerate(argv))


def _put_back_stdin(data: bytes) -> None:
    """stdin as it was, for the local run, after this module read it for serve."""
    import io
    old = sys.stdin
    sys.stdin = io.TextIOWrapper(io.BytesIO(data), encoding=old.encoding, errors=old.errors)
