"""Property tests: every hard limit holds after ANY sequence of operations (DESIGN.md)."""

import tempfile

from hypothesis import HealthCheck, given, settings, strategies as st

from evoclaw_memory import EvoclawError, Memory
from evoclaw_memory.tiers import hot
from evoclaw_memory.tiers import tree
from evoclaw_memory.limits import (HOT_MAX_BYTES, HOT_MAX_EVENTS, HOT_MAX_LESSONS,
                                   HOT_MAX_PENDING_TASKS, HOT_MAX_PROJECTS, TREE_MAX_BYTES,
                                   TREE_MAX_CHILDREN, TREE_MAX_DEPTH, TREE_MAX_NODES)

from helpers import FakeClock

segment = st.sampled_from(["home", "work", "pets", "a", "b", "c", "d", "e", "x1", "y2", "zz",
                           "family", "infra", "trips", "long-segment-name-here", "宠物"])
paths = st.lists(segment, min_size=1, max_size=5).map("/".join)
words = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=400)

operation = st.one_of(
    st.tuples(st.just("remember"), words, paths, st.floats(0, 1), st.integers(0, 400)),
    st.tuples(st.just("tree_add"), paths, st.text(max_size=120)),
    st.tuples(st.just("tree_remove"), paths),
    st.tuples(st.just("tree_prune")),
    st.tuples(st.just("hot"), st.sampled_from(["lesson", "event", "task", "project"]),
              st.text(min_size=1, max_size=320), st.floats(0, 1)),
    st.tuples(st.just("profile"), st.text(min_size=1, max_size=10), st.text(max_size=700)),
    st.tuples(st.just("advance"), st.integers(0, 90)),
    st.tuples(st.just("consolidate"), st.sampled_from(["quick", "monthly"])),
    st.tuples(st.just("retrieve"), words),
)


def check_limits(mem: Memory) -> None:
    nodes = mem.tree
    assert len(nodes) <= TREE_MAX_NODES
    assert all(n.path.count("/") + 1 <= TREE_MAX_DEPTH for n in nodes)
    paths_ = {n.path for n in nodes}
    for parent in [None, *paths_]:
        assert len(tree.children_of(nodes, parent)) <= TREE_MAX_CHILDREN
    for n in nodes:                                     # no orphans
        assert all(a in paths_ for a in tree.ancestors(n.path))
    assert len(tree.render(nodes).encode()) <= TREE_MAX_BYTES
    # Every fact is filed under a node that exists, and the counts are true.
    counts = mem.store.category_counts()
    assert set(counts) <= paths_
    for n in nodes:
        assert (n.warm_count, n.cold_count) == counts.get(n.path, (0, 0))
    state = mem.hot
    assert hot.state_size(state) <= HOT_MAX_BYTES
    assert len(state.critical_lessons) <= HOT_MAX_LESSONS
    assert len(state.active_context.events) <= HOT_MAX_EVENTS
    assert len(state.active_context.tasks) <= HOT_MAX_PENDING_TASKS
    assert len(state.active_context.projects) <= HOT_MAX_PROJECTS
    assert len(mem.render_memory_md().encode()) <= HOT_MAX_BYTES
    conn = mem.store.conn
    warm = conn.execute("SELECT COALESCE(SUM(size), 0) FROM facts WHERE tier = 'warm'").fetchone()[0]
    assert mem.store.warm_bytes() == warm <= mem.config.warm_max_bytes   # the kept total is true
    # Every fact is in the full-text index or waiting for it: one of the two, exactly, once
    # what waits is indexed (every full-text read does that first; a re-filed fact waits with
    # its new body until then, beside its old entry).
    mem.store.flush_fulltext()
    indexed, waiting, both = conn.execute(
        "SELECT (SELECT count(*) FROM facts_fts), (SELECT count(*) FROM fts_pending), "
        "(SELECT count(*) FROM fts_pending WHERE fact_rowid IN (SELECT rowid FROM facts_fts))"
    ).fetchone()
    assert indexed + waiting == mem.store.count_facts() and both == 0


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(operation, max_size=40))
def test_limits_hold_after_any_sequence(ops):
    clock = FakeClock()
    with tempfile.TemporaryDirectory() as home:
        with Memory.open("prop", home=home, clock=clock, warm_max_bytes=3_000) as mem:
            stored = 0
            for op in ops:
                try:
                    if op[0] == "remember":
                        mem.remember(op[1], category=op[2], importance=op[3],
                                     created_at=clock.now - op[4] * 86_400)
                        stored += 1
                    elif op[0] == "tree_add":
                        mem.tree_add(op[1], op[2])
                    elif op[0] == "tree_remove":
                        mem.tree_remove(op[1])
                    elif op[0] == "tree_prune":
                        mem.tree_prune()
                    elif op[0] == "hot":
                        field = "name" if op[1] == "project" else "text"
                        extra = {"importance": op[3]} if op[1] == "lesson" else {}
                        mem.update_hot(op[1], {field: op[2], **extra})
                    elif op[0] == "profile":
                        mem.update_hot("owner_profile", {op[1]: op[2]})
                    elif op[0] == "advance":
                        clock.advance(op[1])
                    elif op[0] == "consolidate":
                        mem.consolidate(op[1])
                    else:
                        mem.retrieve(op[1] or "x")
                except EvoclawError:
                    pass                   # refused cleanly: the limits must still hold
                check_limits(mem)
            # Nothing stored was lost (cold cleanup only removes 10-year-old frozen facts).
            assert mem.store.count_facts() <= stored
