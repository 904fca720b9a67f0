"""`serve`'s side of the relay: run the CLI's per-turn commands sent over a socket.

The CLI (cli.relay) sends argv, its environment's EVOCLAW_*/TURSO_*/HOME/TZ and stdin for
`--text -`. Here a command runs only when a local run would do exactly the same: the same
installation, the same HOME and TZ, absolute --home/--config, this serve's agent and home,
a form cli.fast parses (anything else is declined and runs in the CLI's own process). Its
configuration is read as the CLI would read it, from the CLI's environment (a serve started
by systemd has its own, e.g. the cloud token from service.env). It runs on a worker thread
with a fresh `Memory` of its own (its own SQLite connection, as a separate process would
have) through the same parser and bodies as cli.fast; what it writes
is collected in order, with control characters escaped as on a terminal, and sent back with
the exit status.

The socket is in the agent's folder (owner-only, 0700), itself 0600, and a peer of another
user is refused where the platform tells (SO_PEERCRED). A stale socket from a serve that died
is replaced; a live one (another serve of the same agent) is left alone and this serve runs
without a relay. `serve` (agent.service) starts and closes it, and says so in its log, with
what it ran and declined (the first decline of each kind is logged when it happens).
`doctor` asks a live serve about itself (probe, a `status` request: its pid and counts, and
whether it would run a command from doctor's environment; nothing runs).
"""

from __future__ import annotations

import contextlib
import io
import logging
import marshal
import os
import socket
import struct
import threading
from typing import Any, Iterator, Optional

from evoclaw_memory.cli import fast, plain, relay

ACCEPT_POLL = 0.2           # seconds: how soon the accept loop notices close()
MAX_WORKERS = 4             # commands running at once; more wait to be accepted
DRAIN_SECONDS = 30.0        # close() waits this long for running commands to finish
PEER_TIMEOUT = 10.0         # seconds a worker waits for a CLI's request, or for it to read
log = logging.getLogger("evoclaw_memory.cli.relay_server")


class Declined(Exception):
    """A request serve does not run: the CLI runs it itself."""


class Captured:
    """The `say` of a relayed command: every write, in order, for the CLI to replay."""

    def __init__(self) -> None:
        self.writes: list[tuple[int, str]] = []
        self._human = False

    def __call__(self, message: str = "", err: bool = False, nl: bool = True) -> None:
        out = message + "\n" if nl else message
        if not out:
            return
        if self._human and not err:
            from evoclaw_memory.validate import printable
            out = printable(out)        # what plain.Printable does to a terminal's stdout
        self.writes.append((2 if err else 1, out))

    @contextlib.contextmanager
    def human_output(self) -> Iterator[None]:
        self._human = True
        try:
            yield
        finally:
            self._human = False


def run_request(request: Any, agent_id: str, home: str) -> dict[str, Any]:
    """The reply to one request: {"writes", "status"}, or {"declined": why}."""
    try:
        call, st = _admit(request, agent_id, home)
    except Declined as exc:
        return {"declined": str(exc)}
    say = Captured()
    try:
        call(st, say)
        status = 0
    except Exception as exc:    # noqa: BLE001 - reported as the CLI reports it
        status = plain.report(exc, st.json, say)
    return {"writes": say.writes, "status": status}


