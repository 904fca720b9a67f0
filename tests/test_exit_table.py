"""Every row of the exit-status table (cli.plain.EXIT_TABLE, which docs/cli.md renders) is
what the CLI really does (issue 27, item 9).

Each status is provoked through the installed console script (its real entry point: the
relay offer, the click-free fast path, then click) with --json, and both the exit status
and the JSON error's `code` are checked against the row. A row nobody provokes fails
`test_every_row_is_provoked`, so the table cannot grow a status the CLI never gives.
"""

from __future__ import annotations

import json
import os
import pty
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Optional

import pytest

from evoclaw_memory import errors
from evoclaw_memory.cli import plain
from evoclaw_memory.cli.plain import EXIT_TABLE

Outcome = tuple[int, Optional[dict]]        # (exit status, the JSON document on stdout)
PROVOKERS: dict[int, Callable[[Path], list[Outcome]]] = {}
ROWS = {row[0]: row for row in EXIT_TABLE}


def provokes(status: int):
    def register(f: Callable[[Path], list[Outcome]]):
        PROVOKERS[status] = f
        return f
    return register


def script_path() -> str:
    found = Path(sys.executable).parent / "evoclaw-memory"
    return str(found) if found.exists() else (shutil.which("evoclaw-memory") or "evoclaw-memory")


