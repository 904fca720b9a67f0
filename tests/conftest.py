"""Shared fixtures: a real Memory on a real SQLite file in a temporary EVOCLAW_HOME, and the
command line run against it in-process (`run`) and as the installed script (`sh`)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from evoclaw_memory import Memory
from evoclaw_memory.cli.main import cli

from helpers import FakeClock


@pytest.fixture
def clock():
    return FakeClock()


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("EVOCLAW_HOME", str(tmp_path / "home"))
    for var in ("TURSO_DATABASE_URL", "TURSO_AUTH_TOKEN", "EVOCLAW_LLM_BASE_URL",
                "EVOCLAW_LLM_MODEL", "EVOCLAW_LLM_API_KEY", "EVOCLAW_AGENT_ID"):
        monkeypatch.delenv(var, raising=False)
    return tmp_path / "home"


@pytest.fixture
def mem(home, clock):
    with Memory.open("test-agent", home=home, clock=clock) as memory:
        yield memory


@pytest.fixture
def run(home):
    """Invoke the CLI in-process; returns the click Result (stdout and stderr separate)."""
    runner = CliRunner()

    def invoke(*args, input=None, env=None):
        return runner.invoke(cli, list(args), input=input, env=env, catch_exceptions=False)

    return invoke


def script() -> str:
    found = Path(sys.executable).parent / "evoclaw-memory"
    return str(found) if found.exists() else (shutil.which("evoclaw-memory") or "evoclaw-memory")


@pytest.fixture
def sh(home):
    """Run the installed console script in a subprocess with EVOCLAW_HOME = home."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("TURSO_DATABASE_URL", "TURSO_AUTH_TOKEN", "EVOCLAW_LLM_BASE_URL",
                        "EVOCLAW_LLM_MODEL", "EVOCLAW_LLM_API_KEY", "EVOCLAW_AGENT_ID",
                        "EVOCLAW_DEBUG")}
    env["EVOCLAW_HOME"] = str(home)

    def call(*args, input=None, extra_env=None):
        return subprocess.run([script(), *args], input=input, capture_output=True, text=True,
                              env={**env, **(extra_env or {})}, timeout=60)

    return call
