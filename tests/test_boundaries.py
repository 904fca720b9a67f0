"""The one validation layer at the boundary (SPEC §6 "Nothing lost"; issue 12).

Generated bad values go in through every door - the API, the CLI, the MCP tools - and each
must come back as one clear error, leave the stored facts and hot memory exactly as they
were, and leave the next sync (the embedded default cloud file) working. The rest of the
file pins the crash list of the issue, one regression each.
"""

from __future__ import annotations

import asyncio
import json
import math
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evoclaw_memory import Memory
from evoclaw_memory.cli.main import cli
from evoclaw_memory.config import load_config, validate_agent_id
from evoclaw_memory.errors import ConfigError, ValidationError
from evoclaw_memory.agent.legacy import import_legacy
from evoclaw_memory.llm.prompts import parse_distillation
from evoclaw_memory.validate import EPOCH_MAX, printable

FEW = settings(max_examples=15, deadline=None,
               suppress_health_check=[HealthCheck.function_scoped_fixture])

# -- generated bad values ----------------------------------------------------------------------

POISON = ["\x00", "\ud800", "\udcff", "\udfff"]     # NUL and lone surrogates (argv's escapes)
bad_strings = st.builds(lambda a, p, b: a + p + b, st.text(max_size=8), st.sampled_from(POISON),
                        st.text(max_size=8))
not_strings = st.one_of(st.integers(), st.floats(), st.none(), st.lists(st.integers(), max_size=2),
                        st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))
non_finite = st.sampled_from([math.nan, math.inf, -math.inf])
huge_ints = st.integers(min_value=EPOCH_MAX, max_value=10 ** 40)
def _readable_time(text: str) -> bool:
    """Times people write ("2026-12-12", "0" epoch seconds) are valid input (issue 16)."""
    from evoclaw_memory.validate import when
    try:
        when("t", text)
    except Exception:
        return False
    return True


bad_times = st.one_of(non_finite, huge_ints, st.integers(max_value=-1),
                      st.floats(min_value=EPOCH_MAX, max_value=1e300),
                      st.text(max_size=5).filter(lambda t: not _readable_time(t)),
                      st.booleans(), st.lists(st.integers(), max_size=2))
bad_importance = st.one_of(non_finite, huge_ints, st.floats(min_value=1.0001, max_value=1e300),
                           st.floats(max_value=-0.0001, min_value=-1e300), st.text(max_size=5),
                           st.booleans(), st.none())
bad_limits = st.one_of(non_finite, st.integers(max_value=0), st.integers(min_value=101),
                       st.sampled_from(["five", "5", None, True, 2.5, [5]]))


def nested(depth: int) -> object:
    value: object = "x"
    for _ in range(depth):
        value = [value]
    return value


deep_values = st.integers(min_value=25, max_value=3000).map(nested)


def snapshot(mem: Memory) -> tuple:
    """Everything a rejected change must leave alone: the facts, hot memory, the outbox."""
    facts = sorted((f.id, f.text, f.category, f.importance, f.created_at)
                   for f in mem.store.iter_facts())
    return facts, mem.store.load_hot(), mem.store.outbox_depth()


@pytest.fixture
def seeded(home):
    """A memory with one fact and one lesson, synced once to the default cloud file."""
    with Memory.open("edge", home=home) as mem:
        mem.remember("Sam keeps the spare key under the blue pot", category="home/keys",
                     importance=0.8)
        mem.update_hot("lesson", {"text": "Check the pot before calling a locksmith"})
        mem.sync()
        yield mem


def refused_and_intact(mem: Memory, call) -> ValidationError:
    before = snapshot(mem)
    with pytest.raises(ValidationError) as caught:
        call()
    assert str(caught.value) and "\n" not in str(caught.value)
    assert snapshot(mem) == before
    return caught.value


def sync_still_works(mem: Memory) -> None:
    later = mem.remember("A later fact must still reach the cloud", category="general")
    report = mem.sync()
    assert mem.store.outbox_depth() == 0, report
    local = {f.id for f in mem.store.iter_facts()}
    with mem.open_remote() as remote:
        assert later.id in {f.id for f in remote.facts_by_ids(mem.agent_id, sorted(local))}
        assert {f.id for f in remote.facts_by_ids(mem.agent_id, sorted(local))} == local


# -- the API -----------------------------------------------------------------------------------

@FEW
@given(field=st.sampled_from(["text", "category", "importance", "created_at", "metadata",
                              "source"]), data=st.data())
