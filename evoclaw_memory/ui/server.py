"""Serving the page: the listening socket, the one printed URL, and two ways to run.

`serve` (the `ui` command) blocks in this thread until Ctrl-C; `start_in_thread` (for
`serve --ui`) runs it beside the service, on its own Memory (its own SQLite connection) so
the service's work and the page's never share a connection. uvicorn's access log is off:
the first request's address carries the token, and logs must never hold it.
"""

from __future__ import annotations

import signal
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from evoclaw_memory.errors import ConfigError
from evoclaw_memory.ui import ACTOR, require_extra, security

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8377
START_TIMEOUT = 10.0


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on host:port (port 0: any free one); ConfigError when it cannot be."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
        sock = socket.socket(family, kind, proto)
    except (OSError, UnicodeError) as exc:
        raise ConfigError(f"cannot listen on {host}:{port}: {exc}") from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(64)
    except OSError as exc:
        sock.close()
        hint = "; choose another with --port" if exc.errno in (98, 48, 10048) else ""
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}{hint}") from None
    return sock


def page_url(host: str, port: int, token: str) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/?token={token}"


def exposure_warning(host: str) -> Optional[str]:
    """The warning line for an address other machines can reach (None on loopback)."""
    if security.is_loopback(host):
        return None
    return (f"warning: the owner's window listens on {host}, reachable from other machines: "
            "anyone who gets its URL (its token) can read and change this memory; traffic is "
            "plain HTTP")


@dataclass
class Running:
    """A page being served: its URL, and how to stop it."""

    url: str
    host: str
    port: int
    server: Any
    memory: Any
    sock: socket.socket
    thread: Optional[threading.Thread] = None
    closed: list = field(default_factory=list)

    def stop(self) -> None:
        self.server.should_exit = True
        if self.thread is not None:
            self.thread.join(timeout=START_TIMEOUT)
        if not self.closed:
            self.closed.append(True)
            self.sock.close()
            self.memory.close()


def prepare(config: Any, host: Optional[str] = None, port: int = DEFAULT_PORT,
            token: Optional[str] = None) -> Running:
    """Open the memory as `owner:ui`, build the app and bind the socket (nothing served yet)."""
    require_extra()
    import uvicorn

    from evoclaw_memory.memory import Memory
    from evoclaw_memory.ui.routes import create_app
    host = host or DEFAULT_HOST
    sock = bind(host, port)
    memory = Memory.open(config=config, actor=ACTOR)
    try:
        app = create_app(memory, token=token, loopback_only=security.is_loopback(host))
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False,
                                               lifespan="off", server_header=False,
                                               proxy_headers=False))
    except BaseException:
        memory.close()
        sock.close()
        raise
    bound = sock.getsockname()[1]
    return Running(page_url(host, bound, app.state.ui.sessions.token), host, bound, server,
                   memory, sock)


def serve(config: Any, host: Optional[str] = None, port: int = DEFAULT_PORT,
          on_ready: Callable[[Running], None] = lambda running: None) -> None:
    """Serve until interrupted (Ctrl-C, SIGTERM); `on_ready` is told the URL first."""
    running = prepare(config, host, port)
    # uvicorn stops gracefully on SIGINT/SIGTERM, then re-raises the signal to the handler it
    # found: this one, which only asks the server to stop (also when the signal comes before
    # uvicorn took the signals over), so Ctrl-C or SIGTERM ends the command cleanly (exit 0,
    # memory closed) instead of as an interrupted or killed process.
    def stop(*_: Any) -> None:
        running.server.should_exit = True

    quiet = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        on_ready(running)
        running.server.run(sockets=[running.sock])
    finally:
        for sig, handler in quiet.items():
            signal.signal(sig, handler)
        running.stop()


def start_in_thread(config: Any, host: Optional[str] = None, port: int = DEFAULT_PORT,
                    token: Optional[str] = None) -> Running:
    """Serve in a daemon thread (for `serve --ui`); returns once it accepts connections."""
    running = prepare(config, host, port, token)
    thread = threading.Thread(target=running.server.run,
                              kwargs={"sockets": [running.sock]},
                              name="evoclaw-ui", daemon=True)
    running.thread = thread
    thread.start()
    deadline = time.monotonic() + START_TIMEOUT
    while not running.server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            running.stop()
            raise ConfigError("the owner's window did not start")
        time.sleep(0.02)
    return running
