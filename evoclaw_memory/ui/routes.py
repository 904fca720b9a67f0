"""The page as one Starlette application: every route of `pages` (what is shown) and
`actions` (what changes), each behind `app.guarded`. Its own module because pages and
actions build on `app` (View, the guard): `app` importing them back would be a cycle."""

from __future__ import annotations

from typing import Any, Optional

from starlette.applications import Starlette
from starlette.routing import Route

from evoclaw_memory.ui import actions, pages, security
from evoclaw_memory.ui.app import UIState, guarded, not_found


def create_app(memory: Any, *, token: Optional[str] = None, loopback_only: bool = True) -> Starlette:
    """The page over `memory` (a Memory open for the page's life). `token`: this run's access
    token (default: a fresh random one, read back as app.state.ui.sessions.token)."""
    routes = [Route(path, guarded(fn), methods=[method]) for method, path, fn in
              pages.ROUTES + actions.ROUTES]
    app = Starlette(routes=routes, exception_handlers={404: not_found, 405: not_found})
    app.state.ui = UIState(memory, security.Sessions(token), loopback_only)
    return app