def test_remember_refuses_generated_bad_values(seeded, field, data):
    bad = {"text": st.one_of(bad_strings, not_strings),
           "category": st.one_of(bad_strings, not_strings,
                                 st.sampled_from(["home\n/pets", "home/pets\nx", "a\x1b/b"])),
           "importance": bad_importance,
           "created_at": bad_times,
           "metadata": st.one_of(st.lists(st.text(max_size=3), max_size=2), st.integers(),
                                 st.builds(lambda s: {"urls": [s]}, bad_strings),
                                 st.just({"urls": "not a list"}), st.just({"links": []})),
           "source": st.one_of(bad_strings, st.integers())}[field]
    value = data.draw(bad)
    kwargs = {"text": "A fresh fact about the garden", field: value}
    refused_and_intact(seeded, lambda: seeded.remember(**kwargs))


HOT_POISON = {
    "lesson": lambda v: {"text": "x", "timestamp": v},
    "event": lambda v: {"text": "x", "timestamp": v},
    "task": lambda v: {"text": "x", "timestamp": v},
    "project": lambda v: {"name": "x", "timestamp": v},
}


@FEW
@given(key=st.sampled_from(sorted(HOT_POISON)), stamp=bad_times)
def test_update_hot_refuses_bad_timestamps_and_commits_nothing(seeded, key, stamp):
    md = seeded.config.memory_md_path.read_text()
    refused_and_intact(seeded, lambda: seeded.update_hot(key, HOT_POISON[key](stamp)))
    assert seeded.config.memory_md_path.read_text() == md


@FEW
@given(kind=st.sampled_from(["text", "importance", "profile", "deep", "identity"]),
       data=st.data())
def test_update_hot_refuses_generated_bad_values(seeded, kind, data):
    if kind == "text":
        key, value = "lesson", {"text": data.draw(bad_strings)}
    elif kind == "importance":
        key, value = "lesson", {"text": "x", "importance": data.draw(bad_importance)}
    elif kind == "profile":
        key, value = "owner_profile", {"tea": data.draw(st.one_of(non_finite, bad_strings,
                                                                  st.just(10 ** 30)))}
    elif kind == "deep":
        key, value = "owner_profile", {"deep": data.draw(deep_values)}
    else:
        key, value = "identity", {"trust_level": data.draw(non_finite)}
    refused_and_intact(seeded, lambda: seeded.update_hot(key, value))


@pytest.mark.parametrize("raw", ['{"text": "x", "timestamp": NaN}',
                                 '{"text": "x", "timestamp": Infinity}',
                                 '{"text": "x", "importance": -Infinity}',
                                 '{"text": "x", "timestamp": 1e400}',
                                 "[" * 50_000 + "]" * 50_000])
def test_update_hot_json_text_rejects_nan_infinity_and_depth(seeded, raw):
    refused_and_intact(seeded, lambda: seeded.update_hot("lesson", raw))
    assert seeded.hot.critical_lessons[0].text.startswith("Check the pot")


def test_the_nan_lesson_of_the_issue_no_longer_poisons_the_agent(seeded):
    """hot --update lesson '{"text":"x","timestamp":NaN}' committed, then every sync, hot and
    consolidate failed with `Expected float, got null`."""
    refused_and_intact(seeded, lambda: seeded.update_hot(
        "lesson", '{"text": "x", "timestamp": NaN}'))
    assert seeded.render_memory_md()
    seeded.consolidate("quick")
    sync_still_works(seeded)


def test_a_created_at_past_sqlite_range_is_refused_and_later_facts_sync(seeded):
    """remember(created_at=10**30) was accepted, then every sync failed."""
    refused_and_intact(seeded, lambda: seeded.remember("x", created_at=10 ** 30))
    refused_and_intact(seeded, lambda: seeded.remember("x", created_at=EPOCH_MAX))
    assert seeded.remember("Just inside", created_at=EPOCH_MAX - 1).created_at == EPOCH_MAX - 1
    sync_still_works(seeded)


@FEW
@given(query=st.one_of(not_strings, st.builds(lambda a: a + "\ud800", st.text(max_size=5))),
       limit=bad_limits)
