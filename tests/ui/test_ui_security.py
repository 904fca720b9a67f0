"""The owner's window's guards: the token, the session cookie, CSRF, the headers, the Host,
and hostile memory text rendered as text (issue 28, items 1 and 3)."""

from __future__ import annotations

import re
from urllib.parse import quote

import pytest

from conftest import TOKEN

PAGES = ["/", "/facts", "/facts?q=tea", "/facts/abc", "/facts/abc/forget", "/tree", "/entities",
         "/proposals", "/sync", "/forget", "/forget?q=tea", "/ui.css", "/no-such-page"]
ACTIONS = ["/facts/{id}/edit", "/facts/{id}/pin", "/facts/{id}/unpin", "/facts/{id}/private",
           "/facts/{id}/shared", "/facts/{id}/supersede", "/facts/{id}/forget", "/tree/move",
           "/proposals/p1/accept", "/proposals/p1/reject", "/sync/now", "/sync/verify",
           "/sync/devices/d1/rename", "/sync/devices/d1/revoke", "/forget"]


@pytest.mark.parametrize("path", PAGES)
def test_every_page_is_401_without_the_token_or_its_cookie(anon, path):
    response = anon.get(path)
    assert response.status_code == 401
    assert "evoclaw-memory ui" in response.text          # says how to get in
    assert response.headers["content-security-policy"].startswith("default-src 'none'")


@pytest.mark.parametrize("path", ACTIONS)
def test_every_action_is_401_without_the_cookie_and_changes_nothing(anon, ui_mem, path):
    fact = ui_mem.remember("The owner keeps bees", category="hobbies")
    response = anon.post(path.format(id=fact.id), data={"confirm": "yes", "text": "changed"})
    assert response.status_code == 401
    assert ui_mem.get(fact.id) == fact


def test_a_wrong_token_or_a_forged_cookie_gets_401(anon):
    assert anon.get("/?token=" + TOKEN[:-1] + "x").status_code == 401
    assert anon.get("/?token=").status_code == 401
    anon.cookies.set("evoclaw_ui", "forged-session")
    assert anon.get("/").status_code == 401


def test_the_token_opens_a_strict_httponly_session_and_leaves_the_address(anon):
    response = anon.get(f"/facts?tier=warm&token={TOKEN}")
    assert response.status_code == 303
    assert response.headers["location"] == "/facts?tier=warm"       # the token is gone
    cookie = response.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/" in cookie
    session = re.search(r"evoclaw_ui=([^;]+)", cookie).group(1)
    assert TOKEN not in session
    anon.cookies.set("evoclaw_ui", session)
    assert anon.get("/facts?tier=warm").status_code == 200


def test_each_run_has_its_own_random_token(ui_mem):
    from evoclaw_memory.ui.routes import create_app
    first = create_app(ui_mem).state.ui.sessions.token
    second = create_app(ui_mem).state.ui.sessions.token
    assert first != second and len(first) >= 40


@pytest.mark.parametrize("csrf", [None, "", "wrong-token"])
def test_a_post_without_the_right_csrf_token_is_refused_and_changes_nothing(page, csrf):
    fact = page.mem.remember("The owner keeps bees", category="hobbies")
    fields = {"confirm": "yes"} if csrf is None else {"confirm": "yes", "csrf": csrf}
    response = page.post(f"/facts/{fact.id}/forget", with_csrf=False, **fields)
    assert response.status_code == 403
    assert "CSRF" in response.text
    assert page.mem.get(fact.id).text == "The owner keeps bees"
    assert page.post(f"/facts/{fact.id}/pin", with_csrf=False, csrf_x="1").status_code == 403
    assert not page.mem.get(fact.id).pinned


def test_every_page_has_a_strict_policy_and_no_external_resource(page):
    fact = page.mem.remember("Owner likes https://example.org/recipes", category="food")
    for path in ["/", "/facts", f"/facts/{fact.id}", f"/facts/{fact.id}/forget", "/tree",
                 "/entities", "/proposals", "/sync", "/forget?q=recipes"]:
        response = page.get(path)
        assert response.status_code == 200, path
        csp = response.headers["content-security-policy"]
        assert "default-src 'none'" in csp and "script-src" not in csp, path   # no script at all
        assert "frame-ancestors 'none'" in csp and "form-action 'self'" in csp, path
        assert response.headers["referrer-policy"] == "no-referrer"
        assert response.headers["x-frame-options"] == "DENY"
        assert response.headers["cache-control"] == "no-store"
        assert "<script" not in response.text.lower(), path
        # Resources come only from the page itself: no src= anywhere, one stylesheet of ours.
        assert not re.search(r"\ssrc=", response.text), path
        assert re.findall(r'<link[^>]*href="([^"]*)"', response.text) == ["/ui.css"], path


def test_a_request_naming_another_host_is_refused_on_loopback(page):
    assert page.get("/", headers={"host": "evil.example:8377"}).status_code == 400
    assert page.get("/", headers={"host": "localhost:8377"}).status_code == 200
    assert page.get("/", headers={"host": "[::1]:8377"}).status_code == 200


def test_the_token_in_a_post_is_refused(anon):
    assert anon.post(f"/sync/now?token={TOKEN}").status_code == 401


# -- hostile text --------------------------------------------------------------------------

SCRIPT = "<script>window.__pwned = 1</script>"
IMG = '<img src=x onerror="window.__pwned = 2">'


def _hostile(mem):
    a = mem.remember(f"Owner said {SCRIPT} at dinner", category="hostile")
    b = mem.remember(f"Owner pasted {IMG} in chat", category="hostile",
                     metadata={"urls": ["javascript:alert(document.cookie)",
                                        "https://example.org/ok"]})
    mem.add_entity(f"Mallory {IMG}", "people")
    mem.link(f"Mallory {IMG}", "owner", "<b>boss</b>")
    return a, b


def _assert_inert(html):
    assert SCRIPT not in html and IMG not in html
    assert "<img" not in html                      # no element made of the text
    assert 'href="javascript:' not in html.lower()
    assert "<b>boss</b>" not in html


def test_hostile_fact_text_metadata_and_entity_names_render_as_text(page):
    a, b = _hostile(page.mem)
    paths = ["/", "/facts", "/facts?q=owner+pasted", f"/facts/{a.id}", f"/facts/{b.id}",
             f"/facts/{a.id}/forget", "/tree", "/entities", "/entities?name=" + quote(f"Mallory {IMG}"),
             "/forget?q=owner"]
    for path in paths:
        response = page.get(path)
        assert response.status_code == 200, path
        _assert_inert(response.text)
    fact_page = page.get(f"/facts/{a.id}").text
    assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in fact_page   # shown, as text
    links = page.get(f"/facts/{b.id}").text
    assert "<code>javascript:alert(document.cookie)</code>" in links       # text, not a link
    assert '<a href="https://example.org/ok" rel="noreferrer noopener">' in links
    graph = page.get("/entities").text
    assert "Mallory &lt;img src=x onerror=" in graph and "<svg" in graph


def test_hostile_proposal_text_renders_as_text(page, home):
    from evoclaw_memory import Memory
    with Memory.open("ui-agent", home=home, actor="subagent:helper") as helper:
        helper.remember(f"Owner said {SCRIPT}", category="hostile")
        helper.update_hot("lesson", {"text": f"Never {IMG}"})
    html = page.get("/proposals").text
    _assert_inert(html)
    assert "&lt;script&gt;" in html
