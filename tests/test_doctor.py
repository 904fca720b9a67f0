"""Human-facing touches: doctor's network checks (cloud, keys, LLM) with fix hints,
`metrics --report` bar charts, and progress reporting on long work."""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from click.testing import CliRunner

from evoclaw_memory import Memory
from evoclaw_memory.cli.main import cli
from evoclaw_memory.cli.common import ProgressBar

SECRET_TOKEN = "tok-SECRET-77f1c2"
SECRET_KEY = "sk-SECRET-9e8d7c"


@pytest.fixture
def run(home):
    runner = CliRunner()

    def invoke(*args, env=None):
        return runner.invoke(cli, list(args), env=env, catch_exceptions=False)
    return invoke


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def checks(result) -> dict[str, dict]:
    return {c["name"]: c for c in json.loads(result.stdout)["checks"]}


class FakeLLM:
    """GET /v1/models answering with `status` (and the given model list)."""

    def __init__(self, status: int = 200, models=("smollm2",)):
        outer = self
        self.auth_seen: list[str] = []

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                outer.auth_seen.append(self.headers.get("Authorization", ""))
                body = json.dumps({"object": "list", "data": [{"id": m} for m in models]})
                data = body.encode() if status == 200 else b'{"error": "nope"}'
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def test_doctor_healthy_includes_cloud_keys_and_llm(run):
    result = run("--json", "doctor")
    assert result.exit_code == 0, result.output
    found = checks(result)
    assert found["cloud"]["ok"] and "embedded default file" in found["cloud"]["detail"]
    assert found["keys"]["ok"] and found["llm"]["ok"]
    assert "not configured" in found["llm"]["detail"]
    offline = checks(run("--json", "doctor", "--offline"))
    assert "cloud" not in offline and "llm" not in offline


def test_doctor_unreachable_cloud_and_llm_fail_with_fixes_and_no_secrets(run):
    env = {"TURSO_DATABASE_URL": f"http://127.0.0.1:{closed_port()}?authToken={SECRET_TOKEN}",
           "TURSO_AUTH_TOKEN": SECRET_TOKEN, "EVOCLAW_ENCRYPTION": "off",
           "EVOCLAW_LLM_BASE_URL": f"http://user:{SECRET_KEY}@127.0.0.1:{closed_port()}/v1",
           "EVOCLAW_LLM_MODEL": "smollm2", "EVOCLAW_LLM_API_KEY": SECRET_KEY}
    human = run("doctor", env=env)
    assert human.exit_code == 1
    assert SECRET_TOKEN not in human.output and SECRET_KEY not in human.output
    assert "FAIL  cloud" in human.stdout and "fix: check the network and the URL" in human.stdout
    assert "FAIL  llm" in human.stdout and "EVOCLAW_LLM_BASE_URL" in human.stdout
    found = checks(run("--json", "doctor", env=env))
    assert not found["cloud"]["ok"] and "unreachable" in found["cloud"]["detail"]
    assert found["integrity"]["ok"]                        # the local checks still ran


def test_doctor_llm_key_refused_model_missing_and_ok(run):
    refused = FakeLLM(status=401)
    try:
        env = {"EVOCLAW_LLM_BASE_URL": refused.url, "EVOCLAW_LLM_MODEL": "smollm2",
               "EVOCLAW_LLM_API_KEY": SECRET_KEY}
        found = checks(run("--json", "doctor", env=env))
        assert not found["llm"]["ok"] and "EVOCLAW_LLM_API_KEY" in found["llm"]["fix"]
        assert refused.auth_seen == [f"Bearer {SECRET_KEY}"]
        assert SECRET_KEY not in json.dumps(found)
    finally:
        refused.close()
    server = FakeLLM(models=("smollm2", "qwen2.5"))
    try:
        ok = checks(run("--json", "doctor", env={"EVOCLAW_LLM_BASE_URL": server.url,
                                                 "EVOCLAW_LLM_MODEL": "smollm2"}))
        assert ok["llm"]["ok"] and "model smollm2" in ok["llm"]["detail"]
        wrong = checks(run("--json", "doctor", env={"EVOCLAW_LLM_BASE_URL": server.url,
                                                    "EVOCLAW_LLM_MODEL": "gpt-9"}))
        assert not wrong["llm"]["ok"] and "smollm2" in wrong["llm"]["fix"]
    finally:
        server.close()


def test_doctor_llm_hint_names_only_listed_model_ids(run):
    # An entry without an id (null) once reached the hint as "use one of: None, qwen2.5".
    server = FakeLLM(models=(None, "qwen2.5"))
    try:
        wrong = checks(run("--json", "doctor", env={"EVOCLAW_LLM_BASE_URL": server.url,
                                                    "EVOCLAW_LLM_MODEL": "gpt-9"}))
        assert not wrong["llm"]["ok"] and wrong["llm"]["fix"] == "use one of: qwen2.5"
    finally:
        server.close()