def _admit(request: Any, agent_id: str, home: str) -> tuple[Any, plain.State]:
    """The command's call and state, if this serve runs it exactly as the CLI would."""
    if not isinstance(request, dict) or request.get("protocol") != relay.PROTOCOL:
        raise Declined("protocol")
    if request.get("installation") != relay.installation():
        raise Declined("another installation or version")
    argv, data, env = request.get("argv"), request.get("stdin"), request.get("env")
    if not (isinstance(argv, list) and all(isinstance(a, str) for a in argv)) \
            or not (data is None or isinstance(data, bytes)) \
            or not (isinstance(env, dict) and all(isinstance(v, str) for v in env.values())):
        raise Declined("malformed request")
    # The command reads its configuration from the CLI's environment (below); what else of
    # an environment the library reads is the home folder and the local time zone.
    if any(env.get(name) != os.environ.get(name) for name in relay.ENV_NAMES):
        raise Declined("another HOME or TZ")
    stdin = io.TextIOWrapper(io.BytesIO(data or b""), encoding="utf-8")
    try:
        st, command, opts, args = fast._parse(argv)
        call = fast._prepare(command, opts, args, stdin=stdin)
    except fast._Unusual:
        raise Declined("a form the CLI parses with click") from None
    if any(p is not None and not os.path.isabs(p) for p in (st.home, st.config_path)):
        raise Declined("a relative --home or --config")
    st.env = env
    try:
        config = plain.state_config(st)
    except Exception:           # noqa: BLE001 - the CLI's own run reports it
        raise Declined("configuration error") from None
    if not os.path.isabs(config.home):
        raise Declined("a relative EVOCLAW_HOME")     # relative to the CLI's folder
    if config.agent_id != agent_id or os.path.realpath(config.home) != os.path.realpath(home):
        raise Declined("another agent")
    if any(p and not os.path.isabs(os.path.expanduser(p))
           for p in (config.workspace, config.memory_md)):
        raise Declined("a relative path in the configuration")
    return call, st


class RelayServer:
    """Listens on the agent's socket and runs each request on a worker thread."""

    def __init__(self, agent_id: str, home: str, logger: logging.Logger = log):
        # Absolute: the CLI names its home absolutely (a relative one is never relayed).
        self.agent_id, self.home, self.log = agent_id, os.path.abspath(home), logger
        self.path = relay.socket_path(self.home, agent_id)
        self._listener: Optional[socket.socket] = None
        self._stopping = threading.Event()
        self._slots = threading.Semaphore(MAX_WORKERS)
        self._workers: set[threading.Thread] = set()
        self._thread: Optional[threading.Thread] = None
        self._counts = threading.Lock()
        self.served = 0             # commands run here for the CLI
        self.declined: dict[str, int] = {}      # why -> how many ran in their own process

    def start(self) -> Optional[str]:
        """Bind and start accepting; None when listening, else why the relay is off."""
        if not hasattr(socket, "AF_UNIX"):
            return "this platform has no Unix sockets"
        if not self._claim_path():
            return f"another serve of this agent answers on {self.path}"
        target, folder = relay.address(self.path)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            if target is None:
                raise OSError(f"the socket path is longer than {relay.MAX_SOCKET_PATH} bytes")
            listener.bind(target)
            os.chmod(self.path, 0o600)
            listener.listen(16)
            listener.settimeout(ACCEPT_POLL)
        except OSError as exc:
            listener.close()
            return " ".join(str(exc).split())
        finally:
            if folder is not None:
                os.close(folder)
        self._listener = listener
        self._thread = threading.Thread(target=self._accept_loop, name="relay", daemon=True)
        self._thread.start()
        return None

    def close(self) -> None:
        """Stop accepting, let running commands finish, remove the socket."""
        if self._listener is None:
            return
        self._stopping.set()
        if self._thread is not None:
            self._thread.join()
        for worker in list(self._workers):
            worker.join(DRAIN_SECONDS)
        self._listener.close()
        self._listener = None
        with contextlib.suppress(OSError):
            os.unlink(self.path)

    def status(self, request: Any) -> dict[str, Any]:
        """This serve, its counts, and whether it would run the request's command (not
        run): what `doctor` shows in its `relay` check."""
        try:
            _admit(request, self.agent_id, self.home)
            why = ""
        except Declined as exc:
            why = str(exc)
        with self._counts:
            return {"pid": os.getpid(), "agent_id": self.agent_id, "path": self.path,
                    "installation": relay.installation(), "served": self.served,
                    "declined": sum(self.declined.values()), "accepts": not why, "why": why}

    def summary(self) -> str:
        """How many commands it ran, and declined and why, for serve's stop line ("" when
        none came)."""
        with self._counts:
            if not self.served and not self.declined:
                return ""
            declined = ", ".join(f"{n} {why}" for why, n in sorted(self.declined.items()))
            return f"{self.served} CLI command(s) relayed" + (
                f", {sum(self.declined.values())} declined ({declined})" if declined else "")

    def _count(self, why: Optional[str]) -> None:
        """Count a command run here (why None) or declined; a first decline of each kind is
        logged: the CLI then pays its own start-up every turn, which nothing else shows."""
        with self._counts:
            if why is None:
                self.served += 1
                return
            first = why not in self.declined
            self.declined[why] = self.declined.get(why, 0) + 1
        if first:
            self.log.info("relay: a CLI command runs in its own process (declined: %s); "
                          "others like it will too", why)
        else:
            self.log.debug("relay: declined: %s", why)

    def _claim_path(self) -> bool:
        """True when the path is free (a stale socket is removed); False when live."""
        if not os.path.exists(self.path):
            return True
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.settimeout(relay.CONNECT_TIMEOUT)
            relay.connect(probe, self.path)
            return False
        except OSError:
            os.unlink(self.path)
            return True
        finally:
            probe.close()

    def _accept_loop(self) -> None:
        assert self._listener is not None
        while not self._stopping.is_set():
            if not self._slots.acquire(timeout=ACCEPT_POLL):
                continue
            try:
                conn, _ = self._listener.accept()
            except (socket.timeout, OSError):
                self._slots.release()
                continue
            worker = threading.Thread(target=self._serve_one, args=(conn,), daemon=True,
                                      name="relay-command")
            self._workers.add(worker)
            worker.start()

    def _serve_one(self, conn: socket.socket) -> None:
        try:
            with conn:
                # A CLI that stalls after READY (stopped, or not one of ours) must not hold a
                # worker: its request comes at once, and it reads the reply as soon as sent.
                conn.settimeout(PEER_TIMEOUT)
                if not _same_user(conn):
                    return
                conn.sendall(relay.READY)
                frame = relay.read_frame(conn)
                if frame is None:
                    return
                try:
                    request = marshal.loads(frame)
                except (ValueError, EOFError, TypeError):
                    request = None
                if isinstance(request, dict) and request.get("status"):
                    reply = self.status(request)            # doctor asking, nothing runs
                else:
                    reply = run_request(request, self.agent_id, self.home)  # however long
                    self._count(reply.get("declined"))
                relay.send_frame(conn, marshal.dumps(reply))
        except OSError:
            pass                # the CLI went away (if it is still there, it runs the command)
        finally:
            self._workers.discard(threading.current_thread())
            self._slots.release()


