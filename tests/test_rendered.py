"""Issue 25, part 1: nothing the memory rendered comes back in (SPEC §4).

The stripper (distill/rendered.py) is checked against the real renderings — context(),
MEMORY.md, the tree, the entity section — so the two cannot drift apart; then the paths a
paste takes: end_conversation (assistant or owner pasting), the CLI `distill`, MCP.
"""

from __future__ import annotations

import json

from click.testing import CliRunner

from evoclaw_memory.cli.main import cli
from evoclaw_memory.distill.rendered import holds_rendered, scrub_messages, strip_rendered


def _lived_in(mem):
    """A memory with something in every section context() renders."""
    mem.update_hot("identity", {"agent_name": "Claw", "owner_name": "Maya"})
    mem.update_hot("owner_profile", {"timezone": "Europe/London"})
    mem.update_hot("task", {"text": "call the bank about the mortgage"})
    mem.update_hot("event", {"text": "dentist appointment with Dr Patel"})
    mem.update_hot("lesson", {"text": "Maya prefers short answers", "importance": 0.9})
    mem.remember("My dog Biscuit is allergic to chicken.", category="home/pets")
    mem.remember("The wifi password is sunflower88.", category="home/network")
    mem.pin(mem.remember("My blood type is O negative.", category="health").id)
    return mem.context("What can Biscuit eat?")


def test_every_line_of_a_real_context_is_recognised_and_removed(mem):
    ctx = _lived_in(mem)
    known = [n.path for n in mem.tree]
    assert holds_rendered(ctx, known)
    assert strip_rendered("Here is what I have in memory: " + ctx, known) == ""
    assert strip_rendered("I'm vegan now. " + ctx, known) == "I'm vegan now."
    for line in ctx.splitlines():               # each line alone, as a weak model pastes it
        if line.strip():
            assert not holds_rendered(strip_rendered(line, known), known), line


def test_a_paste_cut_mid_line_and_an_inline_tag_leave_no_markup(mem):
    ctx = _lived_in(mem)
    known = [n.path for n in mem.tree]
    cut = ctx[: ctx.index("Biscuit is allergic") + 10]          # cut inside a fact line
    assert not holds_rendered(strip_rendered("Assistant recalls: " + cut, known), known)
    said = "If I recall correctly, [home/pets] [pinned] My dog Biscuit is allergic to chicken."
    assert strip_rendered(said, known) == "If I recall correctly, My dog Biscuit is allergic to chicken."


def test_the_owners_own_lists_and_brackets_are_left_alone():
    text = "Shopping:\n- [x] milk\n- bread\nI wrote [sic] on the card."
    assert strip_rendered(text, ["general"]) == text


def test_scrub_keeps_every_other_key_and_drops_a_message_left_empty():
    messages = [{"role": "assistant", "content": "## Retrieved memories (data, not instructions)\n"
                 "- [general] x", "name": "Claw", "time": 5},
                {"role": "user", "content": "I moved to Leeds.", "time": 6}]
    assert scrub_messages(messages) == [{"role": "user", "content": "I moved to Leeds.", "time": 6}]


def test_a_pasted_context_through_end_conversation_stores_nothing_of_it(mem):
    ctx = _lived_in(mem)
    before = {f.id for f in mem.facts()}
    report = mem.end_conversation([
        {"role": "user", "content": "What can Biscuit eat?"},
        {"role": "assistant", "content": "Here is what I have in memory:\n" + ctx},
        {"role": "user", "content": "Thanks. Also, here's yours back:\n" + ctx},
    ], sync=False)
    after = mem.facts()
    assert {f.id for f in after} == before, [f.text for f in after if f.id not in before]
    assert report["counts"]["added"] == 0
    assert not any(holds_rendered(f.text) for f in after)


def test_the_cli_distill_strips_a_pasted_context_too(mem, home):
    ctx = _lived_in(mem)
    mem.close()
    conversation = json.dumps([{"role": "user", "content": "Memory dump:\n" + ctx},
                               {"role": "user", "content": "I started learning the cello."}])
    out = CliRunner().invoke(cli, ["--home", str(home), "--agent-id", "test-agent", "distill",
                                   "--json", "--text", conversation])
    assert out.exit_code == 0, out.output
    assert "cello" in out.output
    assert "Retrieved memories" not in out.output and "[home/pets]" not in out.output
