"""The owner's control on one device (SPEC §5b): list, edit with history, forget (the row and
its full-text entry, its old versions, an audit row without the text), forget_matching's dry
run, unsupersede, supersession cycles refused, tree move, export/import round trips (also as
a property), the forget triggers of a conversation, and the CLI and MCP surfaces."""

from __future__ import annotations

import io
import json
from pathlib import Path

import hypothesis.strategies as st
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings

from evoclaw_memory import Memory
from evoclaw_memory.cli.main import cli
from evoclaw_memory.errors import NotFoundError, ValidationError


@pytest.fixture
def mem(tmp_path):
    with Memory.open("sam", home=tmp_path / "home") as m:
        yield m


def fts_hits(mem, word):
    """Full-text entries holding `word` (tokenised as the index tokenises it)."""
    from evoclaw_memory.text import fts_phrase, tokens
    mem.store.flush_fulltext()
    return mem.store.conn.execute("SELECT count(*) FROM facts_fts WHERE facts_fts MATCH ?",
                                  (fts_phrase(tokens(word)[0]),)).fetchone()[0]


def test_edit_keeps_the_old_version_in_history_not_in_search(mem):
    fact = mem.remember("Luna's vet is Dr Hargreve", category="home/pets", importance=0.6)
    edited = mem.edit(fact.id, text="Luna's vet is Dr Hargreaves at https://spire.example",
                      category="health/vets", importance=0.9)
    assert edited.metadata.urls == ["https://spire.example"]
    assert mem.get(fact.id).text.startswith("Luna's vet is Dr Hargreaves")
    assert fts_hits(mem, "hargreve") == 0 and fts_hits(mem, "hargreaves") == 1
    hist = mem.history(fact.id)
    assert [(v.version, v.text, v.category, v.actor) for v in hist.versions] == \
        [(1, "Luna's vet is Dr Hargreve", "home/pets", "manual")]
    assert [e.op for e in hist.events] == ["remember", "edit"]
    counts = {n.path: n.warm_count for n in mem.tree}
    assert counts["home/pets"] == 0 and counts["health/vets"] == 1
    with pytest.raises(ValidationError):
        mem.edit(fact.id)                          # nothing to change
    with pytest.raises(ValidationError):
        mem.edit(fact.id, importance=float("nan"))
    with pytest.raises(NotFoundError):
        mem.edit("nope", text="x")


def test_forget_erases_row_index_versions_and_audits_without_text(mem):
    fact = mem.remember("The safe code is 7731-QUILL", category="home", importance=0.9)
    mem.edit(fact.id, text="The safe code is 7731-QUILLBACK")
    other = mem.remember("The garden pump runs at night", category="home")
    assert mem.forget(fact.id) == [fact.id]
    assert mem.store.get_fact(fact.id) is None and mem.get(other.id)
    assert fts_hits(mem, "quillback") == 0
    dump = "\n".join(mem.store.conn.iterdump())
    assert "QUILL" not in dump                      # versions, audit, outbox: no text left
    assert ("forget", fact.id) in {(k, r) for _, k, r in mem.store.outbox()}
    hist = mem.history(fact.id)
    assert hist.fact is None and hist.forgotten_at and hist.events[-1].op == "forget"
    assert {n.path: n.warm_count for n in mem.tree}["home"] == 1
    with pytest.raises(NotFoundError):
        mem.forget([other.id, "missing"])            # all or nothing
    assert mem.get(other.id)


def test_forget_matching_is_a_dry_run_unless_told(mem):
    a = mem.remember("Old address: 12 Elm Street", category="owner/home")
    b = mem.remember("Elm Street has a bakery", category="places")
    mem.remember("Oak Road is quiet", category="owner/home")
    assert {f.id for f in mem.forget_matching("elm street")} == {a.id, b.id}
    assert mem.store.count_facts() == 3
    gone = mem.forget_matching("elm street", category="owner", dry_run=False)
    assert [f.id for f in gone] == [a.id] and mem.store.count_facts() == 2
    with pytest.raises(ValidationError):
        mem.forget_matching("the a of")              # stopwords only


