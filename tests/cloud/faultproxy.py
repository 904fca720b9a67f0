"""A small fault-injecting HTTP proxy for loopback tests (threads, stdlib only).

It sits between a client and a real sqld and, per request, either passes it through or
misbehaves the way networks and servers do. Modes can be switched at any time, for the next
N requests only or until switched again:

    pass           forward the request and relay the answer
    drop           read the request, close the connection without forwarding or answering
    drop_response  forward (the server does the work), then close without answering
    delay          wait `delay` seconds (past the client's timeout), then pass
    http500        answer 500 without forwarding
    http429        answer 429 (with Retry-After: `retry_after` if set) without forwarding
    down           refuse connections: the listening socket is closed (not per request)
"""

from __future__ import annotations

import http.client
import socket
import threading
from collections import Counter
from urllib.parse import urlsplit, urlunsplit

MODES = ("pass", "drop", "drop_response", "delay", "http500", "http429", "down")
_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length",
               "proxy-connection", "te", "trailer", "upgrade"}
_MAX_HEADER = 64 * 1024


class FaultProxy:
    """Proxy 127.0.0.1:<port> to upstream_host:upstream_port with switchable faults."""

    def __init__(self, upstream_port: int, upstream_host: str = "127.0.0.1", *,
                 delay: float = 2.0, retry_after: str | None = "0", max_connections: int = 32):
        self.upstream = (upstream_host, upstream_port)
        self.delay = delay
        self.retry_after = retry_after
        self.max_connections = max_connections
        self.counts: Counter[str] = Counter()  # requests seen, by the mode applied to them
        self.accepted = 0  # TCP connections accepted: proves (or disproves) connection reuse
        self._mode = "pass"
        self._remaining: int | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._clients: set[socket.socket] = set()
        self._threads: list[threading.Thread] = []
        self._listener: socket.socket | None = None
        self.port = self._listen(0)
        self._acceptor = threading.Thread(target=self._accept_loop, name="faultproxy-accept",
                                          daemon=True)
        self._acceptor.start()

    # ---- control ----------------------------------------------------------------------------

    def url_for(self, url: str) -> str:
        """The same URL (scheme, host name, path) but through this proxy's port."""
        parts = urlsplit(url)
        return urlunsplit(parts._replace(netloc=f"{parts.hostname}:{self.port}"))

    def set_mode(self, mode: str, count: int | None = None) -> None:
        """Apply mode to the next `count` requests (then back to pass), or until changed."""
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; one of {MODES}")
        with self._lock:
            going_down, coming_up = mode == "down", self._mode == "down" and mode != "down"
            self._mode, self._remaining = mode, count
        if going_down:
            self._close_listener()
            self._close_clients()  # the server is gone for open connections too
        elif coming_up:
            self._listen(self.port)

    @property
    def total(self) -> int:
        """Requests seen so far, whatever was done with them."""
        return sum(self.counts.values())

    def close(self) -> None:
        """Stop accepting, drop every connection, and join the threads (bounded wait)."""
        self._stop.set()
        self._close_listener()
        self._close_clients()
        self._acceptor.join(timeout=2)
        for t in list(self._threads):
            t.join(timeout=2)

    def __enter__(self) -> "FaultProxy":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- sockets ----------------------------------------------------------------------------

    def _listen(self, port: int) -> int:
        """Open the listening socket (again, on the same port after "down")."""
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", port))
        s.listen(16)
        s.settimeout(0.1)  # so the accept loop notices close() quickly
        with self._lock:
            self._listener = s
        return s.getsockname()[1]

    def _close_listener(self) -> None:
        with self._lock:
            listener, self._listener = self._listener, None
        if listener is not None:
            listener.close()

    def _close_clients(self) -> None:
        with self._lock:
            clients, self._clients = list(self._clients), set()
        for c in clients:
            _hard_close(c)

    def _accept_loop(self) -> None:
        while not self._stop.is_set():
            with self._lock:
                listener = self._listener
            if listener is None:  # "down": wait to be brought back up
                self._stop.wait(0.05)
                continue
            try:
                conn, _ = listener.accept()
            except (socket.timeout, OSError):
                continue
            with self._lock:
                self._threads = [t for t in self._threads if t.is_alive()]
                if len(self._threads) >= self.max_connections:
                    _hard_close(conn)
                    continue
                self._clients.add(conn)
                self.accepted += 1
                t = threading.Thread(target=self._serve, args=(conn,), daemon=True,
                                     name="faultproxy-conn")
                self._threads.append(t)
            t.start()

    # ---- one client connection ----------------------------------------------------------------

    def _take_mode(self) -> str:
        """The mode for this request, counting down a limited fault."""
        with self._lock:
            mode = self._mode
            if self._remaining is not None:
                self._remaining -= 1
                if self._remaining <= 0:
                    self._mode, self._remaining = "pass", None
            self.counts[mode] += 1
            return mode

    def _serve(self, conn: socket.socket) -> None:
        """Serve keep-alive requests on one client connection until it or we close."""
        conn.settimeout(0.2)
        upstream: http.client.HTTPConnection | None = None
        buf = b""
        try:
            while not self._stop.is_set():
                request, buf = _read_request(conn, buf, self._stop)
                if request is None:
                    return
                mode = self._take_mode()
                if mode in ("drop", "down"):
                    return
                if mode == "http500":
                    conn.sendall(_response(500, "Internal Server Error", [],
                                           b'{"error":"injected fault"}'))
                    continue
                if mode == "http429":
                    extra = [("Retry-After", self.retry_after)] if self.retry_after else []
                    conn.sendall(_response(429, "Too Many Requests", extra,
                                           b'{"error":"injected rate limit"}'))
                    continue
                if mode == "delay" and self._stop.wait(self.delay):
                    return
                upstream, answer = self._forward(upstream, *request)
                if mode == "drop_response":
                    return
                conn.sendall(answer)
        except OSError:
            return
        finally:
            if upstream is not None:
                upstream.close()
            with self._lock:
                self._clients.discard(conn)
            _hard_close(conn)

    def _forward(self, upstream, method, path, headers, body):
        """Send one request upstream (reconnecting once if the kept connection went stale)."""
        for attempt in (1, 2):
            if upstream is None:
                upstream = http.client.HTTPConnection(*self.upstream, timeout=30)
            try:
                # The client's Host header goes through untouched: sqld picks the namespace
                # (database) from it.
                upstream.request(method, path, body=body, headers=headers)
                resp = upstream.getresponse()
                data = resp.read()
                keep = [(k, v) for k, v in resp.getheaders() if k.lower() not in _HOP_BY_HOP]
                return upstream, _response(resp.status, resp.reason, keep, data)
            except (http.client.HTTPException, OSError):
                upstream.close()
                upstream = None
                if attempt == 2:
                    return None, _response(502, "Bad Gateway", [], b'{"error":"upstream down"}')
        raise AssertionError("unreachable")


