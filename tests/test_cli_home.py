"""`--home DIR` works after the command too, like `--agent-id` and `--json` (issue 27, item
8): on every click command (a group's subcommand included) and on the click-free fast path
of the per-turn commands (tests/test_cli_fast.py compares that path with click's for these
forms too). The command's --home wins over the group's, as its --agent-id does.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from evoclaw_memory.cli.main import cli


def run(*args: str, env_home: Path):
    """The CLI in-process, with EVOCLAW_HOME pointing somewhere the test never looks."""
    return CliRunner().invoke(cli, list(args), env={"EVOCLAW_HOME": str(env_home)},
                              catch_exceptions=False)


def script(*args: str, env_home: Path) -> subprocess.CompletedProcess:
    """The installed console script (the fast path for store/retrieve/context/hot)."""
    found = Path(sys.executable).parent / "evoclaw-memory"
    exe = str(found) if found.exists() else (shutil.which("evoclaw-memory") or "evoclaw-memory")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TURSO_", "EVOCLAW_"))}
    env["EVOCLAW_HOME"] = str(env_home)
    return subprocess.run([exe, *args], capture_output=True, text=True, env=env, timeout=60)


def test_get_takes_home_after_the_command(tmp_path):
    home, decoy = tmp_path / "home", tmp_path / "decoy"
    stored = run("--home", str(home), "store", "--text", "Biscuit is allergic to chicken",
                 env_home=decoy)
    assert stored.exit_code == 0, stored.stderr
    fact_id = stored.stdout.strip()
    got = run("get", fact_id, "--home", str(home), "--json", env_home=decoy)
    assert got.exit_code == 0, got.stderr          # was: No such option '--home' (exit 2)
    assert json.loads(got.stdout)["text"] == "Biscuit is allergic to chicken"
    # The decoy home (EVOCLAW_HOME) was never the one used.
    assert not (decoy / "agents").exists()


def test_the_commands_home_wins_over_the_groups(tmp_path):
    home, other = tmp_path / "home", tmp_path / "other"
    run("--home", str(home), "store", "--text", "Tea at noon", env_home=tmp_path / "x")
    listed = run("--home", str(other), "list", "--home", str(home), "--json",
                 env_home=tmp_path / "x")
    assert listed.exit_code == 0, listed.stderr
    assert "Tea at noon" in listed.stdout


def test_a_group_subcommand_takes_home_too(tmp_path):
    home = tmp_path / "home"
    shown = run("config", "show", "--home", str(home), "--json", env_home=tmp_path / "decoy")
    assert shown.exit_code == 0, shown.stderr
    assert json.loads(shown.stdout)["home"] == str(home)
    synced = run("sync", "--status", "--home", str(home), "--json", env_home=tmp_path / "decoy")
    assert synced.exit_code == 0, synced.stderr
    assert (home / "agents" / "default" / "memory.db").is_file()


def test_a_file_as_home_after_the_command_is_a_usage_error(tmp_path):
    a_file = tmp_path / "a-file"
    a_file.write_text("not a folder\n")
    result = run("list", "--home", str(a_file), "--json", env_home=tmp_path / "decoy")
    assert result.exit_code == 2
    assert json.loads(result.stdout)["code"] == "usage"


def test_the_per_turn_commands_take_home_after_the_command(tmp_path):
    """store/retrieve/context/hot run without click (cli.fast): the same flag, the same
    place."""
    home, decoy = tmp_path / "home", tmp_path / "decoy"
    stored = script("store", "--text", "The spare key is under the blue pot", "--home",
                    str(home), "--json", env_home=decoy)
    assert stored.returncode == 0, stored.stderr
    assert json.loads(stored.stdout)["status"] == "stored"
    found = script("retrieve", "spare key", "--json", "--home", str(home), env_home=decoy)
    assert found.returncode == 0, found.stderr
    assert [r["text"] for r in json.loads(found.stdout)] == ["The spare key is under the blue pot"]
    context = script("context", "spare key", "--home", str(home), env_home=decoy)
    assert "blue pot" in context.stdout
    hot = script("hot", "--update", "owner_profile", '{"timezone": "UTC"}', "--home", str(home),
                 env_home=decoy)
    assert hot.returncode == 0, hot.stderr
    assert (home / "agents" / "default" / "workspace" / "MEMORY.md").is_file()
    assert not (decoy / "agents").exists()