def test_doctor_encryption_wanted_without_a_key(run, tmp_path):
    env = {"TURSO_DATABASE_URL": str(tmp_path / "cloud.db"), "EVOCLAW_ENCRYPTION": "on"}
    found = checks(run("--json", "doctor", env=env))
    assert found["cloud"]["ok"]
    assert not found["keys"]["ok"] and "key init" in found["keys"]["fix"]


def test_metrics_report_draws_tiers_against_their_limits(run, home):
    import time
    with Memory.open("default", home=home) as mem:       # the CLI's clock: real time
        mem.remember("Biscuit is allergic to chicken", category="home/pets", importance=0.9)
        mem.remember("The router password is on the fridge", category="home/network",
                     importance=0.5)
        mem.remember("Old trip to Lisbon", category="travel/2019", importance=0.3,
                     created_at=time.time() - 200 * 86_400)
    human = run("metrics", "--report")
    assert human.exit_code == 0, human.output
    out = human.stdout
    for label in ("hot memory", "warm facts", "tree nodes", "tree rendered", "cold archive",
                  "Facts by score tier", "Facts by top category"):
        assert label in out, label
    assert "/51,200 B" in out and "/50" in out
    assert any(ch in out for ch in "█#")
    data = json.loads(run("--json", "metrics", "--report").stdout)
    usage = data["usage"]
    assert sum(usage["by_score"].values()) == 3
    assert usage["by_score"]["hot"] == 1 and usage["by_score"]["frozen"] == 1
    assert usage["top_categories"] == {"home": 2, "travel": 1}
    assert data["caps"]["warm_bytes"] == 51_200 and "sizes" in data


def test_progress_bar_and_import_progress(tmp_path, home, capsys):
    from evoclaw_memory.agent.legacy import import_legacy
    folder = tmp_path / "memory"
    folder.mkdir()
    (folder / "warm-memory.json").write_text(json.dumps(
        [{"text": f"fact number {i} about the greenhouse", "category": "garden"}
         for i in range(25)]))
    calls = []
    with Memory.open("default", home=home) as mem:
        report = import_legacy(mem, folder, progress=lambda *a: calls.append(a))
    assert report["taken"]["facts"] == 25
    assert calls[0] == ("importing facts", 1, 25) and calls[-1] == ("importing facts", 25, 25)
    bar = ProgressBar(enabled=True, label="importing")
    for stage, done, total in calls:
        bar.update(stage, done, total)
    bar.close()
    assert "importing facts" in capsys.readouterr().err
    quiet = ProgressBar(enabled=False)
    quiet.update("x", 1, 2)
    quiet.close()
    assert capsys.readouterr().err == ""


def test_doctor_reports_missing_tables(tmp_path, monkeypatch):
    import sqlite3
    from click.testing import CliRunner
    from evoclaw_memory.cli.main import cli
    monkeypatch.setenv("EVOCLAW_HOME", str(tmp_path))
    runner = CliRunner()
    assert runner.invoke(cli, ["store", "--text", "a fact", "--category", "misc"]).exit_code == 0
    ok = runner.invoke(cli, ["doctor", "--offline"])
    assert ok.exit_code == 0 and "schema" in ok.output
    conn = sqlite3.connect(tmp_path / "agents" / "default" / "memory.db")
    conn.execute("DROP TABLE audit")
    conn.commit()
    conn.close()
    bad = runner.invoke(cli, ["doctor", "--offline"])
    assert bad.exit_code == 1 and "missing tables: audit" in bad.output


def test_ingest_and_consolidation_report_progress(mem, tmp_path):
    notes = tmp_path / "ws" / "memory"
    notes.mkdir(parents=True)
    (notes / "2025-11-29.md").write_text("# 2025-11-29\n\n- Decided to repot the fig tree in "
                                         "March.\n- Sam prefers oat milk in coffee.\n")
    (notes / "2025-11-30.md").write_text("# 2025-11-30\n\n- The greenhouse heater runs on a "
                                         "smart plug named plug-7.\n")
    calls = []
    report = mem.ingest_daily(days=2, workspace=tmp_path / "ws",
                              progress=lambda *a: calls.append(a))
    assert report["files"] == 2 and report["stored"] >= 2
    assert calls == [("reading daily notes", 1, 2), ("reading daily notes", 2, 2)]
    steps = []
    mem.consolidate("full", progress=lambda *a: steps.append(a))
    assert [s[0] for s in steps] == ["reading daily notes", "rescoring and archiving",
                                     "pruning the tree", "rebuilding the tree", "recounting",
                                     "cleaning the cold archive", "checking integrity", "done"]
    assert [s[1] for s in steps] == list(range(8)) and {s[2] for s in steps} == {7}
    quick = []
    mem.consolidate("quick", progress=lambda *a: quick.append(a))
    assert quick == [("rescoring and archiving", 0, 1), ("done", 1, 1)]