def _read_request(conn: socket.socket, buf: bytes, stop: threading.Event):
    """Read one HTTP/1.1 request with a Content-Length body; (None, b"") at EOF or stop."""
    while b"\r\n\r\n" not in buf:
        if stop.is_set() or len(buf) > _MAX_HEADER:
            return None, b""
        try:
            chunk = conn.recv(65536)
        except socket.timeout:
            continue
        if not chunk:
            return None, b""
        buf += chunk
    head, _, rest = buf.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = lines[0].split(" ", 2)
    headers, length = {}, 0
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.lower() == "content-length":
            length = int(value)
        elif name.lower() not in _HOP_BY_HOP:
            headers[name.strip()] = value.strip()
    while len(rest) < length:
        if stop.is_set():
            return None, b""
        try:
            chunk = conn.recv(65536)
        except socket.timeout:
            continue
        if not chunk:
            return None, b""
        rest += chunk
    return (method, path, headers, rest[:length]), rest[length:]


def _response(status: int, reason: str, headers: list[tuple[str, str]], body: bytes) -> bytes:
    """Serialise a keep-alive HTTP/1.1 response with a Content-Length body."""
    lines = [f"HTTP/1.1 {status} {reason}"]
    lines += [f"{k}: {v}" for k, v in headers]
    lines += [f"Content-Length: {len(body)}", "Connection: keep-alive", "", ""]
    return "\r\n".join(lines).encode("latin-1") + body


def _hard_close(sock: socket.socket) -> None:
    """Close a socket now, waking any thread blocked on it."""
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()
