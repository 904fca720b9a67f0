"""A cloud URL that cannot be used must not stop the local memory (issue 27, item 4).

A typo in config.toml's `[cloud] url` or in TURSO_DATABASE_URL: the local commands (store,
retrieve, list, get, context, hot...) work on the local memory and print ONE stderr line
naming where the URL came from; the commands that exist to reach the cloud (sync, restore,
cold, devices, key) fail with the configuration error (exit 9), and doctor fails its
`config` check. The same on the click-free fast path (the console script) and in the
Python API (Memory.open warns; a sync raises ConfigError).
"""

import json
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from click.testing import CliRunner

from evoclaw_memory import Memory
from evoclaw_memory.cli.main import cli
from evoclaw_memory.config import load_config
from evoclaw_memory.errors import ConfigError, UnusableCloudWarning

# (the URL, why it is unusable as the line says it)
BAD_URLS = [("htps://x", "'htps://x' has an unsupported scheme (htps://)"),
            ("libsql//host", "'libsql//host' is neither a URL nor a path"),
            ("http://exa mple", "'http://exa mple' contains a space")]
FROM_ENV = "the environment (TURSO_DATABASE_URL)"
TAIL = "; working locally, sync is off until it is fixed"


def warning_line(source: str, why: str) -> str:
    return f"warning: the cloud URL from {source} is unusable ({why}){TAIL}"


def script_path() -> str:
    found = Path(sys.executable).parent / "evoclaw-memory"
    return str(found) if found.exists() else (shutil.which("evoclaw-memory") or "evoclaw-memory")


def with_url(home: Path, url: str, where: str) -> dict[str, str]:
    """The URL set in config.toml or the environment; returns the extra environment."""
    if where == "env":
        return {"TURSO_DATABASE_URL": url}
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(f'[cloud]\nurl = "{url}"\n')
    return {}


