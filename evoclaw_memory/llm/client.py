"""OpenAI-compatible chat client over httpx, and robust JSON extraction from LLM replies.

One `LLMClient` talks to any `/chat/completions` endpoint (OpenAI, Ollama, llama.cpp,
vLLM, LM Studio, DeepSeek ...). Structured output is asked for in the strongest form the
server accepts: a JSON schema (`response_format: json_schema`), else JSON mode with the
schema attached (`json_object`, which llama.cpp turns into a grammar), else plain text
with the shape described in the prompt. The form that worked is remembered, so only the
first call to a weaker server pays for the probing.

Every logical call is reported once to `on_call` (latency, tokens, requests, outcome): the
Memory records it in metrics. The API key is sent in a header and nowhere else: it never
appears in an error, a log line or a repr.
"""

from __future__ import annotations

import json
import logging
import re
import time
from typing import Any, Callable, Optional

import httpx
import msgspec
import tenacity

from evoclaw_memory.errors import ConfigError, LLMError

log = logging.getLogger(__name__)

FORMAT_MODES = ("json_schema", "json_object", "text")
# Answers that mean "this server does not understand that response_format": step down.
_FORMAT_REJECTED = {400, 404, 415, 422, 501}
_RETRYABLE_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}
_ERROR_BODY_CHARS = 160


class CallRecord(msgspec.Struct, kw_only=True):
    """What one logical LLM call cost and how it ended (reported to `on_call`)."""

    purpose: str = ""
    ok: bool = True
    seconds: float = 0.0
    requests: int = 0                 # HTTP requests: retries and format probing included
    prompt_tokens: int = 0
    completion_tokens: int = 0
    mode: str = ""                    # the response_format that answered
    error: Optional[str] = None


class LLMStats(msgspec.Struct, kw_only=True):
    """Running totals of one client (what the benchmarks read)."""

    calls: int = 0
    errors: int = 0
    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0

    def add(self, record: CallRecord) -> None:
        self.calls += 1
        self.errors += 0 if record.ok else 1
        self.requests += record.requests
        self.prompt_tokens += record.prompt_tokens
        self.completion_tokens += record.completion_tokens
        self.seconds += record.seconds


class _Transient(Exception):
    """A failure worth one more attempt (timeout, connection, 429, 5xx)."""


class _FormatRejected(Exception):
    """The server refused the response_format we sent."""


