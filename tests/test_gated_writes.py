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
            done = await server.call_tool("end_conversation",
                                          {"text": "I'm allergic to peanuts, please remember."})
            return done
        done = anyio.run(call)
        assert "proposals" in str(done) and "peanut" in str(done)
    assert mem.facts() == [] and mem.hot.active_context.tasks == []
    assert [(p.store, p.actor) for p in mem.proposals()] == [
        ("warm", "subagent:mcp-helper"), ("warm", "subagent:mcp-helper"),
        ("hot", "subagent:mcp-helper"), ("warm", "subagent:mcp-helper")]
    assert "peanut" in mem.proposals()[3].content["text"]
    assert mem.proposals()[1].confidence == 0.8


def test_subagent_end_conversation_proposes_each_fact_and_hot_update(home, clock, mem):
    """A sub-agent's end_conversation distills as usual; every fact and hot update becomes a
    proposal (store, content, confidence, who, when) and nothing else happens until the main
    agent accepts: no fact, no outbox entry, no hot change, no MEMORY.md, no forget."""
    keep = mem.remember("The greenhouse vent opens at 24 degrees", category="projects/garden")
    mem.write_memory_md()
    md_before = mem.config.memory_md_path.read_text()
    before = _snapshot(mem)
    said = clock() - 3600
    conversation = [
        {"role": "user", "content": "I'm allergic to peanuts, remember that forever."},
        {"role": "user", "content": "My sister Emma lives in Leeds and works as a nurse."},
        {"role": "user", "content": "Remind me to call the dentist tomorrow at 3pm."},
        {"role": "user", "content": "Forget about the greenhouse vent."},
    ]
    with Memory.open("test-agent", home=home, clock=clock, actor="subagent:scribe") as sub:
        report = sub.end_conversation(conversation, at=said)
    assert _snapshot(mem) == before and mem.config.memory_md_path.read_text() == md_before
    assert mem.get(keep.id)                                # the forget trigger did nothing
    assert report["added"] == [] and report["forgotten"] == []
    assert report["sync"]["status"] == "off" and report["outbox_depth"] == before[1]
    proposals = report["proposals"]
    assert proposals == mem.proposals()                    # all pending, in the main agent's list
    facts = [p for p in proposals if p.store == "warm"]
    hot = [p for p in proposals if p.store == "hot"]
    assert report["counts"]["proposals"] == len(proposals) == len(facts) + len(hot)
    assert any("peanut" in p.content["text"] for p in facts)
    assert any("Emma" in p.content["text"] for p in facts)
    assert hot, "the dated plan is a hot task/event proposal"
    for p in proposals:
        assert (p.actor, p.status, p.confidence) == ("subagent:scribe", "pending", 0.5)
        assert p.created_at == clock()
    peanut = next(p for p in facts if "peanut" in p.content["text"])
    assert peanut.content["created_at"] == said            # when it was said, kept for accept
    assert peanut.content["pinned"] and not any(             # "remember forever": that one only
        p.content["pinned"] for p in facts if p is not peanut)

    # The main agent accepts one fact and one hot update: exactly those land, as the sub-agent's.
    mem.accept(peanut.id)
    mem.accept(hot[0].id)
    stored = [f for f in mem.facts() if "peanut" in f.text]
    assert len(stored) == 1 and stored[0].created_at == said and stored[0].source == "subagent:scribe"
    assert stored[0].pinned
    assert mem.store.load_hot() != before[2]
    assert len(mem.facts()) == 2
    assert {p.id for p in mem.proposals()} == {p.id for p in proposals} - {peanut.id, hot[0].id}
