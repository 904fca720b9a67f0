"""Compatibility with the original skill: importing its files, its command names, SKILL.md."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from evoclaw_memory import Memory
from evoclaw_memory.cli.main import cli
from evoclaw_memory.agent.legacy import normalize_category, parse_importance, parse_time

ROOT = Path(__file__).resolve().parents[1]
NOW = time.time()
DAY = 86_400


def write(path: Path, data) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data, indent=2))
    return path


def skill_workspace(root: Path) -> Path:
    """A workspace as the original skill (v2.x) left it: memory/ and memory/research/."""
    mem = root / "memory"
    write(mem / "warm-memory.json", [
        {"id": "a1b2c3d4e5f6", "text": "Biscuit the beagle is allergic to chicken",
         "category": "home/pets", "importance": 0.8, "created_at": NOW - 2 * DAY,
         "access_count": 3, "score": 0.7, "tier": "hot"},
        {"id": "b2c3d4e5f6a1", "text": "Deploy the garden bot with `pio run -t upload`",
         "category": "projects/garden_bot", "importance": 0.7, "created_at": NOW - DAY,
         "access_count": 0, "metadata": {"urls": ["https://github.com/samc/garden-bot"],
                                         "commands": ["pio run -t upload"], "paths": []}},
        {"id": "c3d4e5f6a1b2", "text": "Sam met Alex at the 2019 PyCon",
         "category": "owner/friends", "importance": 0.4,
         "created_at": NOW - 400 * DAY, "access_count": 0, "tier": "frozen"},
        {"id": "d4", "category": "general", "importance": 0.5},                # no text
        {"text": "x" * 2500, "category": "general"},                           # too long
        {"text": "Importance out of range", "importance": 42},
        {"text": "Bad time", "created_at": "next tuesday-ish"},
    ])
    write(mem / "memory-tree.json", {
        "root": {"desc": "Memory root", "warm_count": 3, "cold_count": 0, "last_access": 0,
                 "children": ["home", "projects", "owner"]},
        "home": {"desc": "Home and family life", "warm_count": 0, "cold_count": 0,
                 "children": ["home/pets"]},
        "home/pets": {"desc": "Biscuit the beagle", "warm_count": 1, "children": []},
        "projects": {"desc": "Active projects", "children": ["projects/garden_bot"]},
        "projects/garden_bot": {"desc": "ESP32 greenhouse bot " + "!" * 120, "children": []},
        "owner": {"desc": "Owner profile", "children": ["owner/friends"]},
        "owner/friends": {"desc": "Friends", "children": []},
        "ideas/someday": {"desc": "Things to try", "children": []},
        "Bad Path!!/x/y/z/w": {"desc": "too deep after cleaning", "children": []},
    })
    write(mem / "hot-memory-state.json", {
        "identity": {"agent_name": "Claw", "owner_name": "Sam Carter", "nickname": "Sam",
                     "trust_level": "high", "favourite_colour": "green"},
        "owner_profile": {"timezone": "Europe/London", "topics_loved": ["gardening", "beagles"],
                          "huge": "y" * 2000},
        "active_context": {
            "projects": [{"name": "Garden bot", "status": "active",
                          "description": "Watering automation"}, "Home server"],
            "events": [{"text": "Moved to Leeds", "timestamp": NOW - 30 * DAY},
                       {"event": "Biscuit's birthday party",
                        "timestamp": dt_iso(NOW - 5 * DAY)}],
            "tasks": [{"text": "Book the MOT", "status": "pending"},
                      {"text": "Renew passport", "status": "done"},
                      {"task": "Call the vet", "status": "in_progress"}],
        },
        "critical_lessons": [
            {"text": "Never deploy on Fridays", "category": "ops", "importance": 0.9,
             "timestamp": NOW - 10 * DAY},
            "Test on testnet first",
            {"importance": 0.5},
        ],
        "mood": "cheerful",
    })
    write(mem / "metrics.json", {"retrieval_count": 42, "evictions_today": 3,
                                 "reinforcements_today": 1, "consolidation_count": 7,
                                 "last_consolidation": NOW - 3600,
                                 "context_tokens_saved": 1000,
                                 "tree_index_size_bytes": 900})
    # Another agent of the same skill install: memory/<agent>/, other shapes.
    write(mem / "research" / "warm-memory.json", {"memories": [
        {"content": "The arXiv digest arrives at 7am", "category": "Work.Digest",
         "importance": 8, "timestamp": (NOW - DAY) * 1000},
        {"content": "Prefers papers with code", "category": "owner preferences",
         "importance": "0.6", "timestamp": dt_iso(NOW - 3 * DAY)},
    ]})
    write(mem / "research" / "memory-tree.json", {"nodes": {
        "work": {"description": "Work", "children": {
            "digest": {"description": "Daily paper digest"}}}}})
    write(mem / "research" / "hot-memory-state.json", "{not json")
    return root


def dt_iso(ts: float) -> str:
    import datetime as dt
    return dt.datetime.fromtimestamp(ts, dt.timezone.utc).isoformat().replace("+00:00", "Z")


@pytest.fixture
def workspace(tmp_path):
    return skill_workspace(tmp_path / "skill")


@pytest.fixture
def run(home):
    runner = CliRunner()

    def invoke(*args):
        return runner.invoke(cli, list(args), catch_exceptions=False)
    return invoke


def refused_items(report) -> dict[str, str]:
    return {f"{r['file']}:{r['item']}": r["reason"] for r in report["refused"]}


# -- parsing -----------------------------------------------------------------------------------

def test_tolerant_parsing_of_times_importance_and_categories():
    now = 1_764_460_800.0
    assert parse_time(now - 10, now) == now - 10
    assert parse_time((now - 10) * 1000, now) == pytest.approx(now - 10)
    assert parse_time(str(now - 10), now) == now - 10
    assert parse_time("2025-11-29T00:00:00Z", now) == now - DAY
    assert parse_time(now + 999, now) == now                # the future becomes now
    assert parse_time(None, now) is None and parse_time(0, now) is None
    with pytest.raises(ValueError):
        parse_time("soon", now)
    assert parse_importance(None) == 0.5 and parse_importance("0.7") == 0.7
    assert parse_importance(8) == 0.8
    with pytest.raises(ValueError):
        parse_importance(42)
    assert normalize_category("Projects.EvoClaw") == "projects/evoclaw"
    assert normalize_category("owner preferences") == "owner-preferences"
    assert normalize_category("root/home/pets") == "home/pets"
    assert normalize_category("a/b/c/d/e/f") == "a/b/c/d"
    assert normalize_category("???") == "general" and normalize_category(None) == "general"


# -- import ------------------------------------------------------------------------------------

def test_import_legacy_takes_what_fits_and_refuses_the_rest_with_reasons(run, home, workspace):
    result = run("--json", "import-legacy", "--workspace", str(workspace))
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["agent_id"] == "default" and not report["dry_run"]
    assert report["files"] == {"warm-memory.json": "read", "memory-tree.json": "read",
                               "hot-memory-state.json": "read", "metrics.json": "read"}
    taken = report["taken"]
    assert taken["facts"] == 3
    assert taken["identity"] == 4 and taken["owner_profile"] == 2
    assert taken["projects"] == 2 and taken["events"] == 2 and taken["tasks"] == 2
    assert taken["lessons"] == 2 and taken["metrics"] == 3
    refused = refused_items(report)
    assert "no text" in refused["warm-memory.json:[3]"]
    assert "at most 2000" in refused["warm-memory.json:[4]"]
    assert "importance" in refused["warm-memory.json:[5]"]
    assert "not a time" in refused["warm-memory.json:[6]"]
    assert "not an identity field" in refused["hot-memory-state.json:identity.favourite_colour"]
    assert "600" in refused["hot-memory-state.json:owner_profile.huge"]
    assert "no text" in refused["hot-memory-state.json:critical_lessons[2]"]
    assert "not a part of hot memory" in refused["hot-memory-state.json:mood"]
    assert "daily counter" in refused["metrics.json:evictions_today"]
    assert "live size" in refused["metrics.json:tree_index_size_bytes"]
    assert "not a metric" in refused["metrics.json:context_tokens_saved"]
    assert any(s["reason"].startswith("a done task") for s in report["skipped"])
    assert any("shortened" in n for n in report["notes"])

    with Memory.open("default", home=home) as mem:
        hits = mem.retrieve("what is the dog allergic to", limit=3)
        assert hits[0].fact.id == "a1b2c3d4e5f6" and hits[0].fact.source == "legacy"
        assert mem.get(hits[0].fact.id).access_count == 4     # 3 from the skill + this one
        bot = mem.get("b2c3d4e5f6a1")
        assert bot.category == "projects/garden_bot"
        assert bot.metadata.urls == ["https://github.com/samc/garden-bot"]
        assert mem.get("c3d4e5f6a1b2").tier == "cold"         # old and frozen: archived
        nodes = {n.path: n for n in mem.tree}
        assert nodes["home/pets"].description == "Biscuit the beagle"
        assert nodes["home/pets"].warm_count == 1             # recomputed from the facts
        assert nodes["owner/friends"].cold_count == 1
        assert "ideas/someday" in nodes and len(nodes["projects/garden_bot"].description) <= 100
        hot = mem.hot
        assert hot.identity.agent_name == "Claw" and hot.identity.owner_preferred_name == "Sam"
        assert hot.identity.trust_level == 0.9
        assert hot.owner_profile["topics_loved"] == ["gardening", "beagles"]
        assert {t.text for t in hot.active_context.tasks} == {"Book the MOT", "Call the vet"}
        assert {p.name for p in hot.active_context.projects} == {"Garden bot", "Home server"}
        assert {lesson.text for lesson in hot.critical_lessons} == {"Never deploy on Fridays",
                                                                    "Test on testnet first"}
        metrics = mem.metrics()
        assert metrics["counters"]["retrievals"] >= 42
        assert metrics["counters"]["consolidations.legacy"] == 7
        assert metrics["timestamps"]["last_consolidation.quick"] == pytest.approx(NOW - 3600)
        md = mem.config.memory_md_path.read_text()
        assert "Never deploy on Fridays" in md and "Claw" in md
        assert mem.store.outbox_depth() > 0                   # everything goes to the cloud

    # Running it again imports nothing twice.
    again = json.loads(run("--json", "import-legacy", "--workspace", str(workspace)).stdout)
    assert again["taken"]["facts"] == 0 and again["taken"]["tree_nodes"] == 0
    assert again["taken"]["metrics"] == 0
    with Memory.open("default", home=home) as mem:
        assert mem.store.count_facts() == 3
        assert len(mem.hot.critical_lessons) == 2 and len(mem.hot.active_context.events) == 2
        assert mem.metrics()["counters"]["consolidations.legacy"] == 7


def test_other_agents_live_in_memory_agent_folders(run, home, workspace):
    result = run("--json", "--agent-id", "research", "import-legacy", "--workspace",
                 str(workspace))
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["agent_id"] == "research" and report["source"].endswith("memory/research")
    assert report["taken"]["facts"] == 2 and report["taken"]["tree_nodes"] >= 1
    assert report["files"]["hot-memory-state.json"] == "refused"
    assert "not valid JSON" in refused_items(report)["hot-memory-state.json:(file)"]
    assert report["files"]["metrics.json"] == "missing"
    with Memory.open("research", home=home) as mem:
        facts = {f.text: f for f in mem.store.iter_facts()}
        digest = facts["The arXiv digest arrives at 7am"]
        assert digest.category == "work/digest" and digest.importance == 0.8
        assert abs(digest.created_at - (NOW - DAY)) < 1                 # from milliseconds
        assert facts["Prefers papers with code"].category == "owner-preferences"
        assert {n.path: n.description for n in mem.tree}["work/digest"] == "Daily paper digest"
    # An agent the skill never had is a clear error.
    missing = run("--agent-id", "nobody", "import-legacy", "--workspace", str(workspace))
    assert missing.exit_code == 8 and "no legacy memory for agent 'nobody'" in missing.stderr


def test_import_all_agents_and_dry_run(run, home, workspace):
    dry = json.loads(run("--json", "import-legacy", "--workspace", str(workspace), "--all",
                         "--dry-run").stdout)
    assert [r["agent_id"] for r in dry] == ["default", "research"]
    assert dry[0]["dry_run"] and dry[0]["taken"]["facts"] == 3 and dry[1]["taken"]["facts"] == 2
    with Memory.open("research", home=home) as mem:
        assert mem.store.count_facts() == 0
    with Memory.open("default", home=home) as mem:
        assert mem.store.count_facts() == 0 and mem.hot.identity.agent_name is None
    real = run("import-legacy", "--workspace", str(workspace), "--all")
    assert real.exit_code == 0, real.output
    assert "default (from" in real.stdout and "research (from" in real.stdout
    assert "refused warm-memory.json [3]: no text" in real.stdout
    with Memory.open("research", home=home) as mem:
        assert mem.store.count_facts() == 2


def test_import_refuses_a_file_of_the_wrong_shape(run, home, tmp_path):
    ws = tmp_path / "ws"
    write(ws / "memory" / "warm-memory.json", {"version": 2, "note": "not facts"})
    write(ws / "memory" / "memory-tree.json", 42)
    report = json.loads(run("--json", "import-legacy", "--workspace", str(ws)).stdout)
    refused = refused_items(report)
    assert "expected a list of facts" in refused["warm-memory.json:(file)"]
    assert "expected" in refused["memory-tree.json:(file)"]
    assert report["files"]["hot-memory-state.json"] == "missing"


# -- the original command names ----------------------------------------------------------------

def script() -> str:
    found = Path(sys.executable).parent / "evoclaw-memory"
    return str(found) if found.exists() else (shutil.which("evoclaw-memory") or "evoclaw-memory")


def test_a_script_written_for_the_skill_runs_unchanged(home, tmp_path):
    """The original skill's command names and flags, as its users' scripts call them."""
    cli_path = script()
    body = f"""set -euo pipefail
