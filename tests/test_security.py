"""Hardening: secrets never printed, hostile strings never break or alter the database."""

from __future__ import annotations

import logging
import sqlite3

import pytest
from click.testing import CliRunner

from evoclaw_memory.cli.main import cli

TOKEN = "tok-SECRET-4f9a8b7c6d5e"
API_KEY = "sk-SECRET-0a1b2c3d4e5f"
PASSPHRASE = "pass-SECRET-horse-battery"
SECRETS = (TOKEN, API_KEY, PASSPHRASE)


@pytest.fixture
def env(home, monkeypatch):
    monkeypatch.setenv("TURSO_DATABASE_URL", "http://127.0.0.1:9")     # nothing listens there
    monkeypatch.setenv("TURSO_AUTH_TOKEN", TOKEN)
    monkeypatch.setenv("EVOCLAW_LLM_API_KEY", API_KEY)
    monkeypatch.setenv("EVOCLAW_PASSPHRASE", PASSPHRASE)
    monkeypatch.setenv("EVOCLAW_ENCRYPTION", "off")
    return home


def run(args, input=None):
    result = CliRunner().invoke(cli, args, input=input, catch_exceptions=False)
    return result.exit_code, result.output + (result.stderr if result.stderr_bytes else "")


COMMANDS = [
    ["config", "show"], ["config", "show", "--json"], ["doctor"], ["doctor", "--json"],
    ["store", "--text", "a fact", "--category", "misc", "--json"], ["retrieve", "fact", "--json"],
    ["sync"], ["sync", "--json"], ["sync", "--status", "--json"], ["restore", "--json"],
    ["cold", "--query", "x"], ["cold", "--init"], ["devices", "list"], ["metrics", "--json"],
    ["context", "fact"], ["hot", "--json"], ["key", "init"],
]


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(a))
def test_no_secret_in_any_output_or_log(env, args, caplog):
    caplog.set_level(logging.DEBUG)
    code, out = run(args)
    assert code != 70, out                      # never an internal error
    for secret in SECRETS:
        assert secret not in out
        assert secret not in caplog.text


def test_config_show_marks_secrets(env):
    code, out = run(["config", "show"])
    assert code == 0 and "***" in out


def test_repr_of_config_and_clients_hide_secrets(env):
    from evoclaw_memory import load_config
    from evoclaw_memory.cloud.hrana import HranaClient
    config = load_config()
    assert TOKEN not in repr(config) and API_KEY not in str(config)
    client = HranaClient("http://127.0.0.1:9", TOKEN, retries=0, timeout=0.2)
    try:
        client.execute("SELECT 1")
    except Exception as exc:                    # unreachable: the message names no token
        assert TOKEN not in str(exc) and TOKEN not in repr(exc)
    assert TOKEN not in repr(client)
    client.close()


HOSTILE = ["'; DROP TABLE facts; --", '" OR 1=1 --', "x' UNION SELECT * FROM kv --",
           "../../etc/passwd", "%", "_", "*", "NEAR(a b)", "\\", "1; ATTACH DATABASE 'x' AS y"]


@pytest.mark.parametrize("bad", HOSTILE)
def test_hostile_strings_at_every_entry_point(home, bad, tmp_path, monkeypatch):
    monkeypatch.setenv("EVOCLAW_ENCRYPTION", "off")
    code, out = run(["store", "--text", "Keep me safe", "--category", "misc"])
    assert code == 0, out
    note = tmp_path / "note.md"
    note.write_text(f"- decided to {bad}\n")
    calls = [
        ["store", "--text", bad, "--category", "misc"],
        ["store", "--text", "ok", "--category", bad],
        ["store", "--text", "ok", "--category", "misc", "--url", bad, "--cmd", bad, "--path", bad],
        ["retrieve", bad], ["context", bad], ["search-url", bad], ["get", bad],
        ["supersede", bad, bad], ["tree", "add", bad, bad], ["tree", "remove", bad],
        ["hot", "--update", "owner_profile", f'{{"k": "{bad.replace(chr(92), "")}"}}'],
        ["hot", "--update", bad, "{}"], ["hot", "--complete-task", bad],
        ["extract-metadata", bad], ["validate", str(note)], ["cold", "--query", bad],
        ["cold", "--category", bad], ["devices", "revoke", bad],
        ["--agent-id", bad, "retrieve", "x"], ["retrieve", "x", "--agent-id", bad],
        ["ingest-daily", "--workspace", str(tmp_path / bad.replace("/", "_"))],
    ]
    for args in calls:
        code, out = run(args)
        assert code != 70, (args, out)          # a clear error or a normal answer
        assert "Traceback" not in out
    db = home / "agents" / "default" / "memory.db"
    conn = sqlite3.connect(db)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"facts", "kv", "outbox", "tree_nodes"} <= tables
    assert conn.execute("SELECT count(*) FROM facts WHERE text = 'Keep me safe'").fetchone()[0] == 1
    conn.close()
    assert not (home.parent / "etc").exists()
