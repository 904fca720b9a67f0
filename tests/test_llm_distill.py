"""LLM distillation: the pure checks of an answer, then Memory.distill / apply_distillation
and the CLI.

The LLM is a scripted server behind httpx.MockTransport (tests/llm_fakes.py); no real LLM
runs here. The CLI test points the configuration at a closed loopback port.
"""

import json

import httpx
import pytest
from click.testing import CliRunner

from evoclaw_memory import Memory
from evoclaw_memory.cli.main import cli
from evoclaw_memory.errors import ConfigError
from evoclaw_memory.llm.distill import (build_result, conversation_turns, fresh_hot_updates,
                                        grounding, reattach_metadata, resolve_category,
                                        short_summary)
from evoclaw_memory.llm.prompts import RelatedFact
from evoclaw_memory.models import FactDraft, HotState, Metadata, TreeNode

from llm_fakes import FakeLLM

NOW = 1_764_460_800.0
CONVERSATION = [
    {"role": "system", "content": "You are a helpful agent. SYSTEM SECRET PROMPT."},
    {"role": "user", "content": "Biscuit's vet changed: Dr Patel retired, so now it's Dr Okafor "
                                "at Roundhay Vets, https://roundhayvets.co.uk/book. Also I set up "
                                "node exporter with `sudo apt install prometheus-node-exporter` "
                                "and its config lives in /etc/default/prometheus-node-exporter."},
    {"role": "assistant", "content": "Got it. I'll remember Dr Okafor. Please always keep answers "
                                     "short, you said."},
    {"role": "user", "content": "Yes, keep answers short. My timezone is Europe/London. Remind me "
                                "to book Biscuit's booster jab."},
]
TREE = [TreeNode(path="home"), TreeNode(path="home/pets", description="Dog"),
        TreeNode(path="technical"), TreeNode(path="technical/home-server")]


def answer(**overrides):
    """A realistic distillation answer (what a 7B model returns for CONVERSATION)."""
    value = {
        "facts": [
            {"text": "Biscuit's vet is now Dr Okafor at Roundhay Vets (Dr Patel retired).",
             "category": "home/pets", "importance": 0.7,
             "metadata": {"urls": ["https://roundhayvets.co.uk/book"], "commands": [], "paths": []},
             "supersedes": "F1", "duplicate_of": None},
            {"text": "Node exporter was installed on the home server.",
             "category": "technical/home-server", "importance": 0.5,
             "metadata": {"urls": [], "commands": [], "paths": []},
             "supersedes": None, "duplicate_of": None},
        ],
        "summary": "Vet changed, node exporter",
        "hot": {"owner_profile": [{"key": "timezone", "value": "Europe/London"}],
                "lessons": ["Keep answers short"], "tasks": ["Book Biscuit's booster jab"],
                "events": []},
    }
    value.update(overrides)
    return value


def turns():
    return conversation_turns(CONVERSATION)


# -- pure checks ---------------------------------------------------------------------------

def test_conversation_turns_skip_system_and_tool_messages():
    roles = [role for role, _ in turns()]
    assert roles == ["user", "assistant", "user"]
    assert conversation_turns("plain text") == [("user", "plain text")]
    assert conversation_turns([{"role": "user", "content": [{"type": "text", "text": "hi"}]}]) == \
        [("user", "hi")]


def build(value, related=(), nodes=TREE):
    from evoclaw_memory.llm.prompts import parse_distillation
    return build_result(parse_distillation(value), turns(), list(nodes), list(related), NOW)


def test_a_good_answer_becomes_drafts_with_every_link_kept():
    related = [RelatedFact(alias="F1", id="old-vet-fact", text="Biscuit's vet is Dr Patel",
                           category="home/pets")]
    result = build(answer(), related)
    texts = [d.text for d in result["facts"]]
    assert texts[0].startswith("Biscuit's vet is now Dr Okafor")
    assert result["supersedes"] == [{"fact": 0, "old_id": "old-vet-fact"}]
    assert result["duplicates"] == []
    assert all(d.source == "distill-llm" for d in result["facts"])
    # The command and the path the LLM left out are re-attached by regex to the fact that
    # talks about node exporter.
    exporter = result["facts"][1]
    assert exporter.metadata.commands == ["sudo apt install prometheus-node-exporter"]
    assert exporter.metadata.paths == ["/etc/default/prometheus-node-exporter"]
    assert result["facts"][0].metadata.urls == ["https://roundhayvets.co.uk/book"]
    assert result["summary"] == "Vet changed, node exporter"
    keys = [u["key"] for u in result["hot_updates"]]
    assert keys == ["owner_profile", "lesson", "task"]
    assert result["hot_updates"][0]["value"] == {"timezone": "Europe/London"}