def test_list_filters_unsupersede_and_cycles(mem):
    old = mem.remember("The vent opens at 24 degrees", category="projects/garden",
                       created_at=1_000_000)
    new = mem.remember("The vent opens at 26 degrees", category="projects/garden",
                       created_at=2_000_000)
    mem.remember("Tea at five", category="owner", created_at=3_000_000)
    mem.supersede(old.id, new.id)
    with pytest.raises(ValidationError, match="hide both"):
        mem.supersede(new.id, old.id)
    assert [f.id for f in mem.facts(category="projects")] == [new.id]
    assert len(mem.facts(include_superseded=True)) == 3
    assert [f.id for f in mem.facts(since=1_500_000, until=2_500_000)] == [new.id]
    assert len(mem.facts(limit=1, offset=1)) == 1
    mem.unsupersede(old.id)
    assert old.id in [r.fact.id for r in mem.retrieve("vent degrees", limit=5)]
    assert {"revive", "fact"} <= {k for _, k, r in mem.store.outbox() if r == old.id}
    with pytest.raises(ValidationError):
        mem.unsupersede(old.id)


def test_tree_move_moves_facts_then_removes_the_node(mem):
    mem.remember("Rex is a beagle", category="home/pets/dogs")
    mem.remember("Tom is a cat", category="home/pets")
    assert mem.tree_move("home/pets", "family/animals") == 2
    paths = {n.path: n.warm_count for n in mem.tree}
    assert "home/pets" not in paths and paths["family/animals"] == 1
    assert paths["family/animals/dogs"] == 1
    mem.tree_remove("home")                        # the companion tree remove now works
    with pytest.raises(ValidationError):
        mem.tree_move("family", "family/x")


def _export(m) -> str:
    out = io.StringIO()
    m.export(out)
    return out.getvalue()


def test_export_import_round_trip_byte_for_byte(mem, tmp_path):
    a = mem.remember("Luna is allergic to peanuts 花生", category="health/allergies",
                     importance=0.85, metadata={"urls": ["https://a.example/x"]})
    b = mem.remember("Old fact", category="misc", created_at=1_600_000_000.123456)
    c = mem.remember("New fact", category="misc")
    mem.supersede(b.id, c.id)
    mem.edit(a.id, text="Luna is allergic to peanuts and cashews 花生")
    mem.retrieve("peanuts")
    # Hot memory and the entity graph travel too (SPEC §5b: a round trip that loses nothing).
    mem.update_hot("identity", {"owner_name": "Sam"})
    mem.update_hot("task", {"text": "Book Luna's allergy check"})
    mem.add_entity("Dr Okafor", "people", {"phone": "0161 555 0199"})
    mem.link("Luna", "Dr Okafor", "patient")
    first = _export(mem)
    path = tmp_path / "export.jsonl"
    assert mem.export(path) == 3 and path.read_text() == first
    with Memory.open("sam", home=tmp_path / "fresh") as fresh:
        report = fresh.import_jsonl(path)
        assert report == {"facts": 3, "skipped": 0, "forgotten": 0, "versions": 1,
                          "entities": len(mem.entities()), "hot": 1}
        assert _export(fresh) == first
        assert fresh.hot == mem.hot
        okafor = fresh.entity("Dr Okafor")
        assert okafor.attributes == {"phone": "0161 555 0199"}
        assert fresh.entity("Luna").facts == [a.id]            # linked at the import
        assert ("patient", "Dr Okafor") in {(r.relation, r.other)
                                             for r in fresh.entity("Luna").relations}
        again = fresh.import_jsonl(path)                      # known ids are skipped
        assert (again["skipped"], again["entities"], again["hot"]) == (3, 0, 0)
        assert fresh.history(a.id).versions[0].text == "Luna is allergic to peanuts 花生"
        assert fresh.store.outbox_depth() >= 3               # they go to the cloud
    md = io.StringIO()
    mem.export(md, format="markdown")
    assert "## health/allergies" in md.getvalue() and "cashews" in md.getvalue()
    assert "- [ ] Book Luna's allergy check" in md.getvalue()
    assert "- **Dr Okafor** (people); phone: 0161 555 0199" in md.getvalue()
    with Memory.open("sam", home=tmp_path / "bad") as bad:
        broken = first.replace('"importance":0.85', '"importance":"high"')
        with pytest.raises(ValidationError, match="line"):
            bad.import_jsonl(io.StringIO(broken))
        assert bad.store.count_facts() == 0                 # nothing written
    mem.forget(c.id)
    with Memory.open("sam", home=tmp_path / "a2") as again:
        again.import_jsonl(io.StringIO(first))
        again.forget(c.id)
        assert again.import_jsonl(io.StringIO(first))["forgotten"] == 1


