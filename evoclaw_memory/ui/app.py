"""The guard every request passes, the View a route sees, the templates (the routes are
put together in ui.routes).

Every route is a plain function `fn(view) -> Response` wrapped by `guarded`: the wrapper
checks the Host, the access token or session cookie (401 without), the CSRF token of a POST
(403 without), then runs the function in a worker thread while holding the page's one lock
(the memory is one SQLite connection; the owner is one person: requests queue, they never
interleave), and turns a library error into a page with one line and the right status.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from typing import Any, Callable, Optional
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

from jinja2 import Environment, PackageLoader, StrictUndefined
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response

from evoclaw_memory.errors import EvoclawError, NotFoundError, RemoteError, ValidationError
from evoclaw_memory.ui import security

BODY_MAX = 256 * 1024        # a form is a fact's text at most (2,000 chars) and some fields
UNAUTHORIZED = ("401 Unauthorized: open the URL that `evoclaw-memory ui` printed (it carries "
                "this run's access token)\n")


class UIState:
    """What the routes share: the memory, its lock, the sessions, a few cached reads."""

    def __init__(self, memory: Any, sessions: security.Sessions, loopback_only: bool):
        self.memory = memory
        self.lock = threading.Lock()
        self.sessions = sessions
        self.loopback_only = loopback_only
        self.templates = templates()
        self.devices: Optional[tuple[float, Any]] = None    # (fetched at, list or error text)
        self.last_report: str = ""                          # of the last sync / verify


class View:
    """One request as a route function sees it: the memory, the query and form fields, and
    how to answer (a page, or a redirect with a done-code the next page shows)."""

    def __init__(self, request: Request, state: UIState, form: dict[str, str], csrf: str):
        self.request = request
        self.state = state
        self.mem = state.memory
        self.form = form
        self.csrf = csrf
        self.params = request.query_params
        self.path = request.path_params

    def arg(self, name: str, default: str = "") -> str:
        """A query parameter (GET) or form field (POST), stripped."""
        value = self.form.get(name) if self.request.method == "POST" else self.params.get(name)
        return (value if value is not None else default).strip()

    def render(self, template: str, code: int = 200, **values: Any) -> Response:
        page = self.state.templates.get_template(template).render(
            csrf=self.csrf, nav=self.request.url.path, done=self.params.get("done", ""),
            **values)
        return HTMLResponse(page, status_code=code)

    def redirect(self, path: str, **query: Any) -> Response:
        where = path + ("?" + urlencode(query) if query else "")
        return RedirectResponse(where, status_code=303)


def guarded(fn: Callable[[View], Response]) -> Callable[[Request], Any]:
    async def endpoint(request: Request) -> Response:
        response = await _guard(request, fn)
        response.headers.update(security.HEADERS)
        return response
    endpoint.__name__ = fn.__name__
    return endpoint


async def _guard(request: Request, fn: Callable[[View], Response]) -> Response:
    state: UIState = request.app.state.ui
    if not security.host_allowed(request.headers.get("host"), state.loopback_only):
        return PlainTextResponse("400 Bad Request: unknown host name\n", status_code=400)
    token = request.query_params.get("token")
    if token is not None:
        session = state.sessions.login(token)
        if session is None or request.method != "GET":
            return PlainTextResponse(UNAUTHORIZED, status_code=401)
        # The token leaves the address bar (history, screenshots) at once: the cookie holds on.
        rest = urlencode([(k, v) for k, v in request.query_params.multi_items() if k != "token"])
        response = RedirectResponse(request.url.path + ("?" + rest if rest else ""), 303)
        response.headers["set-cookie"] = security.cookie_header(session)
        return response
    session = request.cookies.get(security.COOKIE)
    csrf = state.sessions.csrf(session)
    if csrf is None:
        return PlainTextResponse(UNAUTHORIZED, status_code=401)
    form: dict[str, str] = {}
    if request.method == "POST":
        body = await request.body()
        if len(body) > BODY_MAX:
            return PlainTextResponse("413: the form is too large\n", status_code=413)
        form = dict(parse_qsl(body.decode("utf-8", errors="replace"), keep_blank_values=True))
        if not state.sessions.check_csrf(session, form.get("csrf")):
            return PlainTextResponse("403 Forbidden: this form's CSRF token is missing or stale; "
                                     "reload the page and try again\n", status_code=403)
    view = View(request, state, form, csrf)
    return await run_in_threadpool(_locked, state, fn, view)


def _locked(state: UIState, fn: Callable[[View], Response], view: View) -> Response:
    with state.lock:
        try:
            return fn(view)
        except EvoclawError as exc:
            status = 404 if isinstance(exc, NotFoundError) else \
                502 if isinstance(exc, RemoteError) else \
                400 if isinstance(exc, ValidationError) else 500
            return view.render("error.html", code=status, message=str(exc) or type(exc).__name__)


async def not_found(request: Request, exc: Exception) -> Response:
    """No such page (or method): 401 to a stranger, 404 to the owner."""
    state: UIState = request.app.state.ui
    known = state.sessions.csrf(request.cookies.get(security.COOKIE)) is not None
    response = PlainTextResponse("404 Not Found\n", status_code=404) if known else \
        PlainTextResponse(UNAUTHORIZED, status_code=401)
    response.headers.update(security.HEADERS)
    return response


# -- templates -------------------------------------------------------------------------------

def templates() -> Environment:
    """Jinja2 with autoescape on for EVERY template (not only *.html: a fact is hostile text)."""
    env = Environment(loader=PackageLoader("evoclaw_memory.ui", "templates"), autoescape=True,
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters.update(when=when, href=safe_href, q=lambda s: quote(str(s), safe=""),
                       kb=lambda n: f"{n / 1024:.1f} KB", ago=ago)
    return env


def when(ts: Optional[float]) -> str:
    if not ts:
        return "-"
    return dt.datetime.fromtimestamp(ts, dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def ago(ts: Optional[float]) -> str:
    if not ts:
        return "never"
    seconds = max(0.0, time.time() - ts)
    for size, unit in ((86_400, "day"), (3_600, "hour"), (60, "minute")):
        if seconds >= size:
            n = int(seconds // size)
            return f"{n} {unit}{'s' if n != 1 else ''} ago"
    return "just now"


def safe_href(url: Any) -> Optional[str]:
    """The URL when it may be a link (http or https), else None: the template shows it as
    text. A `javascript:` or `data:` URL in a fact's metadata is never clickable."""
    try:
        scheme = urlsplit(str(url)).scheme.lower()
    except ValueError:
        return None
    return str(url) if scheme in ("http", "https") else None
