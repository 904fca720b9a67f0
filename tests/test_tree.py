import pytest

from evoclaw_memory import LimitError, ValidationError
from evoclaw_memory.tiers import tree
from evoclaw_memory.limits import TREE_MAX_BYTES, TREE_MAX_CHILDREN, TREE_MAX_NODES


@pytest.mark.parametrize("bad", ["../x", "/abs", "a//b", "a/b/c/d/e", "", "a/../b", "x y",
                                 "a/.b", "a\\b", "a;DROP"])
def test_invalid_paths(bad):
    with pytest.raises(ValidationError):
        tree.validate_path(bad)


def test_valid_paths_normalize():
    assert tree.validate_path(" Projects/EvoClaw ") == "projects/evoclaw"
    assert tree.validate_path("家庭/宠物") == "家庭/宠物"


def test_add_creates_parents_and_render_matches_spec_shape():
    nodes = tree.add([], "projects/evoclaw/architecture", "Design notes", 0)
    assert [n.path for n in nodes] == ["projects", "projects/evoclaw", "projects/evoclaw/architecture"]
    text = tree.render(nodes)
    assert text.startswith("📂 Root (warm:0, cold:0)")
    assert "📁 projects/evoclaw/architecture — Design notes (warm:0, cold:0)" in text
    assert text.splitlines()[-1] == f"Nodes: 3/{TREE_MAX_NODES} · Size: {len(text.encode())}/{TREE_MAX_BYTES} bytes"


def test_children_limit_refused():
    nodes = []
    for i in range(TREE_MAX_CHILDREN):
        nodes = tree.add(nodes, f"top{i}", "", 0)
    with pytest.raises(LimitError, match="children"):
        tree.add(nodes, "one-too-many", "", 0)


def test_node_limit_refused():
    nodes = []
    for i in range(10):
        for j in range(4):
            nodes = tree.add(nodes, f"t{i}/c{j}", "", 0)
    assert len(nodes) == 50
    with pytest.raises(LimitError, match="nodes"):
        tree.add(nodes, "t0/c9", "", 0)


def test_description_limit():
    with pytest.raises(ValidationError, match="100"):
        tree.add([], "a", "d" * 101, 0)


def test_render_degrades_to_fit_bytes():
    nodes = []
    for i in range(10):
        for j in range(4):
            nodes = tree.add(nodes, f"top{i}/child{j}", "A fairly long description " * 3, 0)
    text = tree.render(nodes)
    assert len(text.encode()) <= TREE_MAX_BYTES


def test_subtree_counts_and_remove_refusal(mem):
    mem.remember("Biscuit is a beagle", category="home/pets/biscuit")
    mem.remember("The boiler is a Worcester", category="home/house")
    counts = tree.subtree_counts(mem.tree)
    assert counts["home"] == (2, 0) and counts["home/pets"] == (1, 0)
    with pytest.raises(LimitError, match="holds 1 fact"):
        mem.tree_remove("home/pets")
    mem.tree_add("scratch/empty", "nothing here")
    mem.tree_remove("scratch")
    assert "scratch" not in {n.path for n in mem.tree}


def test_prune_keeps_new_and_busy_nodes(mem, clock):
    mem.tree_add("old/empty")
    mem.remember("fact", category="old/busy")
    assert mem.tree_prune() == []                 # created today: kept
    clock.advance(61)
    mem.tree_add("fresh")
    gone = mem.tree_prune()
    assert gone == ["old/empty"]
    paths = {n.path for n in mem.tree}
    assert {"old", "old/busy", "fresh"} <= paths


def test_full_tree_rebalances_on_remember_without_losing_facts(mem):
    for i in range(10):
        for j in range(4):
            mem.tree_add(f"t{i}/c{j}")
    keeper = mem.remember("a fact in a leaf", category="t0/c0")
    fact = mem.remember("needs a new node", category="t1/new")
    assert fact.category == "t1/new"
    assert len(mem.tree) <= TREE_MAX_NODES
    assert mem.get(keeper.id).category in {n.path for n in mem.tree}
    counts = mem.store.category_counts()
    for node in mem.tree:
        assert (node.warm_count, node.cold_count) == counts.get(node.path, (0, 0))