def test_export_carries_changed_at_and_an_older_export_still_imports(mem, tmp_path):
    kept = mem.remember("The boiler service is in March", category="home")
    edited = mem.remember("The car insurance renews in June", category="home")
    mem.edit(edited.id, text="The car insurance renews in July")
    mem.pin(kept.id)
    times = {f.id: f.changed_at for f in mem.facts()}
    assert all(t > 0 for t in times.values())
    flag_times = {f.id: f.flags_changed_at for f in mem.facts()}
    assert flag_times[kept.id] == times[kept.id] and flag_times[edited.id] == 0
    first = _export(mem)
    lines = [json.loads(line) for line in first.splitlines()]
    exported = {d["id"]: d["changed_at"] for d in lines if d["type"] == "fact"}
    assert exported == times
    # Every field name of the format is still there (they are a contract).
    fact_line = next(d for d in lines if d["type"] == "fact")
    assert set(fact_line) == {"type", "id", "text", "category", "importance", "created_at",
                              "last_access", "access_count", "metadata", "source", "tier",
                              "superseded_by", "versions", "pinned", "private", "changed_at",
                              "content_changed_at", "flags_changed_at", "superseded_changed_at"}
    with Memory.open("sam", home=tmp_path / "fresh") as fresh:
        fresh.import_jsonl(io.StringIO(first))
        assert {f.id: f.changed_at for f in fresh.facts()} == times
        assert {f.id: f.flags_changed_at for f in fresh.facts()} == flag_times
        assert _export(fresh) == first
    # An export written before changed_at existed: the facts arrive as never changed.
    older = "\n".join(json.dumps({k: v for k, v in d.items()
                                   if k not in ("changed_at", "content_changed_at",
                                                "flags_changed_at")},
                                  ensure_ascii=False) for d in lines)
    with Memory.open("sam", home=tmp_path / "older") as old:
        assert old.import_jsonl(io.StringIO(older))["facts"] == 2
        assert {f.id: f.changed_at for f in old.facts()} == {i: 0.0 for i in times}
        assert old.get(kept.id).pinned
    with Memory.open("sam", home=tmp_path / "bad") as bad:
        broken = first.replace(f'"changed_at":{json.dumps(times[kept.id])}', '"changed_at":-5')
        assert broken != first
        with pytest.raises(ValidationError, match="changed_at"):
            bad.import_jsonl(io.StringIO(broken))


