"""The pages of the owner's window and their contract routes (issue 28, items 2 and 4)."""

from __future__ import annotations

import datetime as dt
import re

from evoclaw_memory.ui import queries


def _texts(html):
    return re.findall(r'class="fact-link" href="[^"]*">([^<]*)</a>', html)


def test_overview_shows_sizes_counts_sync_and_the_two_plots(page):
    page.mem.update_hot("identity", {"owner_name": "Sam"})
    page.mem.remember("Owner drinks tea", category="owner/preferences")
    html = page.get("/").text
    size = len(page.mem.render_memory_md().encode())
    assert f"{size} of 5120 bytes" in html
    assert "of 50.0 KB" in html                                     # warm against its cap
    assert re.search(r'href="/facts\?tier=warm">1</a>', html)
    assert "outbox:" in html and "set aside: 0" in html
    assert html.count('<svg class="chart"') == 2
    assert "facts stored per week" in html and "archived to cold per week" in html
    assert "Sam" in html                                            # MEMORY.md itself


def test_weekly_series_count_what_was_stored_and_archived(ui_mem):
    now = dt.datetime(2025, 6, 11, 12, tzinfo=dt.timezone.utc).timestamp()   # a Wednesday
    for days in (0, 1, 8):
        ui_mem.remember(f"fact from {days} days back", created_at=now - days * 86_400)
    with ui_mem.store.transaction():
        ui_mem.store.audit("evict.consolidate", "x", "archived general", now - 86_400)
        ui_mem.store.audit("evict.cap", "y", "archived general", now)
        ui_mem.store.audit("retrieve", "z", "reinforced", now)
    stored = queries.stored_per_week(ui_mem.store.conn, now, weeks=3)
    assert [n for _, n in stored] == [0, 1, 2]
    assert stored[-1][0] == "09 Jun"                                # weeks start on Monday
    assert [n for _, n in queries.archived_per_week(ui_mem.store.conn, now, weeks=3)] == [0, 0, 2]


def test_facts_are_listed_newest_first_and_paged(page):
    for i in range(queries.PER_PAGE + 2):
        page.mem.remember(f"numbered fact {i:03d}", category="numbers")
    first = _texts(page.get("/facts").text)
    assert len(first) == queries.PER_PAGE and first[0] == f"numbered fact {queries.PER_PAGE + 1:03d}"
    html = page.get("/facts?category=numbers&page=2").text
    assert _texts(html) == ["numbered fact 001", "numbered fact 000"]
    assert 'href="/facts?category=numbers&amp;page=1"' in html and 'rel="next"' not in html
    assert page.get("/facts?page=0").status_code == 400
    assert page.get("/facts?page=abc").status_code == 400


def test_facts_filters(page):
    mem = page.mem
    old = mem.remember("Owner visited Rome", category="travel",
                       created_at=dt.datetime(2024, 3, 1, tzinfo=dt.timezone.utc))
    pinned = mem.remember("Owner's blood type is O+", category="owner/health", pinned=True)
    secret = mem.remember("Owner's diary is in the drawer", category="owner", private=True)
    plain = mem.remember("Owner likes jazz", category="owner/music", private=False)
    assert _texts(page.get("/facts?category=travel").text) == [old.text.replace("'", "&#39;")]
    assert _texts(page.get("/facts?pinned=yes").text) == [pinned.text.replace("'", "&#39;")]
    private = _texts(page.get("/facts?private=yes").text)
    assert secret.text.replace("'", "&#39;") in private and plain.text not in private
    assert plain.text in _texts(page.get("/facts?private=no").text)
    assert _texts(page.get("/facts?until=2025-01-01").text) == [old.text]
    assert old.text not in _texts(page.get("/facts?since=2025-01-01").text)
    assert _texts(page.get("/facts?tier=cold").text) == [old.text]     # two years old: archived
    assert old.text not in _texts(page.get("/facts?tier=warm").text)
    assert page.get("/facts?tier=lukewarm").status_code == 400
    assert page.get("/facts?since=yesterday").status_code == 400
    assert page.get("/facts?pinned=maybe").status_code == 400


def test_search_uses_retrieve_and_says_how_each_fact_was_found(page):
    page.mem.remember("Owner drinks oolong tea every morning", category="owner/preferences")
    page.mem.remember("The car needs new tyres", category="car")
    html = page.get("/facts?q=what+tea+does+the+owner+drink").text
    assert _texts(html) == ["Owner drinks oolong tea every morning"]
    assert "retrieve" in html and re.search(r"<td>(tree|fulltext|keyword|attribute)[^<]*score", html)
    expected = [r.fact.text for r in page.mem.retrieve("what tea does the owner drink")]
    assert expected == _texts(html)


def test_a_fact_page_shows_every_field_and_its_history(page):
    fact = page.mem.remember("Owner uses `git pull` in ~/src/app", category="work",
                             metadata={"urls": ["https://git.example/app"]})
    page.mem.edit(fact.id, importance=0.8, by="manual")
    html = page.get(f"/facts/{fact.id}").text
    for field in ("category", "importance", "tier", "pinned", "private", "created",
                  "last access", "source", "superseded by", "links", "commands", "paths"):
        assert f"<th>{field}</th>" in html, field
    assert "https://git.example/app" in html and "0.8" in html
    assert "v1, until" in html                                     # the earlier version


def test_tree_page_shows_counts_and_links_each_category(page):
    page.mem.remember("Rex is a beagle", category="home/pets")
    page.mem.remember("The boiler is serviced in May", category="home")
    html = page.get("/tree").text
    assert 'href="/facts?category=home%2Fpets"' in html
    assert re.search(r'home</a> <span class="dim">home</span></td>\s*<td class="n">1</td>'
                     r'<td class="n">0</td>\s*<td class="n">2</td>', html)


def test_entities_page_draws_the_graph_and_lists_an_entitys_facts(page):
    mem = page.mem
    fact = mem.remember("Ana is my sister", category="family")
    mem.add_entity("Ana", "people")
    mem.link("Ana", "owner", "sister")
    html = page.get("/entities").text
    assert '<svg class="graph"' in html and ">Ana</text>" in html and ">sister</text>" in html
    one = page.get("/entities?name=Ana").text
    assert "sister of" in one
    if mem.entity("Ana").facts:
        assert fact.text in one
    assert page.get("/entities?name=Nobody").status_code == 404
