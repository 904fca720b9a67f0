"""Opt-in: the LLM paths against a real OpenAI-compatible server.

Runs only when EVOCLAW_TEST_LLM_URL is set (e.g. by `bench/local_llm.sh start`, which
serves SmolLM2-135M-Instruct on loopback); EVOCLAW_TEST_LLM_MODEL and
EVOCLAW_TEST_LLM_API_KEY are optional. A tiny model answers poorly, so these tests check
the plumbing and the guarantees (valid paths only, one call, links kept, fallbacks), not
the quality of its choices. These are the only tests of the suite that may skip.
"""

import os

import pytest

from evoclaw_memory import Memory
from evoclaw_memory.errors import LLMError
from evoclaw_memory.llm.client import LLMClient

URL = os.environ.get("EVOCLAW_TEST_LLM_URL")
pytestmark = pytest.mark.skipif(
    not URL, reason="opt-in: set EVOCLAW_TEST_LLM_URL to an OpenAI-compatible server "
                    "(bench/local_llm.sh start prints one) to run the real-LLM tests")


@pytest.fixture
def client():
    with LLMClient(URL, os.environ.get("EVOCLAW_TEST_LLM_MODEL", "smollm2-135m-instruct"),
                   os.environ.get("EVOCLAW_TEST_LLM_API_KEY"), timeout=120) as c:
        yield c


def test_structured_output_from_a_real_server(client):
    schema = {"type": "object", "properties": {"colour": {"type": "string",
                                                          "enum": ["red", "green", "blue"]}},
              "required": ["colour"], "additionalProperties": False}
    value = client.chat_json([{"role": "user", "content": "Pick a colour. Reply in JSON."}],
                             schema, name="colour")
    assert isinstance(value, dict)
    assert client.stats.calls == 1 and client.stats.prompt_tokens > 0


def test_retrieval_spends_one_call_and_uses_only_real_paths(home, clock, client):
    with Memory.open("real-llm", home=home, clock=clock, llm=client) as mem:
        mem.tree_add("home/pets", "Dog and cat")
        mem.tree_add("work", "Job and colleagues")
        mem.remember("Biscuit's vet is Dr Patel at Leeds Vets", category="home/pets")
        mem.remember("Sprint review is on Thursdays", category="work")
        results = mem.retrieve("who is the dog's vet?")
        assert client.stats.calls == 1
        assert results and "Dr Patel" in results[0].fact.text
        last = mem.navigator.last
        assert set(last.paths) <= {n.path for n in mem.tree}
        assert results[0].method in ("llm-tree", "keyword-tree", "fts-warm")


def test_distillation_keeps_links_whatever_the_model_says(home, clock, client):
    convo = [{"role": "user", "content": "I installed node exporter with `sudo apt install "
                                         "prometheus-node-exporter`; docs at "
                                         "https://prometheus.io/docs/guides/node-exporter/"}]
    with Memory.open("real-distill", home=home, clock=clock, llm=client) as mem:
        result = mem.distill(convo)
        assert result["mode"] in ("llm", "rules-fallback") and result["llm_calls"] == 1
        urls = [u for d in result["facts"] for u in d.metadata.urls]
        commands = [c for d in result["facts"] for c in d.metadata.commands]
        assert "https://prometheus.io/docs/guides/node-exporter/" in urls
        assert "sudo apt install prometheus-node-exporter" in commands
        assert all(len(d.text) <= 150 for d in result["facts"])


def test_a_wrong_model_name_or_path_is_an_llm_error():
    with LLMClient(URL.rstrip("/") + "/no-such-endpoint", "m", timeout=30, attempts=1) as bad:
        with pytest.raises(LLMError):
            bad.chat_json([{"role": "user", "content": "hi"}], {"type": "object"})
