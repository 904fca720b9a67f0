"""The LLM client and JSON extraction.

Every HTTP exchange goes through httpx.MockTransport (tests/llm_fakes.py): no real LLM
server runs here; the replies imitate real ones, broken ones included.
"""

import logging

import httpx
import pytest

from evoclaw_memory.config import load_config
from evoclaw_memory.errors import ConfigError, LLMError
from evoclaw_memory.llm.client import LLMClient, extract_json

from llm_fakes import API_KEY, FakeLLM, completion

SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
ASK = [{"role": "user", "content": "give me a"}]


# -- JSON extraction (pure) -------------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ('{"a": 1}', {"a": 1}),
    ('```json\n{"a": 1}\n```', {"a": 1}),
    ('```\n[1, 2]\n```', [1, 2]),
    ('<think>the user wants {"a": 2}? no</think>\n{"a": 1}', {"a": 1}),
    ('reasoning about {braces}...</think>{"a": 1}', {"a": 1}),
    ('Sure! Here is the JSON you asked for:\n{"a": 1}\nHope this helps.', {"a": 1}),
    ('{"a": 1, "b": [1, 2,],}', {"a": 1, "b": [1, 2]}),
    ('{"a": "a } and { and \\" quote", "b": 2}', {"a": 'a } and { and " quote', "b": 2}),
    ('Answer: {"paths": [{"path": "home", "reason": "dog"}, {"path": "work", "rea',
     {"paths": [{"path": "home", "reason": "dog"}]}),
    ('<think>\nlong thought\n</think>\n\n```json\n{"a": 1,}\n```', {"a": 1}),
])
def test_extract_json_tolerates_what_models_write(text, expected):
    assert extract_json(text) == expected


@pytest.mark.parametrize("text", ["", "   ", "I cannot help with that.", "<think>hmm</think>"])
def test_extract_json_without_json_is_an_llm_error(text):
    with pytest.raises(LLMError):
        extract_json(text)


# -- requests and structured output ----------------------------------------------------------

def test_chat_json_asks_for_a_schema_and_reports_usage():
    fake = FakeLLM(completion('{"a": 7}', prompt_tokens=321, completion_tokens=9))
    seen = []
    client = fake.client(on_call=seen.append)
    assert client.chat_json(ASK, SCHEMA, name="probe") == {"a": 7}
    body = fake.bodies[0]
    assert body["model"] == "test-model" and body["stream"] is False
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"] == SCHEMA
    assert fake.requests[0].url == "http://llm.test/v1/chat/completions"
    assert fake.requests[0].headers["authorization"] == f"Bearer {API_KEY}"
    [record] = seen
    assert record.ok and record.requests == 1 and record.mode == "json_schema"
    assert (record.prompt_tokens, record.completion_tokens) == (321, 9)
    assert record.seconds >= 0
    assert client.stats.calls == 1 and client.stats.prompt_tokens == 321


def test_a_server_without_json_schema_gets_json_object_then_plain_text():
    fake = FakeLLM(400, 400, '{"a": 1}', '{"a": 2}')
    client = fake.client()
    assert client.chat_json(ASK, SCHEMA) == {"a": 1}
    formats = [b.get("response_format", {}).get("type") for b in fake.bodies]
    assert formats == ["json_schema", "json_object", None]
    assert fake.bodies[1]["response_format"]["schema"] == SCHEMA   # llama.cpp's grammar
    # The step down is remembered: the next call costs one request.
    assert client.chat_json(ASK, SCHEMA) == {"a": 2}
    assert fake.calls == 4 and client.format_mode == "text"
    assert client.stats.calls == 2 and client.stats.requests == 4


def test_llama_cpp_python_500_about_response_format_is_a_format_refusal():
    refusal = httpx.Response(500, json={"error": {"message": "1 validation error: ('body', "
                                                  "'response_format', 'type') Input should be "
                                                  "'text' or 'json_object'"}})
    fake = FakeLLM(lambda request: refusal, '{"a": 3}')
    client = fake.client(attempts=1)
    assert client.chat_json(ASK, SCHEMA) == {"a": 3}
    assert client.format_mode == "json_object"


def test_server_errors_are_retried_a_limited_number_of_times():
    fake = FakeLLM(503, '{"a": 1}')
    assert fake.client(attempts=2).chat_json(ASK, SCHEMA) == {"a": 1}
    assert fake.calls == 2
    always = FakeLLM(500)
    seen = []
    with pytest.raises(LLMError, match="HTTP 500"):
        always.client(attempts=3, on_call=seen.append).chat_json(ASK, SCHEMA)
    assert always.calls == 3
    assert seen[0].ok is False and seen[0].requests == 3


