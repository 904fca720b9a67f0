"""Files outside SQLite survive a power cut (issue 26): written under another name, fsynced,
renamed, the folder fsynced (evoclaw_memory/durable.py); a failed write leaves the previous
file whole; doctor reports an empty or stale MEMORY.md and `hot --rebuild` fixes it."""

from __future__ import annotations

import json
import os

import pytest
from click.testing import CliRunner

from evoclaw_memory import Memory, durable
from evoclaw_memory.cli.main import cli
from evoclaw_memory.errors import ValidationError


def _recorded_syncs(monkeypatch) -> list[str]:
    """What was fsynced, in order: "file:<name>" or "dir:<name>"."""
    seen: list[str] = []
    real = os.fsync

    def fsync(fd):
        path = os.readlink(f"/proc/self/fd/{fd}")
        seen.append(("dir:" if os.path.isdir(path) else "file:") + os.path.basename(path))
        return real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return seen


def test_a_file_is_fsynced_before_its_rename_and_its_folder_after(tmp_path, monkeypatch):
    seen = _recorded_syncs(monkeypatch)
    target = tmp_path / "MEMORY.md"
    durable.write_text(target, "# hot memory\n")
    assert target.read_text() == "# hot memory\n" and (target.stat().st_mode & 0o777) == 0o600
    assert len(seen) == 2 and seen[0].startswith("file:.MEMORY.md.")   # the temp file
    assert seen[1] == f"dir:{tmp_path.name}"
    assert [p.name for p in tmp_path.iterdir()] == ["MEMORY.md"]         # no temp left


def test_a_write_that_fails_leaves_the_previous_file_whole(tmp_path):
    target = tmp_path / "export.jsonl"
    target.write_text("the previous export\n")
    with pytest.raises(RuntimeError):
        with durable.replacing(target) as handle:
            handle.write("half of the new one")
            raise RuntimeError("disk full")
    assert target.read_text() == "the previous export\n"
    assert [p.name for p in tmp_path.iterdir()] == ["export.jsonl"]


def test_write_new_never_overwrites(tmp_path):
    marker = tmp_path / "key.pem"
    assert durable.write_new(marker, b"first") and not durable.write_new(marker, b"second")
    assert marker.read_bytes() == b"first"


def test_memory_md_and_exports_go_through_the_durable_path(tmp_path, monkeypatch):
    with Memory.open("sam", home=tmp_path / "home") as mem:
        mem.remember("The boiler service is in March", category="home")
        seen = _recorded_syncs(monkeypatch)
        mem.update_hot("identity", {"agent_name": "Claw"})
        assert any(s.startswith("file:.MEMORY.md.") for s in seen)
        seen.clear()
        out = tmp_path / "exports" / "sam.jsonl"
        mem.export(out)
        assert any(s.startswith("file:.sam.jsonl.") for s in seen) and "dir:exports" in seen
        first = out.read_text()
        # An export that fails midway leaves the previous one as it was.
        monkeypatch.setattr("evoclaw_memory.lifecycle.exchange.versions_by_fact",
                            lambda store: (_ for _ in ()).throw(OSError(28, "No space left")))
        with pytest.raises(ValidationError, match="cannot write .*No space left"):
            mem.export(out)
        assert out.read_text() == first and (out.stat().st_mode & 0o777) == 0o600


def _doctor(home) -> dict:
    result = CliRunner().invoke(cli, ["--json", "doctor", "--offline"], catch_exceptions=False,
                                env={"EVOCLAW_HOME": str(home), "EVOCLAW_AGENT_ID": "sam"})
    return {c["name"]: c for c in json.loads(result.stdout)["checks"]}


def test_doctor_finds_an_empty_or_stale_memory_md_and_rebuild_fixes_it(home):
    with Memory.open("sam") as mem:
        mem.update_hot("identity", {"agent_name": "Claw", "owner_name": "Sam"})
        md = mem.config.memory_md_path
    assert _doctor(home)["memory_md_content"]["ok"]
    for damage, word in ((b"", "empty"), (b"# someone else's notes\n", "stale")):
        md.write_bytes(damage)
        check = _doctor(home)["memory_md_content"]
        assert not check["ok"] and word in check["detail"] and "hot --rebuild" in check["fix"]
        result = CliRunner().invoke(cli, ["hot", "--rebuild"], catch_exceptions=False,
                                    env={"EVOCLAW_HOME": str(home), "EVOCLAW_AGENT_ID": "sam"})
        assert result.exit_code == 0 and "Claw" in md.read_text()
        assert _doctor(home)["memory_md_content"]["ok"]
    md.unlink()                                         # gone while there is hot state
    assert "missing" in _doctor(home)["memory_md_content"]["detail"]
