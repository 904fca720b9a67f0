"""Every folder the package creates is 0700 whatever the umask (SPEC §7, issue 12 item 13)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from evoclaw_memory import Memory
from evoclaw_memory.cloud.sql import FileExecutor
from evoclaw_memory.config import private_dir


@pytest.fixture(params=[0o022, 0o000], ids=["umask022", "umask000"])
def umask(request):
    old = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _folders(root: Path) -> list[Path]:
    return [root] + [p for p in root.rglob("*") if p.is_dir()]


def test_memory_folders_are_private_at_every_level(umask, tmp_path):
    os.chmod(tmp_path, 0o755)                  # stands for the user's home: left as it is
    home = tmp_path / "nested" / "evoclaw-home"
    with Memory.open("sam", home=home) as mem:
        mem.remember("the shed key is under the blue pot", category="home")
        mem.write_memory_md()
        created = _folders(tmp_path / "nested")
        assert {home, home / "agents", home / "agents" / "sam"} <= set(created)
        assert {str(p): oct(_mode(p)) for p in created} == \
            {str(p): "0o700" for p in created}
        assert _mode(mem.config.db_path) == 0o600
    assert _mode(tmp_path) == 0o755


def test_file_cloud_folders_are_private(umask, tmp_path):
    target = tmp_path / "drive" / "backups" / "cloud.db"
    FileExecutor(target).close()
    assert _mode(tmp_path / "drive") == 0o700 and _mode(tmp_path / "drive" / "backups") == 0o700
    assert _mode(target) == 0o600


def test_private_dir_leaves_existing_folders_alone(umask, tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o755)
    made = private_dir(shared / "a" / "b")
    assert made.is_dir() and _mode(shared) == 0o755
    assert _mode(shared / "a") == 0o700 and _mode(shared / "a" / "b") == 0o700
    private_dir(made)                          # already there: nothing to do, no error
    assert _mode(made) == 0o700
