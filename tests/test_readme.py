"""The README and the guides in docs/ are executable evidence: their TOML blocks load through
the config loader, their Python examples run (against a temporary home: no network, no LLM),
the MCP configuration is valid JSON that names the installed command, and every line of
every ```bash block runs as written: it is a comment, a shell command this test names
explicitly (SHELL_COMMANDS), or an `evoclaw-memory ...` invocation that the CLI's own parser
accepts exactly as written (placeholders such as FACT_ID are fine as argument values). A
`a | b` alternative or a `[--flag]` optional is not a command a person can paste, so it fails.
docs/cli.md (generated) and docs/ARCHITECTURE.md (no instructions) are not guides."""

from __future__ import annotations

import json
import os
import re
import shlex
import warnings
from pathlib import Path

import click
import pytest

from evoclaw_memory.cli.plain import State
from evoclaw_memory.cli.root import cli
from evoclaw_memory.config import ENV_VARS, load_config

ROOT = Path(__file__).resolve().parents[1]
NOT_GUIDES = {"ARCHITECTURE.md", "cli.md", "internals.md"}
DOCS = [ROOT / "README.md"] + sorted(p for p in (ROOT / "docs").glob("*.md")
                                     if p.name not in NOT_GUIDES)
BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)
INLINE = re.compile(r"(?<!`)`(evoclaw-memory [^`]+)`(?!`)")

# Shell commands the guides may use besides evoclaw-memory, each for a reason a reader sees.
SHELL_COMMANDS = {
    "git",          # clone the repository
    "python3",      # make the virtualenv
    "python",       # run examples/agent_loop.py
    "pip",          # ~/.venv/bin/pip install ...
    "export",       # set the cloud URL, token, home
    "echo",         # load the completion script from ~/.bashrc
    "sudo", "systemctl", "journalctl",    # the systemd unit
    "./scripts/demo", "./scripts/test",   # the contributors' two set-up commands
}
EXPORT = re.compile(r"^[A-Z_][A-Z0-9_]*=\S*$")


def doc_blocks(kind: str, paths: list[Path] = DOCS) -> list[tuple[str, str]]:
    """(file name, body) of every ```kind block in `paths`."""
    return [(path.name, body) for path in paths
            for lang, body in BLOCK.findall(path.read_text(encoding="utf-8")) if lang == kind]