def probe(path: str, argv: list[str]) -> tuple[str, dict[str, Any]]:
    """What answers on the relay socket at `path` (for doctor): ("none", {}) no socket,
    ("stale", {}) a socket nobody listens on (a serve that stopped; the next one replaces
    it), ("silent", {}) a listener that never says READY (a stopped or wedged serve: each
    per-turn command then waits relay.READY_TIMEOUT), ("answers", status) a live serve's
    status(), asked whether it would run `argv` from this environment."""
    if not os.path.exists(path):
        return "none", {}
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(relay.CONNECT_TIMEOUT)
        try:
            relay.connect(sock, path)
        except OSError:
            return "stale", {}
        sock.settimeout(relay.READY_TIMEOUT)
        try:
            if relay._read_exactly(sock, len(relay.READY)) != relay.READY:
                return "silent", {}
            relay.send_frame(sock, marshal.dumps({
                "protocol": relay.PROTOCOL, "installation": relay.installation(),
                "argv": argv, "env": relay.relevant_env(os.environ), "stdin": None,
                "status": True}))
            frame = relay.read_frame(sock)
            reply = marshal.loads(frame) if frame is not None else None
        except (OSError, ValueError, EOFError, TypeError):
            return "silent", {}
        # A serve from before status requests declines this one as a malformed command.
        return "answers", reply if isinstance(reply, dict) else {}
    finally:
        sock.close()


def _same_user(conn: socket.socket) -> bool:
    """The peer runs as this user (where the platform says; else the 0700 folder decides)."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return True
    creds = conn.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", creds)
    return uid == os.getuid()
