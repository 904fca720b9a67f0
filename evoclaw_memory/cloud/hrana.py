"""SqlExecutor over Hrana-over-HTTP (`POST /v2/pipeline`): Turso Cloud and self-hosted sqld.

Every call is one HTTP request that opens a stream, runs its statements and closes the stream
again, so no server-side state (baton) outlives a call and any call can be retried as a
whole. Wire format: tursodatabase/libsql docs/HTTP_V2_SPEC.md; what sqld really does is noted
in sync/README.md ("What sqld really does").
"""

from __future__ import annotations

import base64
import email.utils
import ipaddress
import threading
import time
from typing import Sequence, Union
from urllib.parse import parse_qsl, urlencode, urlsplit

import httpx
import msgspec
import tenacity

from evoclaw_memory.cloud.sql import ResultSet, Stmt, Value, check_value, statement_failure
from evoclaw_memory.errors import AuthError, ConfigError, RemoteError, Unavailable

RETRY_AFTER_MAX = 10.0  # seconds; a server asking for a longer pause gets Unavailable at once
_SCHEMES = {"libsql": "https", "https": "https", "wss": "https", "http": "http", "ws": "http"}


# ---- wire types: Hrana values, requests and responses -------------------------------------

class _Null(msgspec.Struct, tag="null", tag_field="type"):
    def py(self) -> Value:
        return None


class _Integer(msgspec.Struct, tag="integer", tag_field="type"):
    value: str  # a decimal string: a JSON number could not carry 64 bits exactly

    def py(self) -> Value:
        return int(self.value)


class _Float(msgspec.Struct, tag="float", tag_field="type"):
    value: float

    def py(self) -> Value:
        return float(self.value)


class _Text(msgspec.Struct, tag="text", tag_field="type"):
    value: str

    def py(self) -> Value:
        return self.value


class _Blob(msgspec.Struct, tag="blob", tag_field="type"):
    base64: str  # sqld sends it without padding, which msgspec's bytes decoder rejects

    def py(self) -> Value:
        return base64.b64decode(self.base64 + "=" * (-len(self.base64) % 4))


_WireValue = Union[_Null, _Integer, _Float, _Text, _Blob]


class _Stmt(msgspec.Struct, omit_defaults=True):
    sql: str
    args: list[_WireValue] = []  # omitted when empty: sqld rejects "args": null


class _OkCond(msgspec.Struct, tag="ok", tag_field="type"):
    step: int


class _NotCond(msgspec.Struct, tag="not", tag_field="type"):
    cond: _OkCond


class _Step(msgspec.Struct, omit_defaults=True):
    stmt: _Stmt
    condition: Union[_OkCond, _NotCond, None] = None


class _Batch(msgspec.Struct):
    steps: list[_Step]


class _ExecuteReq(msgspec.Struct, tag="execute", tag_field="type"):
    stmt: _Stmt


class _BatchReq(msgspec.Struct, tag="batch", tag_field="type"):
    batch: _Batch


class _CloseReq(msgspec.Struct, tag="close", tag_field="type"):
    pass


class _PipelineReq(msgspec.Struct):
    baton: Union[str, None]
    requests: list[Union[_ExecuteReq, _BatchReq, _CloseReq]]


class _Col(msgspec.Struct):
    name: Union[str, None] = None


class _StmtResult(msgspec.Struct):
    cols: list[_Col]
    rows: list[list[_WireValue]]
    affected_row_count: int = 0
    last_insert_rowid: Union[str, None] = None


class _Error(msgspec.Struct):
    message: str
    code: Union[str, None] = None


class _ExecuteResp(msgspec.Struct, tag="execute", tag_field="type"):
    result: _StmtResult


class _BatchResult(msgspec.Struct):
    step_results: list[Union[_StmtResult, None]]
    step_errors: list[Union[_Error, None]]


class _BatchResp(msgspec.Struct, tag="batch", tag_field="type"):
    result: _BatchResult


class _CloseResp(msgspec.Struct, tag="close", tag_field="type"):
    pass


