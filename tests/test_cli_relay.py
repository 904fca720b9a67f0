"""The relay: a per-turn command runs in the agent's running `serve` (cli.relay_server)
when it can run there exactly as in its own process, and in its own process otherwise.

Every fast form of tests/test_cli_fast.py runs through the console script twice, each on
its own copy of the same memory: once with a relay listening on the copy (a real
RelayServer on a real Unix socket, in this test's process as in serve's), once without;
stdout, stderr and exit status must be the same, and the relay must have run exactly the
forms it should. Then the configuration (the CLI's, not serve's), the refusals (another time
zone, a relative --home, a stale socket, a serve that never takes the connection or goes away
mid-command) and the real `serve` process's socket and log lines.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Iterator, Optional

import pytest
import test_cli_fast
from test_cli_fast import CASES, FAST, _env, _normal, _script

from evoclaw_memory.cli import relay
from evoclaw_memory.cli.relay_server import RelayServer
from evoclaw_memory.memory import Memory


@contextlib.contextmanager
def relaying(agent_id: str, home: str) -> Iterator[Optional[RelayServer]]:
    """A relay listening for the block, as serve runs one (None when it would be off)."""
    server = RelayServer(agent_id, home)
    if server.start() is not None:
        yield None
        return
    try:
        yield server
    finally:
        server.close()


seeded = test_cli_fast.seeded      # the same seeded memory (one holds a terminal escape)


@pytest.fixture
def agent_home(seeded, tmp_path, monkeypatch) -> Path:
    """A copy of the seeded memory, with this process's environment made the CLI's."""
    home = tmp_path / "home"
    shutil.copytree(seeded, home)
    _same_env_as_cli(monkeypatch, home)
    return home


def _in_another_time_zone(home: Path) -> dict[str, str]:
    """The CLI's environment with another TZ than this process's: serve declines."""
    env = _env(home)
    env["TZ"] = "Pacific/Auckland" if os.environ.get("TZ") != "Pacific/Auckland" else "UTC"
    return env


def _same_env_as_cli(monkeypatch, home: Path) -> None:
    """This process's EVOCLAW_*/TURSO_* as the CLI's (_env), so that only what a test sets
    differs between the serve side and the CLI (which sends its own; serve reads that)."""
    for name in list(os.environ):
        if name.startswith(relay.ENV_PREFIXES):
            monkeypatch.delenv(name)
    monkeypatch.setenv("EVOCLAW_HOME", str(home))


def _places(where: Path, home: Path) -> dict[str, Path]:
    plain_file = where / "a-file"
    plain_file.write_text("not a folder\n")
    config = where / "config.toml"
    config.write_text('agent_id = "default"\n')
    return {"{home}": home, "{file}": plain_file, "{under_file}": plain_file / "sub",
            "{config}": config}


def _cli(argv: list[str], stdin, home: Path, where: Path, env: dict | None = None):
    args = []
    for arg in argv:
        for place, value in _places(where, home).items():
            arg = arg.replace(place, str(value))
        args.append(arg)
    proc = subprocess.run([_script(), *args], input=stdin, capture_output=True, text=True,
                          env=env or _env(home), timeout=60, cwd=where)
    return _normal(proc.stdout, where), _normal(proc.stderr, where), proc.returncode


RELAYED = [c for c in CASES if c[2] == FAST]


@pytest.mark.parametrize("argv,stdin,path", RELAYED,
                         ids=[" ".join(c[0])[:60] or "(none)" for c in RELAYED])
def test_a_relayed_command_prints_what_its_own_process_prints(argv, stdin, path, seeded,
                                                              tmp_path, monkeypatch):
    results, served = [], 0
    for side in ("relayed", "own"):
        where = tmp_path / side
        home = where / "home"
        shutil.copytree(seeded, home)
        if side == "relayed":
            _same_env_as_cli(monkeypatch, home)
            with relaying("default", str(home)) as server:
                assert server is not None
                results.append(_cli(argv, stdin, home, where))
                served = server.served
        else:
            results.append(_cli(argv, stdin, home, where))
    assert results[0] == results[1]
    assert "Traceback" not in results[0][1]
    # Runs elsewhere: another agent's command, a home the relay does not listen in (the
    # last --home, before or after the command, is the one the command uses).
    homes = [value for flag, value in zip(argv, argv[1:]) if flag == "--home"]
    elsewhere = "other" in argv or bool(homes and homes[-1] != "{home}")
    assert served == (0 if elsewhere else 1)


def test_a_stored_escape_is_shown_escaped_through_the_relay(agent_home, tmp_path):
    home = agent_home
    with relaying("default", str(home)) as server:
        out, err, status = _cli(["retrieve", "shed key"], None, home, tmp_path)
        assert server is not None and server.served == 1
    assert status == 0 and "\x1b" not in out and "\\x1b]0;pwned\\x07" in out


def test_another_time_zone_or_a_relative_home_runs_in_its_own_process(agent_home, tmp_path):
    home = agent_home
    env = _in_another_time_zone(home)
    with relaying("default", str(home)) as server:
        out, _, status = _cli(["store", "--text", "Tulips go in the front bed"], None, home,
                              tmp_path, env=env)
        assert server is not None and server.served == 0        # local dates could differ
        rel = _cli(["--home", "home", "retrieve", "tulips"], None, home, tmp_path)
        assert server.served == 0                # relative to the CLI's folder, not serve's
    assert status == 0 and "<id>" in out
    with Memory.open("default", home=home) as mem:
        assert [r.fact.text for r in mem.retrieve("tulips")][:1] == ["Tulips go in the front bed"]
    assert rel[2] == 0


def test_a_relayed_command_reads_the_configuration_of_the_cli(agent_home, tmp_path,
                                                              monkeypatch):
    """serve's own environment (systemd's, with service.env) is not the caller's: a relayed
    command is configured from the CLI's (here its EVOCLAW_WORKSPACE, which serve lacks)."""
    home = agent_home
    monkeypatch.setenv("TURSO_AUTH_TOKEN", "serve-only-token")
    env = _env(home)
    env["EVOCLAW_WORKSPACE"] = str(tmp_path / "the-cli-workspace")
    with relaying("default", str(home)) as server:
        out, err, status = _cli(["hot", "--rebuild"], None, home, tmp_path, env=env)
        assert server is not None and server.served == 1
    assert (status, err) == (0, "")
    assert (tmp_path / "the-cli-workspace" / "MEMORY.md").is_file()
    assert out.strip() == "<where>/the-cli-workspace/MEMORY.md"