def test_an_import_merges_hot_memory_and_refuses_bad_graph_lines(mem, tmp_path):
    """Into a memory with its own hot state, an export's is merged (the newest change of each
    field, every entry of both); a version 1 file (nodes and facts only) still imports; a bad
    hot or entity line names its line and writes nothing."""
    mem.update_hot("task", {"text": "Water the tomatoes"})
    mem.update_hot("identity", {"owner_name": "Sam"})
    mem.remember("Luna is allergic to peanuts", category="health/allergies")
    first = _export(mem)
    with Memory.open("sam", home=tmp_path / "own") as own:
        own.update_hot("task", {"text": "Renew the passport"})
        own.update_hot("identity", {"owner_name": "Samantha"})     # the newer change
        report = own.import_jsonl(io.StringIO(first))
        assert report["hot"] == 1 and report["facts"] == 1
        assert {t.text for t in own.hot.active_context.tasks} == {"Water the tomatoes",
                                                                   "Renew the passport"}
        assert own.hot.identity.owner_name == "Samantha"
        assert "Water the tomatoes" in own.config.memory_md_path.read_text()
    lines = [json.loads(line) for line in first.splitlines()]
    v1 = [dict(d, version=1) if d["type"] == "header" else d for d in lines
          if d["type"] not in ("hot", "entity")]
    with Memory.open("sam", home=tmp_path / "v1") as old:
        report = old.import_jsonl(io.StringIO("\n".join(json.dumps(d) for d in v1)))
        assert (report["facts"], report["hot"]) == (1, 0)
        assert old.entity("Luna").facts                     # linked all the same
    hot_at = next(i for i, d in enumerate(lines) if d["type"] == "hot") + 1
    entity_at = next(i for i, d in enumerate(lines) if d["type"] == "entity") + 1
    bad_hot = [dict(d, state={**d["state"], "clock": {"identity.owner_name": -5}})
               if d["type"] == "hot" else d for d in lines]
    bad_entity = [dict(d, kind="spaceship") if i + 1 == entity_at else d
                  for i, d in enumerate(lines)]
    extra_hot = lines[:hot_at] + [lines[hot_at - 1]] + lines[hot_at:]
    # A profile no pruning can bring under the limit (entries would be dropped; it cannot).
    huge = [dict(d, state={**d["state"], "owner_profile": {"notes": "x" * 9_000}})
            if d["type"] == "hot" else d for d in lines]
    with Memory.open("sam", home=tmp_path / "huge") as big:
        with pytest.raises(ValidationError, match="over the .*limit; nothing was imported"):
            big.import_jsonl(io.StringIO("\n".join(json.dumps(d) for d in huge)))
        assert big.store.count_facts() == 0 and big.hot == type(big.hot)()
    for broken, where in ((bad_hot, hot_at), (bad_entity, entity_at), (extra_hot, hot_at + 1)):
        with Memory.open("sam", home=tmp_path / f"bad{where}") as bad:
            with pytest.raises(ValidationError, match=f"line {where}:"):
                bad.import_jsonl(io.StringIO("\n".join(json.dumps(d) for d in broken)))
            assert bad.store.count_facts() == 0 and bad.hot == type(bad.hot)()
            assert bad.entities() == []


def test_a_big_import_links_a_bounded_part_now_and_the_export_the_rest(mem, tmp_path,
                                                                      monkeypatch):
    """An import links at most LINKED_AT_IMPORT facts before it returns (a 100k-fact export
    would take ~10 s more); the rest wait as after a full restore, and an export links them
    first, so the round trip still gives the same bytes."""
    from evoclaw_memory.lifecycle import entities as lifecycle_entities
    from evoclaw_memory.lifecycle import exchange
    names = ["Priya Shah", "Tomasz Nowak", "Aiko Tanaka", "Bongani Dube", "Ines Garcia"]
    for name in names:
        mem.remember(f"{name} joined the allotment society", category="people")
    first = _export(mem)
    monkeypatch.setattr(exchange, "LINKED_AT_IMPORT", 2)
    monkeypatch.setattr(lifecycle_entities, "CATCH_UP_BATCH", 1)
    with Memory.open("sam", home=tmp_path / "big") as big:
        big.import_jsonl(io.StringIO(first))
        linked = [n for n in names if big.entity_keeper.find(n) is not None
                  and big.entity(n).facts]
        assert len(linked) == 2
        assert _export(big) == first
        assert all(big.entity(n).facts for n in names)


def test_an_export_carries_the_owners_entity_removals(mem, clock, tmp_path):
    """A name the owner removed from the graph stays removed in the imported memory: its
    removal travels in the export, and the import does not link it again from the facts."""
    mem.remember("Zebulon Quagmire fixed the bike on Sunday", category="people")
    clock.advance(1)
    assert mem.remove_entity("Zebulon Quagmire")
    first = _export(mem)
    assert '"type":"removed","names":{"zebulon quagmire":' in first
    with Memory.open("sam", home=tmp_path / "fresh", clock=clock) as fresh:
        fresh.import_jsonl(io.StringIO(first))
        assert "Zebulon Quagmire" not in {e.name for e in fresh.entities()}
        assert fresh.entity_removals() == mem.entity_removals()
        assert _export(fresh) == first


