"""cli.code_cache: the byte code of the library's modules kept in one file between runs.

Each case runs in a fresh interpreter (as a CLI run is): one run imports the library and
saves; the next loads the file first, and the library's modules must then come from it,
be the source files' own modules (their __file__, resources and behaviour), and anything
stale, damaged or foreign must be imported as always."""

from __future__ import annotations

import marshal
import os
import subprocess
import sys

from evoclaw_memory.cli import code_cache

# Load (nothing yet, or the file), import what `store` and `context` import, use the
# library for real, then save and report where the memory module's code came from.
_RUN = """
import sys, tempfile
from evoclaw_memory.cli import code_cache
loaded = code_cache.load(sys.argv[1])
from evoclaw_memory.memory import Memory
import evoclaw_memory.distill.entities, evoclaw_memory.lifecycle.attributes
from evoclaw_memory import english
with tempfile.TemporaryDirectory() as home:
    mem = Memory.open(agent_id="t", home=home)
    mem.remember("The spare key is under the blue pot", category="home/keys")
    assert mem.retrieve("where is the spare key")[0].fact.text.startswith("The spare key")
    mem.close()
assert english.zipf("the") > 7              # its data file, found beside its __file__
memory = sys.modules["evoclaw_memory.memory"]
kept = type(memory.__spec__.loader).__name__ == "_KeptCode"
assert memory.__file__ == memory.__spec__.origin and memory.__file__.endswith("memory.py")
served = sorted(loaded.finder.served) if loaded.finder else []
code_cache.save(loaded, sys.argv[1])
assert not any(isinstance(f, code_cache._Finder) for f in sys.meta_path)   # taken off
print(kept, len(served))
"""


def _run(*args: str, bytecode: bool = True) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if not bytecode:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    proc = subprocess.run([sys.executable, "-c", _RUN, *args], capture_output=True, text=True,
                          timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()


def test_a_second_run_takes_the_modules_from_the_file(tmp_path):
    path = str(tmp_path / "modules.marshal")
    assert _run(path) == ["False", "0"]            # no file yet: imported as always, kept
    kept, served = _run(path)
    assert kept == "True" and int(served) > 30     # the library's modules, from the file
    stamp, entries = code_cache._read(path)
    assert "evoclaw_memory.memory" in entries and "evoclaw_memory.cli.fast" not in entries
    assert type(marshal.loads(entries["evoclaw_memory.memory"][4])).__name__ == "code"


def test_an_edited_source_is_imported_as_always_and_kept_again(tmp_path):
    path = tmp_path / "modules.marshal"
    _run(str(path))
    stamp, entries = code_cache._read(str(path))
    relative, package, mtime_ns, size, code = entries["evoclaw_memory.memory"]
    entries["evoclaw_memory.memory"] = (relative, package, mtime_ns - 1, size, code)
    code_cache._write(entries, str(path))
    kept, _ = _run(str(path))
    assert kept == "False"                          # its source "changed": not served
    assert code_cache._read(str(path))[1]["evoclaw_memory.memory"][2] == mtime_ns
    assert _run(str(path))[0] == "True"             # kept again, served again


def test_a_value_that_is_not_code_falls_back_to_the_modules_byte_code(tmp_path):
    path = tmp_path / "modules.marshal"
    _run(str(path))
    stamp, entries = code_cache._read(str(path))
    entries = {name: entry[:4] + (marshal.dumps(42),) for name, entry in entries.items()}
    code_cache._write(entries, str(path))
    assert _run(str(path))[0] == "True"             # served, yet the library works


def test_a_damaged_or_foreign_file_changes_nothing(tmp_path):
    path = tmp_path / "modules.marshal"
    head = marshal.dumps(((0, 0, "other", 0, "0"), {}))                # another interpreter
    past_end = marshal.dumps((code_cache._stamp(), {"evoclaw_memory.memory": (
        "memory.py", False, 0, 0, 10, 10**9)}))                          # a bad index
    for content in (b"", b"\x00garbage", b"\xe9" * 100, marshal.dumps(("not a pair",)),
                    len(head).to_bytes(4, "big") + head,
                    len(past_end).to_bytes(4, "big") + past_end,
                    (10**6).to_bytes(4, "big") + head):
        path.write_bytes(content)
        assert _run(str(path)) == ["False", "0"]


def test_an_unwritable_place_is_no_error(tmp_path):
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    assert _run(str(blocked / "modules.marshal")) == ["False", "0"]     # save never raises


def test_nothing_is_written_where_python_writes_no_byte_code(tmp_path):
    path = tmp_path / "modules.marshal"
    assert _run(str(path), bytecode=False) == ["False", "0"]
    assert not path.exists()


def test_a_place_it_cannot_write_costs_no_work(tmp_path, monkeypatch):
    """A read-only install (a system site-packages, another user's): `save` gives up before
    reading the modules' code it could not keep (a run would otherwise pay that every time).
    As root every folder is writable, so the refusal is simulated at os.access."""
    import evoclaw_memory.memory  # noqa: F401 - package modules for save() to consider
    monkeypatch.setattr(code_cache.sys, "dont_write_bytecode", False)
    read: list[str] = []
    monkeypatch.setattr(code_cache, "_entry", lambda name: read.append(name))
    target = tmp_path / "pycache" / "modules.marshal"
    monkeypatch.setattr(code_cache.os, "access", lambda path, mode: False)
    code_cache.save(code_cache.Loaded(None, frozenset()), str(target))
    assert read == [] and not target.exists()
    monkeypatch.setattr(code_cache.os, "access", lambda path, mode: True)
    code_cache.save(code_cache.Loaded(None, frozenset()), str(target))
    assert "evoclaw_memory.memory" in read and target.exists()     # writable: it does