class _Ok(msgspec.Struct, tag="ok", tag_field="type"):
    response: Union[_ExecuteResp, _BatchResp, _CloseResp]


class _Failed(msgspec.Struct, tag="error", tag_field="type"):
    error: _Error


class _PipelineResp(msgspec.Struct):
    results: list[Union[_Ok, _Failed]]
    baton: Union[str, None] = None


_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder(_PipelineResp).decode


def _wire_value(value: object) -> _WireValue:
    """Encode one Python argument as a Hrana value."""
    v = check_value(value)
    if v is None:
        return _Null()
    if isinstance(v, int):
        return _Integer(str(v))
    if isinstance(v, float):
        return _Float(v)
    if isinstance(v, str):
        return _Text(v)
    return _Blob(base64.b64encode(v).decode("ascii"))


def _wire_stmt(sql: str, args: Sequence[Value]) -> _Stmt:
    """Encode one statement with its positional arguments."""
    return _Stmt(sql, [_wire_value(a) for a in args])


def _result_set(r: _StmtResult) -> ResultSet:
    """Turn a Hrana statement result into a ResultSet of plain Python values."""
    return ResultSet(
        columns=[c.name or "" for c in r.cols],
        rows=[tuple(v.py() for v in row) for row in r.rows],
        affected_row_count=r.affected_row_count,
        last_insert_rowid=int(r.last_insert_rowid) if r.last_insert_rowid is not None else None,
    )


def _remote_error(message: str, code: str | None = None) -> RemoteError:
    """A RemoteError with the server's error code as `.server_code` (e.g. SQLITE_CONSTRAINT)."""
    err = RemoteError(message)
    err.server_code = code
    return err


# ---- URL handling -------------------------------------------------------------------------

class _Endpoint(msgspec.Struct, frozen=True):
    base_url: str  # token-free, what error messages and repr show
    pipeline_url: str  # where requests actually go
    host: str  # host[:port] for messages
    host_header: Union[str, None]  # set when the URL's name is not what we connect to
    url_token: Union[str, None]  # a token given as ?authToken=... in the URL
    nearby: bool = False  # loopback or private network: bandwidth is cheap, CPU is not


def _parse_url(url: str) -> _Endpoint:
    """Normalise libsql://, https://, http:// (and ws[s]://) URLs; strip credentials."""
    parts = urlsplit(url.strip())
    scheme = _SCHEMES.get(parts.scheme.lower())
    try:
        parts.port  # noqa: B018  (raises ValueError for a port like ":abc")
    except ValueError:
        scheme = None
    if scheme is None or not parts.hostname:
        raise ConfigError(f"unsupported cloud URL {parts.scheme}://{parts.hostname or ''}: "
                          "use libsql://, https:// or http://")
    query = dict(parse_qsl(parts.query))
    if query.pop("tls", "1") == "0":  # libsql clients' way to say "plain HTTP"
        scheme = "http"
    token = query.pop("authToken", None)
    host = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
    netloc = f"{host}:{parts.port}" if parts.port else host
    path = parts.path.rstrip("/")
    base_url = f"{scheme}://{netloc}{path}" + (f"?{urlencode(query)}" if query else "")
    host_header = None
    connect_netloc = netloc
    if parts.hostname.endswith(".localhost"):
        # RFC 6761: *.localhost is loopback. glibc does not resolve it, so connect to 127.0.0.1
        # and keep the name in Host, which is how sqld picks a namespace (database).
        host_header = netloc
        connect_netloc = f"127.0.0.1:{parts.port}" if parts.port else "127.0.0.1"
    pipeline_url = f"{scheme}://{connect_netloc}{path}/v2/pipeline"
    return _Endpoint(base_url, pipeline_url, netloc, host_header, token,
                     _is_nearby(parts.hostname))


def _is_nearby(hostname: str) -> bool:
    """True for loopback, private and link-local addresses and local names (a sqld on the
    same Pi or on the home NAS), where gzip would cost more CPU than the bytes it saves."""
    name = hostname.lower().rstrip(".")
    if name == "localhost" or name.endswith((".localhost", ".local", ".lan", ".home.arpa")):
        return True
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False
    return address.is_loopback or address.is_private or address.is_link_local