def test_retrieve_and_context_refuse_bad_arguments(seeded, query, limit):
    refused_and_intact(seeded, lambda: seeded.retrieve(query))
    refused_and_intact(seeded, lambda: seeded.retrieve("spare key", limit=limit))
    refused_and_intact(seeded, lambda: seeded.context(query))
    refused_and_intact(seeded, lambda: seeded.context("spare key", limit=limit))
    if not (type(limit) is int and 1 <= limit <= 1000):     # search-url takes up to 1000
        refused_and_intact(seeded, lambda: seeded.search_url("key", limit=limit))


@FEW
@given(messages=st.one_of(st.integers(), st.none(), st.floats(), st.lists(st.integers(), min_size=1,
                                                                           max_size=3),
                          st.dictionaries(st.text(max_size=3), st.text(max_size=3), max_size=2),
                          bad_strings.filter(lambda s: "\x00" not in s),
                          st.builds(lambda c: [{"role": "user", "content": c}],
                                    st.one_of(bad_strings, st.integers()))))
def test_end_conversation_refuses_bad_input(seeded, messages):
    refused_and_intact(seeded, lambda: seeded.end_conversation(messages))


def test_wrong_types_of_the_issue_raise_validation_error(seeded):
    for call in (lambda: seeded.remember("x", metadata=["https://a.example"]),
                 lambda: seeded.retrieve("key", limit="five"),
                 lambda: seeded.retrieve("key", limit=math.nan),
                 lambda: seeded.context(None),
                 lambda: seeded.end_conversation(12345),
                 lambda: seeded.remember("x\ud800"),
                 lambda: seeded.retrieve("x\udcff")):
        refused_and_intact(seeded, call)
    sync_still_works(seeded)


# -- the CLI -----------------------------------------------------------------------------------

def invoke(home: Path, *args: str):
    result = CliRunner().invoke(cli, ["--agent-id", "edge", *args], catch_exceptions=False,
                                env={"EVOCLAW_HOME": str(home)})
    return result


def one_error_line(result) -> str:
    assert "Traceback" not in result.output + result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


cli_bad = st.one_of(
    st.tuples(st.just("store"), st.just("--created-at"),
              st.sampled_from(["99999999999999999999999", "nan", "inf", "-1", "3000-01-02"])),
    st.tuples(st.just("store"), st.just("--importance"), st.sampled_from(["nan", "inf", "2"])),
    st.tuples(st.just("store"), st.just("--text"), bad_strings),
    st.tuples(st.just("store"), st.just("--category"),
              st.sampled_from(["home\n/pets", "ｈｏ\nｍｅ", "hоme", "a/b/c/d/e", "\udcff"])),
    st.tuples(st.just("hot"), st.just("lesson"),
              st.sampled_from(['{"text":"x","timestamp":NaN}', '{"text":"x","timestamp":1e30}',
                               '{"text":"x","importance":Infinity}', "[" * 5000,
                               '{"text":"\\ud800"}', '{"text":"x\\u0000"}'])),
    st.tuples(st.just("retrieve"), st.just(""), bad_strings.filter(lambda s: "\x00" not in s)),
)


@FEW
@given(case=cli_bad)
def test_cli_refuses_generated_bad_values_with_one_line(seeded, home, case):
    command, option, value = case
    if command == "store":
        # "--opt=value": a generated value may start with "-"
        text = value if option == "--text" else "A fresh fact about the shed"
        args = ["store", f"--text={text}"] + ([f"{option}={value}"] if option != "--text" else [])
    elif command == "hot":
        args = ["hot", "--update", option, value]
    else:
        args = ["retrieve", "--", value]
    before = snapshot(seeded)
    result = invoke(home, *args)
    assert result.exit_code == 8, (args, result.output, result.stderr)
    one_error_line(result)
    assert snapshot(seeded) == before


def test_cli_after_refusals_sync_and_hot_still_work(seeded, home):
    for args in (["hot", "--update", "lesson", '{"text":"x","timestamp":NaN}'],
                 ["store", "--text", "x", "--created-at", "99999999999999999999999"]):
        assert invoke(home, *args).exit_code == 8
    for args in (["hot"], ["sync"], ["consolidate"]):
        result = invoke(home, *args)
        assert result.exit_code == 0, (args, result.stderr)


def test_invalid_utf8_in_argv_is_one_clear_error(home):
    """A real process: argv bytes that are not UTF-8 arrive as surrogate escapes."""
    exe = Path(sys.executable).parent / "evoclaw-memory"
    env = {"EVOCLAW_HOME": str(home), "PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"}
    for argv in ([b"store", b"--text", b"caf\xe9 au lait"], [b"retrieve", b"\xff\xfe"],
                 [b"--agent-id", b"sam\xff", b"hot"]):
        proc = subprocess.run([str(exe).encode(), *argv], env=env, capture_output=True,
                              timeout=60)
        err = proc.stderr.decode("utf-8", "replace")
        assert proc.returncode == 8, (argv, err)
        assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
        assert err.startswith("error: ")


