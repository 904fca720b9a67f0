"""The owner's window (issue 28): a local web page to see and steer what the agent remembers.

`evoclaw-memory ui` serves it on 127.0.0.1; `serve --ui` hosts it in the service's process
(server.start_in_thread). Every page is rendered on the server (no Node build, no script at
all: the Content-Security-Policy forbids scripts), every action calls the same `Memory`
method the CLI calls, audited with the actor `owner:ui`.

Dependencies (the optional extra `[ui]`), chosen for a Raspberry Pi as much as a desktop:
- Starlette: the routing, requests and responses; a small, pure-Python, actively released
  ASGI toolkit (its own dependency is anyio), already what the `[mcp]` extra brings in;
- uvicorn (plain, without `[standard]`: no compiled uvloop/httptools to build on ARM): a
  well-kept pure-Python HTTP/1.1 server on h11, started on a socket we bind ourselves;
- Jinja2 with autoescape on for every template: the memory holds text from conversations,
  hostile input, so nothing reaches the page unescaped.
The standard library's http.server was the other candidate; its documentation says it is
not for exposure beyond development, and the page may be bound to a LAN address, so the
parsing is left to a maintained server. Forms are url-encoded and parsed with urllib (no
python-multipart needed).

Modules, one job each: security (tokens, sessions, CSRF, headers), queries (the read-only
SQL of the pages), plots and graph (the inline SVG drawn on the server), pages (GET
routes), actions (POST routes), app (the Starlette application and its guards), server
(the listening socket, the printed URL, the thread for `serve --ui`).
"""

from __future__ import annotations

ACTOR = "owner:ui"          # every change made through the page is audited as this actor
EXTRA_MISSING = ("the owner's window needs the optional extra [ui]: pip install "
                 "'/path/to/evoclaw-memory[ui]' (the checkout) or "
                 "'evoclaw-memory[ui] @ git+https://...' (it is not on PyPI)")


def require_extra() -> None:
    """ConfigError (exit 9, one line) unless Starlette, uvicorn and Jinja2 are installed."""
    from evoclaw_memory.errors import ConfigError
    try:
        import jinja2  # noqa: F401
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        raise ConfigError(EXTRA_MISSING) from None
