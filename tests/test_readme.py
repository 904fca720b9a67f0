"""The README is executable evidence: its TOML blocks load through the config loader, its
Python examples run (against a temporary home: no network, no LLM), its MCP configuration
is valid JSON that names a real command, and every command and flag it shows exists
(each command's own `--help` lists the flag)."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from evoclaw_memory.cli.main import cli
from evoclaw_memory.config import ENV_VARS, load_config

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)


def blocks(kind: str) -> list[str]:
    return [body for lang, body in BLOCK.findall(README) if lang == kind]


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    """No cloud, no LLM, no secrets from the machine running the tests."""
    for var in [*ENV_VARS, "EVOCLAW_HOME", "EVOCLAW_PASSPHRASE", "EVOCLAW_RECOVERY_KEY"]:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("EVOCLAW_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)             # files an example writes (memory.jsonl) land here
    return tmp_path / "home"


def test_every_toml_block_loads_through_the_config_loader(clean_env):
    found = blocks("toml")
    assert found, "the README shows a config.toml"
    for body in found:
        clean_env.mkdir(parents=True, exist_ok=True)
        (clean_env / "config.toml").write_text(body, encoding="utf-8")
        config = load_config(home=clean_env)
        assert config.encryption == "auto" and config.cloud_is_network
        # The LLM is not pointed at the port the README gives sqld (8080).
        assert ":8080" not in (config.llm_base_url or "")


def test_the_python_examples_run(clean_env, tmp_path):
    examples = blocks("python")
    assert len(examples) >= 2
    for body in examples:
        # The lifecycle sketch leaves the conversation to the reader: give it one.
        namespace = {"PERSONA": "You are Claw.", "first_user_message": "Hi, it's Sam",
                     "messages": [{"role": "user", "content": "My dog Biscuit eats salmon"}]}
        exec(compile(body.replace("\n    ...", "\n    pass"), "README.md", "exec"), namespace)
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
    unit = blocks("ini")[0]
    assert f"ExecStart={venv}/bin/evoclaw-memory" in unit
    assert "ReadWritePaths=/home/sam/.evoclaw" in unit and "NoNewPrivileges=yes" in unit
    check_invocation(server["args"])


# -- every command and flag shown ------------------------------------------------------------

def shown_invocations() -> list[list[str]]:
    """Each `evoclaw-memory ...` of the README's shell blocks (and the unit's ExecStart), as
    argument lists; `a | b` alternatives are split, `b` reusing `a`'s command."""
    lines = [line for body in blocks("bash") + blocks("ini") for line in body.splitlines()]
    found = []
    for line in lines:
        line = line.split("ExecStart=", 1)[-1]
        if "evoclaw-memory " not in line or line.lstrip().startswith("#"):
            continue
        command = line[line.index("evoclaw-memory ") + len("evoclaw-memory "):]
        command = re.sub(r"\s+#.*$", "", command)          # a trailing comment
        previous: list[str] = []
        for part in re.split(r"\s\|\s", command):
            args = [a.strip("[]") for a in shlex.split(part)]
            args = [a for a in args if a and a not in ("...",)]
            if args and args[0].startswith("-") and previous:
                args = previous + args          # `tree --show | --add ...`
            elif previous and args and command_name(args) not in cli.commands:
                args = previous + args
            if args:
                found.append(args)
                previous = [a for a in args[:1]]
    return found


def check_invocation(args: list[str]) -> None:
    """The command path of `args` exists and its --help lists every --flag used."""
    runner = CliRunner()
    group: click.Command = cli
    path: list[str] = []
    flags = []
    for arg in args:
        if arg.startswith("--"):
            flags.append(arg.split("=", 1)[0])
        elif isinstance(group, click.Group) and arg in group.commands:
            group = group.commands[arg]
            path.append(arg)
    result = runner.invoke(cli, [*path, "--help"], prog_name="evoclaw-memory")
    help_text = result.output
    root_help = runner.invoke(cli, ["--help"], prog_name="evoclaw-memory").output
    assert result.exit_code == 0, (args, help_text)
    assert f"evoclaw-memory {' '.join(path)}".strip() in help_text, (args, help_text)
    for flag in flags:
        assert flag in help_text or flag in root_help, (args, flag)


GLOBAL_WITH_VALUE = ("--agent-id", "--home", "--config")


def command_name(args: list[str]) -> str:
    """The first word that is not a global option or its value."""
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg in GLOBAL_WITH_VALUE:
            skip = True
        elif not arg.startswith("-"):
            return arg
    return ""


def test_every_command_and_flag_the_readme_shows_exists():
    shown = shown_invocations()
    commands = {command_name(args) for args in shown}
    # The README's command list covers the commands people ask for.
    assert {"get", "supersede", "server", "devices", "retrieve", "search-url"} <= commands
    assert ["devices", "rename", "DEVICE_ID", "NAME"] in shown
    for args in shown:
        assert command_name(args) in cli.commands, args
        check_invocation(args)