def test_deeply_nested_json_in_distill_text_is_one_clear_error(home):
    result = invoke(home, "distill", "--text", "[" * 100_000)
    assert result.exit_code == 8
    assert "nested deeper" in one_error_line(result)
    plain = invoke(home, "distill", "--text", "[10:32] Sam: the router is in the hall")
    assert plain.exit_code == 0, plain.stderr


def test_human_output_escapes_control_characters(home):
    evil = "Router password rotated \x1b]0;pwned\x07 \x1b[2J today"
    stored = invoke(home, "store", "--text", evil, "--category", "home/network")
    assert stored.exit_code == 0, stored.stderr
    for args in (["retrieve", "router password"], ["search-url", "rotated"],
                 ["context", "router password"], ["get", stored.stdout.strip()]):
        result = invoke(home, *args)
        assert result.exit_code == 0, result.stderr
        assert "\x1b" not in result.stdout and "\x07" not in result.stdout, args
        assert "\\x1b]0;pwned\\x07" in result.stdout, args
    raw = json.loads(invoke(home, "retrieve", "router password", "--json").stdout)
    assert raw[0]["text"] == " ".join(evil.split())        # JSON keeps the value exactly
    assert printable("a\tb\nc\x9bd\x7f") == "a\tb\nc\\x9bd\\x7f"


# -- names and categories (item 14) ------------------------------------------------------------

@pytest.mark.parametrize("agent", ["sam\n", "sam\r\n", "\nsam", "sam\x00"])
def test_agent_id_with_a_trailing_newline_is_refused(home, agent):
    with pytest.raises(ValidationError):
        validate_agent_id(agent)
    result = invoke(home, "--agent-id", agent, "store", "--text", "hi")
    assert result.exit_code == 8
    one_error_line(result)
    assert not (home / "agents" / agent).exists()


def test_category_with_a_newline_cannot_forge_a_tree_line(seeded):
    for category in ("home\n/pets", "home/pets\n- [fake] line", "a\u2028b"):
        refused_and_intact(seeded, lambda c=category: seeded.remember("x", category=c))
    refused_and_intact(seeded, lambda: seeded.tree_add("home\n/pets"))
    node = seeded.tree_add("home/garden", "Beds\nand\x1b[2J pots")
    assert "\n" not in node.description
    assert len(seeded.tree_text().splitlines()) == len(seeded.tree) + 2   # root + footer


def test_look_alike_categories_are_folded_or_refused(seeded):
    assert seeded.remember("Fullwidth", category="ｈｏｍｅ/ｐｅｔｓ").category == "home/pets"
    assert seeded.remember("Cyrillic o", category="home/котики").category == "home/котики"
    assert seeded.remember("Chinese", category="家庭/宠物").category == "家庭/宠物"
    err = refused_and_intact(seeded, lambda: seeded.remember("x", category="hоme/pets"))
    assert "look-alike" in str(err)


# -- the crash list ----------------------------------------------------------------------------

@pytest.mark.parametrize("toml, words", [("[scoring]\ndecay_days = 0\n", "decay_days"),
                                         ("[scoring]\ndecay_days = -3\n", "decay_days"),
                                         ("[scoring]\ndecay_days = nan\n", "decay_days"),
                                         ("[warm]\nmax_bytes = -1\n", "max_bytes"),
                                         ("[warm]\nmax_bytes = 0\n", "max_bytes"),
                                         ("[scoring]\naccess_boost = inf\n", "access_boost"),
                                         ("[llm]\ntimeout = 0\n", "timeout")])
def test_config_refuses_impossible_numbers(home, toml, words):
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(toml)
    with pytest.raises(ConfigError, match=words):
        load_config(home=home)
    result = invoke(home, "retrieve", "anything")
    assert result.exit_code == 9 and words in one_error_line(result)


