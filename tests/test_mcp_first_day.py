"""Issue 27, item 11: the MCP server as a model and its host first meet it.

Through the official `mcp` client over stdio (the installed `evoclaw-memory mcp`, as a desktop
host starts it): update_hot takes what a model writes; a wrong argument is one line naming
it and what it accepts; the server's log says what happened; each actor is offered only the
tools it may use; a proposal's status is one word everywhere.
"""

from __future__ import annotations

import json

from click.testing import CliRunner
from test_mcp import data_of, is_error, run_session, text_of

from evoclaw_memory import Memory
from evoclaw_memory.agent import mcp_args
from evoclaw_memory.agent.mcp_server import withheld_tools

MAIN_TOOLS = {"get_context", "retrieve", "remember", "end_conversation", "update_hot",
              "show_tree", "sync", "sync_status", "entities", "forget", "forget_matching",
              "edit_fact", "unsupersede", "list_facts", "history", "export", "import_jsonl"}
SUBAGENT_TOOLS = {"get_context", "retrieve", "remember", "propose_memory", "end_conversation",
                  "update_hot", "show_tree", "sync_status", "entities", "list_facts", "history",
                  "export"}


def one_line(result) -> str:
    """A refused call's text: an error, one line, no pydantic dump, no URL, no traceback."""
    text = text_of(result)
    assert is_error(result), text
    assert "\n" not in text and "pydantic" not in text, text
    assert "Traceback" not in text and "Error executing tool" not in text, text
    return text


def test_update_hot_takes_what_a_model_writes(home):
    async def body(session):
        tools = {t.name: t for t in (await session.list_tools()).tools}
        value = tools["update_hot"].input_schema["properties"]["value"]
        calls = {
            "lesson": await session.call_tool("update_hot", {
                "key": "lesson", "value": "Never deploy on Fridays"}),
            "event": await session.call_tool("update_hot", {
                "key": "event", "value": "Dentist on 12 December"}),
            "task": await session.call_tool("update_hot", {
                "key": "task", "value": "  Order new seeds  "}),
            "project": await session.call_tool("update_hot", {
                "key": "project", "value": "greenhouse"}),
            "json text": await session.call_tool("update_hot", {
                "key": "identity", "value": '{"agent_name": "Claw"}'}),
            "object": await session.call_tool("update_hot", {
                "key": "owner_profile", "value": {"timezone": "Europe/London"}}),
        }
        identity_text = await session.call_tool("update_hot", {"key": "identity",
                                                               "value": "Claw"})
        broken = await session.call_tool("update_hot", {"key": "lesson",
                                                        "value": '{"text": "x",}'})
        return value, {k: data_of(v) for k, v in calls.items()}, identity_text, broken

    value, done, identity_text, broken = run_session(home, "hot", body)
    # The schema says an object, or text: both are what the model may send.
    assert [k.get("type") for k in value["anyOf"]] == ["object", "string"]
    assert "plain text" in value["description"]
    assert "Never deploy on Fridays" in done["project"]["memory_md"]
    # Plain text for identity is refused in one line showing the right form, for a model
    # (no shell command, no "malformed JSON" without an example).
    said = one_line(identity_text)
    assert said.startswith("ValidationError: value: identity takes a JSON object, e.g. '{")
    assert "hot --update" not in said
    bad_json = one_line(broken)
    assert bad_json.startswith("ValidationError: value: lesson takes a JSON object or plain text")
    assert "malformed JSON" in bad_json and '{"text": "Never deploy' in bad_json
    with Memory.open("hot", home=home) as mem:
        hot = mem.hot
        assert [lesson.text for lesson in hot.critical_lessons] == ["Never deploy on Fridays"]
        assert [e.text for e in hot.active_context.events] == ["Dentist on 12 December"]
        assert [t.text for t in hot.active_context.tasks] == ["Order new seeds"]
        assert [p.name for p in hot.active_context.projects] == ["greenhouse"]
        assert hot.identity.agent_name == "Claw"
        assert hot.owner_profile == {"timezone": "Europe/London"}


def test_the_mcp_and_the_cli_read_a_hot_value_by_the_same_rule():
    from evoclaw_memory.tiers.hot_input import hot_value as cli_value
    for key, raw in (("lesson", "Never deploy on Fridays"), ("event", "Dentist"),
                     ("task", " Order seeds "), ("project", "greenhouse"),
                     ("complete_task", "3f2a9c01"), ("lesson", '{"text": "x"}'),
                     ("identity", '{"agent_name": "Claw"}')):
        assert mcp_args.hot_value(key, raw) == cli_value(key, raw), (key, raw)


def test_a_wrong_argument_is_one_line_naming_it_and_what_it_accepts(home):
    async def body(session):
        return [await session.call_tool(name, args) for name, args in (
            ("retrieve", {"query": "dog", "limit": "ten"}),
            ("retrieve", {}),
            ("remember", {"text": "x", "importance": 7, "urls": "https://x.example"}),
            ("list_facts", {"tier": "hot"}),
            ("forget", {"fact_ids": []}),
            ("end_conversation", {"messages": "hello"}),
        )]

    limit, missing, two, tier, empty, messages = (one_line(r) for r in run_session(
        home, "args", body))
    assert limit == 'ValidationError: limit: must be an integer from 1 to 50, got "ten"'
    assert missing == ("ValidationError: missing argument 'query' "
                       "(a text of 1 to 2000 characters)")
    assert two == ("ValidationError: importance: must be a number from 0 to 1, got 7; urls: "
                   'must be a list of up to 10 texts (or leave it out), got "https://x.example"')
    assert tier == ('ValidationError: tier: must be one of "warm", "cold" (or leave it out), '
                    'got "hot"')
    assert empty == "ValidationError: fact_ids: must be a list of 1 to 1000 texts, got []"
    assert messages.startswith("ValidationError: messages: must be a list of objects of texts")