def test_a_stale_socket_is_ignored_by_the_cli_and_replaced_by_serve(agent_home, tmp_path):
    home = agent_home
    path = relay.socket_path(str(home), "default")
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(path)
    dead.close()                                 # the file stays; nothing listens
    assert os.path.exists(path)
    out, _, status = _cli(["retrieve", "garden hose"], None, home, tmp_path)
    assert status == 0 and "garden hose is in the shed" in out
    with relaying("default", str(home)) as server:
        assert server is not None
        assert _cli(["retrieve", "garden hose"], None, home, tmp_path)[0] == out
        assert server.served == 1
        assert RelayServer("default", str(home)).start() == \
            f"another serve of this agent answers on {path}"                # a live one stays
    assert not os.path.exists(path)              # removed when the relay closed


def test_a_serve_gone_before_answering_leaves_the_store_to_the_cli(agent_home, tmp_path):
    """The CLI sent its store and the serve went away without a reply: the CLI stores it
    itself (nothing lost), and a second store of the same text would only reinforce it."""
    home = agent_home
    path = relay.socket_path(str(home), "default")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(1)
    got: list[bytes] = []

    def take_and_vanish() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.sendall(relay.READY)
            got.append(relay.read_frame(conn) or b"")     # read the request, answer nothing

    reader = threading.Thread(target=take_and_vanish)
    reader.start()
    try:
        out, err, status = _cli(["store", "--text", "-", "-c", "home/garden"],
                                "Seed potatoes arrive in March\n", home, tmp_path)
    finally:
        reader.join(10)
        listener.close()
    assert got and b"Seed potatoes" in got[0]       # it did go to the "serve" first
    assert (status, err) == (0, "") and "<id>" in out
    with Memory.open("default", home=home) as mem:
        texts = [f.text for f in mem.facts(limit=100)]
    assert texts.count("Seed potatoes arrive in March") == 1