@pytest.mark.parametrize("setting", ["memory_md", "workspace"])
def test_a_memory_md_path_under_a_file_commits_nothing(home, tmp_path, setting):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file")
    target = blocker / ("MEMORY.md" if setting == "memory_md" else "ws")
    with Memory.open("edge", home=home, **{setting: str(target)}) as mem:
        before = snapshot(mem)
        for call in (lambda: mem.update_hot("lesson", {"text": "Only once, please"}),
                     lambda: mem.end_conversation("Sam: remember that the bins go out Tuesday")):
            with pytest.raises(ConfigError, match="is a file"):
                call()
            assert snapshot(mem) == before
    with Memory.open("edge", home=home) as mem:         # fixed config: the retry stores once
        mem.update_hot("lesson", {"text": "Only once, please"})
        assert [l.text for l in mem.hot.critical_lessons] == ["Only once, please"]


def test_doctor_reports_a_corrupt_cloud_db_as_a_failed_check(seeded, home):
    (home / "cloud.db").write_bytes(b"this is not sqlite" * 500)
    result = invoke(home, "doctor", "--json")
    assert result.exit_code == 1, result.stderr
    checks = {c["name"]: c for c in json.loads(result.stdout)["checks"]}
    assert not checks["cloud"]["ok"] and checks["database"]["ok"]
    assert "llm" in checks                  # the checks after the cloud one still ran


def test_search_url_matches_within_values_not_the_json(seeded):
    linked = seeded.remember("The vet's booking page", category="home/pets",
                             metadata={"urls": ["https://vet.example/book"]})
    assert seeded.search_url('"') == []
    assert seeded.search_url("urls") == []
    assert seeded.search_url("]") == []
    assert [f.id for f in seeded.search_url("vet.example")] == [linked.id]
    quoted = seeded.remember('Sam calls it "the shed"')
    assert [f.id for f in seeded.search_url('"')] == [quoted.id]


# -- pulled rows, legacy import, LLM answers ---------------------------------------------------

def test_a_bad_pulled_row_is_skipped_and_the_rest_arrive(home, tmp_path):
    cloud = tmp_path / "shared-cloud.db"
    with Memory.open("edge", home=home, cloud_url=str(cloud)) as mem:
        mem.remember("Before the bad rows", category="general")
        mem.sync()
        conn = sqlite3.connect(cloud)
        rows = [("good-1", "A fact from the old skill", "home", 0.5, 1_700_000_000),
                ("bad-time", "Far future", "home", 0.5, 10 ** 18),
                ("bad-nul", "nul \x00 inside", "home", 0.5, 1_700_000_000),
                ("bad-imp", "Odd importance", "home", 7.5, 1_700_000_000),
                ("bad-cat", "Injected", "home\n/x", 0.5, 1_700_000_000),
                ("good-2", "Another old fact", "work", 0.4, 1_700_000_100)]
        with conn:
            conn.executemany("INSERT INTO cold_memories (id, agent_id, text, category, "
                             "importance, created_at) VALUES (?, 'edge', ?, ?, ?, ?)", rows)
        conn.close()
        report = mem.sync()
        ids = {f.id for f in mem.store.iter_facts()}
        assert {"good-1", "good-2"} <= ids and not ids & {"bad-time", "bad-nul", "bad-imp",
                                                         "bad-cat"}, report
        sync_still_works(mem)


def test_bad_legacy_items_are_refused_with_reasons_and_the_rest_imported(mem, tmp_path):
    folder = tmp_path / "legacy"
    folder.mkdir()
    (folder / "warm-memory.json").write_text(
        '[{"text": "Good legacy fact", "category": "home"},'
        ' {"text": "Bad importance", "importance": NaN},'
        ' {"text": "Lone \\ud800 surrogate"},'
        ' {"text": "Bad link", "metadata": {"urls": ["https://x.example/\\u0000"]}},'
        ' {"text": "Bad count", "access_count": Infinity}]')
    (folder / "hot-memory-state.json").write_text(
        '{"critical_lessons": [{"text": "Good lesson"}, {"text": "Bad", "importance": NaN}],'
        ' "owner_profile": {"tea": "green", "bad": NaN}}')
    report = import_legacy(mem, folder)
    assert [f.text for f in mem.store.iter_facts()] == ["Good legacy fact"]
    assert len([r for r in report["refused"] if r["file"] == "warm-memory.json"]) == 4
    assert [l.text for l in mem.hot.critical_lessons] == ["Good lesson"]
    assert mem.hot.owner_profile == {"tea": "green"}
    assert all(r["reason"] for r in report["refused"])
    mem.sync()