M="{cli_path}"
"$M" cold --init
"$M" store --text "Flash the bot" --category projects/garden-bot --importance 0.7 \\
    --cmd "pio run -t upload" --url https://github.com/samc/garden-bot --path "~/bots/garden"
"$M" hot --update identity '{{"agent_name": "Claw", "owner_name": "Sam"}}'
"$M" hot --update lesson '{{"text": "Never deploy on Fridays", "importance": 0.9}}'
"$M" hot --update task '{{"text": "Order salmon kibble"}}'
"$M" hot --rebuild
"$M" tree --add projects/garden-bot/firmware "ESP32 firmware"
"$M" tree --show
"$M" tree --remove projects/garden-bot/firmware
"$M" tree --prune
"$M" consolidate --mode quick
"$M" sync-critical
"$M" metrics
"$M" --agent-id research store --text "arXiv digest at 7am" --category work
"""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TURSO_", "EVOCLAW_"))}
    env["EVOCLAW_HOME"] = str(home)
    done = subprocess.run(["bash", "-c", body], capture_output=True, text=True, env=env,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert "cloud schema at version" in done.stdout
    assert "ESP32 firmware" in done.stdout and "removed projects/garden-bot/firmware" in done.stdout
    assert "pushed" in done.stdout                       # sync-critical = sync
    with Memory.open("default", home=home) as mem:
        fact = next(mem.store.iter_facts())
        assert fact.metadata.commands == ["pio run -t upload"]
        assert fact.metadata.urls == ["https://github.com/samc/garden-bot"]
        assert fact.metadata.paths == ["~/bots/garden"]
        assert mem.hot.identity.agent_name == "Claw"
        assert mem.store.outbox_depth() == 0
        assert mem.metrics()["timestamps"]["last_consolidation.quick"]
    with Memory.open("research", home=home) as mem:
        assert mem.store.count_facts() == 1


# -- SKILL.md ----------------------------------------------------------------------------------

def test_skill_md_describes_real_commands():
    text = (ROOT / "SKILL.md").read_text()
    front = re.match(r"^---\n(.*?)\n---\n", text, re.S)
    assert front, "SKILL.md starts with YAML front matter"
    assert re.search(r"^name: \S+", front.group(1), re.M)
    assert re.search(r"^description: .{40,}", front.group(1), re.M)
    used = set(re.findall(r"evoclaw-memory (?:--\S+ \S+ )*([a-z][a-z-]+)", text))
    known = set(cli.commands)
    assert used and used <= known, used - known
    for command in ("context", "retrieve", "store", "distill", "hot", "tree", "sync",
                    "consolidate", "import-legacy", "mcp", "serve", "doctor"):
        assert f"evoclaw-memory {command}" in text, command


def test_retrieve_accepts_the_original_query_flag(tmp_path, monkeypatch):
    from click.testing import CliRunner
    from evoclaw_memory.cli.main import cli
    monkeypatch.setenv("EVOCLAW_HOME", str(tmp_path))
    runner = CliRunner()
    runner.invoke(cli, ["store", "--text", "The router lives in the hall cupboard", "--category", "home"])
    flag = runner.invoke(cli, ["retrieve", "--query", "router cupboard", "--json"])
    positional = runner.invoke(cli, ["retrieve", "router cupboard", "--json"])
    assert flag.exit_code == 0 and "hall cupboard" in flag.output
    assert "hall cupboard" in positional.output
    both = runner.invoke(cli, ["retrieve", "x", "--query", "y"])
    assert both.exit_code == 2