class LLMClient:
    """A small synchronous chat-completions client; one per Memory, reused across calls."""

    def __init__(self, base_url: str, model: str, api_key: Optional[str] = None, *,
                 timeout: float = 20.0, attempts: int = 2, retry_wait: float = 0.5,
                 max_tokens: int = 512, temperature: float = 0.0,
                 transport: Optional[httpx.BaseTransport] = None,
                 on_call: Optional[Callable[[CallRecord], None]] = None):
        # A bad setting fails each call (which falls back to rules/keywords), not the whole
        # Memory: every command must keep working while the LLM is misconfigured.
        self.problem: Optional[str] = None
        if not base_url or not base_url.startswith(("http://", "https://")):
            self.problem = ("the LLM base URL must start with http:// or https:// "
                            "(e.g. http://127.0.0.1:11434/v1)")
        elif not model:
            self.problem = ("no LLM model configured: set EVOCLAW_LLM_MODEL "
                            "(or [llm] model in config.toml)")
        self.base_url = (base_url or "").rstrip("/")
        self.model = model
        self.__api_key = api_key or None
        self.timeout = float(timeout)
        self.attempts = max(1, int(attempts))
        self.retry_wait = retry_wait
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.on_call = on_call
        self.stats = LLMStats()
        self.format_mode = FORMAT_MODES[0]
        self._transport = transport
        self._http: Optional[httpx.Client] = None

    @classmethod
    def from_config(cls, config: Any, **kwargs: Any) -> "LLMClient":
        """A client for the LLM in `config` (llm_base_url, llm_model, llm_api_key, llm_timeout)."""
        if not config.llm_base_url:
            raise ConfigError("no LLM configured: set EVOCLAW_LLM_BASE_URL and "
                              "EVOCLAW_LLM_MODEL (or [llm] base_url and model in config.toml)")
        return cls(config.llm_base_url, config.llm_model or "", config.llm_api_key,
                   timeout=config.llm_timeout, **kwargs)

    def __repr__(self) -> str:  # the key stays out of tracebacks and logs
        key = "***" if self.__api_key else None
        return (f"LLMClient(base_url={_safe_url(self.base_url)!r}, model={self.model!r}, "
                f"api_key={key!r})")

    __str__ = __repr__

    @property
    def endpoint(self) -> str:
        return self.base_url + "/chat/completions"

    def close(self) -> None:
        if self._http is not None:
            self._http.close()
            self._http = None

    def __enter__(self) -> "LLMClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- calls -------------------------------------------------------------------------------

    def chat_json(self, messages: list[dict], schema: dict, *, name: str = "answer",
                  purpose: str = "", max_tokens: Optional[int] = None,
                  attempts: Optional[int] = None, timeout: Optional[float] = None) -> Any:
        """Send `messages`, asking for JSON of `schema`; the parsed JSON value, or LLMError."""
        record = CallRecord(purpose=purpose or name)
        started = time.perf_counter()
        try:
            text = self._complete(messages, schema, name, record, max_tokens, attempts, timeout)
            return extract_json(text)
        except LLMError as exc:
            record.ok, record.error = False, str(exc)
            raise
        finally:
            record.seconds = round(time.perf_counter() - started, 4)
            self._report(record)

    def chat_text(self, messages: list[dict], *, purpose: str = "",
                  max_tokens: Optional[int] = None, attempts: Optional[int] = None,
                  timeout: Optional[float] = None) -> str:
        """Send `messages` and return the answer's text (LLMError on failure or empty)."""
        record = CallRecord(purpose=purpose or "text")
        started = time.perf_counter()
        try:
            return self._complete(messages, None, "", record, max_tokens, attempts, timeout)
        except LLMError as exc:
            record.ok, record.error = False, str(exc)
            raise
        finally:
            record.seconds = round(time.perf_counter() - started, 4)
            self._report(record)

    def _report(self, record: CallRecord) -> None:
        self.stats.add(record)
        log.debug("llm call %s ok=%s %.3fs tokens=%d+%d requests=%d mode=%s", record.purpose,
                  record.ok, record.seconds, record.prompt_tokens, record.completion_tokens,
                  record.requests, record.mode)
        if self.on_call is not None:
            try:
                self.on_call(record)
            except Exception:  # metrics must never break the call that was measured
                log.debug("llm on_call hook failed", exc_info=True)

    def _complete(self, messages: list[dict], schema: Optional[dict], name: str,
                  record: CallRecord, max_tokens: Optional[int], attempts: Optional[int],
                  timeout: Optional[float]) -> str:
        if self.problem:
            raise LLMError(self.problem)
        modes = FORMAT_MODES[FORMAT_MODES.index(self.format_mode):] if schema else ("text",)
        last: Optional[_FormatRejected] = None
        for mode in modes:
            body = self._body(messages, schema, name, mode, max_tokens)
            try:
                text = self._with_retries(body, record, attempts, timeout)
            except _FormatRejected as exc:
                last = exc
                continue
            record.mode = mode
            if schema and mode != self.format_mode:
                log.info("LLM server does not take response_format %s; using %s from now on",
                         self.format_mode, mode)
                self.format_mode = mode
            return text
        raise LLMError(f"the LLM at {_safe_url(self.base_url)} refused the request: {last}")

    def _body(self, messages: list[dict], schema: Optional[dict], name: str, mode: str,
              max_tokens: Optional[int]) -> dict:
        body: dict[str, Any] = {"model": self.model, "messages": messages,
                                "temperature": self.temperature,
                                "max_tokens": max_tokens or self.max_tokens, "stream": False}
        if schema and mode == "json_schema":
            body["response_format"] = {"type": "json_schema",
                                       "json_schema": {"name": name, "schema": schema,
                                                       "strict": True}}
        elif schema and mode == "json_object":
            # "schema" is the llama.cpp extension (a grammar); other servers ignore it.
            body["response_format"] = {"type": "json_object", "schema": schema}
        return body

    def _with_retries(self, body: dict, record: CallRecord, attempts: Optional[int],
                      timeout: Optional[float]) -> str:
        retrying = tenacity.Retrying(
            stop=tenacity.stop_after_attempt(max(1, attempts or self.attempts)),
            wait=tenacity.wait_random_exponential(multiplier=self.retry_wait,
                                                  max=8 * self.retry_wait),
            retry=tenacity.retry_if_exception_type(_Transient),
            reraise=True,
        )
        try:
            return retrying(self._send, body, record, timeout)
        except _Transient as exc:
            raise LLMError(f"the LLM at {_safe_url(self.base_url)} failed: {exc}") from None

    def _client(self) -> httpx.Client:
        if self._http is None:
            headers = {"Content-Type": "application/json"}
            if self.__api_key:
                headers["Authorization"] = f"Bearer {self.__api_key}"
            self._http = httpx.Client(headers=headers, transport=self._transport,
                                      timeout=self.timeout, follow_redirects=False)
        return self._http

    def _send(self, body: dict, record: CallRecord, timeout: Optional[float]) -> str:
        """One HTTP request: the answer text, or _Transient / _FormatRejected / LLMError."""
        record.requests += 1
        try:
            resp = self._client().post(self.endpoint, json=body,
                                       timeout=timeout if timeout else httpx.USE_CLIENT_DEFAULT)
        except httpx.TimeoutException:
            raise _Transient(f"no answer within {timeout or self.timeout:g} s") from None
        except httpx.HTTPError as exc:
            raise _Transient(f"{type(exc).__name__}: {self._scrub(str(exc)) or 'no detail'}") \
                from None
        status = resp.status_code
        if status in (401, 403):
            raise LLMError(f"the LLM at {_safe_url(self.base_url)} refused the credentials "
                           f"(HTTP {status}); check EVOCLAW_LLM_API_KEY")
        if "response_format" in body and status >= 400 and (
                status in _FORMAT_REJECTED or _blames_format(resp)):
            # llama-cpp-python answers a response_format it does not know with a 500.
            raise _FormatRejected(f"HTTP {status}: {self._body_excerpt(resp)}")
        if status in _RETRYABLE_STATUS:
            raise _Transient(f"HTTP {status}: {self._body_excerpt(resp)}")
        if status >= 400:
            raise LLMError(f"the LLM at {_safe_url(self.base_url)} answered HTTP {status}: "
                           f"{self._body_excerpt(resp)}")
        try:
            data = resp.json()
        except ValueError:
            raise LLMError("the LLM answered something that is not JSON: "
                           f"{self._body_excerpt(resp)}") from None
        usage = data.get("usage") if isinstance(data, dict) else None
        if isinstance(usage, dict):
            record.prompt_tokens += _int(usage.get("prompt_tokens"))
            record.completion_tokens += _int(usage.get("completion_tokens"))
        text = _message_text(data)
        if not text.strip():
            raise LLMError("the LLM returned an empty answer")
        return text

    def _body_excerpt(self, resp: httpx.Response) -> str:
        try:
            text = resp.text
        except Exception:
            return "(unreadable body)"
        return self._scrub(" ".join(text.split())[:_ERROR_BODY_CHARS]) or "(empty body)"

    def _scrub(self, text: str) -> str:
        """`text` with the API key (should a server echo it) replaced by ***."""
        if self.__api_key:
            text = text.replace(self.__api_key, "***")
        return _safe_url(text)


