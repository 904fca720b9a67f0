"""Shared read, gated write (issue 18): a sub-agent proposes; the main agent decides."""

import pytest

from evoclaw_memory import Memory
from evoclaw_memory.errors import NotFoundError, ValidationError


def _snapshot(mem):
    conn = mem.store.conn
    return (conn.execute("SELECT COUNT(*) FROM facts").fetchone()[0],
            conn.execute("SELECT COUNT(*) FROM outbox").fetchone()[0],
            mem.store.load_hot(), mem.config.memory_md_path.exists())


def test_subagent_write_is_a_proposal_and_nothing_else_until_accepted(home, clock, mem):
    mem.remember("The greenhouse vent opens at 24 degrees", category="projects/garden")
    before = _snapshot(mem)
    with Memory.open("test-agent", home=home, clock=clock, actor="subagent:planner") as sub:
        assert sub.retrieve("greenhouse vent")             # reads everything
        proposal = sub.remember("Sam prefers tea after 6pm", category="owner/preferences")
        hot = sub.update_hot("task", {"text": "Order new seeds"})
        with pytest.raises(ValidationError, match="subagent:planner may read and propose"):
            sub.forget(mem.facts()[0].id)
        with pytest.raises(ValidationError):
            sub.accept(proposal.id)
    assert _snapshot(mem) == before                        # no fact, no outbox, no hot change
    pending = mem.proposals()
    assert [(p.id, p.store, p.actor, p.status) for p in pending] == [
        (proposal.id, "warm", "subagent:planner", "pending"),
        (hot.id, "hot", "subagent:planner", "pending")]
    assert pending[0].content["text"] == "Sam prefers tea after 6pm" and pending[0].created_at

    accepted = mem.accept(proposal.id)
    fact = mem.get(accepted.result)
    assert fact.text == "Sam prefers tea after 6pm" and fact.source == "subagent:planner"
    events = [(e.op, e.actor) for e in mem.history(fact.id).events]
    assert ("remember", "subagent:planner") in events
    assert ("proposal.applied", "manual") in events
    rejected = mem.reject(hot.id, reason="seeds are already ordered")
    assert rejected.status == "rejected" and rejected.reason == "seeds are already ordered"
    assert mem.hot.active_context.tasks == []
    assert mem.proposals() == []
    with pytest.raises(ValidationError, match="already rejected"):
        mem.accept(hot.id)
    with pytest.raises(NotFoundError):
        mem.reject("nope")


def test_bad_proposals_are_refused_to_the_subagent(home, clock):
    with Memory.open("t", home=home, clock=clock, actor="subagent:x") as sub:
        with pytest.raises(ValidationError):
            sub.update_hot("lesson", {"txt": "no text"})
        with pytest.raises(ValidationError):
            sub.propose("fine text", confidence=2.0)
        assert sub.proposals() == []
    with pytest.raises(ValidationError):
        Memory.open("t", home=home, actor="subagent:")


def test_cli_proposals_and_pin(home, clock):
    from click.testing import CliRunner
    from evoclaw_memory.cli.main import cli
    with Memory.open("sam", home=home, clock=clock, actor="subagent:scout") as sub:
        proposal = sub.remember("The bike lock code is on the fridge")
    run = CliRunner().invoke
    listed = run(cli, ["--agent-id", "sam", "--home", str(home), "proposals", "list"])
    assert listed.exit_code == 0 and proposal.id in listed.output and "subagent:scout" in listed.output
    done = run(cli, ["--agent-id", "sam", "--home", str(home), "--json", "proposals", "accept",
                     proposal.id])
    assert done.exit_code == 0, done.output
    import json
    fact_id = json.loads(done.output)["result"]
    pinned = run(cli, ["--agent-id", "sam", "--home", str(home), "pin", fact_id])
    assert pinned.exit_code == 0, pinned.output
    with Memory.open("sam", home=home) as mem:
        assert mem.get(fact_id).pinned


def test_mcp_server_of_a_subagent_only_proposes(home, clock, mem):
    import anyio
    from evoclaw_memory.agent.mcp_server import build_server
    with Memory.open("test-agent", home=home, clock=clock, actor="subagent:mcp-helper") as sub:
        server = build_server(sub)

        async def call():
            tools = {t.name: t for t in await server.list_tools()}
            assert tools["propose_memory"].title == "Propose a memory"
            await server.call_tool("remember", {"text": "Sam's bike is blue"})
            await server.call_tool("propose_memory", {"text": "Sam's car is red",
                                                      "confidence": 0.8})
            await server.call_tool("update_hot", {"key": "task", "value": {"text": "Wash car"}})
        anyio.run(call)
    assert mem.facts() == [] and mem.hot.active_context.tasks == []
    assert [(p.store, p.actor) for p in mem.proposals()] == [
        ("warm", "subagent:mcp-helper"), ("warm", "subagent:mcp-helper"),
        ("hot", "subagent:mcp-helper")]
    assert mem.proposals()[1].confidence == 0.8
