"""A scripted OpenAI-compatible chat server behind httpx.MockTransport, for the LLM tests.

No real server and no network: the transport answers in-process with realistic
`/chat/completions` bodies (usage included) or with the failures real servers produce.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Union

import httpx

from evoclaw_memory.llm.client import LLMClient

API_KEY = "sk-test-SECRET-9f8e7d6c5b4a"
BASE_URL = "http://llm.test/v1"

Reply = Union[str, dict, int, BaseException, Callable[[httpx.Request], httpx.Response]]


def completion(content: str, prompt_tokens: int = 120, completion_tokens: int = 30) -> dict:
    """A chat.completion body as OpenAI, llama.cpp and vLLM return it."""
    return {"id": "chatcmpl-123", "object": "chat.completion", "created": 1764460800,
            "model": "test-model",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens}}


class FakeLLM:
    """Answers each request with the next scripted reply (the last one repeats).

    A reply is: a str (the assistant's content), a dict (a JSON value given as content, or
    a full body when it has "choices"), an int (an HTTP status with an error body), an
    exception (raised by the transport, e.g. httpx.ReadTimeout) or a callable(request).
    """

    def __init__(self, *replies: Reply):
        self.replies = list(replies) or [completion("{}")]
        self.bodies: list[dict] = []
        self.requests: list[httpx.Request] = []
        self.transport = httpx.MockTransport(self._handle)

    def client(self, **kwargs: Any) -> LLMClient:
        kwargs.setdefault("retry_wait", 0.0)
        kwargs.setdefault("api_key", API_KEY)
        return LLMClient(kwargs.pop("base_url", BASE_URL), kwargs.pop("model", "test-model"),
                         transport=self.transport, **kwargs)

    @property
    def calls(self) -> int:
        return len(self.bodies)

    def prompt(self, index: int = -1) -> str:
        """All message contents of one request, joined."""
        return "\n".join(m["content"] for m in self.bodies[index]["messages"])

    def _handle(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        self.bodies.append(json.loads(request.content))
        reply = self.replies[min(len(self.bodies) - 1, len(self.replies) - 1)]
        if isinstance(reply, BaseException):
            raise reply
        if callable(reply):
            return reply(request)
        if isinstance(reply, int):
            return httpx.Response(reply, json={"error": {"message": f"status {reply}",
                                                         "type": "server_error"}})
        if isinstance(reply, dict) and "choices" in reply:
            return httpx.Response(200, json=reply)
        content = reply if isinstance(reply, str) else json.dumps(reply)
        return httpx.Response(200, json=completion(content))
