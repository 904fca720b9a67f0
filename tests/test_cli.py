"""The `evoclaw-memory` command line: in-process (CliRunner) and as the installed script.

Every test runs against a real SQLite file in a temporary EVOCLAW_HOME (the `home` fixture).
"""

import json
import os
from pathlib import Path

import click
import pytest

from evoclaw_memory.cli.common import translate as _translate
from evoclaw_memory.cli.main import cli

SECRET_TOKEN = "tok-SECRET-4f9c2e7d1a"
SECRET_KEY = "sk-SECRET-llm-8b3e0c"
SQL_NASTIES = ["'; DROP TABLE facts; --", '" OR 1=1', "*", "NEAR(", "\"", "a AND OR NOT",
               "col:val", "^start", "(((", "x -y", "%_\\", "a\x00b"]



# `run` (the CLI in-process) and `sh` (the installed console script): tests/conftest.py.


def one_error_line(stderr: str) -> str:
    """The single `error: ...` line of a failed run (and proof there is no traceback)."""
    assert "Traceback" not in stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert lines[0].startswith("error: ")
    return lines[0]


def store(run, text, category="general", importance="0.5", *extra):
    result = run("store", "--text", text, "--category", category, "--importance", importance,
                 *extra)
    assert result.exit_code == 0, result.output
    return result.stdout.strip()


def db_path(home, agent="default") -> Path:
    return home / "agents" / agent / "memory.db"


# -- store / retrieve ------------------------------------------------------------------------

def test_store_retrieve_round_trip_text(run):
    fact_id = store(run, "Decided to use raw JSON-RPC for the BSC integration",
                    "projects/evoclaw/bsc", "0.8")
    assert len(fact_id) == 16 and "\n" not in fact_id
    result = run("retrieve", "JSON-RPC BSC integration")
    assert result.exit_code == 0
    line = result.stdout.splitlines()[0]
    assert "Decided to use raw JSON-RPC" in line
    assert "projects/evoclaw/bsc" in line
    relevance, method = line.split()[:2]
    assert 0 < float(relevance) <= 1
    assert method in ("keyword-tree", "fts-warm", "llm-tree", "cold", "fts-cold")


def test_store_retrieve_round_trip_json(run):
    fact_id = store(run, "The owner drinks oolong tea every morning", "owner/preferences", "0.9")
    result = run("retrieve", "oolong tea", "--json")
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert isinstance(data, list) and len(data) == 1
    item = data[0]
    assert set(item) == {"id", "text", "category", "method", "path", "relevance", "score",
                         "coverage", "tier"}
    assert item["id"] == fact_id
    assert item["category"] == "owner/preferences"
    assert item["tier"] == "warm"
    # The global --json (before the subcommand) gives the same document shape.
    again = json.loads(run("--json", "retrieve", "oolong").stdout)
    assert again[0]["id"] == fact_id


def test_store_duplicate_is_reinforced(run):
    first = json.loads(run("store", "--text", "Backups run at 3am", "--json").stdout)
    second = run("store", "--text", "Backups  run at 3am", "--json")
    data = json.loads(second.stdout)
    assert first["status"] == "stored"
    assert data["status"] == "reinforced" and data["id"] == first["id"]
    assert data["fact"]["access_count"] >= 1
    human = run("store", "--text", "Backups run at 3am")
    assert human.stdout.strip() == first["id"]
    assert "reinforced" in human.stderr


def test_store_metadata_and_created_at(run):
    result = run("store", "--text", "Deployed the dashboard", "--category", "ops",
                 "--url", "https://grafana.example.com/d/1", "--cmd", "docker compose up -d",
                 "--path", "/opt/stacks/grafana/compose.yaml",
                 "--created-at", "2025-01-02T03:04:05Z", "--json")
    assert result.exit_code == 0, result.output
    fact = json.loads(result.stdout)["fact"]
    assert "https://grafana.example.com/d/1" in fact["metadata"]["urls"]
    assert "docker compose up -d" in fact["metadata"]["commands"]
    assert "/opt/stacks/grafana/compose.yaml" in fact["metadata"]["paths"]
    assert fact["created_at"] == 1735787045.0
    epoch = run("store", "--text", "Another one", "--created-at", "1735787045", "--json")
    assert json.loads(epoch.stdout)["fact"]["created_at"] == 1735787045.0
    bad = run("store", "--text", "x", "--created-at", "yesterday-ish")
    assert bad.exit_code == 2
    found = json.loads(run("search-url", "grafana.example", "--json").stdout)
    assert [f["text"] for f in found] == ["Deployed the dashboard"]