def script(home: Path, *args: str, extra: dict[str, str]) -> subprocess.CompletedProcess:
    """The installed console script: store/retrieve/context/hot take the fast path."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TURSO_", "EVOCLAW_"))}
    env.update(extra, EVOCLAW_HOME=str(home))
    return subprocess.run([script_path(), *args], capture_output=True, text=True, env=env,
                          timeout=60)


def invoke(home: Path, *args: str, extra: dict[str, str]):
    env = {"EVOCLAW_HOME": str(home), "TURSO_DATABASE_URL": None, "TURSO_AUTH_TOKEN": None,
           **extra}
    return CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)


def lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.strip()]


@pytest.mark.parametrize("where", ["env", "config"])
@pytest.mark.parametrize("url,why", BAD_URLS, ids=[u for u, _ in BAD_URLS])
def test_local_commands_work_and_warn_once(tmp_path, url, why, where):
    home = tmp_path / "home"
    extra = with_url(home, url, where)
    expected = warning_line(FROM_ENV if where == "env" else "config.toml", why)

    stored = script(home, "store", "--text", "Biscuit is allergic to chicken", "--json",
                    extra=extra)
    assert stored.returncode == 0, stored.stderr              # was: exit 9
    assert lines(stored.stderr) == [expected]
    fact_id = json.loads(stored.stdout)["id"]
    found = script(home, "retrieve", "what is Biscuit allergic to", extra=extra)
    assert found.returncode == 0 and "allergic to chicken" in found.stdout
    assert lines(found.stderr) == [expected]
    for args in (["hot", "--update", "owner_profile", '{"timezone": "UTC"}'], ["context", "x"]):
        done = script(home, *args, extra=extra)
        assert done.returncode == 0 and lines(done.stderr) == [expected], args

    # Through click: the same line.
    listed = invoke(home, "list", "--json", extra=extra)
    assert listed.exit_code == 0 and lines(listed.stderr) == [expected]
    assert [f["id"] for f in json.loads(listed.stdout)["facts"]] == [fact_id]
    got = invoke(home, "get", fact_id, extra=extra)
    assert got.exit_code == 0 and lines(got.stderr) == [expected]
    # Once, even for a command that reads the config twice (--llm checks it first).
    llm = {**extra, "EVOCLAW_LLM_BASE_URL": "http://127.0.0.1:9/v1", "EVOCLAW_LLM_MODEL": "m"}
    insisted = invoke(home, "retrieve", "Biscuit", "--llm", "--json", extra=llm)
    assert insisted.exit_code == 0 and lines(insisted.stderr) == [expected]


@pytest.mark.parametrize("where", ["env", "config"])
@pytest.mark.parametrize("args", [["sync"], ["sync", "--status"], ["restore"],
                                  ["cold", "--init"], ["devices", "list"]],
                         ids=lambda a: " ".join(a))
def test_cloud_commands_fail_with_the_configuration_error(tmp_path, args, where):
    home = tmp_path / "home"
    extra = with_url(home, "htps://x", where)
    source = FROM_ENV if where == "env" else "config.toml"
    result = invoke(home, *args, "--json", extra=extra)
    assert result.exit_code == 9
    [line] = lines(result.stderr)                      # the error only, no warning
    assert line.startswith(f"error: the cloud URL from {source} is unusable "
                           "('htps://x' has an unsupported scheme (htps://)): use libsql://")
    assert json.loads(result.stdout)["code"] == "config"


def test_a_bad_url_syncs_nothing_anywhere_and_keeps_the_work(tmp_path):
    """sync fails before any remote is opened: no default cloud file appears, and the
    queued change is still queued for when the URL is fixed."""
    home = tmp_path / "home"
    bad = {"TURSO_DATABASE_URL": "libsql//host"}
    assert script(home, "store", "--text", "Tea at noon", extra=bad).returncode == 0
    assert invoke(home, "sync", extra=bad).exit_code == 9
    assert not (home / "cloud.db").exists()
    fixed = {"TURSO_DATABASE_URL": str(tmp_path / "cloud.db")}
    synced = invoke(home, "sync", "--json", extra=fixed)
    assert synced.exit_code == 0, synced.stderr
    assert json.loads(synced.stdout)["pushed_facts"] == 1


def test_doctor_fails_its_config_check(tmp_path):
    home = tmp_path / "home"
    result = invoke(home, "doctor", "--json", extra={"TURSO_DATABASE_URL": "htps://x"})
    assert result.exit_code == 1                       # doctor found a problem
    checks = {c["name"]: c for c in json.loads(result.stdout)["checks"]}
    assert not checks["config"]["ok"]
    assert "from the environment (TURSO_DATABASE_URL) is unusable" in checks["config"]["detail"]


def test_the_source_is_the_config_file_given(tmp_path):
    custom = tmp_path / "custom.toml"
    custom.write_text('[cloud]\nurl = "htps://x"\n')
    result = invoke(tmp_path / "home", "--config", str(custom), "list", extra={})
    assert result.exit_code == 0
    assert lines(result.stderr)[0].startswith("warning: the cloud URL from custom.toml ")


def test_a_usable_url_warns_nothing(tmp_path):
    home = tmp_path / "home"
    extra = {"TURSO_DATABASE_URL": str(tmp_path / "cloud.db")}
    result = script(home, "store", "--text", "Tea at noon", extra=extra)
    assert result.returncode == 0 and result.stderr == ""
    assert load_config(home=home, env=extra).cloud_url_problem is None


def test_the_python_api_works_locally_and_sync_raises(tmp_path, monkeypatch):
    monkeypatch.setenv("TURSO_DATABASE_URL", "htps://x")
    with pytest.warns(UnusableCloudWarning, match=r"from the environment \(TURSO_DATABASE_URL\)"
                      r" is unusable"):
        mem = Memory.open(home=tmp_path / "home")
    with mem:
        fact = mem.remember("Biscuit is allergic to chicken")
        assert mem.retrieve("Biscuit allergic")[0].fact.id == fact.id
        with pytest.raises(ConfigError, match="unsupported scheme"):
            mem.sync()
        assert mem.store.outbox_depth() >= 1          # the work stays queued
    # A caller that builds its config itself reads the problem there; no warning then.
    config = load_config(home=tmp_path / "home")
    assert "unsupported scheme" in config.cloud_url_problem
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Memory.open(config=config).close()