def test_a_deeply_nested_llm_answer_is_an_llm_error_not_a_crash():
    from evoclaw_memory.errors import LLMError
    from evoclaw_memory.llm.client import extract_json
    with pytest.raises(LLMError, match="nested too deeply"):
        extract_json('{"facts": ' + "[" * 100_000)


def test_llm_answer_items_the_store_cannot_keep_are_dropped_not_fatal():
    answer = parse_distillation({
        "facts": [{"text": "Sam likes green tea", "importance": "NaN"},
                  {"text": "nul \x00 inside"}, {"text": "lone \ud800"},
                  {"text": "Bins go out Tuesday", "category": "home\ud800"}],
        "summary": "tea \ud800", "hot": {"lessons": ["ok lesson", "bad \x00"],
                                        "owner_profile": {"tea": "green", "x\ud800": "y"}}})
    assert [f.text for f in answer.facts] == ["Sam likes green tea", "Bins go out Tuesday"]
    assert answer.facts[0].importance == 0.5 and answer.facts[1].category == "general"
    assert answer.summary == "" and answer.hot.lessons == ["ok lesson"]
    assert answer.hot.owner_profile == {"tea": "green"}


# -- the MCP tools -----------------------------------------------------------------------------

def mcp_call(server, name: str, args: dict):
    return asyncio.run(server.call_tool(name, args))


@FEW
@given(case=st.one_of(
    st.tuples(st.just("remember"), st.builds(lambda v: {"text": "x", "importance": v},
                                             st.one_of(non_finite, st.floats(min_value=1.5))),
              ),
    st.tuples(st.just("remember"), st.builds(lambda v: {"text": v}, bad_strings)),
    st.tuples(st.just("remember"), st.builds(lambda v: {"text": "x", "category": v},
                                             st.sampled_from(["home\n/pets", "hоme"]))),
    st.tuples(st.just("update_hot"), st.builds(lambda v: {"key": "lesson",
                                                          "value": {"text": "x", "timestamp": v}},
                                               st.one_of(non_finite, huge_ints))),
    st.tuples(st.just("update_hot"), st.builds(
        lambda v: {"key": "lesson", "value": json.dumps({"text": "x", "timestamp": v})},
        non_finite)),
    st.tuples(st.just("update_hot"), st.builds(lambda v: {"key": "owner_profile",
                                                          "value": {"deep": v}}, deep_values)),
    st.tuples(st.just("retrieve"), st.builds(lambda v: {"query": "key", "limit": v},
                                             st.integers(min_value=101))),
    st.tuples(st.just("end_conversation"), st.builds(lambda v: {"text": v}, bad_strings)),
))
def test_mcp_tools_refuse_generated_bad_values(seeded, case):
    from mcp.server.mcpserver.exceptions import ToolError

    from evoclaw_memory.agent.mcp_server import build_server
    name, args = case
    before = snapshot(seeded)
    with pytest.raises(ToolError) as caught:
        mcp_call(build_server(seeded), name, args)
    assert "Traceback" not in str(caught.value)
    assert snapshot(seeded) == before
    assert mcp_call(build_server(seeded), "sync", {}) is not None


def test_mcp_over_a_real_stdio_session_refuses_poison_and_keeps_working(home):
    from test_mcp import data_of, is_error, run_session, text_of
    with Memory.open("edge", home=home) as mem:
        kept = mem.remember("Sam keeps the spare key under the blue pot", category="home/keys")

    async def body(session):
        for name, args in (("update_hot", {"key": "lesson",
                                           "value": '{"text": "x", "timestamp": NaN}'}),
                           ("update_hot", {"key": "lesson",
                                           "value": {"text": "x", "timestamp": 1e30}}),
                           ("remember", {"text": "x", "category": "home\n/pets"}),
                           ("remember", {"text": "x", "importance": 7})):
            result = await session.call_tool(name, args)
            # Out-of-bounds values (importance 7) are refused by the tool's schema in the SDK
            # ("validation error"); the rest by the library (ValidationError).
            text = text_of(result)
            assert is_error(result) and ("ValidationError" in text
                                         or "validation error" in text), (name, args)
            assert "Traceback" not in text_of(result)
        assert data_of(await session.call_tool("sync", {}))
        found = data_of(await session.call_tool("retrieve", {"query": "spare key"}))
        return [r["id"] for r in found["results"]]

    assert kept.id in run_session(home, "edge", body)
    with Memory.open("edge", home=home) as mem:
        assert mem.hot.critical_lessons == [] and mem.store.outbox_depth() == 0