def test_flags_after_the_subcommand_win(run, home):
    store(run, "Agent A knows about rust", "general", "0.5", "--agent-id", "agent-a")
    result = run("--agent-id", "agent-b", "retrieve", "rust", "--agent-id", "agent-a", "--json")
    assert [r["text"] for r in json.loads(result.stdout)] == ["Agent A knows about rust"]
    other = run("--agent-id", "agent-a", "retrieve", "rust", "--agent-id", "agent-b", "--json")
    assert json.loads(other.stdout) == []
    assert db_path(home, "agent-a").exists() and db_path(home, "agent-b").exists()


def test_home_option_overrides_environment(run, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    store(run, "Lives elsewhere", "general", "0.5", "--agent-id", "x")
    result = run("--home", str(elsewhere), "store", "--text", "In the other home")
    assert result.exit_code == 0
    assert db_path(elsewhere).exists()
    assert json.loads(run("--home", str(elsewhere), "retrieve", "elsewhere", "--json").stdout) == []


# -- rejected input ------------------------------------------------------------------------

def test_agent_id_path_traversal_rejected(run, home, tmp_path):
    result = run("--agent-id", "../../etc", "retrieve", "x")
    assert result.exit_code == 8
    assert "invalid agent id" in one_error_line(result.stderr)
    assert result.stdout == ""
    assert not (home / "etc").exists() and not (tmp_path / "etc").exists()
    after = run("store", "--text", "x", "--agent-id", "../../etc")
    assert after.exit_code == 8
    one_error_line(after.stderr)


def test_ten_megabyte_text_rejected_cleanly(run):
    result = run("store", "--text", "a" * 10_000_000, "--json")
    assert result.exit_code == 8
    line = one_error_line(result.stderr)
    assert len(line) < 300
    assert json.loads(result.stdout) == {"error": line.removeprefix("error: "),
                                         "code": "validation", "exit": 8}
    assert json.loads(run("metrics", "--json").stdout)["sizes"]["warm_facts"] == 0


@pytest.mark.parametrize("category, words", [("../x", "invalid category"),
                                              ("a/b/c/d/e", "levels deep"),
                                              ("/etc/passwd", "invalid category")])
def test_bad_categories_rejected(run, category, words):
    result = run("store", "--text", "hello", "--category", category)
    assert result.exit_code == 8
    assert words in one_error_line(result.stderr)
    tree = run("tree", "add", category)
    assert tree.exit_code == 8
    one_error_line(tree.stderr)


def test_sql_metacharacters_in_queries(run):
    ids = [store(run, f"Fact {n} about the garden hose", "home/garden") for n in range(3)]
    store(run, "Quotes ' and \" and -- and ; are just text", "general")
    for query in SQL_NASTIES:
        for args in (("retrieve", query), ("retrieve", query, "--json"),
                     ("search-url", query, "--json"), ("context", query)):
            result = run(*args)
            assert result.exit_code == 0, (args, result.output)
            assert "Traceback" not in result.output
            if "--json" in args:
                json.loads(result.stdout)
    found = json.loads(run("retrieve", "garden hose", "--limit", "10", "--json").stdout)
    assert set(ids) <= {r["id"] for r in found}
    sizes = json.loads(run("metrics", "--json").stdout)["sizes"]
    assert sizes["warm_facts"] == 4
    quoted = json.loads(run("retrieve", "quotes", "--json").stdout)
    assert quoted and "--" in quoted[0]["text"]


# -- hot memory ------------------------------------------------------------------------------

def test_hot_update_valid(run, home):
    result = run("hot", "--update", "lesson",
                 '{"text": "Always test on testnet first", "category": "blockchain", '
                 '"importance": 0.9}')
    assert result.exit_code == 0, result.output
    md = home / "agents" / "default" / "workspace" / "MEMORY.md"
    assert "Always test on testnet first" in md.read_text()
    assert "Always test on testnet first" in run("hot").stdout
    state = json.loads(run("hot", "--json").stdout)
    assert state["critical_lessons"][0]["importance"] == 0.9
    run("hot", "--update", "owner_profile", '{"timezone": "Australia/Sydney"}')
    run("hot", "--update", "identity", '{"owner_name": "Sam"}', "--json")
    state = json.loads(run("hot", "--json").stdout)
    assert state["owner_profile"] == {"timezone": "Australia/Sydney"}
    assert state["identity"]["owner_name"] == "Sam"


def test_hot_update_malformed_json_changes_nothing(run, home):
    run("hot", "--update", "owner_profile", '{"timezone": "UTC"}')
    md = home / "agents" / "default" / "workspace" / "MEMORY.md"
    before_md = md.read_bytes()
    before = run("hot", "--json").stdout
    # Plain text is a lesson's text (tests/test_cli_small_things.py); a JSON object that
    # does not parse, or nothing at all, is refused with the right form shown.
    for bad in ('{"text": "x"', "", '{"text": }', "{not json"):
        result = run("hot", "--update", "lesson", bad)
        assert result.exit_code == 8
        line = one_error_line(result.stderr)
        assert "hot --update lesson takes a JSON object" in line
        assert ("malformed JSON" in line) == bool(bad)
        assert result.stdout == ""
    assert run("hot", "--json").stdout == before
    assert md.read_bytes() == before_md


def test_hot_unknown_key_and_bad_values(run):
    before = run("hot", "--json").stdout
    result = run("hot", "--update", "favourite_colour", '{"x": 1}')
    assert result.exit_code == 8
    assert "unknown hot memory key" in one_error_line(result.stderr)
    for key, value in (("identity", '{"bogus": 1}'), ("lesson", '["a list"]'),
                       ("lesson", '{"text": "x", "importance": 7}')):
        bad = run("hot", "--update", key, value)
        assert bad.exit_code == 8, (key, value)
        one_error_line(bad.stderr)
    assert run("hot", "--json").stdout == before
    usage = run("hot", "--update", "lesson")
    assert usage.exit_code == 2


def test_hot_tasks_and_rebuild(run, home):
    run("hot", "--update", "task", '{"id": "t1", "text": "Renew the domain"}')
    assert "Renew the domain" in run("hot").stdout
    done = run("hot", "--complete-task", "t1")
    assert done.exit_code == 0, done.output
    assert "Renew the domain" not in run("hot").stdout
    missing = run("hot", "--complete-task", "nope")
    assert missing.exit_code == 3           # not found, as the exit table says
    one_error_line(missing.stderr)
    rebuilt = run("hot", "--rebuild")
    path = Path(rebuilt.stdout.strip())
    assert path.exists() and path.name == "MEMORY.md"
    data = json.loads(run("hot", "--rebuild", "--json").stdout)
    assert data["path"] == str(path) and data["bytes"] <= 5120
    both = run("hot", "--rebuild", "--complete-task", "t1")
    assert both.exit_code == 2


# -- tree ------------------------------------------------------------------------------------

def test_tree_commands_and_legacy_flags(run):
    assert run("tree", "--add", "owner", "Owner profile and preferences").exit_code == 0
    assert run("tree", "add", "projects/evoclaw", "EvoClaw framework").exit_code == 0
    shown = run("tree").stdout
    assert "owner — Owner profile and preferences" in shown
    assert "projects/evoclaw — EvoClaw framework" in shown
    assert run("tree", "--show").stdout == shown == run("tree", "show").stdout
    data = json.loads(run("tree", "--json").stdout)
    assert {n["path"] for n in data["nodes"]} == {"owner", "projects", "projects/evoclaw"}
    assert data["bytes"] <= 2048
    legacy_json = json.loads(run("tree", "--add", "lessons", "Lessons learned", "--json").stdout)
    assert legacy_json["path"] == "lessons"
    store(run, "A fact filed under owner", "owner")
    refused = run("tree", "remove", "owner")
    assert refused.exit_code == 8
    assert "holds" in one_error_line(refused.stderr)
    assert run("tree", "--remove", "lessons").exit_code == 0
    assert "lessons" not in run("tree").stdout
    pruned = run("tree", "--prune")
    assert pruned.exit_code == 0 and "pruned 0" in pruned.stdout
    assert json.loads(run("tree", "prune", "--idle-days", "0", "--json").stdout)["removed"] \
        == ["projects/evoclaw", "projects"]
    assert "owner" in run("tree").stdout


# -- other commands --------------------------------------------------------------------------

def test_context_and_metrics(run):
    store(run, "The router admin page is at http://192.168.1.1", "home/network", "0.7")
    run("hot", "--update", "identity", '{"agent_name": "Evo"}')
    text = run("context", "router admin").stdout
    assert "# MEMORY" in text and "Memory tree" in text and "router admin page" in text
    data = json.loads(run("context", "router", "--json").stdout)
    assert data["bytes"] == len(data["context"].encode())
    assert "Evo" in run("context").stdout
    metrics = json.loads(run("metrics", "--json").stdout)
    assert set(metrics) == {"counters", "timestamps", "sizes"}
    assert metrics["counters"]["retrievals"] >= 2
    human = run("metrics").stdout
    assert "warm_bytes" in human and "/ 5120" in human


def test_consolidate_modes(run):
    store(run, "Consolidation keeps warm memory small", "general")
    for mode in ("quick", "daily", "monthly", "full"):
        result = run("consolidate", "--mode", mode, "--json")
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["mode"] == mode
    assert "archived" in run("consolidate").stdout
    bad = run("consolidate", "--mode", "weekly")
    assert bad.exit_code == 2
    metrics = json.loads(run("metrics", "--json").stdout)
    assert "last_consolidation.full" in metrics["timestamps"]


def test_extract_metadata(run, tmp_path):
    text = "Docs at https://docs.python.org/3/ and run `pip install httpx` in ~/src/app"
    data = json.loads(run("extract-metadata", text, "--json").stdout)
    assert data["urls"] == ["https://docs.python.org/3/"]
    assert "pip install httpx" in data["commands"]
    assert "~/src/app" in data["paths"]
    note = tmp_path / "note.md"
    note.write_text(text)
    assert json.loads(run("extract-metadata", "--file", str(note), "--json").stdout) == data
    assert json.loads(run("extract-metadata", "--json", input=text).stdout) == data
    human = run("extract-metadata", "plain words only").stdout
    assert "urls: (none)" in human


def test_search_url_and_get(run):
    fact_id = store(run, "Turso docs live at https://docs.turso.tech/sdk/http", "tech")
    found = run("search-url", "turso.tech")
    assert fact_id in found.stdout and "https://docs.turso.tech/sdk/http" in found.stdout
    assert json.loads(run("get", fact_id, "--json").stdout)["id"] == fact_id
    missing = run("get", "0000000000000000")
    assert missing.exit_code == 3
    one_error_line(missing.stderr)
    empty = run("search-url", "   ")
    assert empty.exit_code == 8


def test_ingest_daily_empty_workspace(run, tmp_path):
    result = run("ingest-daily", "--workspace", str(tmp_path / "ws"), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["files"] == 0


def test_validate_exit_statuses(run, tmp_path):
    clean = tmp_path / "clean.md"
    clean.write_text("# 2025-11-30\n\n- Had a quiet day.\n")
    ok = run("validate", str(clean))
    assert ok.exit_code == 0, ok.output
    assert ok.stdout.startswith(f"{clean}: complete (")
    messy = tmp_path / "messy.md"
    messy.write_text("# 2025-11-30\n\n- Installed nginx on the server.\n"
                     "- Deployed the new API to production.\n"
                     "- Decided to move the database to Postgres.\n")
    bad = run("validate", str(messy))
    assert bad.exit_code == 1
    for line in bad.stdout.splitlines():
        number, kind, message = line.split(": ", 2)
        assert number.isdigit() and kind and message
    data = json.loads(run("validate", str(messy), "--json").stdout)
    assert data and {"line", "kind", "message", "suggestion"} <= set(data[0])
    assert run("validate", str(messy), "--json").exit_code == 1


def test_validate_missing_file(run, tmp_path):
    result = run("validate", str(tmp_path / "nope.md"))
    assert result.exit_code == 3            # a missing file is not found, as a fact
    one_error_line(result.stderr)


def test_distill_llm_without_configuration(run):
    result = run("distill", "--llm", "--text", "hello")
    assert result.exit_code == 9
    assert "no LLM configured" in one_error_line(result.stderr)


def test_distill_rejects_bad_message_list(run):
    result = run("distill", "--text", '[{"role": "user"}, 3]')
    assert result.exit_code == 8
    assert "role" in one_error_line(result.stderr)
    both = run("distill", "--text", "x", "--file", "y")
    assert both.exit_code == 2
    empty = run("distill", input="  \n")
    assert empty.exit_code == 8
    assert "empty" in one_error_line(empty.stderr)


def test_distill_messages_text_and_store(run):
    convo = json.dumps([
        {"role": "user", "content": "I deployed the blog with `docker compose up -d` today, "
                                    "config is in /opt/stacks/blog/compose.yaml"},
        {"role": "assistant", "content": "Great, the deploy worked."}])
    dry = run("distill", "--text", convo, "--json")
    assert dry.exit_code == 0, dry.output
    data = json.loads(dry.stdout)
    assert {"record", "summary", "facts"} <= set(data)
    assert len(data["summary"].encode()) <= 30
    assert json.loads(run("metrics", "--json").stdout)["sizes"]["warm_facts"] == 0
    plain = run("distill", input="Alice told me she loves hiking in the Blue Mountains.")
    assert plain.exit_code == 0, plain.output
    assert plain.stdout.startswith("summary:")
    stored = run("distill", "--text", convo, "--store", "--json")
    assert stored.exit_code == 0, stored.output
    result = json.loads(stored.stdout)
    assert {"added", "reinforced", "summary", "record"} <= set(result)
    warm = json.loads(run("metrics", "--json").stdout)["sizes"]["warm_facts"]
    assert warm == len(result["added"])


# -- configuration, doctor, corruption -------------------------------------------------------

def test_config_show_never_prints_secrets(run, home):
    env = {"TURSO_AUTH_TOKEN": SECRET_TOKEN, "EVOCLAW_LLM_API_KEY": SECRET_KEY,
           "TURSO_DATABASE_URL": f"libsql://db-org.turso.io?authToken={SECRET_TOKEN}",
           "EVOCLAW_LLM_BASE_URL": f"https://user:{SECRET_KEY}@llm.example.com/v1"}
    # doctor --offline: its network checks (and their redaction) are in tests/test_doctor.py.
    for args in (("config", "show"), ("config", "show", "--json"), ("--json", "config", "show"),
                 ("doctor", "--offline"), ("doctor", "--offline", "--json")):
        result = run(*args, env=env)
        assert result.exit_code == 0, result.output
        assert SECRET_TOKEN not in result.output and SECRET_KEY not in result.output
    data = json.loads(run("config", "show", "--json", env=env).stdout)
    assert data["cloud_token"] == "***" and data["llm_api_key"] == "***"
    assert data["cloud_url"].startswith("libsql://db-org.turso.io")
    assert data["db_path"] == str(db_path(home))
    unset = json.loads(run("config", "show", "--json").stdout)
    assert unset["cloud_token"] is None


def test_config_file_option(run, tmp_path):
    good = tmp_path / "good.toml"
    good.write_text('agent_id = "from-file"\n[warm]\nmax_bytes = 20000\n')
    data = json.loads(run("--config", str(good), "config", "show", "--json").stdout)
    assert data["agent_id"] == "from-file" and data["warm_max_bytes"] == 20000
    missing = run("--config", str(tmp_path / "missing.toml"), "config", "show")
    assert missing.exit_code == 2
    broken = tmp_path / "broken.toml"
    broken.write_text("this is = = not toml")
    result = run("--config", str(broken), "retrieve", "x")
    assert result.exit_code == 9
    assert "not valid TOML" in one_error_line(result.stderr)
    doctor = run("--config", str(broken), "doctor")
    assert doctor.exit_code == 1 and "FAIL  config" in doctor.stdout


def test_doctor_healthy(run):
    store(run, "Doctor needs something to look at", "general")
    result = run("doctor")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines and all(line.startswith("OK") for line in lines)
    names = {c["name"] for c in json.loads(run("doctor", "--json").stdout)["checks"]}
    assert {"config", "database", "integrity", "memory_md", "hot_bytes", "warm_bytes",
            "tree_nodes", "tree_bytes"} <= names


def test_corrupted_database(run, home):
    store(run, "Soon to be lost in noise", "general")
    db = db_path(home)
    garbage = os.urandom(64 * 1024)
    for extra in db.parent.glob("memory.db-*"):
        extra.unlink()
    db.write_bytes(garbage)
    for args in (("retrieve", "noise"), ("store", "--text", "new"), ("hot",), ("tree",),
                 ("retrieve", "noise", "--json")):
        result = run(*args)
        assert result.exit_code not in (0, 70), args
        line = one_error_line(result.stderr)
        assert "not a usable evoclaw database" in line or "database" in line
        # --json: the error is also one JSON object on stdout; else stdout stays empty.
        assert (json.loads(result.stdout)["exit"] == result.exit_code if "--json" in args
                else result.stdout == "")
    doctor = run("doctor")
    assert doctor.exit_code == 1 and "FAIL  database" in doctor.stdout
    assert db.read_bytes() == garbage          # never deleted nor "repaired" behind our back


def test_translate_internal_errors_and_interrupts(capsys):
    exit_ = _translate(RuntimeError("boom\nsecond line"))
    assert isinstance(exit_, click.exceptions.Exit) and exit_.exit_code == 70
    assert capsys.readouterr().err == "error: internal error: RuntimeError: boom second line\n"
    assert _translate(KeyboardInterrupt()).exit_code == 130


def test_every_help_works(run):
    def walk(command, path):
        yield path
        for name, sub in getattr(command, "commands", {}).items():
            yield from walk(sub, path + [name])

    paths = list(walk(cli, []))
    assert len(paths) >= 20
    for path in paths:
        result = run(*path, "--help")
        assert result.exit_code == 0, (path, result.output)
        assert "Usage:" in result.stdout


def test_every_json_output_parses(run, tmp_path):
    fact_id = store(run, "JSON everywhere: https://msgspec.dev is fast", "tech/json")
    other = store(run, "JSON everywhere, version two: https://msgspec.dev", "tech/json")
    commands = [
        ("store", "--text", "One more fact"), ("retrieve", "json"), ("context", "json"),
        ("get", fact_id), ("search-url", "msgspec"), ("hot",), ("hot", "--rebuild"),
        ("hot", "--update", "event", '{"text": "Shipped the CLI"}'),
        ("tree",), ("tree", "show"), ("tree", "add", "misc", "Everything else"),
        ("tree", "prune"), ("tree", "remove", "misc"), ("metrics",), ("config", "show"),
        ("doctor",), ("extract-metadata", "see https://a.example.com"),
        ("consolidate", "--mode", "quick"), ("supersede", fact_id, other),
        ("ingest-daily", "--workspace", str(tmp_path)),
    ]
    once = {("tree", "add"), ("tree", "remove"), ("supersede", fact_id)}
    for args in commands:
        placements = [[*args, "--json"]] + ([] if tuple(args[:2]) in once else [["--json", *args]])
        for argv in placements:
            result = run(*argv)
            assert result.exit_code == 0, (argv, result.output)
            json.loads(result.stdout)
            assert result.stdout.count("\n") == 1, argv      # one document, one line


# -- the installed console script ------------------------------------------------------------

def test_script_round_trip(sh):
    stored = sh("store", "--text", "The cat is called Miso", "--category", "owner/family",
                "--importance", "0.9")
    assert stored.returncode == 0, stored.stderr
    fact_id = stored.stdout.strip()
    found = sh("retrieve", "Miso", "--json")
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)[0]["id"] == fact_id
    assert "Miso" in sh("retrieve", "cat called Miso").stdout
    assert sh("--help").returncode == 0
    assert sh("store", "--help").returncode == 0


def test_script_errors_are_one_line(sh, home):
    bad_agent = sh("--agent-id", "../../etc", "retrieve", "x")
    assert bad_agent.returncode == 8
    one_error_line(bad_agent.stderr)
    bad_json = sh("hot", "--update", "lesson", "{oops")
    assert bad_json.returncode == 8
    assert "malformed JSON" in one_error_line(bad_json.stderr)
    usage = sh("retrieve")
    assert usage.returncode == 2 and "retrieve --help" in one_error_line(usage.stderr)
    unknown = sh("no-such-command")
    assert unknown.returncode == 2


def test_script_corrupted_database(sh, home):
    assert sh("store", "--text", "x y z").returncode == 0
    db = db_path(home)
    for extra in db.parent.glob("memory.db-*"):
        extra.unlink()
    db.write_bytes(b"this is not sqlite at all " * 1000)
    result = sh("retrieve", "x")
    assert result.returncode == 4
    assert "not a usable evoclaw database" in one_error_line(result.stderr)
    assert db.exists() and db.read_bytes().startswith(b"this is not sqlite")
    doctor = sh("doctor")
    assert doctor.returncode == 1 and "Traceback" not in doctor.stderr


def test_script_config_show_hides_secrets(sh):
    result = sh("config", "show", extra_env={"TURSO_AUTH_TOKEN": SECRET_TOKEN,
                                             "EVOCLAW_LLM_API_KEY": SECRET_KEY})
    assert result.returncode == 0
    assert SECRET_TOKEN not in result.stdout + result.stderr
    assert SECRET_KEY not in result.stdout + result.stderr
    assert "cloud_token" in result.stdout and "***" in result.stdout