def environment(home: Path, extra: Optional[dict] = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TURSO_", "EVOCLAW_"))}
    env.update(extra or {}, EVOCLAW_HOME=str(home))
    return env


def cli(home: Path, *args: str, extra: Optional[dict] = None, stdin=subprocess.DEVNULL,
        timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([script_path(), *args], stdin=stdin, capture_output=True, text=True,
                          env=environment(home, extra), timeout=timeout)


def outcome(proc: subprocess.CompletedProcess) -> Outcome:
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    return proc.returncode, (json.loads(lines[-1]) if lines else None)


def translated(exc: BaseException) -> Outcome:
    """What the CLI prints and returns for `exc` (cli.plain.report: the function every
    command's exception goes through, on the click path and the fast path alike)."""
    printed: list[str] = []
    status = plain.report(exc, True, lambda message="", err=False, nl=True:
                          None if err else printed.append(message))
    return status, json.loads(printed[-1])


# -- the rows ----------------------------------------------------------------------------------

@provokes(0)
def done(home: Path) -> list[Outcome]:
    return [outcome(cli(home, "store", "--text", "Biscuit likes carrots", "--json"))]


@provokes(1)
def other(home: Path) -> list[Outcome]:
    # A question answered no: on a terminal, revoking a device asks first.
    me = json.loads(cli(home, "sync", "--status", "--json").stdout)["device_id"]
    leader, follower = pty.openpty()
    try:
        proc = subprocess.Popen([script_path(), "devices", "revoke", me, "--this-device",
                                 "--json"], stdin=follower, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=environment(home))
        os.close(follower)
        os.write(leader, b"n\n")
        out, err = proc.communicate(timeout=60)
    finally:
        os.close(leader)
    assert "Revoke" in err                     # it did ask
    aborted = outcome(subprocess.CompletedProcess([], proc.returncode, out, err))
    # No command raises the bare EvoclawError on purpose (each failure has its own class);
    # what the CLI does with one is checked through the translation every error takes.
    return [aborted, translated(errors.EvoclawError("something else failed"))]


@provokes(2)
def usage(home: Path) -> list[Outcome]:
    cli(home, "store", "--text", "Tea at noon")
    me = json.loads(cli(home, "sync", "--status", "--json").stdout)["device_id"]
    return [outcome(cli(home, "get", "--no-such-flag", "--json")),
            outcome(cli(home, "no-such-command", "--json")),
            # "needs --yes" is a usage error everywhere (no terminal to ask on)
            outcome(cli(home, "forget", "--matching", "tea", "--json")),
            outcome(cli(home, "devices", "revoke", me, "--this-device", "--json"))]


@provokes(3)
def not_found(home: Path) -> list[Outcome]:
    return [outcome(cli(home, "get", "0123456789abcdef", "--json")),
            outcome(cli(home, "distill", "--file", str(home.parent / "no-such.json"), "--json")),
            outcome(cli(home, "hot", "--complete-task", "no-such-task", "--json"))]


@provokes(4)
def damaged_store(home: Path) -> list[Outcome]:
    assert cli(home, "store", "--text", "Tea at noon").returncode == 0
    db = home / "agents" / "default" / "memory.db"
    for side in db.parent.glob("memory.db-*"):
        side.unlink()
    db.write_bytes(b"this is not a database " * 400)
    return [outcome(cli(home, "list", "--json")),
            outcome(cli(home, "retrieve", "tea", "--json"))]        # the fast path


@provokes(5)
def cloud_failed(home: Path) -> list[Outcome]:
    cli(home, "store", "--text", "Tea at noon")
    dead = {"TURSO_DATABASE_URL": "http://127.0.0.1:9"}          # nothing listens there
    return [outcome(cli(home, "sync", "--json", extra=dead))]


@provokes(6)
def crypto(home: Path) -> list[Outcome]:
    cloud = {"TURSO_DATABASE_URL": str(home.parent / "cloud.db"), "EVOCLAW_ENCRYPTION": "on",
             "EVOCLAW_PASSPHRASE": "the-right-passphrase"}
    assert cli(home, "store", "--text", "Tea at noon", extra=cloud).returncode == 0
    assert cli(home, "key", "init", extra=cloud).returncode == 0
    assert cli(home, "sync", extra=cloud).returncode == 0
    wrong = {**cloud, "EVOCLAW_PASSPHRASE": "a-wrong-passphrase"}
    return [outcome(cli(home.parent / "new-device", "restore", "--json", extra=wrong))]


@provokes(7)
def llm_failed(home: Path) -> list[Outcome]:
    # Not provoked for real: every LLM step of the CLI falls back to rule mode and says so
    # (`distill --llm` / `retrieve --llm` against a dead LLM exit 0: tests/test_setup.py and
    # tests/test_llm_distill.py hold them to that), so only the library's callers see an
    # LLMError; this is what the CLI makes of one.
    return [translated(errors.LLMError("the LLM at http://127.0.0.1:9/v1 failed"))]


@provokes(8)
def invalid(home: Path) -> list[Outcome]:
    return [outcome(cli(home, "store", "--text", "x", "--importance", "7", "--json")),
            outcome(cli(home, "store", "--text", "   ", "--json"))]


@provokes(9)
def configuration(home: Path) -> list[Outcome]:
    typo = {"TURSO_DATABASE_URL": "htps://x"}
    found = [outcome(cli(home, "sync", "--json", extra=typo)),
             outcome(cli(home, "store", "--text", "x", "--json",
                         extra={"EVOCLAW_ENCRYPTION": "sometimes"}))]
    with socket.socket() as busy:                   # `server` on a port another program holds
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        found.append(outcome(cli(home, "server", "--data", str(home.parent / "sqld"),
                                 "--port", str(busy.getsockname()[1]), "--json")))
    assert found[-1][1]["code"] == "port_in_use", found[-1]
    return found


@provokes(70)
def internal(home: Path) -> list[Outcome]:
    # A bug cannot be provoked on purpose; an exception no layer expects is what the
    # translation turns into 70.
    return [translated(RuntimeError("an unexpected state"))]


@provokes(130)
def interrupted(home: Path) -> list[Outcome]:
    # Ctrl-C for real: SIGINT while `store --text -` waits on a pipe that stays open.
    proc = subprocess.Popen([script_path(), "store", "--text", "-", "--json"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=environment(home))
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:          # until it blocks reading stdin
        try:
            if "pipe" in Path(f"/proc/{proc.pid}/wchan").read_text():
                break
        except OSError:
            pass
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    return [outcome(subprocess.CompletedProcess([], proc.returncode, out, err))]


# -- the checks --------------------------------------------------------------------------------

def test_every_row_is_provoked():
    assert sorted(PROVOKERS) == sorted(ROWS)
    assert len(ROWS) == len(EXIT_TABLE)                  # one row per status


@pytest.mark.parametrize("status", sorted(ROWS))
def test_the_row_is_what_the_cli_does(status, tmp_path):
    _, codes, meaning = ROWS[status]
    assert meaning
    seen = set()
    for exit_status, doc in PROVOKERS[status](tmp_path / "home"):
        assert exit_status == status, doc
        if status == 0:
            assert doc is not None and "error" not in doc
            continue
        assert doc is not None and doc["exit"] == status, doc
        assert doc["code"] in codes, doc
        seen.add(doc["code"])
    assert status == 0 or seen


def test_every_error_class_has_its_row():
    """Every EvoclawError's (exit status, --json code) is in the table."""
    pairs = {(status, code) for status, codes, _ in EXIT_TABLE for code in codes}
    classes = [cls for cls in vars(errors).values()
               if isinstance(cls, type) and issubclass(cls, errors.EvoclawError)]
    assert len(classes) > 10
    for cls in classes:
        assert (cls.exit_code, cls.code()) in pairs, cls
