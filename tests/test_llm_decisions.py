"""Issue 25, part 8: with an LLM, the one distillation call sees the live facts each new
statement may repeat or change, and answers add / reinforce / supersede / nothing per fact.

The LLM is a scripted OpenAI-compatible server behind httpx.MockTransport (tests/llm_fakes.py;
no real LLM runs here): its reply reads the aliases the prompt showed, as a model would.
"""

from __future__ import annotations

import json
import re

import httpx

from evoclaw_memory import Memory

from llm_fakes import FakeLLM, completion

CONVERSATION = [
    {"role": "user", "content": "I've gone fully vegan now. Chicken makes Biscuit itch, he's allergic."},
    {"role": "assistant", "content": "As I remember, you live in Leeds. I'll remind you on Friday "
                                     "to buy oat milk."},
    {"role": "user", "content": "I started learning the cello."},
]


def _alias(prompt: str, words: str) -> str:
    for match in re.finditer(r'<fact id="(F\d+)"[^>]*>([^<]*)</fact>', prompt):
        if words in match.group(2):
            return match.group(1)
    raise AssertionError(f"no fact holding {words!r} was shown")


def _model(request: httpx.Request) -> httpx.Response:
    """What a good model answers: it decides per statement against the facts it was shown."""
    prompt = "\n".join(m["content"] for m in json.loads(request.content)["messages"])
    answer = {"summary": "Vegan now, cello", "hot": {}, "facts": [
        {"text": "I've gone fully vegan now.", "category": "food", "importance": 0.6,
         "action": "supersede", "fact": _alias(prompt, "vegetarian")},
        {"text": "Chicken makes Biscuit itch; he's allergic.", "category": "home/pets",
         "importance": 0.8, "action": "reinforce", "fact": _alias(prompt, "Biscuit")},
        {"text": "Assistant recalled that the owner lives in Leeds.", "category": "general",
         "importance": 0.2, "action": "nothing", "fact": None},
        {"text": "I started learning the cello.", "category": "hobbies", "importance": 0.5,
         "action": "add", "fact": None},
    ]}
    return httpx.Response(200, json=completion(json.dumps(answer)))


def test_one_call_decides_per_statement_against_the_facts_it_may_change(home, clock):
    fake = FakeLLM(_model)
    with Memory.open("llm-agent", home=home, clock=clock, llm=fake.client()) as mem:
        vegetarian = mem.remember("I don't eat meat, I'm vegetarian.", category="food")
        biscuit = mem.remember("My dog Biscuit is allergic to chicken.", category="home/pets")
        mem.remember("I live in Leeds.", category="home")
        mem.remember("The boiler was serviced in March.", category="home")       # unrelated
        report = mem.end_conversation(CONVERSATION, sync=False)
        assert fake.calls == 1 and report["mode"] == "llm"
        prompt = fake.prompt()
        assert "The boiler was serviced" not in prompt          # not a statement's candidate
        assert [f.text for f in report["added"]] == ["I've gone fully vegan now.",
                                                       "I started learning the cello."]
        assert report["superseded"] == [vegetarian.id]
        assert report["duplicates"] == [biscuit.id]
        assert mem.get(biscuit.id).access_count == 1
        live = {f.text for f in mem.facts()}
        assert "I don't eat meat, I'm vegetarian." not in live
        assert not any("Leeds" in t and "Assistant" in t for t in live)   # "nothing" kept out
        assert not any("oat milk" in t for t in live)          # the agent's promise is no fact


def test_the_strict_rules_still_catch_a_restatement_the_model_called_new(home, clock):
    fake = FakeLLM({"summary": "", "hot": {}, "facts": [
        {"text": "My dog Biscuit is allergic to chicken!", "category": "home/pets",
         "importance": 0.8, "action": "add", "fact": None}]})
    with Memory.open("llm-agent", home=home, clock=clock, llm=fake.client()) as mem:
        biscuit = mem.remember("My dog Biscuit is allergic to chicken.", category="home/pets")
        report = mem.end_conversation("My dog Biscuit is allergic to chicken!", sync=False)
        assert report["counts"]["added"] == 0 and mem.get(biscuit.id).access_count == 1


def test_when_the_model_fails_the_rules_decide(home, clock):
    fake = FakeLLM(503)
    with Memory.open("llm-agent", home=home, clock=clock, llm=fake.client(attempts=1)) as mem:
        mem.remember("I live in Leeds.", category="home")
        report = mem.end_conversation("We moved to Bristol last weekend.", sync=False)
        assert report["mode"] == "rules-fallback" and report["counts"]["superseded"] == 1
