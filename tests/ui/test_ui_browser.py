"""The owner's window in a real browser: Debian's chromium, headless, driven by Playwright
(issue 28, Tests). It opens the printed URL, searches, opens a fact, forgets it through the
confirmation, and finds it gone from the list and from `retrieve`; a fact holding a script
runs nothing. One screenshot per page goes to tests/ui/artifacts/ (ignored by git).

scripts/test installs chromium on a fresh machine (apt-get); where it is missing this test
FAILS saying so: a skipped browser test would let a broken page pass."""

from __future__ import annotations

from pathlib import Path

import pytest

from evoclaw_memory import Memory

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
ARTIFACTS = Path(__file__).parent / "artifacts"
TARGET = "Owner's old locker code is 7391"
SCRIPT_FACT = "Owner typed <script>window.__pwned = 1</script> into the chat"
IMG_FACT = 'Owner pasted <img src=x onerror="window.__pwned = 2"> from a forum'


def _browser_parts():
    if not CHROMIUM.exists():
        log = Path(__file__).parents[2] / ".venv" / "chromium-install.log"
        why = f" (scripts/test tried and failed: see {log})" if log.exists() else ""
        pytest.fail(f"{CHROMIUM} is missing: the browser test needs Debian's chromium{why}; "
                    "run ./scripts/test (it installs it) or `apt-get install -y "
                    "--no-install-recommends chromium` as root", pytrace=False)
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("the Playwright package is missing: pip install -e '.[test]' (the test "
                    "extra holds it; its browsers are never downloaded, chromium is Debian's)",
                    pytrace=False)
    return sync_playwright


@pytest.fixture
def served(home):
    from evoclaw_memory.config import load_config
    from evoclaw_memory.ui.server import start_in_thread
    with Memory.open("browser-agent", home=home) as mem:
        mem.update_hot("identity", {"owner_name": "Sam", "agent_name": "Evo"})
        target = mem.remember(TARGET, category="owner/gym", importance=0.8)
        mem.remember("Owner swims on Tuesdays", category="owner/gym")
        hostile = mem.remember(SCRIPT_FACT, category="hostile")
        mem.remember(IMG_FACT, category="hostile",
                     metadata={"urls": ["javascript:window.__pwned=3"]})
        mem.add_entity("Ana", "people")
        mem.link("Ana", "owner", "sister")
    with Memory.open("browser-agent", home=home, actor="subagent:scout") as scout:
        scout.remember("Owner's sister Ana lives in Porto", category="family")
    running = start_in_thread(load_config(home=home, agent_id="browser-agent"), port=0)
    yield running, target, hostile
    running.stop()


def test_search_open_forget_through_the_confirmation_and_no_script_runs(served, home):
    sync_playwright = _browser_parts()
    running, target, hostile = served
    base = f"http://127.0.0.1:{running.port}"
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=ARGS)
        try:
            page = browser.new_page()
            page.goto(running.url)
            assert page.url == base + "/"                       # the token left the address
            assert "Overview" in page.title()
            page.screenshot(path=str(ARTIFACTS / "overview.png"), full_page=True)
            for name, path in (("tree", "/tree"), ("entities", "/entities"),
                               ("proposals", "/proposals"), ("sync", "/sync"),
                               ("forget-by-description", "/forget?q=locker+code")):
                page.goto(base + path)
                assert page.locator("h1").count() == 1, path
                page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)

            # Search as the agent would be asked, open the fact, forget it.
            page.goto(base + "/facts")
            page.screenshot(path=str(ARTIFACTS / "facts.png"), full_page=True)
            page.fill("input[name=q]", "what is the locker code")
            page.click("button:has-text('Show')")
            page.screenshot(path=str(ARTIFACTS / "facts-search.png"), full_page=True)
            page.locator("a.fact-link", has_text=TARGET).click()
            assert page.url == f"{base}/facts/{target.id}"
            page.screenshot(path=str(ARTIFACTS / "fact.png"), full_page=True)
            page.click("a:has-text('Forget…')")
            assert TARGET in page.inner_text("blockquote")          # the confirmation names it
            page.screenshot(path=str(ARTIFACTS / "forget-confirmation.png"), full_page=True)
            page.click("button:has-text('Forget “')")
            assert page.url == base + "/facts?done=forgotten"
            assert "Forgotten here" in page.inner_text("main")
            assert TARGET not in page.content()
            page.fill("input[name=q]", "what is the locker code")
            page.click("button:has-text('Show')")
            assert TARGET not in page.content()

            # Hostile text: shown as text, nothing it holds runs.
            page.goto(f"{base}/facts/{hostile.id}")
            assert "<script>window.__pwned = 1</script>" in page.inner_text("blockquote")
            page.goto(base + "/facts?category=hostile")
            page.screenshot(path=str(ARTIFACTS / "facts-hostile.png"), full_page=True)
            assert page.evaluate("typeof window.__pwned") == "undefined"
            page.goto(base + "/facts?q=pasted+forum")
            assert page.evaluate("typeof window.__pwned") == "undefined"
        finally:
            browser.close()
    with Memory.open("browser-agent", home=home) as mem:
        assert mem.store.get_fact(target.id) is None
        assert all(r.fact.id != target.id for r in mem.retrieve("what is the locker code"))
