"""`evoclaw-memory ui` as an owner runs it: one URL with a fresh token, loopback unless told,
a warning beyond loopback, one clear line without the extra or on a busy port; and the
thread `serve --ui` starts (issue 28, items 1 and 5)."""

from __future__ import annotations

import os
import re
import selectors
import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from evoclaw_memory.ui import EXTRA_MISSING


def _script() -> str:
    return str(Path(sys.executable).parent / "evoclaw-memory")


def _env(home):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("TURSO_", "EVOCLAW_"))}
    env["EVOCLAW_HOME"] = str(home)
    return env


def _first_line(proc, seconds=30.0) -> str:
    """The first stdout line of a running process (fails the test if none comes in time)."""
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    assert sel.select(timeout=seconds), "ui printed no URL"
    return proc.stdout.readline().strip()


URL = re.compile(r"http://127\.0\.0\.1:(\d+)/\?token=([A-Za-z0-9_-]{40,})")


def _check_page(url: str) -> tuple[str, str]:
    """The printed URL is loopback with a token; the page refuses a request without it and
    opens with it (its token then leaves the address). Returns (base URL, token)."""
    match = URL.fullmatch(url)
    assert match, url
    base = f"http://127.0.0.1:{match.group(1)}"
    assert httpx.get(base + "/facts").status_code == 401
    with httpx.Client(follow_redirects=True) as browser:
        page = browser.get(url)
        assert page.status_code == 200 and "Overview" in page.text
        assert str(page.url) == base + "/"                   # the token left the address
        assert browser.get(base + "/sync").status_code == 200
    return base, match.group(2)


@pytest.fixture
def launch(home):
    started = []

    def start(*args):
        proc = subprocess.Popen([_script(), "--agent-id", "cli-agent", "ui", *args],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=_env(home))
        started.append(proc)
        return proc

    yield start
    for proc in started:                 # only the processes this test started, by their id
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


def test_ui_prints_one_url_with_a_fresh_token_and_serves_only_with_it(launch):
    proc = launch("--port", "0")
    _, token = _check_page(_first_line(proc))
    proc.send_signal(signal.SIGINT)                          # Ctrl-C
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert token not in err                                   # no access log holds the token
    second = launch("--port", "0")
    assert _first_line(second).split("token=")[1] != token    # fresh per run


def test_ui_beyond_loopback_needs_the_host_and_warns(launch):
    proc = launch("--host", "0.0.0.0", "--port", "0")
    url = _first_line(proc)
    assert url.startswith("http://0.0.0.0:")
    proc.send_signal(signal.SIGTERM)                         # a service manager's stop
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    warning = [line for line in err.splitlines() if line.startswith("warning:")]
    assert len(warning) == 1 and "reachable from other machines" in warning[0]


def test_ui_on_a_busy_port_says_so_in_one_line(home):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        run = subprocess.run([_script(), "ui", "--port", str(port)], capture_output=True,
                             text=True, env=_env(home), timeout=60)
    assert run.returncode == 9
    assert run.stderr.strip().splitlines() == [
        f"error: cannot listen on 127.0.0.1:{port}: Address already in use; choose another "
        "with --port"]


def test_ui_without_the_extra_names_it_in_one_line(home):
    code = ("import sys; sys.modules['jinja2'] = None; sys.argv = ['evoclaw-memory', 'ui']; "
            "from evoclaw_memory.cli.main import main; main()")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=_env(home), timeout=60)
    assert run.returncode == 9
    assert run.stderr.splitlines() == [f"error: {EXTRA_MISSING}"]
    assert "[ui]" in EXTRA_MISSING


def test_start_in_thread_serves_beside_the_caller_and_stops(home):
    from evoclaw_memory.config import load_config
    from evoclaw_memory.ui.server import start_in_thread
    running = start_in_thread(load_config(home=home, agent_id="thread-agent"), port=0)
    try:
        with httpx.Client(follow_redirects=True) as browser:
            assert browser.get(running.url).status_code == 200
            assert browser.get(f"http://127.0.0.1:{running.port}/tree").status_code == 200
        assert running.memory.actor == "owner:ui"
    finally:
        running.stop()
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"http://127.0.0.1:{running.port}/", timeout=2)


def test_serve_hosts_the_window_beside_its_service_and_stops_it(home):
    proc = subprocess.Popen([_script(), "--agent-id", "served", "serve", "--ui", "--ui-port",
                             "0", "--no-sync", "--no-consolidate"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=_env(home))
    try:
        base, _ = _check_page(_first_line(proc))
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, err
        assert "stopped on SIGTERM" in err
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
    with pytest.raises(httpx.ConnectError):
        httpx.get(base + "/", timeout=2)
