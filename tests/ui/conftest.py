"""Fixtures of the owner's window tests: a real Memory on a real SQLite file (opened as the
page opens it, actor `owner:ui`), the real Starlette app over it, and a client that has
logged in with the run's token (Starlette's TestClient: the app's own ASGI code, no socket)."""

from __future__ import annotations

import re

import pytest

from evoclaw_memory import Memory
from evoclaw_memory.ui import ACTOR

TOKEN = "test-token-0123456789"
BASE = "http://127.0.0.1:8377"


class Page:
    """A logged-in browser stand-in: get/post (the form's CSRF token added) and audit rows."""

    def __init__(self, app, memory):
        from starlette.testclient import TestClient
        self.app, self.mem = app, memory
        self.client = TestClient(app, base_url=BASE, follow_redirects=False)
        login = self.client.get(f"/?token={TOKEN}")
        assert login.status_code == 303
        self.session = re.search(r"evoclaw_ui=([^;]+)", login.headers["set-cookie"]).group(1)
        self.client.cookies.set("evoclaw_ui", self.session)
        self.csrf = app.state.ui.sessions.csrf(self.session)

    def get(self, path, **kwargs):
        return self.client.get(path, **kwargs)

    def post(self, path, with_csrf=True, **fields):
        data = dict(fields, csrf=self.csrf) if with_csrf else fields
        return self.client.post(path, data=data)

    def audit(self, op, target=None):
        """The detail of the newest audit row of `op` (on `target`), or None."""
        for _ts, row_op, row_target, detail in self.mem.store.audit_log(200):
            if row_op == op and (target is None or row_target == target):
                return detail
        return None


@pytest.fixture
def ui_mem(home):
    with Memory.open("ui-agent", home=home, actor=ACTOR) as memory:
        yield memory


@pytest.fixture
def app(ui_mem):
    from evoclaw_memory.ui.routes import create_app
    return create_app(ui_mem, token=TOKEN)


@pytest.fixture
def page(app, ui_mem):
    return Page(app, ui_mem)


@pytest.fixture
def anon(app):
    """A client that never presented the token."""
    from starlette.testclient import TestClient
    return TestClient(app, base_url=BASE, follow_redirects=False)
