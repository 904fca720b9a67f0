"""cli.regex_cache: the library's compiled patterns kept between per-turn runs.

Each case runs in a fresh interpreter (its `re` cache empty, as a CLI run's is): one run
imports the library and saves, the next loads; the patterns it then gets must be the ones
`re` itself makes, a pattern built from data must never reach the file, and a damaged file
must change nothing."""

from __future__ import annotations

import subprocess
import sys

# Import what `store` and `context` import, then save the patterns to the file.
_SAVE = """
import re, sys
from evoclaw_memory.cli import regex_cache
loaded = regex_cache.load(sys.argv[1])
import evoclaw_memory.memory, evoclaw_memory.distill.entities, evoclaw_memory.lifecycle.attributes
from evoclaw_memory.tiers import privacy
privacy.private_text("my passport number")       # a cached pattern, compiled on first use
re.compile("secret-" + sys.argv[2])               # built from data: must not be kept
regex_cache.save(loaded, sys.argv[1])
"""

# Load the file, import the library; every pattern it holds must equal what `re` compiles.
_CHECK = """
import re, sys, marshal
from evoclaw_memory.cli import regex_cache
loaded = regex_cache.load(sys.argv[1])
import evoclaw_memory.memory, evoclaw_memory.distill.entities, evoclaw_memory.lifecycle.attributes
from re import _compiler
assert loaded.keys, "nothing loaded"
for kind, pattern, flags in loaded.keys:
    assert re.compile(pattern, flags) == _compiler.compile(pattern, flags), pattern
    assert sys.argv[2] not in str(pattern)
_, _, entries = marshal.loads(open(sys.argv[1], "rb").read())
assert not any(sys.argv[2] in str(key[1]) for key, _ in entries)
print(len(loaded.keys))
"""


def _run(code: str, *args: str) -> str:
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_kept_patterns_are_the_ones_re_makes_and_none_built_from_data(tmp_path):
    path = str(tmp_path / "regex.marshal")
    _run(_SAVE, path, "tofu-1234")
    assert int(_run(_CHECK, path, "tofu-1234")) > 20


def test_a_damaged_or_foreign_file_changes_nothing(tmp_path):
    path = tmp_path / "regex.marshal"
    for content in (b"", b"\x00garbage", b"\xe9" * 100):
        path.write_bytes(content)
        out = _run("import sys\nfrom evoclaw_memory.cli import regex_cache\n"
                   "print(len(regex_cache.load(sys.argv[1]).keys))", str(path))
        assert out.strip() == "0"
    import marshal
    path.write_bytes(marshal.dumps(((0, 0, 0, 0, "other"), (), [])))   # another interpreter
    out = _run("import sys\nfrom evoclaw_memory.cli import regex_cache\n"
               "print(len(regex_cache.load(sys.argv[1]).keys))", str(path))
    assert out.strip() == "0"


def test_an_unwritable_place_is_no_error(tmp_path):
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    _run(_SAVE, str(blocked / "regex.marshal"), "x")       # save never raises


def test_a_place_it_cannot_write_costs_no_work(tmp_path, monkeypatch):
    """A read-only install: `save` gives up before finding the patterns it could not keep
    (~10 ms that every run would pay). As root every folder is writable, so the refusal is
    simulated at os.access."""
    import re

    from evoclaw_memory.cli import regex_cache
    re.compile("a pattern of this test, x+y")      # something new in re's cache
    looked: list = []
    monkeypatch.setattr(regex_cache, "_held_patterns", lambda modules: looked.append(1) or set())
    target = tmp_path / "pycache" / "regex.marshal"
    monkeypatch.setattr(regex_cache.os, "access", lambda path, mode: False)
    regex_cache.save(regex_cache.Loaded(), str(target))
    assert looked == [] and not target.exists()
    monkeypatch.setattr(regex_cache.os, "access", lambda path, mode: True)
    regex_cache.save(regex_cache.Loaded(), str(target))
    assert looked == [1] and target.exists()
