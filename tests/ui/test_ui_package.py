"""The owner's window ships whole (its templates and stylesheet are package data) and its
facts list stays a walk down the primary key at any size (issue 28: 100k facts < 200 ms)."""

from __future__ import annotations

import pathlib
import re
from importlib import resources

from evoclaw_memory.ui import queries

ROOT = pathlib.Path(__file__).parents[2]


def test_every_template_the_code_names_ships_in_the_package():
    package = resources.files("evoclaw_memory.ui")
    code = "".join(p.read_text() for p in (ROOT / "evoclaw_memory" / "ui").glob("*.py"))
    named = set(re.findall(r'"([a-z_]+\.html)"', code))
    named |= {"base.html"}                                       # every page extends it
    shipped = {p.name for p in package.joinpath("templates").iterdir() if p.name.endswith(".html")}
    assert named <= shipped and shipped <= named | {"base.html"}, (named, shipped)
    assert package.joinpath("static/ui.css").read_text("utf-8").strip()


def test_the_package_data_globs_cover_the_templates_and_the_stylesheet():
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert re.search(r'^"evoclaw_memory\.ui" = \["templates/\*\.html", "static/\*\.css"\]',
                     pyproject, re.M)


def test_every_template_autoescapes():
    from evoclaw_memory.ui.app import templates
    env = templates()
    for name in env.list_templates():
        assert env.get_template(name).render.__self__.environment.autoescape is True
    assert str(env.from_string("{{ x }}").render(x="<b>")) == "&lt;b&gt;"


def _plan(mem, flt):
    clause, args = flt.where()
    return " ".join(str(row[-1]) for row in mem.store.conn.execute(
        f"EXPLAIN QUERY PLAN SELECT id FROM facts WHERE {clause} ORDER BY rowid DESC "
        "LIMIT 51 OFFSET 0", args))


def test_the_facts_list_never_sorts_the_whole_archive(ui_mem):
    for i in range(30):
        ui_mem.remember(f"fact number {i}", category=f"c{i % 3}")
    for flt in (queries.FactFilter(), queries.FactFilter(tier="cold"),
                queries.FactFilter(category="c1"), queries.FactFilter(private=True),
                queries.FactFilter(since=0.0, until=2e9)):
        plan = _plan(ui_mem, flt)
        assert "TEMP B-TREE" not in plan, (flt, plan)            # no sort of every match
    assert "facts_tier_category" in _plan(ui_mem, queries.FactFilter(tier="warm"))