def test_a_serve_that_never_takes_the_connection_costs_a_wait_not_the_command(agent_home,
                                                                             tmp_path):
    """A stopped or wedged serve: the kernel still accepts into the listen backlog, but no
    worker says READY, so the CLI sends nothing, waits READY_TIMEOUT and stores it itself;
    the request, never sent, cannot run later."""
    home = agent_home
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(relay.socket_path(str(home), "default"))
    listener.listen(1)                  # listening, never accepting: a SIGSTOPped serve
    try:
        started = time.monotonic()
        out, err, status = _cli(["store", "--text", "-"], "Frost cloth is in the garage\n",
                                home, tmp_path)
        waited = time.monotonic() - started
        pending, _ = listener.accept()
        with pending:
            pending.settimeout(1)
            assert pending.recv(100) == b""                 # the CLI sent no request
    finally:
        listener.close()
    assert (status, err) == (0, "") and "<id>" in out
    assert relay.READY_TIMEOUT <= waited < relay.READY_TIMEOUT + 30
    with Memory.open("default", home=home) as mem:
        assert "Frost cloth is in the garage" in [f.text for f in mem.facts(limit=100)]


def test_a_declined_piped_store_still_reads_its_stdin(agent_home, tmp_path):
    home = agent_home
    env = _in_another_time_zone(home)
    with relaying("default", str(home)) as server:
        _, _, status = _cli(["store", "--text", "-"], "Piped and declined\n", home, tmp_path,
                            env=env)
        assert server is not None and server.served == 0
    assert status == 0
    with Memory.open("default", home=home) as mem:
        assert "Piped and declined" in [f.text for f in mem.facts(limit=100)]


def test_a_peer_that_stalls_after_ready_frees_its_worker(agent_home, tmp_path, monkeypatch):
    """A connection that takes READY and sends nothing (a stopped CLI, or not a CLI at all)
    is dropped after PEER_TIMEOUT, and the worker serves the next command."""
    from evoclaw_memory.cli import relay_server
    monkeypatch.setattr(relay_server, "PEER_TIMEOUT", 0.5)
    monkeypatch.setattr(relay_server, "MAX_WORKERS", 1)
    with relaying("default", str(agent_home)) as server:
        assert server is not None
        stalled = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        stalled.connect(relay.socket_path(str(agent_home), "default"))
        try:
            stalled.settimeout(5)
            assert stalled.recv(1) == relay.READY                  # it holds the one worker
            assert stalled.recv(1) == b""                          # ... until dropped
            out, _, status = _cli(["retrieve", "oolong"], None, agent_home, tmp_path)
        finally:
            stalled.close()
        assert status == 0 and "oolong tea" in out and server.served == 1


def test_a_request_from_another_installation_is_declined(tmp_path):
    from evoclaw_memory.cli.relay_server import run_request
    request = {"protocol": relay.PROTOCOL, "installation": "0.0.1 /elsewhere",
               "argv": ["hot"], "env": relay.relevant_env(os.environ), "stdin": None}
    assert run_request(request, "default", str(tmp_path)) == {
        "declined": "another installation or version"}
    assert "declined" in run_request({"protocol": 99}, "default", str(tmp_path))
    assert "declined" in run_request(None, "default", str(tmp_path))


def test_the_relay_client_imports_nothing_of_the_library(tmp_path):
    """What a relayed run loads: the package's empty top, cli, main and relay; no store,
    no msgspec, no typing (the point of the relay is to skip them)."""
    code = ("import sys\n"
            "from evoclaw_memory.cli import relay\n"
            "relay.offer(['--home', sys.argv[1], 'hot'])\n"       # no socket: returns
            "print(sorted(sys.modules))\n")
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    loaded = set(eval(proc.stdout.splitlines()[-1]))
    assert "evoclaw_memory.cli.relay" in loaded
    ours = {m for m in loaded if m.startswith("evoclaw_memory")}
    assert ours == {"evoclaw_memory", "evoclaw_memory.cli", "evoclaw_memory.cli.main",
                    "evoclaw_memory.cli.relay", "evoclaw_memory.limits"}
    assert not loaded & {"msgspec", "typing", "sqlite3", "datetime", "click"}


