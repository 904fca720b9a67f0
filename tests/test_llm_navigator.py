"""LLM tree search inside `retrieve`, with its fallback to the keyword navigator.

The LLM is a scripted server behind httpx.MockTransport (tests/llm_fakes.py); no real LLM
runs here. One test points a configured Memory at a closed loopback port.
"""

import json

import httpx
import pytest

from evoclaw_memory import Memory
from evoclaw_memory.llm.navigator import LLMNavigator
from evoclaw_memory.retrieval.retriever import KeywordNavigator

from llm_fakes import FakeLLM, completion


def pick(*paths, nothing=False):
    return json.dumps({"paths": [{"path": p, "relevance": 0.9 - i / 10, "reason": "fits"}
                                 for i, p in enumerate(paths)], "nothing_relevant": nothing})


@pytest.fixture
def open_mem(home, clock):
    opened = []

    def factory(*replies, **client_kwargs):
        fake = FakeLLM(*replies)
        mem = Memory.open("nav-agent", home=home, clock=clock,
                          llm=fake.client(**client_kwargs))
        mem.tree_add("home/pets", "Dog and cat")
        mem.tree_add("work", "Job and colleagues")
        mem.tree_add("health", "Doctors and medicine")
        # The vet fact is filed under health: only a navigator that picks home/pets for a
        # question about the dog's vet finds it through the tree.
        mem.remember("Biscuit the beagle sees vet Dr Patel at Leeds Vets", category="home/pets")
        mem.remember("Dr Ellison is the family GP at Kirkstall", category="health")
        mem.remember("Sprint review is on Thursday at 3pm", category="work")
        opened.append(mem)
        return mem, fake

    yield factory
    for mem in opened:
        mem.close()


def test_open_with_an_llm_uses_the_llm_navigator(open_mem):
    mem, fake = open_mem(pick("home/pets"))
    assert isinstance(mem.navigator, LLMNavigator)
    assert fake.calls == 0                               # opening costs no call


def test_the_llm_answer_is_used_once_per_retrieval(open_mem):
    mem, fake = open_mem(pick("home/pets", "health"))
    results = mem.retrieve("who is Biscuit's vet?")
    assert fake.calls == 1
    assert results[0].method == "llm-tree" and results[0].path == "home/pets"
    assert "Dr Patel" in results[0].fact.text
    assert mem.navigator.last.used and mem.navigator.last.paths == ["home/pets", "health"]
    counters = mem.metrics()["counters"]
    assert counters["llm.calls"] == 1
    assert counters["llm.tokens_prompt"] == 120 and counters["llm.tokens_completion"] == 30
    assert counters["llm.seconds"] >= 0
    mem.retrieve("sprint review day")
    assert fake.calls == 2 and mem.metrics()["counters"]["llm.calls"] == 2


def test_the_prompt_shows_the_tree_and_the_query_as_data(open_mem):
    mem, fake = open_mem(pick("home/pets"))
    mem.retrieve("vet for the dog")
    body = fake.bodies[0]
    prompt = fake.prompt()
    assert "<memory>" in prompt and "- home/pets — Dog and cat (1)" in prompt
    assert "<query>vet for the dog</query>" in prompt
    enum = body["response_format"]["json_schema"]["schema"]["properties"]["paths"]["items"]["enum"]
    assert enum == ["health", "home", "home/pets", "work"]


def test_prose_around_the_json_is_fine(open_mem):
    mem, _ = open_mem("Sure! The best place to look:\n```json\n" + pick("home/pets") + "\n```")
    assert mem.retrieve("Biscuit vet")[0].method == "llm-tree"


@pytest.mark.parametrize("reply", [
    pick("pets/dogs/biscuit", "nowhere"),                  # only invented paths
    "I think you should look in the pets folder.",         # no JSON at all
    completion(""),                                        # empty answer
    500,                                                   # server error
    httpx.ReadTimeout("timed out"),                        # timeout
    httpx.ConnectError("connection refused"),
    json.dumps({"paths": [], "nothing_relevant": False}),  # neither paths nor "nothing"
])
def test_any_failure_falls_back_to_keywords_in_the_same_call(open_mem, reply):
    mem, fake = open_mem(reply)
    results = mem.retrieve("dog vet")
    assert results, "the keyword navigator and full-text search still answer"
    assert all(r.method != "llm-tree" for r in results)
    assert results[0].method == "keyword-tree" and "Dr Patel" in results[0].fact.text
    assert fake.calls == 1                                 # one attempt: no retry on retrieval
    assert not mem.navigator.last.used and mem.navigator.last.error
    assert mem.metrics()["counters"]["llm.calls"] == 1


def test_invalid_paths_are_dropped_and_valid_ones_kept(open_mem):
    mem, _ = open_mem(pick("invented/path", "home/pets"))
    results = mem.retrieve("Biscuit vet")
    assert results[0].method == "llm-tree" and results[0].path == "home/pets"
    assert mem.navigator.last.dropped == 1


def test_nothing_relevant_is_respected(open_mem):
    mem, fake = open_mem(pick(nothing=True))
    results = mem.retrieve("Biscuit vet")
    assert fake.calls == 1 and mem.navigator.last.used and mem.navigator.last.nothing_relevant
    # SPEC §3.2: the LLM read the tree and the query and found nothing: the result is
    # empty, although "Biscuit vet" shares words with a fact (no full-text fallback).
    assert results == []


def test_an_empty_tree_costs_no_call(home, clock):
    fake = FakeLLM(pick("home"))
    with Memory.open("empty", home=home, clock=clock, llm=fake.client()) as mem:
        assert mem.retrieve("anything at all") == []
        assert fake.calls == 0


def test_an_explicit_navigator_still_wins(home, clock):
    fake = FakeLLM(pick("home"))
    keyword = KeywordNavigator()
    with Memory.open("explicit", home=home, clock=clock, llm=fake.client(),
                     navigator=keyword) as mem:
        assert mem.navigator is keyword and mem.llm is not None


def test_configured_llm_builds_the_navigator_and_falls_back_when_down(home, clock):
    # Port 9 on loopback: nothing listens, the connection is refused at once.
    with Memory.open("configured", home=home, clock=clock,
                     llm_base_url="http://127.0.0.1:9/v1", llm_model="m",
                     llm_api_key="sk-configured-secret") as mem:
        assert isinstance(mem.navigator, LLMNavigator)
        assert "sk-configured-secret" not in repr(mem.navigator)
        mem.tree_add("home/pets", "Dog")
        mem.remember("Biscuit's vet is Dr Patel", category="home/pets")
        results = mem.retrieve("dog vet")
        assert results[0].method == "keyword-tree"
        assert "sk-configured-secret" not in (mem.navigator.last.error or "")
        assert mem.metrics()["counters"]["llm.errors"] == 1
