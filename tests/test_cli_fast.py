"""The click-free fast path of store/retrieve/context/hot (cli.fast) behaves exactly as the
click commands: each form runs through `main()` (fast, or click when fast hands it over) and
through the click group directly, each on its own copy of the same memory, and the two
runs' stdout, stderr and exit status must be the same (ids, times and the run's folder
written as placeholders, since they differ between any two runs). Each case also says
which path `main()` must have taken, so a fast path that silently falls back to click - or
runs a form it should leave to click - fails here.

And a structural check: the fast path imports neither click nor the network stack.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Optional

import pytest

FAST, CLICK = "fast", "click"

# argv[1] of both scripts: where _VIA_MAIN notes the path taken (click imported or not).
_VIA_MAIN = """
import sys
from evoclaw_memory.cli.main import main
try:
    main(sys.argv[2:])
finally:
    with open(sys.argv[1], "w") as note:
        note.write("click" if "click" in sys.modules else "fast")
"""
_VIA_CLICK = """
import sys
from evoclaw_memory.cli.root import cli
cli.main(args=sys.argv[2:], prog_name="evoclaw-memory")
"""

LESSON = '{"text": "Test on testnet first", "importance": 0.9}'

# (argv, stdin, the path main() must take). {home} is the run's home, {file} a plain file,
# {under_file} a path below that file (a --home no folder can be made in), {config} a
# readable config.toml.
CASES = [
    (["store", "--text", "Owner prefers green tea", "--category", "owner/preferences",
      "--importance", "0.8"], None, FAST),
    (["--json", "store", "-t", "Backups run at 3am", "-c", "home/ops", "-i", "0.3",
      "--url", "https://backup.example/status", "--cmd", "restic snapshots",
      "--path", "/var/backups", "--url", "https://b.example"], None, FAST),
    (["store", "--text", "The garden hose is in the shed"], None, FAST),       # a duplicate
    (["store", "--json", "--text", "The garden hose is in the shed"], None, FAST),
    (["store", "--text", "-", "--category", "notes"], "Piped fact from stdin\n", FAST),
    (["store", "--text", "Vault item", "--pin", "--private",
      "--created-at", "2025-11-30T09:00:00Z"], None, FAST),
    (["--agent-id", "other", "store", "--text", "Shared item", "--shared",
      "--created-at", "1700000000", "--json"], None, FAST),
    (["store", "--text=--starts-with-dashes"], None, FAST),
    (["store", "--text", "bad importance", "--importance", "nan"], None, FAST),
    (["--json", "store", "--text", "bad importance", "--importance", "1.5"], None, FAST),
    (["store", "--text", "   "], None, FAST),
    (["store", "--text", "bad category", "--category", "a/b/c/d/e/f"], None, FAST),
    (["retrieve", "garden hose"], None, FAST),
    (["retrieve", "--query", "tea", "-n", "2", "--json"], None, FAST),
    (["--agent-id", "default", "--json", "retrieve", "hose"], None, FAST),
    (["retrieve", "-q", "zzzz-nothing-matches"], None, FAST),
    (["retrieve", "--limit=1", "the shed"], None, FAST),
    (["--home", "{under_file}", "retrieve", "x"], None, FAST),
    (["--json", "--home", "{under_file}", "store", "--text", "x"], None, FAST),
    (["--config", "{config}", "retrieve", "tea"], None, FAST),
    # --home after the command too, like --agent-id and --json (issue 27, item 8); the
    # command's wins over the group's.
    (["retrieve", "hose", "--home", "{home}/elsewhere"], None, FAST),
    (["--home", "{under_file}", "retrieve", "hose", "--home", "{home}"], None, FAST),
    (["store", "--json", "--text", "x", "--home", "{under_file}"], None, FAST),
    (["hot", "--home", "{home}/elsewhere", "--json"], None, FAST),
    (["context", "tea"], None, FAST),
    (["context", "--json", "-n", "3", "--audience", "shared", "hose"], None, FAST),
    (["context"], None, FAST),
    (["hot"], None, FAST),
    (["hot", "--json"], None, FAST),
    (["hot", "--update", "lesson", LESSON], None, FAST),
    (["hot", "--json", "--update", "owner_profile", '{"timezone": "Australia/Sydney"}'],
     None, FAST),
    (["hot", "--update", "lesson", "{not json"], None, FAST),
    (["--json", "hot", "--update", "lesson", "{not json"], None, FAST),
    (["hot", "--update", "no_such_key", "{}"], None, FAST),
    (["hot", "--complete-task", "0123456789abcdef"], None, FAST),
    (["hot", "--rebuild"], None, FAST),
    (["hot", "--rebuild", "--json"], None, FAST),
    # Left to click: its usage errors, help, other commands, unusual spellings.
    (["store", "--text", "x", "--importance", "high"], None, CLICK),
    (["--json", "store", "--text", "x", "--importance", "high"], None, CLICK),
    (["store", "--category", "general"], None, CLICK),                  # no --text
    (["store", "--text", "x", "--created-at", "last tuesday"], None, CLICK),
    (["store", "--text", "x", "--private", "--shared"], None, CLICK),
    (["store", "--text", "x", "--category", "a", "--category", "b"], None, CLICK),
    (["store", "--text", "x", "extra"], None, CLICK),
    (["store", "-t", "-x"], None, CLICK),
    (["retrieve"], None, CLICK),
    (["retrieve", "a", "b"], None, CLICK),
    (["retrieve", "tea", "--query", "tea"], None, CLICK),
    (["retrieve", "-n", "0", "tea"], None, CLICK),
    (["retrieve", "-n", "101", "tea"], None, CLICK),
    (["retrieve", "--limit", "+5", "tea"], None, CLICK),
    (["retrieve", "--llm", "tea"], None, CLICK),
    (["retrieve", "--db-url", "libsql://x", "tea"], None, CLICK),
    (["retrieve", "--", "-tea"], None, CLICK),
    (["retrieve", "--help"], None, CLICK),
    (["--home", "{file}", "retrieve", "x"], None, CLICK),                # a bad --home
    (["retrieve", "x", "--home", "{file}"], None, CLICK),
    (["--config", "{home}/missing.toml", "retrieve", "x"], None, CLICK),
    (["context", "--audience", "everyone"], None, CLICK),
    (["hot", "--update", "lesson", LESSON, "--rebuild"], None, CLICK),
    (["hot", "--update", "lesson"], None, CLICK),
    (["--version"], None, CLICK),
    (["get", "0123456789abcdef"], None, CLICK),
    ([], None, CLICK),
]

_ID = re.compile(r"\b[0-9a-f]{16}\b")
_EPOCH = re.compile(r"\b1[6-9]\d{8}(?:\.\d+)?\b")
_STAMP = re.compile(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(?::\d{2})?(?:\.\d+)?(?: UTC|\+00:00)?")
# Scores decay with time, so two runs a moment apart may differ in the last digits.
_SCORE = re.compile(r'("(?:score|relevance)":)(-?[0-9.e+-]+)')


def _normal(text: str, where: Path) -> str:
    text = text.replace(str(where), "<where>")
    text = _ID.sub("<id>", text)
    text = _STAMP.sub("<time>", text)
    text = _EPOCH.sub("<epoch>", text)
    return _SCORE.sub(lambda m: f"{m.group(1)}{float(m.group(2)):.2f}", text)


@pytest.fixture(scope="module")
def seeded(tmp_path_factory):
    """A home with a few facts (one holding a terminal escape) and a hot state, made by the
    CLI (closed: no WAL left). tests/test_cli_relay.py uses it too."""
    root = tmp_path_factory.mktemp("seed")
    home = root / "home"
    env = _env(home)
    for text, category in (("The garden hose is in the shed", "home/garden"),
                           ("Owner drinks oolong tea every morning", "owner/preferences"),
                           ("Sarah is the owner's wife", "people/family"),
                           ("The shed key \x1b]0;pwned\x07 hangs by the door", "home/garden")):
        subprocess.run([sys.executable, "-c", _VIA_CLICK, "-", "store", "--text", text,
                        "--category", category], env=env, check=True, capture_output=True)
    subprocess.run([sys.executable, "-c", _VIA_CLICK, "-", "hot", "--update", "identity",
                    '{"agent_name": "Evo"}'], env=env, check=True, capture_output=True)
    return home


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("TURSO_", "EVOCLAW_"))}
    env["EVOCLAW_HOME"] = str(home)
    env["PYTHONIOENCODING"] = "utf-8"
    return env


def _script() -> str:
    """The installed console script (its process ends without the interpreter's teardown)."""
    found = Path(sys.executable).parent / "evoclaw-memory"
    return str(found) if found.exists() else (shutil.which("evoclaw-memory") or "evoclaw-memory")


def _run(code: Optional[str], argv: list[str], stdin, seeded: Path, where: Path):
    home = where / "home"
    shutil.copytree(seeded, home)
    plain_file = where / "a-file"
    plain_file.write_text("not a folder\n")
    config = where / "config.toml"
    config.write_text('agent_id = "default"\n')
    places = {"{home}": home, "{file}": plain_file, "{under_file}": plain_file / "sub",
              "{config}": config}
    args = []
    for arg in argv:
        for place, value in places.items():
            arg = arg.replace(place, str(value))
        args.append(arg)
    note = where / "path-taken"
    command = [_script(), *args] if code is None else [sys.executable, "-c", code, str(note), *args]
    proc = subprocess.run(command, input=stdin, capture_output=True, text=True, env=_env(home),
                          timeout=60)
    taken = note.read_text() if note.exists() else None
    return (_normal(proc.stdout, where), _normal(proc.stderr, where), proc.returncode), taken


@pytest.mark.parametrize("argv,stdin,path", CASES, ids=[" ".join(c[0]) or "(none)" for c in CASES])
def test_the_fast_path_and_click_print_the_same(argv, stdin, path, seeded, tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    via_main, taken = _run(_VIA_MAIN, argv, stdin, seeded, tmp_path / "a")
    via_click, _ = _run(_VIA_CLICK, argv, stdin, seeded, tmp_path / "b")
    assert taken == path
    assert via_main == via_click
    assert "Traceback" not in via_main[1]


# The console script ends its process at once after a fast run (cli.fast._end): its output
# must still arrive whole, through pipes, on both streams, with the same exit status.
SCRIPT_CASES = [c for c in CASES if c[2] == FAST][::3] + [
    (["--json", "store", "--text", "x", "--importance", "nan"], None, FAST),
    (["store", "--text", "-"], "from a pipe " * 5000, FAST)]


@pytest.mark.parametrize("argv,stdin,path", SCRIPT_CASES,
                         ids=[" ".join(c[0])[:60] for c in SCRIPT_CASES])
def test_the_console_script_prints_what_click_prints(argv, stdin, path, seeded, tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    via_script, _ = _run(None, argv, stdin, seeded, tmp_path / "a")
    via_click, _ = _run(_VIA_CLICK, argv, stdin, seeded, tmp_path / "b")
    assert via_script == via_click


def test_a_fast_run_stores_what_a_click_run_stores(seeded, tmp_path):
    """Not only the output: the memory a fast `store` leaves is the one click's leaves."""
    docs = []
    for side, code in (("a", _VIA_MAIN), ("b", _VIA_CLICK)):
        where = tmp_path / side
        where.mkdir()
        _run(code, ["store", "--text", "Coffee beans are in the blue tin", "-c", "home/kitchen",
                    "-i", "0.7", "--url", "https://shop.example/beans"], None, seeded, where)
        # Read back through click on both sides (the reader is not under test here).
        env = _env(where / "home")
        out = subprocess.run([sys.executable, "-c", _VIA_CLICK, "x", "--json", "search-url",
                              "shop.example"], env=env, capture_output=True, text=True,
                             check=True).stdout
        docs.append(_normal(out, where))
    assert docs[0] == docs[1]
    assert "blue tin" in docs[0] and '"importance":0.7' in docs[0]


def _run_in_one_process(home, argvs: list[list[str]]) -> tuple[str, set[str]]:
    """(stdout, every module loaded) of one fresh process running main() on each argv (with
    --home), each exiting 0."""
    code = ("import sys\n"
            "from evoclaw_memory.cli.main import main\n"
            "for argv in " + repr([["--home", str(home), *argv] for argv in argvs]) + ":\n"
            "    try:\n"
            "        main(argv)\n"
            "    except SystemExit as exc:\n"
            "        assert exc.code == 0, exc.code\n"
            "print(sorted(sys.modules))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=_env(home), timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout, set(eval(proc.stdout.splitlines()[-1]))


def _prepare(home, code: str) -> None:
    """Run `code` (with `mem`, a Memory on `home`, open) in a process of its own, so that
    what it imports is not counted against the commands run after it."""
    setup = ("from evoclaw_memory.memory import Memory\n"
             f"mem = Memory.open(agent_id='default', home={str(home)!r})\n" + code +
             "mem.close()\n")
    subprocess.run([sys.executable, "-c", setup], check=True, env=_env(home), timeout=60)


def test_the_fast_path_imports_no_click_and_no_network(tmp_path):
    home = tmp_path / "home"
    _, modules = _run_in_one_process(home, [["store", "--text", "tea at noon"],
                                            ["retrieve", "x"], ["context", "tea"], ["hot"]])
    loaded = {m.split(".")[0] for m in modules}
    assert "evoclaw_memory" in loaded and "sqlite3" in loaded      # it did run
    # msgspec stays: every model (Fact, HotState...) is a msgspec Struct and the rows and
    # the hot state are decoded with it; but it is imported without typing_extensions
    # (which it only tries, and which pulls inspect, ast and tokenize): cli.fast.
    assert "msgspec" in loaded
    assert not loaded & {"click", "httpx", "httpcore", "cryptography", "ssl", "tomllib",
                         "importlib_metadata", "typing_extensions", "inspect", "ast"}
    # Nor what only a rarer path needs (issue 29: ~8 ms of a per-turn run): tempfile (and
    # shutil, random, bz2, lzma through it) for replacing a file whole, hashlib (OpenSSL)
    # for a device's clock tag, threading, gzip for building the whole word-frequency table.
    assert not loaded & {"tempfile", "shutil", "random", "bz2", "lzma", "hashlib", "threading",
                         "gzip"}
    # Nor (issue 29, round 2) json for an entity without attributes, zoneinfo (and sysconfig
    # through it) for an owner without a time zone of their own, and the parts of Memory
    # no per-turn command uses: the cloud side, distillation, a restore's intake, the
    # history/undo keeper, sub-agent proposals, the vault's keeper.
    assert not loaded & {"json", "zoneinfo", "sysconfig"}
    assert not modules & {f"evoclaw_memory.{name}" for name in (
        "lifecycle.cloud_side", "lifecycle.distillation", "store.intake", "store.control",
        "store.proposals", "store.vault")}
    # Nor (round 4) weakref (a cache kept on the store instead) and zlib (the word-frequency
    # list is plain text, found by bisection; the Chinese list is searched as bytes).
    assert not loaded & {"weakref", "zlib"}


def test_an_owner_in_another_zone_than_the_devices_costs_no_zoneinfo(tmp_path):
    """Issue 29, round 4: MEMORY.md shows events on the owner's days; for a zone other than
    the device's, its tz file is read as zoneinfo reads it (evoclaw_memory.tzfile), so a
    per-turn `context` loads neither zoneinfo nor sysconfig, and shows zoneinfo's day."""
    home = tmp_path / "home"
    zone = "Pacific/Kiritimati"                         # UTC+14: not this device's zone
    _prepare(home, f"mem.update_hot('owner_profile', {{'timezone': {zone!r}}})\n"
                   "mem.update_hot('event', {'text': 'dinner with Aiko', "
                   "'timestamp': 1764777000})\n")
    out, modules = _run_in_one_process(home, [["context", "dinner"]])
    assert "evoclaw_memory.tiers.hot" in modules                 # it did run
    assert not any(m.startswith(("zoneinfo", "sysconfig")) for m in modules)
    import datetime as dt
    import zoneinfo
    day = dt.datetime.fromtimestamp(1764777000, zoneinfo.ZoneInfo(zone)).strftime("%Y-%m-%d")
    assert f"- {day} dinner with Aiko" in out


def test_reading_commands_load_nothing_only_a_write_or_other_text_needs(tmp_path):
    """Issue 29, round 4: `retrieve`, `context` and `hot` over ASCII facts load neither
    BLAKE2 (a write's duplicate key), unicodedata (non-ASCII text, a category to check),
    bisect (the member-indexed word lists) nor tzfile (an owner in another zone)."""
    home = tmp_path / "home"
    _prepare(home, "mem.remember('The garden hose hangs in the shed', category='home/garden')\n"
                   "mem.remember('Tea with Priya on Sunday at noon', category='people/priya')\n")
    out, modules = _run_in_one_process(home, [["retrieve", "where is the hose"],
                                              ["context", "tea with Priya"], ["hot"]])
    assert "garden hose" in out
    assert "evoclaw_memory.memory" in modules                  # it did run
    assert not modules & {"_blake2", "hashlib", "unicodedata", "bisect",
                          "evoclaw_memory.tzfile"}
