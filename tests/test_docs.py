"""The reference docs cannot drift from the code: docs/cli.md is what
scripts/build_cli_reference.py writes from the click commands (and from EXIT_TABLE), the
links between the docs lead somewhere, and the shell completion the guides document works
with the CLI's lazily loaded commands."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "build_cli_reference.py"
EXE = Path(sys.executable).parent / "evoclaw-memory"


def generator():
    spec = importlib.util.spec_from_file_location("build_cli_reference", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_cli_reference_is_what_the_commands_say():
    expected = generator().render()
    current = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert current == expected, (
        "docs/cli.md differs from the click commands: run "
        "`.venv/bin/python scripts/build_cli_reference.py` and commit docs/cli.md")


def test_the_reference_covers_every_command_and_the_exit_table():
    from evoclaw_memory.cli.plain import EXIT_TABLE
    from evoclaw_memory.cli.root import LAZY_COMMANDS
    text = generator().render()
    for name in LAZY_COMMANDS:
        command = __import__("evoclaw_memory.cli.root", fromlist=["cli"]).cli.get_command(None, name)
        if not command.hidden:
            assert f"### `evoclaw-memory {name}`" in text, name
    for sub in ("devices rename", "key init", "config show", "proposals accept", "tree move",
                "entity query"):
        assert f"### `evoclaw-memory {sub}`" in text, sub
    for status, codes, meaning in EXIT_TABLE:
        assert re.search(rf"^\| {status} \| .*\| {re.escape(meaning)} \|$", text, re.M), status
        for code in codes:
            assert f"`{code}`" in text


def test_the_reference_does_not_depend_on_the_terminal():
    env = {**os.environ, "COLUMNS": "40", "LINES": "10"}
    narrow = subprocess.run([sys.executable, str(SCRIPT), "--check"], env=env,
                            capture_output=True, text=True, timeout=120)
    assert narrow.returncode == 0, narrow.stderr
    assert generator().render() == generator().render()


def test_a_stale_reference_is_reported(tmp_path, monkeypatch):
    module = generator()
    stale = tmp_path / "cli.md"
    stale.write_text(module.render().replace("-h, --help", "--help", 1), encoding="utf-8")
    monkeypatch.setattr(module, "OUT", stale)
    assert module.main(["--check"]) == 1
    assert module.main([]) == 0 and module.main(["--check"]) == 0


LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_links_between_the_docs_lead_somewhere():
    pages = [ROOT / "README.md", ROOT / "CHANGELOG.md", ROOT / "sync" / "README.md",
             ROOT / "SECURITY.md", ROOT / "SKILL.md",
             *sorted((ROOT / "docs").glob("*.md"))]
    broken = []
    for page in pages:
        text = page.read_text(encoding="utf-8")
        for target in LINK.findall(text):
            if target.startswith(("http://", "https://", "mailto:")):
                continue
            path, _, anchor = target.partition("#")
            goal = (page.parent / path).resolve() if path else page
            if not goal.exists():
                broken.append(f"{page.name}: {target}")
            elif anchor and goal.suffix == ".md" and anchor not in anchors(goal):
                broken.append(f"{page.name}: {target} (no such heading)")
    assert not broken, broken


def anchors(page: Path) -> set[str]:
    """GitHub's heading anchors of a markdown page."""
    found = set()
    for heading in re.findall(r"^#+ (.+)$", page.read_text(encoding="utf-8"), re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        found.add(slug)
    return found


def test_sync_readme_and_the_guides_are_linked_from_the_readme():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    architecture = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    assert "(sync/README.md)" in readme and "(docs/ARCHITECTURE.md)" in readme
    assert "(internals.md)" in architecture
    glossary = anchors(ROOT / "docs" / "glossary.md")
    for term in ("hot-warm-cold", "outbox", "critical-state", "re-seal", "hrana", "sqld", "vault"):
        assert term in glossary, term


def complete(words: str) -> list[str]:
    env = {**os.environ, "COMP_WORDS": words, "COMP_CWORD": str(len(words.split()) - 1),
           "_EVOCLAW_MEMORY_COMPLETE": "bash_complete"}
    done = subprocess.run([str(EXE)], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return [line.split(",", 1)[1] for line in done.stdout.splitlines()]


def test_shell_completion_works_with_the_lazy_commands():
    script = subprocess.run([str(EXE)], env={**os.environ, "_EVOCLAW_MEMORY_COMPLETE": "bash_source"},
                            capture_output=True, text=True, timeout=60)
    assert script.returncode == 0 and "complete -o nosort -F" in script.stdout
    assert "devices" in complete("evoclaw-memory dev")
    assert set(complete("evoclaw-memory devices re")) == {"rename", "revoke"}
    assert {"--full", "--force"} <= set(complete("evoclaw-memory restore --f"))