def _start_serve(env: dict, log_path) -> subprocess.Popen:
    """The real `serve` (no sync, no consolidation), logging to `log_path`."""
    with open(log_path, "wb") as out:
        return subprocess.Popen([_script(), "serve", "--no-sync", "--no-consolidate"], env=env,
                                stdout=subprocess.DEVNULL, stderr=out, stdin=subprocess.DEVNULL)


def _wait_started(proc: subprocess.Popen, log_path) -> None:
    """Until serve logs that it started (or exits, or 30 s pass)."""
    deadline = time.monotonic() + 30
    while "started:" not in log_path.read_text() and proc.poll() is None \
            and time.monotonic() < deadline:
        time.sleep(0.05)


def test_serve_runs_the_cli_commands_while_it_lives(seeded, tmp_path):
    """The real `serve` process: its socket appears with a log line, a store through it
    lands in the memory, and the socket is gone after SIGTERM."""
    home = tmp_path / "home"
    shutil.copytree(seeded, home)
    env = _env(home)
    log_path = tmp_path / "serve.log"
    proc = _start_serve(env, log_path)
    path = relay.socket_path(str(home), "default")
    try:
        _wait_started(proc, log_path)
        assert f"; CLI relay on {path}" in log_path.read_text()
        assert oct(os.stat(path).st_mode & 0o777) == "0o600"
        out, err, status = _cli(["store", "--text", "Compost is turned on Sundays"], None,
                                home, tmp_path)
        assert (status, err) == (0, "")
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    assert not os.path.exists(path)
    assert "stopped on SIGTERM; 1 CLI command(s) relayed; outbox" in log_path.read_text()
    with Memory.open("default", home=home) as mem:
        assert "Compost is turned on Sundays" in [f.text for f in mem.facts(limit=100)]


def test_a_long_socket_path_is_reached_through_its_folder(seeded, tmp_path, monkeypatch):
    """sun_path holds ~108 bytes; a home deeper than that still gets its relay (Linux)."""
    home = tmp_path / ("d" * 60) / ("e" * 60) / "home"
    shutil.copytree(seeded, home)
    _same_env_as_cli(monkeypatch, home)
    assert len(relay.socket_path(str(home), "default")) > 150
    server = RelayServer("default", str(home))
    assert server.start() is None
    try:
        out, _, status = _cli(["retrieve", "oolong"], None, home, tmp_path)
        assert status == 0 and "oolong tea" in out and server.served == 1
    finally:
        server.close()
    assert not os.path.exists(relay.socket_path(str(home), "default"))


def test_serve_says_in_its_started_line_why_its_relay_is_off(agent_home):
    """Another serve of the same agent holds the socket: this one runs without a relay and
    its first log line says so (the other keeps its socket)."""
    from evoclaw_memory.agent.service import Service
    path = relay.socket_path(str(agent_home), "default")
    other = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    other.bind(path)
    other.listen(1)
    try:
        with Memory.open("default", home=agent_home) as mem:
            service = Service(mem, sync=False, consolidate=False,
                              relay=RelayServer("default", str(agent_home)))
            runner = threading.Thread(target=service.run)
            runner.start()
            deadline = time.monotonic() + 30
            while not service.actions and time.monotonic() < deadline:
                time.sleep(0.01)
            service.stop("test")
            runner.join(30)
        assert service.actions[0].endswith(
            f"; CLI relay off (another serve of this agent answers on {path})")
        assert service.actions[-1].startswith("stopped on test; outbox ")     # none relayed
        assert os.path.exists(path)
    finally:
        other.close()


# -- however the agent and home were chosen (issue 27, item 6) -------------------------------

