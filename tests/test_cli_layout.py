"""The CLI's layout rule: one shared helper module (`cli.common`) that imports only the
click-free `cli.plain` (which imports no cli module), command modules that import only
`cli.common` (never each other), `cli.root` (the click group) that imports the command
modules to register them, `cli.fast` (the click-free per-turn path) that imports only
`cli.plain`, `cli.relay`, `cli.regex_cache` (which imports no cli module) and
`cli.code_cache` (only regex_cache), and `cli.main` over relay, fast and root; so there is no
import circle. The relay's two sides: `cli.relay` (the caller's, imported first by main)
imports no cli module; `cli.relay_server` (serve's) imports fast, plain and relay, and only
`agent` (the `serve` command) imports it."""

from __future__ import annotations

import ast
from pathlib import Path

import evoclaw_memory.cli

CLI_DIR = Path(evoclaw_memory.cli.__file__).parent
PACKAGE = "evoclaw_memory.cli"
SHARED = "common"
PLAIN = "plain"
# The modules that are neither the helpers nor a command module.
NOT_COMMANDS = {"__init__", "__main__", "main", "root", "fast", "relay", "relay_server", PLAIN,
                SHARED, "regex_cache", "code_cache"}
LINE_LIMIT = 600


def cli_imports(path: Path) -> set[str]:
    """The cli modules `path` imports (anywhere in the file, lazy imports included)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path.name}: relative import (imports are absolute)"
            module = node.module or ""
            # `from evoclaw_memory.cli import facts` imports the module facts.
            names = [f"{module}.{alias.name}" for alias in node.names] \
                if module == PACKAGE else [module]
        else:
            continue
        found |= {name[len(PACKAGE) + 1:].split(".")[0] for name in names
                  if name.startswith(PACKAGE + ".")}
    return found


def modules() -> dict[str, Path]:
    return {path.stem: path for path in sorted(CLI_DIR.glob("*.py"))}


def command_modules() -> set[str]:
    return set(modules()) - NOT_COMMANDS


def test_there_are_command_modules():
    assert {"facts", "tree", "cloud", "agent"} <= command_modules()


def test_common_imports_only_plain_and_plain_no_cli_module():
    assert cli_imports(modules()[SHARED]) == {PLAIN}
    assert cli_imports(modules()[PLAIN]) == set()


def test_the_fast_path_imports_only_plain_the_relay_client_and_the_two_caches():
    assert cli_imports(modules()["fast"]) == {PLAIN, "relay", "regex_cache", "code_cache"}
    assert cli_imports(modules()["regex_cache"]) == set()
    assert cli_imports(modules()["code_cache"]) == {"regex_cache"}   # the cache files' place


def test_the_relay_client_imports_no_cli_module_and_its_server_only_the_fast_path():
    assert cli_imports(modules()["relay"]) == set()
    assert cli_imports(modules()["relay_server"]) == {"fast", PLAIN, "relay"}


def test_each_command_module_imports_common_and_nothing_else_of_the_cli():
    for name in command_modules():
        # `serve` runs the relay; `doctor` asks it whether it is active (its client, relay,
        # and relay_server's status probe).
        extra = {"agent": {"relay_server"}, "doctor": {"relay", "relay_server"}}.get(name, set())
        assert cli_imports(modules()[name]) == {SHARED} | extra, name


def test_main_imports_only_common_and_maps_every_command_module():
    from evoclaw_memory.cli.main import LAZY_COMMANDS
    assert cli_imports(modules()["main"]) == {"relay", "fast", PLAIN, "root"}
    assert cli_imports(modules()["root"]) == {SHARED}
    assert {target.split(":")[0] for target in LAZY_COMMANDS.values()} == command_modules()


def test_running_one_command_imports_only_its_module():
    import subprocess
    import sys
    code = ("import sys; from evoclaw_memory.cli.main import cli; cli.get_command(None, 'store'); "
            "print(sorted(m for m in sys.modules if m.startswith('evoclaw_memory.cli.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert eval(out) == ["evoclaw_memory.cli.common", "evoclaw_memory.cli.facts",
                         "evoclaw_memory.cli.main", "evoclaw_memory.cli.plain",
                         "evoclaw_memory.cli.root"]


def test_package_init_only_re_exports_main():
    assert cli_imports(modules()["__init__"]) == {"main"}


def test_every_cli_module_stays_small():
    for name, path in modules().items():
        lines = len(path.read_text(encoding="utf-8").splitlines())
        assert lines <= LINE_LIMIT, f"{name}.py has {lines} lines"


def test_every_command_module_command_is_registered():
    """What a module lists in COMMANDS is what the root group has (no command forgotten)."""
    import importlib

    from evoclaw_memory.cli.main import LAZY_COMMANDS, cli
    registered = []
    for name in sorted(command_modules()):
        module = importlib.import_module(f"{PACKAGE}.{name}")
        for command in module.COMMANDS:
            assert cli.get_command(None, command.name) is command, (name, command.name)
            assert LAZY_COMMANDS[command.name].split(":")[0] == name, command.name
            registered.append(command.name)
    assert sorted(registered) == sorted(LAZY_COMMANDS) == cli.list_commands(None)