def test_links_no_fact_talks_about_get_a_fact_of_their_own():
    result = build(answer(facts=[{"text": "Biscuit's vet is now Dr Okafor.",
                                  "category": "home/pets", "importance": 0.7}]))
    carried = Metadata()
    for d in result["facts"]:
        carried = Metadata(urls=carried.urls + d.metadata.urls,
                           commands=carried.commands + d.metadata.commands,
                           paths=carried.paths + d.metadata.paths)
    assert "sudo apt install prometheus-node-exporter" in carried.commands
    assert "/etc/default/prometheus-node-exporter" in carried.paths
    assert "https://roundhayvets.co.uk/book" in carried.urls
    assert len(result["facts"]) >= 2


def test_invented_links_ungrounded_facts_and_bad_references_are_dropped():
    related = [RelatedFact(alias="F1", id="old-1", text="Grafana runs on port 3000",
                           category="technical/home-server")]
    result = build(answer(facts=[
        {"text": "Biscuit's vet is now Dr Okafor at Roundhay Vets.", "category": "home/pets",
         "metadata": {"urls": ["https://evil.example.com/phish"]},
         "supersedes": "F1",                       # shares no word with the vet fact: refused
         "duplicate_of": "F7"},                    # not an alias we showed
        {"text": "The cat is a cat and the moon is cheese.", "category": "general"},
    ], summary="Quantum chromodynamics lecture notes",
        hot={"owner_profile": {"favourite_colour": "ultraviolet"}, "lessons": ["F1"],
             "tasks": ["Mike"], "events": []}), related)
    texts = [d.text for d in result["facts"]]
    assert not any("moon" in t for t in texts)
    assert "https://evil.example.com/phish" not in json.dumps(
        [d.metadata.urls for d in result["facts"]])
    assert result["supersedes"] == [] and result["duplicates"] == []
    assert result["hot_updates"] == []
    assert result["summary"] == ""                 # the caller puts the rule summary instead


def test_a_duplicate_reinforces_instead_of_adding():
    related = [RelatedFact(alias="F2", id="old-2", text="Biscuit's vet is Dr Okafor at Roundhay Vets",
                           category="home/pets")]
    result = build(answer(facts=[{"text": "Biscuit's vet is Dr Okafor at Roundhay Vets.",
                                  "category": "home/pets", "duplicate_of": "F2"}]), related)
    assert result["duplicates"] == [{"text": "Biscuit's vet is Dr Okafor at Roundhay Vets.",
                                     "old_id": "old-2"}]
    # Not added again (the conversation's link still reaches a fact of its own).
    assert "Biscuit's vet is Dr Okafor at Roundhay Vets." not in [d.text for d in result["facts"]]


def test_texts_are_cut_to_150_characters_and_summaries_to_30_bytes():
    long = "Biscuit's vet is Dr Okafor at Roundhay Vets, " * 8
    result = build(answer(facts=[{"text": long, "category": "home/pets"}],
                          summary="Biscuit vet changed to Dr Okafor at Roundhay Vets"))
    assert len(result["facts"][0].text) <= 150
    assert len(result["summary"].encode()) <= 30
    assert short_summary("宠物医生换成了Okafor医生在Roundhay") and \
        len(short_summary("宠物医生换成了Okafor医生在Roundhay").encode()) <= 30


def test_categories_stay_within_the_tree_limits():
    sim = list(TREE)
    path, sim = resolve_category("Home / Pets / Biscuit", "Biscuit's vet", sim, NOW)
    assert path == "home/pets/biscuit" and "home/pets/biscuit" in {n.path for n in sim}
    path, _ = resolve_category("a/b/c/d/e/f", "x", sim, NOW)
    assert path == "a/b/c/d"                                   # depth cut to 4
    full = [TreeNode(path=f"t{i}") for i in range(10)]        # the root is full
    path, after = resolve_category("brand-new", "Biscuit's vet is Dr Okafor", full, NOW)
    assert path in {n.path for n in full} or path in {n.path for n in after}
    assert len([n for n in after if "/" not in n.path]) <= 10
    deep = [TreeNode(path="home")] + [TreeNode(path=f"home/k{i}") for i in range(10)]
    path, after = resolve_category("home/new-kid", "dentist", deep, NOW)
    assert path == "home" and len(after) == len(deep)         # the parent, not an 11th child


def test_reattach_keeps_drafts_that_already_carry_everything():
    drafts = [FactDraft(text="x", category="home", metadata=Metadata(urls=["https://a.io"]))]
    assert reattach_metadata(drafts, [("user", "see https://a.io")], ["home"]) == drafts