def test_full_root_files_fact_under_closest_existing_node(mem):
    for name in ["home", "work", "health", "travel", "food", "owner", "projects", "social",
                 "technical", "lessons"]:
        mem.tree_add(name)
    before = {n.path for n in mem.tree}
    fact = mem.remember("A stray thought about work rotas", category="general")
    assert fact.category in before                       # stored, never refused
    assert {n.path for n in mem.tree} == before          # nothing merged away for nothing
    assert mem.store.count_facts() == 1
    fact = mem.remember("Shift swap with the work team", category="rota/work-team")
    assert fact.category == "work"                       # the word it shares


def test_full_parent_absorbs_its_least_used_leaf(mem):
    for i in range(10):
        mem.tree_add(f"home/room{i}")
    busy = mem.remember("The kettle is in room 3", category="home/room3")
    fact = mem.remember("The garage door code changed", category="home/garage")
    assert fact.category == "home/garage"
    kids = [n for n in mem.tree if n.path.startswith("home/")]
    assert len(kids) == 10 and mem.get(busy.id).category == "home/room3"


def test_compact_size_is_the_bare_level_rendered():
    """_checked sizes the most compact level without writing it: the count must be the
    rendered text's, for any names (multi-byte included), depths and counts."""
    import random
    from evoclaw_memory.models import TreeNode
    rng = random.Random(7)
    words = ["a", "travel", "日本", "café", "x" * 40, "topic-3", "ü"]
    for _ in range(500):
        paths = set()
        for _ in range(rng.randint(0, 50)):
            parts = [rng.choice(words) + str(rng.randint(0, 3)) for _ in range(rng.randint(1, 4))]
            paths.update("/".join(parts[:i]) for i in range(1, len(parts) + 1))
        nodes = sorted((TreeNode(path=p, description=rng.choice(["", "a note é", "d" * 100]),
                                 warm_count=rng.choice([0, 1, 10, 99_999, 10**7]),
                                 cold_count=rng.choice([0, 9, 123_456])) for p in paths),
                       key=lambda n: n.path)
        assert tree.compact_size(nodes) == len(tree._render_level(nodes, "bare").encode())


def test_tree_rows_in_memory_stay_what_the_table_holds(mem, clock):
    """store.tree_nodes() serves the rows from memory once read: after merges on a full tree,
    node edits, a rollback and another connection's commit it must equal a fresh SELECT."""
    from evoclaw_memory.models import TreeNode
    from evoclaw_memory.store.local import LocalStore

    def table():
        return [tuple(r) for r in mem.store.conn.execute(
            "SELECT path, description, warm_count, cold_count, last_access, created_at "
            "FROM tree_nodes ORDER BY path")]

    def served():
        return [(n.path, n.description, n.warm_count, n.cold_count, n.last_access,
                 n.created_at) for n in mem.store.tree_nodes()]

    for i in range(10):
        for j in range(4):
            mem.tree_add(f"t{i}/c{j}")
    assert served() == table() and mem.store.tree_rows is not None
    facts = []
    for k in range(12):                     # every one a new path: leaves merge
        facts.append(mem.remember(f"fact number {k} about topic {k}", category=f"t{k % 10}/new{k}"))
        assert served() == table()
    mem.tree_add("t3/new3", "described now")
    with mem.store.transaction():
        mem.store.touch_nodes(["t3", "t3/new3"], 1234)
        mem.store.adjust_counts("t3/new3", warm=-1000, cold=-1)      # floored at 0, as SQL does
    mem.forget(facts[3].id)
    assert served() == table()
    clock.advance(61)
    assert mem.tree_prune() and served() == table()

    # A rollback takes back the writes it applied in memory too.
    first, last = served()[0][0], served()[-1][0]
    with pytest.raises(RuntimeError):
        with mem.store.transaction():
            mem.store.adjust_counts(first, warm=5)
            mem.store.delete_node(last)
            assert mem.store.has_node(first) and not mem.store.has_node(last)
            raise RuntimeError("abandon")
    assert served() == table() and mem.store.has_node(last)

    # Another connection's commit is seen (PRAGMA data_version), in and out of a transaction.
    other = LocalStore.open(mem.store.path)
    try:
        with other.transaction():
            other.upsert_node(TreeNode(path="t9/elsewhere", created_at=5.0))
            other.adjust_counts(first, warm=2)
        assert served() == table()
        with other.transaction():
            other.delete_node("t9/elsewhere")
        with mem.store.transaction():
            assert not mem.store.has_node("t9/elsewhere")
            assert served() == table()
    finally:
        other.close()