def test_every_argument_of_every_tool_is_described_in_words():
    """What the errors say an argument accepts comes from the tool's own schema: each kind of
    schema the tools use has words (none falls through to 'a value')."""
    import anyio

    from evoclaw_memory.agent.mcp_server import build_server

    async def schemas(server):
        return {t.name: t.input_schema for t in await server.list_tools()}

    import tempfile
    for actor in (None, "subagent:scout"):
        with Memory.open("words", home=tempfile.mkdtemp(), actor=actor) as mem:
            found = anyio.run(schemas, build_server(mem))
        for name, schema in found.items():
            for arg, spec in schema.get("properties", {}).items():
                assert "a value" not in mcp_args.accepts(spec), (name, arg, spec)


def test_the_log_says_what_happened_in_one_line(home, tmp_path):
    log = tmp_path / "mcp.log"

    async def body(session):
        await session.call_tool("retrieve", {})
        await session.call_tool("retrieve", {"query": "x", "limit": 99})
        await session.call_tool("history", {"fact_id": "nope"})

    with log.open("w") as errlog:
        run_session(home, "logs", body, errlog=errlog)
    lines = log.read_text().splitlines()
    assert "rejected" not in log.read_text()
    assert sum("retrieve: missing argument 'query'" in line for line in lines) == 1
    assert sum("retrieve: invalid argument 'limit': must be an integer from 1 to 50" in line
               for line in lines) == 1
    assert sum("history: NotFoundError: no fact 'nope'" in line for line in lines) == 1
    # One line per event, each saying whose server it is; the values stay out of the log.
    assert len(lines) == 3 and all("evoclaw-memory mcp[logs] INFO " in line for line in lines)
    assert "99" not in log.read_text()


def test_each_actor_is_offered_only_the_tools_it_may_use(home, tmp_path):
    with Memory.open("team", home=home, encryption="off") as mem:
        kept = mem.remember("The spare key is under the blue pot", category="home").id

    async def main_body(session):
        names = {t.name for t in (await session.list_tools()).tools}
        return names, await session.call_tool("propose_memory", {"text": "x"})

    async def sub_body(session):
        names = {t.name for t in (await session.list_tools()).tools}
        refused = [await session.call_tool(name, args) for name, args in (
            ("forget", {"fact_ids": [kept]}), ("edit_fact", {"fact_id": kept, "text": "y"}),
            ("sync", {}))]
        found = data_of(await session.call_tool("retrieve", {"query": "spare key"}))
        return names, refused, found

    main_names, proposed = run_session(home, "team", main_body)
    log = tmp_path / "sub.log"
    with log.open("w") as errlog:
        sub_names, refused, found = run_session(home, "team", sub_body,
                                                args=["--actor", "subagent:scout"],
                                                errlog=errlog)
    assert main_names == MAIN_TOOLS
    assert sub_names == SUBAGENT_TOOLS
    assert one_line(proposed) == ("ValidationError: propose_memory is for sub-agents (`mcp "
                                  "--actor subagent:NAME`); the main agent stores a fact with "
                                  "remember")
    for name, result in zip(("forget", "edit_fact", "sync"), refused):
        assert one_line(result).startswith(f"ValidationError: {name} is not offered to a "
                                           "sub-agent (subagent:scout): it reads and proposes")
    assert found["results"][0]["id"] == kept                  # it still reads everything
    assert "forget: not offered to subagent:scout" in log.read_text()
    assert "mcp[team subagent:scout]" in log.read_text()
    with Memory.open("team", home=home) as mem:
        assert mem.get(kept).text == "The spare key is under the blue pot"
        assert mem.proposals() == []


def test_what_a_subagent_is_not_offered_is_what_its_gate_refuses():
    from evoclaw_memory.lifecycle.gate import WRITES
    assert set(withheld_tools(True, "subagent:x")) == {
        "forget", "forget_matching", "edit_fact", "unsupersede", "import_jsonl", "sync"}
    assert {"forget", "forget_matching", "edit", "unsupersede", "import_jsonl", "sync"} \
        <= set(WRITES)
    assert "export" not in WRITES        # a read: offered to a sub-agent, which reads all
    assert set(withheld_tools(False, "manual")) == {"propose_memory"}


def test_a_proposal_is_pending_in_every_tool_and_in_the_cli(home):
    async def body(session):
        return [data_of(await session.call_tool(name, args)) for name, args in (
            ("remember", {"text": "Sam's bike is blue"}),
            ("propose_memory", {"text": "Sam's car is red", "confidence": 0.8}),
            ("update_hot", {"key": "task", "value": "Wash the car"}))]

    said = run_session(home, "words", body, args=["--actor", "subagent:scout"])
    assert [s["status"] for s in said] == ["pending"] * 3
    from evoclaw_memory.cli.main import cli
    listed = CliRunner().invoke(cli, ["--home", str(home), "--agent-id", "words", "--json",
                                      "proposals", "list"])
    assert listed.exit_code == 0, listed.output
    stored = json.loads(listed.output)["proposals"]
    assert [(p["id"], p["status"]) for p in stored] == [(s["proposal_id"], "pending")
                                                        for s in said]
    human = CliRunner().invoke(cli, ["--home", str(home), "--agent-id", "words",
                                     "proposals", "list"])
    assert human.output.count("  pending  ") == 3 and "proposed" not in human.output