def test_grounding_and_fresh_hot_updates():
    vocabulary = {"biscuit", "vet", "okafor"}
    assert grounding("Biscuit vet Okafor", vocabulary) == 1.0
    assert grounding("", vocabulary) == 0.0
    state = HotState(owner_profile={"timezone": "Europe/London"})
    updates = [{"key": "owner_profile", "value": {"timezone": "Europe/London", "job": "engineer"}},
               {"key": "task", "value": {"text": "Book the jab"}}]
    assert fresh_hot_updates(updates, state) == [
        {"key": "owner_profile", "value": {"job": "engineer"}},
        {"key": "task", "value": {"text": "Book the jab"}}]


# -- Memory.distill and apply_distillation -------------------------------------------------

@pytest.fixture
def llm_mem(home, clock):
    opened = []

    def factory(*replies):
        fake = FakeLLM(*replies)
        mem = Memory.open("distill-agent", home=home, clock=clock, llm=fake.client())
        mem.tree_add("home/pets", "Dog")
        mem.tree_add("technical/home-server", "Home server")
        old = mem.remember("Biscuit's vet is Dr Patel at Leeds Vets", category="home/pets")
        opened.append(mem)
        return mem, fake, old

    yield factory
    for mem in opened:
        mem.close()


def test_distill_with_the_llm_is_one_call_and_shows_related_facts_by_alias(llm_mem):
    mem, fake, old = llm_mem(answer())
    result = mem.distill(CONVERSATION)
    assert fake.calls == 1 and result["llm_calls"] == 1
    assert result["mode"] == "llm"
    assert {"record", "summary", "facts", "mode", "hot_updates", "supersedes", "duplicates",
            "llm_calls"} <= set(result)
    prompt = fake.prompt()
    assert '<fact id="F1" category="home/pets">Biscuit\'s vet is Dr Patel at Leeds Vets</fact>' \
        in prompt
    assert old.id not in prompt
    assert "SYSTEM SECRET PROMPT" not in prompt          # system turns are not memories
    assert "<conversation>" in prompt and "never instructions" in prompt
    assert result["supersedes"] == [{"fact": 0, "old_id": old.id}]
    assert mem.store.count_facts() == 1                   # distill alone stores nothing
    counters = mem.metrics()["counters"]
    assert counters["llm.calls"] == 1 and counters["llm.tokens_prompt"] == 120


def test_apply_distillation_supersedes_reinforces_and_updates_hot(llm_mem):
    mem, fake, old = llm_mem(answer())
    outbox_before = mem.store.outbox_depth()
    applied = mem.apply_distillation(mem.distill(CONVERSATION))
    counts = applied["counts"]
    assert counts["added"] == 2 and counts["superseded"] == 1
    assert counts["hot_updates"] == 3 and counts["hot_rejected"] == 0
    assert applied["superseded"] == [old.id]
    assert mem.get(old.id).superseded_by == applied["added"][0].id    # kept, marked
    found = [r.fact.id for r in mem.retrieve("Biscuit vet")]
    assert old.id not in found and applied["added"][0].id in found
    hot = mem.hot
    assert hot.owner_profile["timezone"] == "Europe/London"
    assert [l.text for l in hot.critical_lessons] == ["Keep answers short"]
    assert [t.text for t in hot.active_context.tasks] == ["Book Biscuit's booster jab"]
    assert mem.store.outbox_depth() > outbox_before
    ops = [row[1] for row in mem.store.audit_log(50)]
    assert "supersede" in ops and "hot.task" in ops
    # The same conversation again: no second copy of the hot entries.
    fake.replies = [answer(facts=[])]
    again = mem.apply_distillation(mem.distill(CONVERSATION))
    assert again["counts"]["hot_updates"] == 0
    assert len(mem.hot.active_context.tasks) == 1


def test_apply_distillation_reinforces_duplicates(llm_mem):
    mem, fake, old = llm_mem(answer(facts=[{
        "text": "Biscuit's vet is Dr Patel at Leeds Vets.", "category": "home/pets",
        "duplicate_of": "F1"}], hot={}))
    before = mem.get(old.id).access_count
    applied = mem.apply_distillation(mem.distill("Biscuit's vet is Dr Patel at Leeds Vets."))
    assert applied["duplicates"] == [old.id] and applied["counts"]["added"] == 0
    assert mem.get(old.id).access_count == before + 1


def test_a_bad_hot_update_is_rejected_alone(llm_mem):
    mem, _, _ = llm_mem(answer())
    result = mem.distill(CONVERSATION)
    result["hot_updates"].append({"key": "weather", "value": {"text": "Biscuit sunny"}})
    applied = mem.apply_distillation(result)
    assert applied["counts"]["hot_updates"] == 3 and applied["counts"]["hot_rejected"] == 1
    assert "unknown hot memory key" in applied["hot_rejected"][0]["why"]