facts_strategy = st.lists(st.tuples(
    st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=60)
    .filter(lambda t: t.strip()),
    st.sampled_from(["home", "work/projects", "health/allergies"]),
    st.floats(0, 1), st.floats(0, 4_000_000_000)), min_size=1, max_size=12)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=facts_strategy)
def test_export_import_property(tmp_path_factory, rows):
    root = tmp_path_factory.mktemp("prop")
    with Memory.open("sam", home=root / "a") as a, Memory.open("sam", home=root / "b") as b:
        for text, cat, importance, created in rows:
            a.remember(text, category=cat, importance=importance, created_at=created)
        first = _export(a)
        b.import_jsonl(io.StringIO(first))
        assert _export(b) == first
        assert b.facts(include_superseded=True) == a.facts(include_superseded=True)


def test_conversation_triggers_forget_clear_matches_and_report_the_rest(mem):
    addr = mem.remember("Owner's old address is 12 Elm Street", category="owner/home")
    mem.remember("Owner likes tea", category="owner/preferences")
    mem.remember("Owner likes green tea in the morning", category="owner/preferences")
    report = mem.end_conversation([{"role": "user", "content": "Please forget my old address "
                                    "at Elm Street."}], sync=False)
    assert report["forgotten"] == [addr.id] and mem.store.get_fact(addr.id) is None
    assert mem.history(addr.id).events[-1].actor == "bot:rules"
    report = mem.end_conversation([{"role": "user", "content": "forget about tea"}], sync=False)
    assert report["forgotten"] == [] and len(report["forget_candidates"]) == 2
    report = mem.end_conversation([{"role": "user", "content": "My locker code is 4411."},
                                   {"role": "user", "content": "Never mind, scratch that."}],
                                  sync=False)
    assert not [f for f in mem.facts() if "4411" in f.text or "scratch" in f.text]
    zh = mem.remember("主人的旧地址在北京朝阳区", category="owner/home")
    assert mem.end_conversation("忘掉旧地址", sync=False)["forgotten"] == [zh.id]
    said = mem.end_conversation([{"role": "assistant", "content": "I will forget about tea."}],
                                sync=False)
    assert said["forgotten"] == []                 # only the owner's words count


def test_cli_control_commands(tmp_path):
    runner = CliRunner()
    env = {"EVOCLAW_HOME": str(tmp_path / "cli"), "EVOCLAW_ENCRYPTION": "off"}

    def run(*args, input=None):
        result = runner.invoke(cli, list(args), env=env, input=input)
        assert result.exit_code == 0, result.output
        return result.output

    fid = run("store", "--text", "The safe code is 7731", "--category", "home").strip()
    other = run("store", "--text", "The pump runs at night", "--category", "home").strip()
    lines = run("list", "--nl").strip().splitlines()
    assert [json.loads(line)["id"] for line in lines] == [fid, other]
    assert json.loads(run("list", "--json", "--category", "home"))["count"] == 2
    run("edit", fid, "--text", "The safe code is 7732", "--url", "https://x.example")
    hist = json.loads(run("history", fid, "--json"))
    assert hist["versions"][0]["text"] == "The safe code is 7731"
    out = tmp_path / "e.jsonl"
    run("export", "-o", str(out))
    md = run("export", "--format", "markdown")
    assert "7732" in md
    refused = runner.invoke(cli, ["forget", "--matching", "pump"], env=env)
    assert refused.exit_code != 0                  # not a terminal: --yes is required
    assert json.loads(run("forget", "--matching", "pump", "--yes", "--json"))["forgotten"] == [other]
    assert "forgot 1" in run("forget", fid)
    assert json.loads(run("list", "--json"))["count"] == 0
    assert "imported 0" in run("import", str(out))   # both forgotten: the export cannot undo it
    run("store", "--text", "Rex is a beagle", "--category", "home/pets")
    assert "moved 1" in run("tree", "move", "home/pets", "family/pets")
    bad = runner.invoke(cli, ["forget", "nope"], env=env)
    assert bad.exit_code != 0 and "nope" in bad.output