def test_timeout_is_an_llm_error_and_is_recorded():
    fake = FakeLLM(httpx.ReadTimeout("timed out"))
    seen = []
    client = fake.client(timeout=0.5, attempts=1, on_call=seen.append)
    with pytest.raises(LLMError, match="no answer within 0.5 s"):
        client.chat_json(ASK, SCHEMA)
    assert seen[0].ok is False and "no answer" in seen[0].error
    assert client.stats.errors == 1


def test_connection_errors_are_llm_errors():
    fake = FakeLLM(httpx.ConnectError("connection refused"))
    with pytest.raises(LLMError, match="ConnectError"):
        fake.client(attempts=2).chat_json(ASK, SCHEMA)
    assert fake.calls == 2


@pytest.mark.parametrize("reply, message", [
    (completion(""), "empty answer"),
    (completion("   \n"), "empty answer"),
    ({"choices": []}, "no choices"),
    (completion("I'd rather not answer in JSON."), "no JSON"),
])
def test_empty_and_unusable_answers(reply, message):
    with pytest.raises(LLMError, match=message):
        FakeLLM(reply).client().chat_json(ASK, SCHEMA)


def test_refused_credentials_are_not_retried():
    fake = FakeLLM(401)
    with pytest.raises(LLMError, match="refused the credentials"):
        fake.client(attempts=3).chat_json(ASK, SCHEMA)
    assert fake.calls == 1


def test_non_json_body_and_content_parts():
    html = FakeLLM(lambda r: httpx.Response(200, text="<html>proxy login</html>"))
    with pytest.raises(LLMError, match="not JSON"):
        html.client().chat_json(ASK, SCHEMA)
    parts = {"choices": [{"message": {"role": "assistant",
                                      "content": [{"type": "text", "text": '{"a":'},
                                                  {"type": "text", "text": " 5}"}]}}]}
    assert FakeLLM(parts).client().chat_json(ASK, SCHEMA) == {"a": 5}


def test_chat_text_returns_the_answer():
    fake = FakeLLM("Hello there")
    assert fake.client().chat_text(ASK) == "Hello there"
    assert "response_format" not in fake.bodies[0]


# -- configuration and secrets ---------------------------------------------------------------

def test_the_api_key_never_appears_in_reprs_errors_or_logs(caplog):
    caplog.set_level(logging.DEBUG)
    echo = FakeLLM(lambda r: httpx.Response(
        500, text=f"upstream said: bad header {r.headers['authorization']}"))
    client = echo.client(attempts=2)
    assert API_KEY not in repr(client) and API_KEY not in str(client)
    assert "***" in repr(client)
    with pytest.raises(LLMError) as caught:
        client.chat_json(ASK, SCHEMA)
    assert API_KEY not in str(caught.value)
    refused = FakeLLM(lambda r: httpx.Response(401, text=f"invalid key {API_KEY}"))
    with pytest.raises(LLMError) as caught:
        refused.client().chat_json(ASK, SCHEMA)
    assert API_KEY not in str(caught.value)
    assert API_KEY not in caplog.text
    assert API_KEY not in repr(client.stats)


def test_credentials_in_the_base_url_stay_out_of_errors():
    fake = FakeLLM(httpx.ConnectError("refused"))
    client = fake.client(base_url="https://user:hunter2pass@llm.example.com/v1", attempts=1)
    with pytest.raises(LLMError) as caught:
        client.chat_json(ASK, SCHEMA)
    assert "hunter2pass" not in str(caught.value) and "hunter2pass" not in repr(client)


def test_from_config_reads_the_llm_settings(tmp_path):
    config = load_config(home=tmp_path, env={"EVOCLAW_LLM_BASE_URL": "http://127.0.0.1:8080/v1/",
                                             "EVOCLAW_LLM_MODEL": "qwen2.5",
                                             "EVOCLAW_LLM_API_KEY": API_KEY})
    client = LLMClient.from_config(config)
    assert client.endpoint == "http://127.0.0.1:8080/v1/chat/completions"
    assert client.model == "qwen2.5" and client.timeout == config.llm_timeout
    assert API_KEY not in repr(client)
    with pytest.raises(ConfigError, match="no LLM configured"):
        LLMClient.from_config(load_config(home=tmp_path, env={}))


def test_a_misconfigured_client_fails_each_call_without_a_request():
    fake = FakeLLM('{"a": 1}')
    no_model = fake.client(model="")
    with pytest.raises(LLMError, match="no LLM model"):
        no_model.chat_json(ASK, SCHEMA)
    bad_url = LLMClient("ftp://x", "m", transport=fake.transport)
    with pytest.raises(LLMError, match="http:// or https://"):
        bad_url.chat_json(ASK, SCHEMA)
    assert fake.calls == 0


def test_a_failing_metrics_hook_does_not_break_the_call():
    def broken(record):
        raise RuntimeError("metrics store closed")
    assert FakeLLM('{"a": 1}').client(on_call=broken).chat_json(ASK, SCHEMA) == {"a": 1}
