"""The conversation lifecycle: end_conversation (distill -> store -> hot -> MEMORY.md ->
consolidate when due -> push where `sync` pushes) and the example agent loop across two runs."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from evoclaw_memory import Memory
from evoclaw_memory.cloud.remote import SqlRemote
from evoclaw_memory.cloud.sql import FileExecutor
from evoclaw_memory.errors import DeviceRevoked
from evoclaw_memory.lifecycle.conversation import QUICK_CONSOLIDATION_EVERY, quick_consolidation_due

ROOT = Path(__file__).resolve().parents[1]
CONVERSATION = [
    {"role": "user", "content": "Remember that my dog Biscuit is allergic to chicken, so "
                                "feed him salmon kibble."},
    {"role": "assistant", "content": "Noted: no chicken for Biscuit."},
    {"role": "user", "content": "Also my dentist moved: it is now Dr Okafor at Otley Road, "
                                "appointment on 12 December."},
]


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_end_conversation_reports_every_step(mem):
    report = mem.end_conversation(CONVERSATION)
    assert report["mode"] in ("rules", "rules-fallback", "llm")
    assert report["counts"]["added"] == len(report["added"]) >= 2
    texts = " ".join(f.text for f in report["added"])
    assert "Biscuit" in texts and "Okafor" in texts
    assert report["bytes"]["conversation"] > report["bytes"]["facts"] > 0
    assert report["bytes"]["memory_md"] == mem.config.memory_md_path.stat().st_size
    assert report["llm_calls"] == 0                       # no LLM configured: rules
    assert report["consolidation"]["mode"] == "quick"     # never ran before: due
    # No cloud configured: pushed where `sync` pushes, the local archive.
    assert report["sync"]["status"] == "pushed"
    assert report["sync"]["target"] == "local archive"
    assert report["sync"]["where"] == str(Path(mem.config.home) / "cloud.db")
    assert report["outbox_depth"] == mem.store.outbox_depth() == 0
    # The next conversation reinforces what it repeats, and consolidation is not due yet.
    again = mem.end_conversation(CONVERSATION[:1])
    assert again["counts"]["added"] == 0 and again["counts"]["reinforced"] >= 1
    assert again["consolidation"] is None
    # The facts are what the next conversation starts with.
    context = mem.context("what can Biscuit eat")
    assert "allergic to chicken" in context and "# MEMORY" in context


def test_quick_consolidation_runs_when_four_hours_have_passed(mem, clock):
    assert quick_consolidation_due(mem)
    mem.end_conversation("I decided to water the tomatoes every morning at 7.")
    assert not quick_consolidation_due(mem)
    clock.advance(QUICK_CONSOLIDATION_EVERY / 86_400 * 0.5)
    assert mem.end_conversation("Biscuit loves the beach.")["consolidation"] is None
    clock.advance(QUICK_CONSOLIDATION_EVERY / 86_400 * 0.6)
    report = mem.end_conversation("The garden bot runs on an ESP32.")
    assert report["consolidation"]["mode"] == "quick"
    assert mem.metrics()["timestamps"]["last_consolidation.quick"] == clock.now
    assert mem.end_conversation("Hello", consolidate=True)["consolidation"]["mode"] == "quick"
    assert mem.end_conversation("Hello", consolidate=False)["consolidation"] is None


def test_pushes_when_a_cloud_is_configured(home, tmp_path):
    cloud = tmp_path / "cloud" / "archive.db"
    cloud.parent.mkdir()
    with Memory.open("pusher", home=home, cloud_url=str(cloud)) as mem:
        report = mem.end_conversation(CONVERSATION)
        assert report["sync"]["status"] == "pushed"
        assert report["sync"]["report"].pushed_facts >= 2
        assert report["outbox_depth"] == 0 and mem.store.outbox_depth() == 0
    with SqlRemote(FileExecutor(cloud), label="check") as remote:
        assert remote.count_facts("pusher") >= 2
        assert remote.pull_state("pusher").state is not None


def test_offline_the_work_is_queued_and_drains_later(home, tmp_path):
    url = f"http://127.0.0.1:{closed_port()}"
    with Memory.open("offline", home=home, cloud_url=url, encryption="off") as mem:
        report = mem.end_conversation(CONVERSATION)
        assert report["sync"]["status"] == "queued"
        assert "unreachable" in report["sync"]["detail"]
        queued = mem.store.outbox_depth()
        assert queued == report["sync"]["outbox_depth"] > 0
        assert report["counts"]["added"] >= 2              # stored locally all the same
        # The network returns (here: a reachable cloud): everything queued goes out.
        with SqlRemote(FileExecutor(tmp_path / "later.db"), label="later") as remote:
            pushed = mem.end_conversation("The vet is open on Saturdays.", remote=remote)
            assert pushed["sync"]["status"] == "pushed"
            assert mem.store.outbox_depth() == 0
            assert remote.count_facts("offline") == report["counts"]["added"] + \
                pushed["counts"]["added"]


def test_cloud_errors_other_than_offline_are_reported_not_raised(home, tmp_path):
    cloud = tmp_path / "plain.db"
    with Memory.open("strict", home=home, cloud_url=str(cloud), encryption="on") as mem:
        report = mem.end_conversation(CONVERSATION)       # no key set up: a CryptoError
        assert report["sync"]["status"] == "failed"
        assert report["sync"]["error"] == "CryptoError" and "key init" in report["sync"]["detail"]
        assert mem.store.outbox_depth() == report["outbox_depth"] > 0
        assert mem.end_conversation("x y z", sync=False)["sync"]["status"] == "off"


def test_a_revoked_device_stops_the_lifecycle(home, tmp_path):
    cloud = tmp_path / "shared.db"
    with Memory.open("fam", home=home, cloud_url=str(cloud)) as mem:
        mem.end_conversation(CONVERSATION)
        device = mem.sync_status()["device_id"]
        with SqlRemote(FileExecutor(cloud), label="owner") as owner:
            assert owner.revoke("fam", device)
        with pytest.raises(DeviceRevoked):
            mem.end_conversation("Biscuit had his walk.")
        assert mem.store.is_empty()


def test_distill_store_command_reports_the_lifecycle(home):
    from click.testing import CliRunner
    from evoclaw_memory.cli.main import cli
    result = CliRunner().invoke(cli, ["--json", "distill", "--store", "--text",
                                      json.dumps(CONVERSATION)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["counts"]["added"] >= 2 and data["sync"]["status"] == "pushed"


# -- the example agent loop, against a local OpenAI-compatible server --------------------------

class FakeChatModel:
    """A tiny OpenAI-compatible /chat/completions server that records what it was sent. Asked
    what it remembers, it pastes the memory part of its system prompt, as weak models do."""

    def __init__(self):
        self.requests: list[dict] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append(body)
                last = body["messages"][-1]["content"]
                reply = f"(model) you said: {last[:60]}"
                if "what do you remember" in last.lower():
                    system = body["messages"][0]["content"]
                    reply = "(fake model) Assistant recalls: " + system.split("\n\n", 1)[-1]
                data = json.dumps({"id": "x", "object": "chat.completion", "choices": [
                    {"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": reply}}],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 5}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def agent_prompts(self) -> list[str]:
        """System prompts of the example's own chat calls (not the memory's LLM calls)."""
        return [r["messages"][0]["content"] for r in self.requests
                if r["messages"][0]["content"].startswith("You are Claw")]

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def chat_model():
    model = FakeChatModel()
    yield model
    model.close()


def run_example(home: Path, model: FakeChatModel, *turns: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("TURSO_", "EVOCLAW_", "OPENAI_"))}
    env.update({"EVOCLAW_HOME": str(home), "EVOCLAW_LLM_BASE_URL": model.url,
                "EVOCLAW_LLM_MODEL": "fake-model", "EVOCLAW_AGENT_ID": "companion"})
    return subprocess.run([sys.executable, str(ROOT / "examples" / "agent_loop.py"), *turns],
                          capture_output=True, text=True, env=env, timeout=120,
                          stdin=subprocess.DEVNULL)


def test_example_agent_loop_remembers_across_two_runs(home, chat_model):
    first = run_example(home, chat_model, "Hi! Remember that my dog Biscuit is allergic to "
                        "chicken.", "He is a beagle and loves the beach.")
    assert first.returncode == 0, first.stderr
    assert first.stdout.count("claw: ") == 2
    assert "[memory]" in first.stderr and "new fact(s)" in first.stderr
    assert not any("allergic" in p for p in chat_model.agent_prompts())

    chat_model.requests.clear()
    second = run_example(home, chat_model, "What should I feed Biscuit tonight?")
    assert second.returncode == 0, second.stderr
    prompts = chat_model.agent_prompts()
    assert len(prompts) == 1
    assert "allergic to chicken" in prompts[0]        # the first run's memory, in context
    assert "Retrieved memories" in prompts[0]

    # A model that pastes its context back: nothing of it is stored (issue 25).
    third = run_example(home, chat_model, "What do you remember about Biscuit?")
    assert third.returncode == 0 and "recalls" in third.stdout
    from evoclaw_memory.distill.rendered import holds_rendered
    with Memory.open("companion", home=home) as mem:
        texts = [f.text for f in mem.facts()]
    assert texts and not [t for t in texts if holds_rendered(t) or "recalls" in t], texts