def test_mcp_control_tools_and_hints(tmp_path):
    from test_mcp import data_of, is_error, run_session
    home = tmp_path / "mcp"
    with Memory.open("sam", home=home, encryption="off") as m:
        fid = m.remember("The safe code is 7731", category="home").id

    async def body(session):
        tools = {t.name: t for t in (await session.list_tools()).tools}
        hints = {name: tools[name].annotations for name in
                 ("forget", "edit_fact", "list_facts", "history")}
        listed = data_of(await session.call_tool("list_facts", {}))
        edited = data_of(await session.call_tool("edit_fact", {"fact_id": fid,
                                                               "text": "The safe code is 7732"}))
        hist = data_of(await session.call_tool("history", {"fact_id": fid}))
        gone = data_of(await session.call_tool("forget", {"fact_ids": [fid]}))
        missing = await session.call_tool("history", {"fact_id": "nope"})
        return hints, listed, edited, hist, gone, is_error(missing)

    hints, listed, edited, hist, gone, missing_is_error = run_session(home, "sam", body)
    wire = {name: h.model_dump(by_alias=True) for name, h in hints.items()}   # as sent
    assert wire["forget"]["destructiveHint"] and wire["edit_fact"]["destructiveHint"]
    assert wire["list_facts"]["readOnlyHint"] and wire["history"]["readOnlyHint"]
    assert not wire["list_facts"]["destructiveHint"]
    assert listed["count"] == 1 and edited["fact"]["text"] == "The safe code is 7732"
    assert hist["versions"][0]["actor"] == "mcp" and gone["forgotten"] == [fid]
    assert missing_is_error


def test_mcp_forgets_by_words_after_a_dry_run_exports_and_imports(tmp_path):
    """SPEC §5b on MCP: forget matching a query (a dry run first), unsupersede, export and
    import, each through a real stdio session, with the results the CLI's --json gives."""
    from test_mcp import data_of, is_error, run_session, text_of
    home = tmp_path / "mcp"
    with Memory.open("sam", home=home, encryption="off") as m:
        pump = m.remember("The pond pump needs a new filter", category="home/garden").id
        other = m.remember("The pond has three koi", category="home/garden").id
        old = m.remember("I drive a blue Honda Jazz", category="personal").id
        new = m.remember("I drive a red Fiat Panda now", category="personal").id
        m.supersede(old, new)
        m.update_hot("lesson", {"text": "Never feed the koi bread"})
    given = tmp_path / "out" / "sam.jsonl"

    async def body(session):
        dry = data_of(await session.call_tool("forget_matching", {"query": "pump filter"}))
        still = data_of(await session.call_tool("list_facts", {}))["count"]
        gone = data_of(await session.call_tool("forget_matching", {"query": "pump filter",
                                                                   "dry_run": False}))
        back = data_of(await session.call_tool("unsupersede", {"fact_id": old}))
        default = data_of(await session.call_tool("export", {}))
        chosen = data_of(await session.call_tool("export", {"path": str(given)}))
        markdown = data_of(await session.call_tool("export", {"format": "markdown"}))
        again = await session.call_tool("export", {"path": str(given)})
        relative = await session.call_tool("export", {"path": "sam.jsonl"})
        return dry, still, gone, back, default, chosen, markdown, again, relative

    dry, still, gone, back, default, chosen, markdown, again, relative = run_session(
        home, "sam", body)
    assert dry == {"dry_run": True, "count": 1, "matching": [
        {"id": pump, "category": "home/garden", "text": "The pond pump needs a new filter"}]}
    assert still == 3                               # the dry run erased nothing
    assert gone == {"dry_run": False, "forgotten": [pump], "count": 1}
    assert back["fact"]["id"] == old and back["fact"]["superseded_by"] is None
    assert default["exported"] == chosen["exported"] == markdown["exported"] == 3
    exported = Path(default["file"])
    assert exported.parent == home / "exports" and exported.suffix == ".jsonl"
    assert Path(markdown["file"]).suffix == ".md"
    assert "Never feed the koi bread" in Path(markdown["file"]).read_text()
    assert chosen["file"] == str(given) and given.read_bytes() == exported.read_bytes()
    assert oct(given.stat().st_mode & 0o777) == "0o600"
    assert is_error(again) and "already exists" in text_of(again)      # never overwritten
    assert is_error(relative) and "must be absolute" in text_of(relative)

    async def load(session):
        relative = await session.call_tool("import_jsonl", {"path": "sam.jsonl"})
        report = data_of(await session.call_tool("import_jsonl", {"path": str(given)}))
        twice = data_of(await session.call_tool("import_jsonl", {"path": str(given)}))
        return is_error(relative), report, twice

    relative_refused, report, twice = run_session(home, "kim", load)
    assert relative_refused
    assert report["facts"] == 3 and report["hot"] == 1 and twice["skipped"] == 3
    with Memory.open("kim", home=home) as kim:
        assert {f.id for f in kim.facts()} == {other, old, new}
        assert [lesson.text for lesson in kim.hot.critical_lessons] == ["Never feed the koi bread"]