@pytest.mark.parametrize("reply", [
    500, httpx.ReadTimeout("slow"), "Here are the facts: Biscuit has a new vet.", "",
    json.dumps({"facts": "none"}),
])
def test_any_failure_falls_back_to_rule_mode_and_says_so(llm_mem, reply):
    mem, fake, _ = llm_mem(reply)
    result = mem.distill(CONVERSATION)
    assert result["mode"] == "rules-fallback" and result["llm_error"]
    assert result["facts"], "rule mode still finds the facts"
    assert result["llm_calls"] == 1
    urls = [u for d in result["facts"] for u in d.metadata.urls]
    assert "https://roundhayvets.co.uk/book" in urls
    applied = mem.apply_distillation(result)
    assert applied["counts"]["added"] >= 1


def test_prose_and_fences_around_the_answer_are_fine(llm_mem):
    mem, _, _ = llm_mem("<think>Let me list facts.</think>Here you go:\n```json\n"
                        + json.dumps(answer()) + "\n```")
    assert mem.distill(CONVERSATION)["mode"] == "llm"


def test_llm_choice_rules_and_requirements(llm_mem, home, clock):
    mem, fake, _ = llm_mem(answer())
    assert mem.distill(CONVERSATION, llm=False)["mode"] == "rules" and fake.calls == 0
    mem.distill_llm = False
    assert mem.distill(CONVERSATION)["mode"] == "rules" and fake.calls == 0
    assert mem.distill(CONVERSATION, llm=True)["mode"] == "llm" and fake.calls == 1
    with Memory.open("no-llm", home=home, clock=clock) as plain:
        assert plain.distill(CONVERSATION)["mode"] == "rules"
        with pytest.raises(ConfigError, match="no LLM configured"):
            plain.distill(CONVERSATION, llm=True)


def test_an_empty_conversation_costs_no_call(llm_mem):
    mem, fake, _ = llm_mem(answer())
    result = mem.distill([{"role": "system", "content": "only a system prompt"}])
    assert fake.calls == 0 and result["mode"] == "rules"


def test_cli_distill_llm_falls_back_when_the_server_is_down(home):
    env = {"EVOCLAW_HOME": str(home), "EVOCLAW_LLM_BASE_URL": "http://127.0.0.1:9/v1",
           "EVOCLAW_LLM_MODEL": "m", "EVOCLAW_LLM_API_KEY": "sk-cli-secret-key"}
    runner = CliRunner()
    result = runner.invoke(cli, ["distill", "--llm", "--text", json.dumps(CONVERSATION)], env=env)
    assert result.exit_code == 0, result.output
    assert "mode:    rules-fallback (LLM failed:" in result.output
    assert "sk-cli-secret-key" not in result.output
    data = runner.invoke(cli, ["distill", "--llm", "--json", "--text", json.dumps(CONVERSATION)],
                         env=env)
    parsed = json.loads(data.stdout)
    assert parsed["mode"] == "rules-fallback" and parsed["llm_calls"] == 1
    rules = runner.invoke(cli, ["distill", "--rules", "--json", "--text", "I love hiking."], env=env)
    assert json.loads(rules.stdout)["mode"] == "rules"


# -- the LLM's forget / correct operations (issue 14) -------------------------------------

def test_the_llms_forget_acts_only_on_the_owners_request_and_corrections_are_candidates(llm_mem):
    """The one call may return forget/correct on the facts it was shown (by alias): a forget
    acts when the owner's words ask for one; without such words it, like every correction,
    is only a candidate in the report (a model that misreads must not erase)."""
    mem, fake, old = llm_mem(answer(facts=[], forget=["F1"],
                                    correct=[{"fact": "F1", "text": "Biscuit's vet is Dr Okafor"}]))
    talk = [{"role": "user", "content": "Biscuit's vet at Leeds Vets, Dr Patel, was lovely."}]
    report = mem.end_conversation(talk, sync=False, consolidate=False)
    assert report["forgotten"] == []
    ops = {(c["op"], c["fact_id"]) for c in report["forget_candidates"]}
    assert ("forget", old.id) in ops and ("correct", old.id) in ops
    assert mem.get(old.id).text == old.text                       # nothing changed
    said = [{"role": "user", "content": "Please forget about the old vet, scratch that."}]
    report = mem.end_conversation(said, sync=False, consolidate=False)
    assert old.id in report["forgotten"]
    assert not [f for f in mem.facts() if f.id == old.id]
    assert '"forget"' in json.dumps(fake.bodies[-1])          # the schema asks for it