def _blames_format(resp: httpx.Response) -> bool:
    """Whether an error answer names the response_format (a validation error about it)."""
    try:
        text = resp.text[:2_000].lower()
    except Exception:
        return False
    return "response_format" in text or "json_schema" in text


def _int(value: Any) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


def _message_text(data: Any) -> str:
    """The assistant text of a chat-completions answer ('' when there is none)."""
    try:
        message = data["choices"][0]["message"]
    except (KeyError, IndexError, TypeError):
        try:                                   # some servers answer in the completions shape
            return str(data["choices"][0]["text"] or "")
        except (KeyError, IndexError, TypeError):
            raise LLMError("the LLM answer has no choices[0].message") from None
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, list):             # content parts
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content if isinstance(content, str) else ""


def _safe_url(url: str) -> str:
    """The URL without user:password@ (a credential may hide there too)."""
    return re.sub(r"//[^/@]*@", "//", url)


# -- JSON extraction ------------------------------------------------------------------------

_THINK_BLOCK = re.compile(r"<think(?:ing)?>.*?</think(?:ing)?>", re.DOTALL | re.IGNORECASE)
_THINK_CLOSE = re.compile(r"</think(?:ing)?>", re.IGNORECASE)
_THINK_OPEN = re.compile(r"<think(?:ing)?>", re.IGNORECASE)
_FENCE = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\n?(.*?)```", re.DOTALL)


def extract_json(text: str) -> Any:
    """The JSON value in an LLM answer: fences, <think> blocks, prose and trailing commas
    tolerated, a truncated object closed; LLMError when there is none."""
    if not isinstance(text, str) or not text.strip():
        raise LLMError("the LLM returned an empty answer")
    cleaned = _THINK_BLOCK.sub("", text)
    closes = list(_THINK_CLOSE.finditer(cleaned))
    if closes:                                 # "...reasoning</think> {json}"
        cleaned = cleaned[closes[-1].end():]
    cleaned = _THINK_OPEN.sub("", cleaned).strip()
    candidates = [m.group(1) for m in _FENCE.finditer(cleaned)] + [cleaned]
    try:
        for candidate in candidates:
            value = _parse_candidate(candidate)
            if value is not _NOTHING:
                return value
        for candidate in candidates:
            value = _close_truncated(candidate)
            if value is not _NOTHING:
                return value
    except RecursionError:          # a depth bomb is an unusable answer: callers fall back
        raise LLMError("the LLM answer is JSON nested too deeply to read") from None
    preview = " ".join(cleaned.split())[:80]
    raise LLMError(f"the LLM answer holds no JSON: {preview!r}")


_NOTHING = object()


def _parse_candidate(text: str) -> Any:
    """The first JSON object or array in `text` (whole text first), else _NOTHING."""
    stripped = text.strip()
    for attempt in (stripped, _drop_trailing_commas(stripped)):
        try:
            return json.loads(attempt)
        except ValueError:
            pass
    first = True
    for start, ch in enumerate(text):
        if ch not in "{[":
            continue
        end = _balanced_end(text, start)
        if end is None:
            if first:
                # The outermost value was cut off (max_tokens): close it rather than
                # settle for one of its inner objects.
                closed = _close_truncated(text[start:])
                if closed is not _NOTHING:
                    return closed
            first = False
            continue
        first = False
        span = text[start:end + 1]
        for attempt in (span, _drop_trailing_commas(span)):
            try:
                value = json.loads(attempt)
            except ValueError:
                continue
            if isinstance(value, (dict, list)):
                return value
    return _NOTHING


def _outside_strings(text: str, start: int = 0):
    """(index, char) of every character of `text` from `start` that is not inside a JSON
    string (the quotes themselves are yielded): the one scanner the repairs below share."""
    in_string = escaped = False
    for i in range(start, len(text)):
        ch = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
                yield i, ch
            continue
        if ch == '"':
            in_string = True
        yield i, ch


def _balanced_end(text: str, start: int) -> Optional[int]:
    """Index of the bracket closing the one at `start` (strings respected), or None."""
    stack: list[str] = []
    for i, ch in _outside_strings(text, start):
        if ch in "{[":
            stack.append("}" if ch == "{" else "]")
        elif ch in "}]":
            if not stack or stack.pop() != ch:
                return None
            if not stack:
                return i
    return None


def _drop_trailing_commas(text: str) -> str:
    """`text` without commas that stand right before a closing bracket (outside strings)."""
    dropped = set()
    n = len(text)
    for i, ch in _outside_strings(text):
        if ch == ",":
            j = i + 1
            while j < n and text[j] in " \t\r\n":
                j += 1
            if j < n and text[j] in "}]":
                dropped.add(i)
    return "".join(ch for i, ch in enumerate(text) if i not in dropped) if dropped else text


def _close_truncated(text: str) -> Any:
    """Parse an answer cut off by max_tokens: back up to the last complete element and close
    every open bracket. _NOTHING when that does not give an object or array either."""
    start = next((i for i, ch in enumerate(text) if ch in "{["), None)
    if start is None:
        return _NOTHING
    body = text[start:]
    # Candidate cut points: after each complete value at some depth (a closing bracket or a
    # comma outside strings); try the latest first.
    cuts: list[tuple[int, list[str]]] = []
    stack: list[str] = []
    for i, ch in _outside_strings(body):
        if ch in "{[":
            stack.append("}" if ch == "{" else "]")
        elif ch in "}]":
            if not stack:
                break
            stack.pop()
            cuts.append((i + 1, list(stack)))
        elif ch == ",":
            cuts.append((i, list(stack)))
    # Fewest brackets closed by us first (a half-written inner object is dropped rather
    # than kept partial), the latest cut among equals.
    ranked = sorted(cuts[-200:], key=lambda cut: (len(cut[1]), -cut[0]))
    for end, open_brackets in ranked:
        if not open_brackets:
            continue
        attempt = _drop_trailing_commas(body[:end] + "".join(reversed(open_brackets)))
        try:
            value = json.loads(attempt)
        except ValueError:
            continue
        if isinstance(value, (dict, list)):
            return value
    return _NOTHING
