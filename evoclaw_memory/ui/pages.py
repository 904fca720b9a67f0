"""The pages (GET routes): what the owner sees. Reads only, except that a search runs the
agent's own `retrieve`, which reinforces what it finds, as it does for the agent and for
`evoclaw-memory retrieve`."""

from __future__ import annotations

import time
from typing import Any

from starlette.responses import Response

from evoclaw_memory.limits import HOT_MAX_BYTES
from evoclaw_memory.ui import params, queries
from evoclaw_memory.ui.app import View

SEARCH_LIMIT = 100          # retrieve's own cap
DEVICES_FRESH = 300.0       # the overview re-asks the cloud for the devices after this long
PLOT_WEEKS = 26


def overview(v: View) -> Response:
    mem = v.mem
    now = time.time()
    memory_md = mem.render_memory_md()
    conn = mem.store.conn
    return v.render(
        "overview.html", memory_md=memory_md, md_bytes=len(memory_md.encode()),
        md_limit=HOT_MAX_BYTES, md_problem=mem.memory_md_problem(),
        warm_bytes=mem.store.warm_bytes(), warm_limit=mem.config.warm_max_bytes,
        counts=queries.tier_counts(mem.store), status=mem.sync_status(),
        devices=devices(v, fresh=False),
        stored_plot=_plot(queries.stored_per_week(conn, now, PLOT_WEEKS),
                          "facts stored per week (last 26 weeks)", "#4a7bb7"),
        archived_plot=_plot(queries.archived_per_week(conn, now, PLOT_WEEKS),
                            "facts archived to cold per week (last 26 weeks)", "#c0504d"))


def _plot(series: list, title: str, colour: str) -> Any:
    from evoclaw_memory.ui.plots import bar_chart
    return bar_chart(series, title, colour)


def devices(v: View, fresh: bool) -> Any:
    """The devices of this agent (a list), or one line saying why the cloud did not answer.
    The overview reuses an answer younger than DEVICES_FRESH: no request per page view."""
    from evoclaw_memory.errors import EvoclawError
    state = v.state
    if not fresh and state.devices and time.time() - state.devices[0] < DEVICES_FRESH:
        return state.devices[1]
    try:
        found: Any = v.mem.devices()
    except EvoclawError as exc:
        found = f"the cloud did not answer: {exc}"
    state.devices = (time.time(), found)
    return found


def facts(v: View) -> Response:
    flt = params.fact_filter(v.arg)
    page = params.page(v.arg("page"))
    query = v.arg("q")
    results, more = [], False
    if query:
        results = [r for r in v.mem.retrieve(query, limit=SEARCH_LIMIT) if flt.keeps(r.fact)]
        listed = [r.fact for r in results]
    else:
        listed, more = queries.facts_page(v.mem.store.conn, flt, page)
    filters = {k: v.arg(k) for k in ("q", "category", "tier", "pinned", "private", "since",
                                     "until")}
    return v.render("facts.html", facts=listed, results=results, query=query, page=page,
                    more=more, filters=filters, keep={k: x for k, x in filters.items() if x},
                    categories=[n.path for n in v.mem.store.tree_nodes()])


def fact(v: View) -> Response:
    from evoclaw_memory.errors import NotFoundError
    fact_id = v.path["fact_id"]
    history = v.mem.history(fact_id)          # NotFoundError (404) when never known here
    if history.fact is None and history.forgotten_at is None:
        raise NotFoundError(f"no fact {fact_id!r}")
    return v.render("fact.html", fact=history.fact, history=history, fact_id=fact_id)


def confirm_forget(v: View) -> Response:
    return v.render("confirm_forget.html", fact=v.mem.get(v.path["fact_id"]))


def tree(v: View) -> Response:
    nodes = sorted(v.mem.store.tree_nodes(), key=lambda n: n.path)
    under: dict[str, int] = {}
    for node in nodes:                        # live facts at a node and below it
        parts = node.path.split("/")
        for depth in range(1, len(parts) + 1):
            key = "/".join(parts[:depth])
            under[key] = under.get(key, 0) + node.warm_count + node.cold_count
    return v.render("tree.html", nodes=nodes, under=under, text=v.mem.tree_text())


def entities(v: View) -> Response:
    from evoclaw_memory.ui.graph import entity_graph
    found = v.mem.entities(limit=500)
    name = v.arg("name")
    chosen, chosen_facts = None, []
    if name:
        chosen = v.mem.entity(name)
        chosen_facts = v.mem.store.facts_by_ids(chosen.facts[:200])
    return v.render("entities.html", entities=found, graph=entity_graph(found), chosen=chosen,
                    chosen_facts=chosen_facts)


def proposals(v: View) -> Response:
    every = params.flag("all", v.arg("all")) or False
    found = v.mem.proposals(status=None if every else "pending", limit=500)
    return v.render("proposals.html", proposals=found, every=every)


def sync(v: View) -> Response:
    return v.render("sync.html", status=v.mem.sync_status(), devices=devices(v, fresh=True),
                    report=v.state.last_report, cloud=v.mem.config.cloud_url or "")


def forget(v: View) -> Response:
    query, category = v.arg("q"), v.arg("category")
    found = v.mem.forget_matching(query, category=category or None, dry_run=True) \
        if query else []
    return v.render("forget.html", query=query, category=category, found=found,
                    changed=False, count=v.arg("n") if v.arg("n").isdigit() else "")


def stylesheet(v: View) -> Response:
    from importlib import resources
    css = resources.files("evoclaw_memory.ui").joinpath("static/ui.css").read_text("utf-8")
    return Response(css, media_type="text/css")


ROUTES = [("GET", "/", overview), ("GET", "/facts", facts), ("GET", "/facts/{fact_id}", fact),
          ("GET", "/facts/{fact_id}/forget", confirm_forget), ("GET", "/tree", tree),
          ("GET", "/entities", entities), ("GET", "/proposals", proposals), ("GET", "/sync", sync),
          ("GET", "/forget", forget), ("GET", "/ui.css", stylesheet)]