def test_a_path_with_a_nul_byte_is_one_clear_line(mem):
    """A NUL byte in an export or import path (from a model, over MCP) is a ValidationError
    naming the path, not a ValueError from the OS layer; nothing is written."""
    mem.remember("The spare key is under the blue pot", category="home")
    with pytest.raises(ValidationError, match=r"cannot write /tmp/out\\0x.jsonl: embedded null"):
        mem.export("/tmp/out\0x.jsonl")
    with pytest.raises(ValidationError, match=r"cannot open /tmp/in\\0x.jsonl: embedded null"):
        mem.import_jsonl("/tmp/in\0x.jsonl")
    assert len(mem.facts()) == 1


def _file_holds(path, word: bytes) -> int:
    """How often `word` is in the database file, its WAL checkpointed into it first."""
    import sqlite3
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    return path.read_bytes().count(word)


def _memory_with_a_secret(home):
    mem = Memory.open("sam", home=home, encryption="off")
    mem.store.conn.execute("PRAGMA secure_delete = 0")     # a SQLite built without it on
    for i in range(300):
        mem.remember(f"Note {i} about the garden and the apples, batch {i * 7}", category="home")
    secret = mem.remember("The qqzxvwlocker combination is behind the clock",
                          category="home").id
    for i in range(100):
        mem.remember(f"Later note {i} about pears, crate {i * 3}", category="home")
    assert mem.retrieve("qqzxvwlocker")[0].fact.id == secret     # in the full-text index
    return mem, secret


def test_a_forgets_words_leave_the_files_by_the_end_of_the_command(tmp_path):
    """Deleting an FTS5 entry leaves its words in the older segments until they merge: a
    forget marks the index, and the segments merge (freed pages zeroed) when the memory
    closes, as a CLI command's end does; the forget itself stays fast."""
    mem, secret = _memory_with_a_secret(tmp_path / "a")
    db = mem.store.path
    mem.forget(secret)
    assert _file_holds(db, b"qqzxvw") > 0      # what FTS5 alone leaves behind
    mem.close()
    assert _file_holds(db, b"qqzxvw") == 0
    with Memory.open("sam", home=tmp_path / "a") as again:
        assert again.retrieve("qqzxvwlocker") == [] and len(again.facts()) == 400


def test_a_forget_said_in_a_conversation_leaves_the_files_with_it(tmp_path):
    mem, secret = _memory_with_a_secret(tmp_path / "b")
    try:
        mem.consolidate("quick")      # none due at the conversation's end: it is the one
        report = mem.end_conversation([
            {"role": "user", "content": "Forget about the qqzxvwlocker combination."},
            {"role": "assistant", "content": "Done."}], sync=False)
        assert report["forgotten"] == [secret]
        assert _file_holds(mem.store.path, b"qqzxvw") == 0
        assert mem.store.get_setting("fulltext.erase_pending") is None
    finally:
        mem.close()