def blocks(kind: str) -> list[str]:
    return [body for _, body in doc_blocks(kind)]


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    """No cloud, no LLM, no secrets from the machine running the tests."""
    for var in [*ENV_VARS, "EVOCLAW_HOME", "EVOCLAW_PASSPHRASE", "EVOCLAW_RECOVERY_KEY"]:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("EVOCLAW_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)             # files an example writes (memory.jsonl) land here
    return tmp_path / "home"


def test_the_readme_is_a_landing_page():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 250
    # The contributors' two commands, as CI runs them, under their heading.
    assert "## Set-up: two commands" in readme
    assert "./scripts/demo" in readme and "./scripts/test" in readme
    for guide in ("getting-started", "own-server", "lost-device", "connecting-an-agent",
                  "owners-control", "encryption", "sync", "configuration", "cli", "glossary"):
        assert f"(docs/{guide}.md" in readme, guide
    assert "(sync/README.md)" in readme and "(CHANGELOG.md)" in readme


def test_every_toml_block_loads_through_the_config_loader(clean_env):
    found = doc_blocks("toml")
    assert len(found) >= 2, "the guides show config.toml"
    full = 0
    for name, body in found:
        clean_env.mkdir(parents=True, exist_ok=True)
        (clean_env / "config.toml").write_text(body, encoding="utf-8")
        config = load_config(home=clean_env)
        assert config.encryption == "auto" and config.cloud_is_network, name
        # The LLM is not pointed at the port the guides give sqld (8080).
        assert ":8080" not in (config.llm_base_url or ""), name
        full += bool(config.llm_base_url)
    assert full, "the configuration reference shows every section"


def test_the_python_examples_run(clean_env, tmp_path):
    examples = blocks("python")
    assert len(examples) >= 4
    for body in examples:
        # The lifecycle sketch leaves the conversation to the reader: give it one.
        namespace = {"PERSONA": "You are Claw.", "first_user_message": "Hi, it's Sam",
                     "messages": [{"role": "user", "content": "My dog Biscuit eats salmon"}]}
        exec(compile(body.replace("\n    ...", "\n    pass"), "guide", "exec"), namespace)
    from evoclaw_memory import Memory
    with Memory.open("sam", home=clean_env) as mem:
        assert any("Biscuit" in f.text for f in mem.store.iter_facts(live_only=True))
        # The owner's-control example: the edit survived in the export, the forgets erased.
        assert not [f for f in mem.facts() if "Hargreaves" in f.text or "Elm" in f.text]
    assert "Hargreaves" in (tmp_path / "memory.jsonl").read_text()


def test_the_mcp_configuration_is_json_naming_the_installed_paths():
    (config,) = [json.loads(b) for b in blocks("json") if "mcpServers" in b]
    server = config["mcpServers"]["evoclaw-memory"]
    install = "\n".join(b for b in blocks("bash") if "pip install" in b and "venv" in b)
    venv = re.search(r"python3 -m venv (\S+)", install).group(1).replace("~", "/home/sam")
    assert server["command"] == f"{venv}/bin/evoclaw-memory"
    assert server["env"]["EVOCLAW_HOME"] == "/home/sam/.evoclaw"
    (unit,) = blocks("ini")
    assert f"ExecStart={venv}/bin/evoclaw-memory" in unit
    assert "ReadWritePaths=/home/sam/.evoclaw" in unit and "NoNewPrivileges=yes" in unit
    parse_invocation(server["args"])
    parse_invocation(shlex.split(unit.split("ExecStart=", 1)[1].splitlines()[0])[1:])


def test_the_mcp_tools_listed_are_the_servers_tools():
    source = "".join((ROOT / "evoclaw_memory/agent" / name).read_text(encoding="utf-8")
                     for name in ("mcp_server.py", "mcp_control.py"))
    tools = set(re.findall(r"@server\.tool\(.*?\n\s*(?:@guarded\n\s*)?def (\w+)\(", source, re.S))
    assert len(tools) >= 18, tools
    guide = (ROOT / "docs/connecting-an-agent.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"^\| `(\w+)` \|", guide, re.M))
    assert listed == tools


# -- every line of every bash block runs as written ----------------------------------------------

def parse_invocation(args: list[str]) -> click.Context:
    """Parse `evoclaw-memory ARGS` with the CLI's own parser (nothing runs); raises the
    click error a person would see. A value that names a file or folder that does not exist
    here is a placeholder, which is fine."""
    ctx = cli.make_context("evoclaw-memory", list(args), resilient_parsing=False)
    ctx.obj = State()
    command: click.Command = cli
    while isinstance(command, click.Group):
        with warnings.catch_warnings():        # click 8.2 deprecates the name, not the split
            warnings.simplefilter("ignore", DeprecationWarning)
            rest = [*ctx.protected_args, *ctx.args]
        if not rest:
            return ctx
        name, sub, rest = command.resolve_command(ctx, rest)
        assert sub is not None and name is not None
        try:
            ctx = sub.make_context(name, rest, parent=ctx, resilient_parsing=False)
        except click.BadParameter as exc:
            if "does not exist" not in exc.format_message():
                raise
            return ctx
        command = sub
    return ctx


def shell_segments(line: str) -> list[list[str]]:
    """The simple commands of one shell line: split at | ; && || and with redirections
    (`> FILE`, `>> FILE`) and a trailing comment removed."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    segments: list[list[str]] = [[]]
    tokens = list(lexer)
    skip = False
    for token in tokens:
        if skip:
            skip = False
        elif token in ("|", ";", "&&", "||", "&"):
            segments.append([])
        elif token in (">", ">>", "<", "2>"):
            skip = True
        else:
            segments[-1].append(token)
    return [s for s in segments if s]


def check_line(line: str) -> None:
    """Raises AssertionError (or a click error) unless `line` runs as written."""
    stripped = line.strip()
    if not stripped or stripped.startswith("#"):
        return
    assert not re.search(r"(^|\s)\[[^\]]*\]", stripped.split(" #")[0]), (
        f"an optional part in brackets is not a command: {line!r}")
    for words in shell_segments(stripped):
        environment = []
        while words and EXPORT.match(words[0]):
            environment.append(words.pop(0))
        assert words, line
        program = words[0] if words[0].startswith("./") else os.path.basename(words[0])
        if program == "evoclaw-memory":
            if any(v.startswith("_EVOCLAW_MEMORY_COMPLETE=") for v in environment):
                assert words == ["evoclaw-memory"], line          # click's completion script
                continue
            parse_invocation(words[1:])
        else:
            assert program in SHELL_COMMANDS, f"not a command a guide may use: {line!r}"
            if program == "export":
                assert all(EXPORT.match(w) for w in words[1:]), line


def bash_lines() -> list[tuple[str, str]]:
    return [(name, line) for name, body in doc_blocks("bash") for line in body.splitlines()]


def console_commands() -> list[tuple[str, str]]:
    """The `$ command` lines of ```console blocks (a command shown with its output)."""
    return [(name, line[2:]) for name, body in doc_blocks("console")
            for line in body.splitlines() if line.startswith("$ ")]


def inline_commands() -> list[tuple[str, str]]:
    """`evoclaw-memory ...` in the guides' prose: a reader copies these too."""
    found = []
    for path in DOCS:
        prose = BLOCK.sub("", path.read_text(encoding="utf-8"))
        found += [(path.name, m.group(1)) for m in INLINE.finditer(re.sub(r"\s*\n\s*", " ", prose))]
    return found


def test_every_shell_line_runs_as_written():
    lines = bash_lines() + console_commands()
    assert len(lines) > 100
    failures = []
    for name, line in lines + [(name, f"MENTION {line}") for name, line in inline_commands()]:
        mention = line.startswith("MENTION ")
        line = line.removeprefix("MENTION ")
        try:
            check_line(line)
        except click.MissingParameter:
            # Prose may name a command without its required values ("`evoclaw-memory
            # server` from the [server] extra"): its name and flags still have to exist.
            if not mention:
                failures.append(f"{name}: {line.strip()}\n    a required value is missing")
        except (AssertionError, click.ClickException) as exc:
            message = exc.format_message() if isinstance(exc, click.ClickException) else exc
            failures.append(f"{name}: {line.strip()}\n    {message}")
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("line", [
    "evoclaw-memory consolidate --mode quick|daily|monthly|full",
    "evoclaw-memory restore --agent-id sam [--full] [--force]",
    "evoclaw-memory cold --init | cold --query TEXT",
    "evoclaw-memory forget FACT_ID [--yes]",
    "evoclaw-memory tree --show | --add home/pets Pets",
    "evoclaw-memory no-such-command",
    "evoclaw-memory store --no-such-flag",
    "cold --init",
])
def test_a_line_a_person_cannot_paste_fails(line):
    with pytest.raises((AssertionError, click.ClickException)):
        check_line(line)


@pytest.mark.parametrize("line", [
    "evoclaw-memory get FACT_ID                 # one fact",
    "evoclaw-memory --agent-id sam hot",
    "~/.venv/bin/evoclaw-memory doctor --offline",
    "export TURSO_DATABASE_URL=http://127.0.0.1:8080",
    "_EVOCLAW_MEMORY_COMPLETE=bash_source evoclaw-memory > ~/.evoclaw-complete.bash",
    "evoclaw-memory import-legacy --workspace ~/no-such-folder",
])
def test_a_line_a_person_can_paste_passes(line):
    check_line(line)


def test_the_guides_show_the_commands_people_ask_for():
    shown = {tuple(words[1:3]) for _, line in bash_lines() + console_commands()
             for words in shell_segments(line.strip()) if words and words[0] == "evoclaw-memory"}
    names = {words[0] for words in shown if words}
    assert {"get", "supersede", "server", "devices", "retrieve", "search-url", "restore",
            "agents", "sync", "key", "serve", "mcp", "forget", "export"} <= names
    assert ("devices", "rename") in shown and ("devices", "revoke") in shown
