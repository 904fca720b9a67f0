"""A person follows the README's quick start and then docs/lost-device.md, literally.

Each guide's shell blocks become ONE bash script (`set -e`: any command that fails stops the
walk), run as a subprocess against a real sqld started the way the quick start starts it
(`evoclaw-memory server`, the [server] extra), with a fresh home folder per device and the
passphrase typed through EVOCLAW_PASSPHRASE. The only edits are what a person copies from
the screen: the token the server printed, the free port the test uses instead of 8080, and
the id of the lost device. A ```console block shows a command that FAILS and its error: the
walk runs it, requires it to fail, and requires the quoted `error:` line in its output.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)
PASSPHRASE = "correct horse battery staple"
TOKEN_PLACEHOLDER = "PASTE_THE_TOKEN_HERE"


def section(text: str, heading: str) -> str:
    """The body of the `## heading...` section of a markdown page (up to the next `## `)."""
    start = text.index(f"\n## {heading}")
    end = text.find("\n## ", start + 1)
    return text[start:end if end != -1 else None]


def walk_script(markdown: str, replace: dict[str, str]) -> str:
    """The page's bash and console blocks, in order, as one script."""
    lines = ["set -e"]
    for lang, body in BLOCK.findall(markdown):
        for old, new in replace.items():
            body = body.replace(old, new)
        if lang == "bash":
            lines.append(body)
        elif lang == "console":
            lines += failing_command(body)
    return "\n".join(lines) + "\n"


def failing_command(body: str) -> list[str]:
    """A console block: `$ command`, then what it prints. The command must fail, and print
    each `error:` line shown. A `Passphrase:` line is the person typing a wrong passphrase at
    the prompt; the script types it through the environment."""
    command = next(line[2:] for line in body.splitlines() if line.startswith("$ "))
    errors = [line for line in body.splitlines() if line.startswith("error: ")]
    assert errors, body
    if "Passphrase:" in body:
        command = f"EVOCLAW_PASSPHRASE='not my passphrase' {command}"
    said = shlex.quote(f"walk: should have failed: {command}")
    script = [f"if out=$({command} 2>&1); then echo {said} >&2; exit 97; fi",
              'printf "%s\\n" "$out"']
    for error in errors:
        script.append(f"grep -qxF -- {shlex.quote(error)} <<<\"$out\" || "
                      f"{{ echo {shlex.quote('walk: not said: ' + error)} >&2; exit 98; }}")
    return script


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def environment(home: Path, cache: Path) -> dict[str, str]:
    """A person's shell: the package on PATH, a home of its own, nothing of ours set."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("EVOCLAW_", "TURSO_")) and k != "SQLD_BIN"}
    env.update(HOME=str(home), PATH=f"{BIN}:/usr/bin:/bin", XDG_CACHE_HOME=str(cache),
               EVOCLAW_PASSPHRASE=PASSPHRASE)
    return env


def run(script: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    done = subprocess.run(["bash", "-c", script], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture
def cloud_server(tmp_path, sqld_cache):
    """The quick start's step 1, in the background (its own terminal, in the guide)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    quick = section(readme, "Quick start")
    first = BLOCK.findall(quick)[0]
    assert first == ("bash", "evoclaw-memory server --data ~/sqld-data --port 8080\n")
    home = tmp_path / "person"
    home.mkdir()
    port = free_port()
    command = shlex.split(first[1].replace("8080", str(port)).replace("~", str(home)))
    env = environment(home, sqld_cache)
    server = subprocess.Popen(command, env=env, cwd=home, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
    printed, token = [], None
    deadline = time.monotonic() + 60
    while token is None and time.monotonic() < deadline:
        line = server.stdout.readline()
        if not line:
            break
        printed.append(line)
        if line.startswith("TURSO_AUTH_TOKEN="):
            token = line.split("=", 1)[1].strip()
    assert token, "".join(printed)
    assert f"TURSO_DATABASE_URL=http://127.0.0.1:{port}" in "".join(printed)
    yield {"home": home, "port": port, "token": token, "env": env}
    server.terminate()
    server.wait(timeout=30)


def test_the_quick_start_and_the_lost_device_guide_walk_end_to_end(cloud_server, tmp_path):
    home, env = cloud_server["home"], cloud_server["env"]
    cloud = {"TURSO_DATABASE_URL": f"http://127.0.0.1:{cloud_server['port']}",
             "TURSO_AUTH_TOKEN": cloud_server["token"]}
    laptop_env = {**env, **cloud, "EVOCLAW_HOME": str(home / "laptop")}
    replace = {"8080": str(cloud_server["port"]), TOKEN_PLACEHOLDER: cloud_server["token"]}

    # -- the README's quick start: a laptop and a phone (two homes), sync, restore ---------
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    quick = section(readme, "Quick start")
    after_server = quick.split("```\n", 2)[2]            # step 1 runs in the background
    done = run(walk_script(after_server, replace), env, home)
    out = done.stdout
    assert "Biscuit is allergic to chicken" in out and "restored agent sam" in out
    assert out.rstrip().splitlines()[-1].endswith("Biscuit's vet is Dr Patel"), out
    assert "recovery key" in out.lower()
    laptop = home / "laptop" / "agents" / "sam"
    assert laptop.is_dir() and (home / "phone" / "agents" / "sam").is_dir()

    # -- docs/lost-device.md: the laptop is lost; a new device with a fresh home ----------
    status = subprocess.run([str(BIN / "evoclaw-memory"), "sync", "--status", "--json",
                             "--agent-id", "sam"], env=laptop_env,
                            capture_output=True, text=True, timeout=60)
    lost_id = json.loads(status.stdout)["device_id"]
    new_home = tmp_path / "new-device"
    new_home.mkdir()
    guide = (ROOT / "docs" / "lost-device.md").read_text(encoding="utf-8")
    script = walk_script(guide, {**replace, "DEVICE_ID": lost_id})
    assert "--agent-id" not in next(line for line in script.splitlines() if "restore" in line)
    done = run(script, environment(new_home, env["XDG_CACHE_HOME"]), new_home)
    out = done.stdout
    # The wrong-agent turn: restore named the agent it holds, and left nothing behind.
    assert ("error: the cloud has no memory for agent 'default'; it holds: sam "
            "(list them with `evoclaw-memory agents`)") in out
    assert not (new_home / ".evoclaw" / "agents" / "default").exists()
    # `agents` lists sam, as the guide shows it.
    assert re.search(r"^sam\s+\d+ devices?\s+\d+ facts?\s+last sync .+\s+encrypted$", out, re.M), out
    # The wrong-passphrase turn, then the right one.
    assert "error: wrong passphrase" in out and "restored agent sam" in out
    assert "Biscuit is allergic to chicken" in out
    # The lost device is locked out: at its next sync it is refused and wipes its memory.
    lost = subprocess.run([str(BIN / "evoclaw-memory"), "sync", "--agent-id", "sam"],
                          env=laptop_env,
                          capture_output=True, text=True, timeout=60)
    assert lost.returncode == 5, (lost.stdout, lost.stderr)
    assert "revoked" in lost.stderr.lower()