def _plain_http_answer(exc: BaseException) -> bool:
    """True when a TLS handshake failed because the server answered in plain HTTP."""
    text = str(exc).upper()
    return "WRONG_VERSION_NUMBER" in text or "HTTP_REQUEST" in text or \
        "PACKET LENGTH TOO LONG" in text


def _retry_after(header: str | None) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or HTTP date), if present."""
    if not header:
        return None
    try:
        return max(0.0, float(header))
    except ValueError:
        pass
    try:
        return max(0.0, email.utils.parsedate_to_datetime(header).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


class _Transient(Exception):
    """A failure worth retrying: network trouble, timeout, 429 or 5xx."""

    def __init__(self, reason: str, retry_after: float | None = None):
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after


# ---- the client ---------------------------------------------------------------------------

class HranaClient:
    """SqlExecutor over Hrana HTTP; one reused connection, retries, request/byte counters.

    Network errors, timeouts, 429 and 5xx are retried `retries` times (so retries + 1
    attempts) with full-jitter exponential backoff (`backoff` * 2**n, capped at
    `max_backoff`), or after the server's Retry-After when it is at most RETRY_AFTER_MAX;
    then Unavailable. 400/401/403/404 are never retried: RemoteError / AuthError at once.
    """

    def __init__(self, url: str, auth_token: str | None = None, *, timeout: float = 10.0,
                 retries: int = 4, backoff: float = 0.25, max_backoff: float = 8.0,
                 transport: httpx.BaseTransport | None = None, compress: bool | None = None):
        self._endpoint = _parse_url(url)
        token = auth_token or self._endpoint.url_token
        self._secret = token  # kept only to scrub it from any server text we quote
        headers = {"Content-Type": "application/json"}
        # Responses are gzipped for a cloud far away (a restore moves ~3x fewer bytes); not
        # for a server nearby: sqld streams gzip in ~64-byte chunks, and parsing those costs
        # more than the whole page takes to cross a LAN (measured: 4.5 s vs 2.2 s for 100k
        # rows on loopback). `compress` forces either way.
        gzip = not self._endpoint.nearby if compress is None else compress
        headers["Accept-Encoding"] = "gzip" if gzip else "identity"
        if token:
            headers["Authorization"] = f"Bearer {token}"
        if self._endpoint.host_header:
            headers["Host"] = self._endpoint.host_header
        # httpx masks Authorization in its reprs; follow_redirects stays off so the token is
        # never replayed to another host.
        # A plain-HTTP URL needs no SSL context: httpx would build one anyway and load the CA
        # bundle (~20 ms, most of a post-conversation sync). https:// keeps full verification.
        verify = not self._endpoint.pipeline_url.startswith("http://")
        self._http = httpx.Client(headers=headers, timeout=httpx.Timeout(timeout),
                                  transport=transport, follow_redirects=False, verify=verify)
        self.retries = retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self._lock = threading.Lock()
        self.pipeline_count = 0  # HTTP requests sent, retries included
        self.bytes_sent = 0  # request body bytes
        self.bytes_received = 0  # response body bytes as they came over the wire

    @property
    def base_url(self) -> str:
        """The server URL, normalised and without any credential."""
        return self._endpoint.base_url

    def execute(self, sql: str, args: Sequence[Value] = ()) -> ResultSet:
        """Run one statement in autocommit mode (one request; retried on transient failure)."""
        first, _ = self._pipeline([_ExecuteReq(_wire_stmt(sql, args)), _CloseReq()])
        if isinstance(first, _Failed):
            raise _remote_error(f"{first.error.code or 'ERROR'}: {first.error.message}",
                                first.error.code)
        if not isinstance(first.response, _ExecuteResp):
            raise RemoteError(f"unexpected response from {self._endpoint.host} to execute")
        return _result_set(first.response.result)

    def transaction(self, stmts: list[Stmt]) -> list[ResultSet]:
        """Run statements all-or-nothing in ONE HTTP request (a conditional Hrana batch).

        A request that times out may still have been committed, and is then sent again: callers
        must make their statements idempotent (INSERT OR IGNORE, upserts, version checks).
        """
        if not stmts:
            return []
        n = len(stmts)
        steps = [_Step(_Stmt("BEGIN IMMEDIATE"))]
        # Each statement runs only if the one before it succeeded; COMMIT only if all did;
        # ROLLBACK whenever COMMIT did not succeed (skipped or failed).
        steps += [_Step(_wire_stmt(s.sql, s.args), _OkCond(i)) for i, s in enumerate(stmts)]
        steps.append(_Step(_Stmt("COMMIT"), _OkCond(n)))
        steps.append(_Step(_Stmt("ROLLBACK"), _NotCond(_OkCond(n + 1))))
        first, _ = self._pipeline([_BatchReq(_Batch(steps)), _CloseReq()])
        if isinstance(first, _Failed):
            # sqld parses every statement of a batch before running any, so a syntax error
            # fails the whole batch here, with nothing executed.
            raise _remote_error(f"transaction rejected, nothing was run: {_one_line(first.error)}",
                                first.error.code)
        if not isinstance(first.response, _BatchResp):
            raise RemoteError(f"unexpected response from {self._endpoint.host} to a batch")
        results, errors = first.response.result.step_results, first.response.result.step_errors
        if len(results) != n + 3 or len(errors) != n + 3:
            raise RemoteError(f"unexpected batch result size from {self._endpoint.host}")
        if errors[0] is not None:
            raise _remote_error(f"transaction could not begin: {errors[0].message}",
                                errors[0].code)
        for i in range(n):
            err = errors[i + 1]
            if err is not None:
                raise _remote_error(statement_failure(i, stmts[i].sql, _one_line(err)), err.code)
        commit_error = errors[n + 1]
        if commit_error is not None or results[n + 1] is None:
            msg = commit_error.message if commit_error else "COMMIT was skipped"
            raise _remote_error(f"transaction rolled back: commit failed: {msg}",
                                commit_error.code if commit_error else None)
        ran = [r for r in results[1:n + 1] if r is not None]
        if len(ran) != n:       # COMMIT ran only after every statement did: a broken reply
            raise RemoteError(f"unexpected batch result from {self._endpoint.host}: "
                              "a statement has no result")
        return [_result_set(r) for r in ran]

    def _pipeline(self, requests: list) -> list[Union[_Ok, _Failed]]:
        """Send one pipeline (with retries) and return its results, one per request."""
        body = _encode(_PipelineReq(baton=None, requests=requests))
        retrying = tenacity.Retrying(
            stop=tenacity.stop_after_attempt(self.retries + 1),
            wait=self._wait,
            retry=tenacity.retry_if_exception_type(_Transient),
            reraise=True,
        )
        try:
            resp = retrying(self._send, body)
        except _Transient as e:
            raise Unavailable(f"cloud unreachable at {self._endpoint.host}: {e.reason} "
                              f"(after {self.retries + 1} attempts)") from None
        if len(resp.results) != len(requests):
            raise RemoteError(f"unexpected response from {self._endpoint.host}: "
                              f"{len(resp.results)} results for {len(requests)} requests")
        return resp.results

    def _wait(self, state: tenacity.RetryCallState) -> float:
        """Backoff before the next attempt: the server's Retry-After, else full-jitter exp."""
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, _Transient) and exc.retry_after is not None:
            return exc.retry_after
        return tenacity.wait_random_exponential(multiplier=self.backoff,
                                                max=self.max_backoff)(state)

    def _send(self, body: bytes) -> _PipelineResp:
        """One HTTP attempt: classify the outcome into a result, a _Transient, or an error."""
        with self._lock:
            self.pipeline_count += 1
            self.bytes_sent += len(body)
        try:
            resp = self._http.post(self._endpoint.pipeline_url, content=body)
        except httpx.ConnectError as e:
            if _plain_http_answer(e) and self._endpoint.pipeline_url.startswith("https://"):
                # A TLS hello answered in plain HTTP: a self-hosted sqld behind libsql://.
                # Retrying cannot help, and "WRONG_VERSION_NUMBER" tells a user nothing.
                raise ConfigError(
                    f"the cloud at {self._endpoint.host} speaks plain HTTP, not TLS: use "
                    f"http://{self._endpoint.host} or add ?tls=0 to the URL") from None
            raise _Transient(f"{type(e).__name__}: {self._scrub(str(e)) or 'no detail'}") from None
        except (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError,
                httpx.ProxyError) as e:
            raise _Transient(f"{type(e).__name__}: {self._scrub(str(e)) or 'no detail'}") from None
        except httpx.HTTPError as e:  # e.g. a local protocol error: retrying would not help
            raise RemoteError(f"cannot talk to {self._endpoint.host}: {type(e).__name__}: "
                              f"{self._scrub(str(e))}") from None
        with self._lock:
            self.bytes_received += resp.num_bytes_downloaded
        status = resp.status_code
        if status == 200:
            try:
                return _decode(resp.content)
            except msgspec.MsgspecError as e:
                raise RemoteError(f"unexpected response from {self._endpoint.host}: {e}") from None
        if status in (401, 403):
            raise self._auth_error(status, self._server_text(resp))
        if status == 429 or status >= 500:
            wait = _retry_after(resp.headers.get("retry-after"))
            if wait is not None and wait > RETRY_AFTER_MAX:
                raise Unavailable(f"cloud at {self._endpoint.host} is busy (HTTP {status}) and "
                                  f"asks to retry after {wait:.0f} s")
            raise _Transient(f"HTTP {status} {self._server_text(resp)}".rstrip(), wait)
        if status == 404:
            raise RemoteError(f"no database at {self.base_url} (HTTP 404): "
                              f"{self._server_text(resp)}")
        raise RemoteError(f"cloud at {self._endpoint.host} rejected the request "
                          f"(HTTP {status}): {self._server_text(resp)}")

    def _auth_error(self, status: int, text: str) -> AuthError:
        """Say which credential problem it is: missing, invalid, expired or read-only."""
        low = text.lower()
        if not self._secret:
            reason = "missing"
        elif "expired" in low:
            reason = "expired"
        elif status == 403:
            reason = "read-only" if "write" in low or "read" in low else "not permitted"
        else:
            reason = "invalid"
        hint = {
            "missing": "auth token missing: this server requires one",
            "expired": "auth token expired: create a new one",
            "read-only": "auth token is read-only: writing needs a read-write token",
            "not permitted": "auth token is not permitted for this database",
            "invalid": "auth token invalid (wrong database, revoked or malformed)",
        }[reason]
        err = AuthError(f"cloud at {self._endpoint.host} refused access (HTTP {status}): "
                        f"{hint} [server: {text}]")
        err.reason = reason  # type: ignore[attr-defined]
        return err

    def _server_text(self, resp: httpx.Response) -> str:
        """The server's error text on one short line ({"error": ...} or plain text)."""
        try:
            data = msgspec.json.decode(resp.content)
            text = str(data.get("error", data)) if isinstance(data, dict) else str(data)
        except (msgspec.MsgspecError, UnicodeDecodeError):
            text = resp.content.decode("utf-8", "replace")
        text = self._scrub(" ".join(text.split()))
        return text[:200] + ("..." if len(text) > 200 else "")

    def _scrub(self, text: str) -> str:
        """Remove our token from text we did not write ourselves, should a server echo it."""
        return text.replace(self._secret, "***") if self._secret else text

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._http.close()

    def __enter__(self) -> "HranaClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"HranaClient({self.base_url!r})"


def _one_line(err: _Error) -> str:
    """`CODE: message` of a statement error."""
    return f"{err.code}: {err.message}" if err.code else err.message


__all__ = ["HranaClient", "RETRY_AFTER_MAX"]
