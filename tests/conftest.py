"""Shared fixtures: a real Memory on a real SQLite file in a temporary EVOCLAW_HOME."""

import pytest

from evoclaw_memory import Memory

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