def _config_agent(home: Path, agent: str = "sam", name: str = "config.toml") -> Path:
    """The README's way of choosing the agent: config.toml, written as a person writes it."""
    path = home / name
    path.write_text(
        f'# this device\nagent_id = "{agent}"   # the agent\n\n[warm]\nmax_bytes = 4000000\n')
    return path


@pytest.mark.parametrize("how", ["config.toml", "--config", "EVOCLAW_AGENT_ID",
                                 "--agent-id after the command",
                                 "--home and --agent-id after the command"])
def test_a_command_for_the_agent_serve_serves_is_relayed_however_it_was_chosen(
        how, agent_home, tmp_path):
    home, env = agent_home, _env(agent_home)
    before: list[str] = []          # the options before the command, and after it
    after: list[str] = []
    if how == "config.toml":
        _config_agent(home)
    elif how == "--config":
        before = ["--config", str(_config_agent(tmp_path, name="sam.toml"))]
    elif how == "EVOCLAW_AGENT_ID":
        env["EVOCLAW_AGENT_ID"] = "sam"
    elif how == "--agent-id after the command":
        after = ["--agent-id", "sam"]
    else:
        env["EVOCLAW_HOME"] = str(tmp_path / "elsewhere")
        after = ["--home", str(home), "--agent-id", "sam"]
    Memory.open("sam", home=home).close()          # serve has opened its agent's memory
    with relaying("sam", str(home)) as server:
        out, err, status = _cli([*before, "store", "--text", "Sam waters the ferns on Fridays",
                                 *after], None, home, tmp_path, env=env)
        found = _cli([*before, "retrieve", "ferns", *after], None, home, tmp_path, env=env)
        assert server is not None and server.served == 2       # both ran in the relay
        assert server.summary() == "2 CLI command(s) relayed"
    assert (status, err) == (0, "") and "<id>" in out
    assert found[2] == 0 and "Sam waters the ferns on Fridays" in found[0]
    with Memory.open("sam", home=home) as mem:
        assert [f.text for f in mem.facts(limit=10)] == ["Sam waters the ferns on Fridays"]


def test_the_socket_is_found_from_flags_anywhere_before_the_double_dash(tmp_path,
                                                                        monkeypatch):
    for name in ("EVOCLAW_HOME", "EVOCLAW_AGENT_ID"):
        monkeypatch.delenv(name, raising=False)
    at = relay._socket_for
    assert at(["store", "--text", "x", "--home", "/h", "--agent-id", "sam"]) == \
        "/h/agents/sam/serve.sock"
    assert at(["--home", "/a", "--agent-id", "x", "retrieve", "q", "--agent-id=y"]) == \
        "/a/agents/y/serve.sock"                                # the command's flag wins
    assert at(["--home", "/a", "retrieve", "--", "--home", "/b", "--agent-id", "z"]) == \
        "/a/agents/default/serve.sock"                          # after -- is an argument
    assert at(["retrieve", "q", "--home", "rel"]) is None       # relative: not relayed
    monkeypatch.setenv("EVOCLAW_HOME", str(tmp_path))
    _config_agent(tmp_path, "kim")
    assert at(["hot"]) == str(tmp_path / "agents" / "kim" / "serve.sock")
    monkeypatch.setenv("EVOCLAW_AGENT_ID", "lee")               # the environment wins
    assert at(["hot"]) == str(tmp_path / "agents" / "lee" / "serve.sock")


@pytest.mark.parametrize("text,agent", [
    ('agent_id = "sam"\n', "sam"),
    ("agent_id='sam'  # literal\n", "sam"),
    ('"agent_id" = "sam"\n', "sam"),
    ('# agent_id = "old"\n\n[cloud]\nurl = "http://x"\n', None),
    ('[llm]\nmodel = "m"\nagent_id = "sam"\n', None),            # not top level
    ('agent_id = "s\\u0061m"\n', "sam"),                         # an escape: tomllib
    ('notes = """\n[x]\n"""\nagent_id = "sam"\n', "sam"),        # multi-line: tomllib
    ('agent_id = "sam" x\n', None),                              # not TOML at all
    ("workspace = '/w'\n", None),
])
def test_the_agent_in_a_config_file_is_read_as_toml_reads_it(text, agent, tmp_path):
    path = tmp_path / "config.toml"
    path.write_text(text)
    assert relay.configured_agent(str(path)) == agent


