"""Issue 25, part 2: the agent's own turns add only what it undertook or did for the owner.

Rule mode (distill/agent_turns.py, rules.py): an assistant without a person's name — or with
the agent's own name from hot memory — is the agent; a named assistant is a person.
"""

from __future__ import annotations

import datetime as dt

from evoclaw_memory.distill.agent_turns import is_commitment, is_done_for_owner
from evoclaw_memory.distill.rules import distill_conversation

AT = dt.datetime(2026, 1, 14, 10, 0).timestamp()        # a Wednesday


def distilled(messages, agent_names=()):
    facts, updates = distill_conversation(messages, [], AT, agent_names=agent_names)
    return [f.text for f in facts], updates


def test_the_agents_restatements_and_general_knowledge_are_not_facts():
    facts, updates = distilled([
        {"role": "user", "content": "What should I feed Biscuit tonight?"},
        {"role": "assistant", "content": "As I remember, your dog Biscuit is allergic to chicken. "
                                         "Rice and turkey are gentle on a dog's stomach."},
        {"role": "assistant", "content": "Looks like light drizzle this afternoon, clearing later."},
    ])
    assert facts == [] and updates == []


def test_an_undertaking_becomes_a_dated_task_not_a_fact():
    facts, updates = distilled([
        {"role": "user", "content": "I keep forgetting the bank."},
        {"role": "assistant", "content": "I'll remind you on Friday at noon to call the bank."},
    ])
    assert facts == ["I keep forgetting the bank."]
    [task] = updates
    assert task["key"] == "task"
    assert task["value"]["text"] == "Assistant will remind you on Friday 16 January 2026 at noon " \
                                    "to call the bank."
    assert dt.datetime.fromtimestamp(task["value"]["timestamp"]).date() == dt.date(2026, 1, 16)


def test_what_the_agent_did_for_the_owner_and_the_links_it_gives_are_kept():
    facts, _ = distilled([
        {"role": "assistant", "content": "I booked the vet for Friday 3pm. The form is at "
                                         "https://vets.example/form. The weather looks fine."},
    ])
    assert facts[0].startswith("Assistant booked the vet for Friday 16 January 2026 3pm.")
    assert any("https://vets.example/form" in f for f in facts)
    assert not any("weather" in f for f in facts)


def test_a_named_assistant_is_a_person_unless_it_is_the_agent():
    melanie = [{"role": "assistant", "name": "Melanie", "content": "I went camping at the lake."}]
    assert distilled(melanie)[0] == ["Melanie went camping at the lake."]
    claw = [{"role": "assistant", "name": "Claw", "content": "I went camping at the lake."}]
    assert distilled(claw, agent_names=["Claw"])[0] == []


def test_commitment_and_done_action_patterns():
    assert is_commitment("I'll check in with you on Monday about the boiler.")
    assert is_commitment("Assistant will remind you on Friday to water the plants.")
    assert not is_commitment("I'll remember that.")              # about the memory itself
    assert not is_commitment("I can help with that.")
    assert is_commitment("I've set a reminder for Friday at 9am to call the bank.")
    assert is_commitment("Reminder set: Friday at 9am, call the bank.")
    assert is_commitment("Let me set a reminder for Friday at 9am to call the bank.")
    assert not is_done_for_owner("I've scheduled a reminder to check in on Monday.")
    assert is_done_for_owner("I've ordered more printer ink.")
    assert is_done_for_owner("The assistant booked the pottery class.")
    assert not is_done_for_owner("You booked a table last week.")


def test_end_conversation_keeps_the_task_and_stores_no_echo(mem):
    mem.remember("My dog Biscuit is allergic to chicken.", category="home/pets")
    report = mem.end_conversation([
        {"role": "user", "content": "Any dinner ideas for Biscuit?"},
        {"role": "assistant", "content": "If I recall correctly, Biscuit is allergic to chicken. "
                                         "I will check in with you on Monday at 9am about his food."},
    ], sync=False)
    assert report["counts"]["added"] == 0
    assert [t.text for t in mem.hot.active_context.tasks] == [
        "Assistant will check in with you on Monday 1 December 2025 at 9am about his food."]
