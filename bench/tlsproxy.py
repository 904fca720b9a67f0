"""A loopback proxy in front of sqld that counts what crosses it: TCP connections (with TLS
on, each one is a TLS handshake) and HTTP requests (`POST /v2/pipeline` request lines).

With `tls=True` it terminates TLS with a self-signed certificate for 127.0.0.1 made by
`cryptography` (written to `cert_file`; point SSL_CERT_FILE at it so httpx trusts it, with
full verification as against Turso) and forwards plain HTTP to sqld: what a client pays
over the internet (a handshake per new connection) without leaving the machine.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import socket
import ssl
import threading
from pathlib import Path

REQUEST_LINE = b"POST /v2/pipeline HTTP/1.1"


def self_signed(folder: Path) -> tuple[Path, Path]:
    """(certificate, key) PEM files for 127.0.0.1 / localhost / *.localhost."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "evoclaw bench loopback")])
    now = dt.datetime.now(dt.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([
                x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost"),
                x509.DNSName("*.localhost")]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    folder.mkdir(parents=True, exist_ok=True)
    cert_file, key_file = folder / "loopback-cert.pem", folder / "loopback-key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_file, key_file


class CountingProxy:
    """127.0.0.1:<port> -> upstream; counts connections (handshakes) and pipeline requests."""

    def __init__(self, upstream_port: int, folder: Path, tls: bool = False):
        self.upstream = ("127.0.0.1", upstream_port)
        self.tls = tls
        self.connections = 0
        self.requests = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._context = None
        self.cert_file = None
        if tls:
            self.cert_file, key_file = self_signed(folder)
            self._context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self._context.load_cert_chain(self.cert_file, key_file)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.2)
        self.port = self._listener.getsockname()[1]
        self._thread = threading.Thread(target=self._accept, daemon=True, name="bench-proxy")
        self._thread.start()

    def url_for(self, url: str) -> str:
        """The sqld URL (host name kept: it picks the namespace) through this proxy."""
        from urllib.parse import urlsplit, urlunsplit
        parts = urlsplit(url)
        return urlunsplit(parts._replace(scheme="https" if self.tls else "http",
                                         netloc=f"{parts.hostname}:{self.port}"))

    def counts(self) -> tuple[int, int]:
        with self._lock:
            return self.requests, self.connections

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2)
        self._listener.close()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except (socket.timeout, OSError):
                continue
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            conn.settimeout(30)
            if self._context is not None:
                conn = self._context.wrap_socket(conn, server_side=True)   # the handshake
            upstream = socket.create_connection(self.upstream, timeout=30)
        except (OSError, ssl.SSLError):
            conn.close()
            return
        for s in (conn, upstream):      # forward each write at once (no Nagle/delayed-ACK stall)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self._lock:
            self.connections += 1
        back = threading.Thread(target=self._pump, args=(upstream, conn, False), daemon=True)
        back.start()
        self._pump(conn, upstream, True)
        back.join(5)

    def _pump(self, src: socket.socket, dst: socket.socket, client_side: bool) -> None:
        tail = b""
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if client_side:
                    seen = tail + data
                    with self._lock:
                        self.requests += seen.count(REQUEST_LINE)
                    tail = seen[-(len(REQUEST_LINE) - 1):]
                dst.sendall(data)
        except (OSError, ssl.SSLError):
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()