def test_reading_the_agent_from_config_toml_imports_no_toml_parser(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    _config_agent(home)
    code = ("import sys\n"
            "from evoclaw_memory.cli import relay\n"
            "before = set(sys.modules)\n"
            "print(relay._socket_for(['hot']))\n"
            "print(sorted(set(sys.modules) - before))\n")
    env = {**_env(home), "EVOCLAW_HOME": str(home)}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, env=env)
    assert proc.returncode == 0, proc.stderr
    path, modules = proc.stdout.splitlines()[-2:]
    assert path == str(home / "agents" / "sam" / "serve.sock")
    assert eval(modules) == []              # tomllib would bring typing, datetime, re...


def _doctor_relay(home: Path, tmp_path: Path, env: dict | None = None) -> dict:
    proc = subprocess.run([_script(), "doctor", "--offline", "--json"], capture_output=True,
                          text=True, env=env or _env(home), timeout=60, cwd=tmp_path)
    import json
    checks = {c["name"]: c for c in json.loads(proc.stdout)["checks"]}
    return checks["relay"]


def test_serve_of_a_config_toml_agent_relays_counts_and_doctor_sees_it(seeded, tmp_path):
    """The reported case end to end: the agent is chosen in config.toml only; the real serve
    runs the CLI's store, doctor names its pid and socket, and the stop line counts what it
    ran and what it declined (a command from another time zone runs in its own process)."""
    home = tmp_path / "home"
    shutil.copytree(seeded, home)
    _config_agent(home)
    env = _env(home)
    path = relay.socket_path(str(home), "sam")
    assert _doctor_relay(home, tmp_path) == {
        "name": "relay", "ok": True, "fix": "",
        "detail": "no relay: no `serve` runs for agent sam (each per-turn command starts its "
                  "own process)"}
    log_path = tmp_path / "serve.log"
    proc = _start_serve(env, log_path)
    try:
        _wait_started(proc, log_path)
        assert f"; CLI relay on {path}" in log_path.read_text()
        out_, err, status = _cli(["store", "--text", "Kim feeds the cat at six"], None, home,
                                 tmp_path)
        assert (status, err) == (0, "")
        assert _cli(["hot"], None, home, tmp_path, env=_in_another_time_zone(home))[2] == 0
        check = _doctor_relay(home, tmp_path)
        assert check["ok"] and check["detail"] == (
            f"active: serve (pid {proc.pid}) relays agent sam's per-turn commands on {path}; "
            "1 relayed, 1 declined since it started")
        other_tz = _doctor_relay(home, tmp_path, env=_in_another_time_zone(home))
        assert not other_tz["ok"] and other_tz["detail"].endswith(
            "declines this agent's commands from here: another HOME or TZ")
        assert other_tz["fix"] == "run serve with the same HOME and TZ as the agent"
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    log = log_path.read_text()
    assert "relay: a CLI command runs in its own process (declined: another HOME or TZ)" in log
    assert "stopped on SIGTERM; 1 CLI command(s) relayed, 1 declined (1 another HOME or TZ); " \
           "outbox" in log
    with Memory.open("sam", home=home) as mem:
        assert [f.text for f in mem.facts(limit=10)] == ["Kim feeds the cat at six"]


def test_doctor_fails_the_relay_check_for_a_serve_that_takes_no_command(agent_home,
                                                                      tmp_path):
    path = relay.socket_path(str(agent_home), "default")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(4)                  # listening, never accepting: a SIGSTOPped serve
    try:
        check = _doctor_relay(agent_home, tmp_path)
    finally:
        listener.close()
    assert not check["ok"] and check["detail"].startswith(f"a serve holds {path} but does not")
    assert check["fix"] == "restart serve (e.g. `systemctl restart evoclaw-memory@default`)"
    stale = _doctor_relay(agent_home, tmp_path)                  # the file is left behind
    assert stale["ok"] and stale["detail"].startswith(f"no relay: nothing answers on {path}")

