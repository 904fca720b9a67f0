"""LLM tree rebuild in monthly/full consolidation: the plan (pure), then its application.

The LLM is a scripted server behind httpx.MockTransport (tests/llm_fakes.py); no real LLM
runs here.
"""

import json

import pytest
from click.testing import CliRunner

from evoclaw_memory import Memory
from evoclaw_memory.cli.main import cli
from evoclaw_memory.errors import ValidationError
from evoclaw_memory.llm.rebuild_prompts import TreeOp
from evoclaw_memory.models import TreeNode
from evoclaw_memory.llm.rebuild import plan, rebuild_tree

from llm_fakes import FakeLLM

NOW = 1_764_460_800.0


def nodes(*paths):
    return [TreeNode(path=p, created_at=NOW, last_access=NOW) for p in paths]


BASE = nodes("home", "home/pets", "home/pets/dog", "home/garden", "work", "work/team", "misc")
HELD = {"home/pets/dog": 3, "work/team": 2, "misc": 1}


def verdicts(*ops, tree=BASE, held=HELD):
    return plan(list(tree), dict(held), [TreeOp(**op) for op in ops], NOW)


# -- the plan (pure) -----------------------------------------------------------------------

def test_merge_moves_facts_and_removes_the_subtree():
    [v] = verdicts({"op": "merge", "path": "home/pets", "target": "home"})
    assert v.status == "ok" and v.moves == 2


def test_nodes_holding_facts_are_never_removed():
    held, empty = verdicts({"op": "remove", "path": "home/pets"},
                           {"op": "remove", "path": "home/garden"})
    assert held.status == "rejected" and "holds 3 fact" in held.why
    assert empty.status == "ok"


def test_rename_moves_the_subtree_and_creates_parents():
    [v] = verdicts({"op": "rename", "path": "home/pets", "target": "family/animals",
                    "description": "Pets"})
    assert v.status == "ok" and v.moves == 2


@pytest.mark.parametrize("op, why", [
    ({"op": "rename", "path": "home/pets", "target": "work"}, "already exists"),
    ({"op": "rename", "path": "home", "target": "home/inner"}, "inside"),
    ({"op": "merge", "path": "home/pets", "target": "nowhere"}, "no node"),
    ({"op": "merge", "path": "ghost", "target": "home"}, "no node"),
    ({"op": "merge", "path": "home/pets"}, "needs a target"),
    ({"op": "add", "path": "Not A Valid//Path"}, "invalid category path"),
    ({"op": "add", "path": "a/b/c/d/e"}, "levels deep"),
    ({"op": "add", "path": "home"}, "already exists"),
    ({"op": "rename", "path": "home/pets", "target": "work/team/x/y/z"}, "levels deep"),
])
def test_invalid_operations_are_rejected_with_a_reason(op, why):
    [v] = verdicts(op)
    assert v.status == "rejected" and why in v.why


def test_limits_hold_after_every_accepted_operation():
    tree = nodes(*[f"k{i}" for i in range(10)])
    [v] = verdicts({"op": "add", "path": "k10"}, tree=tree, held={})
    assert v.status == "rejected" and "children" in v.why
    big = nodes(*[f"k{i}" for i in range(10)], *[f"k0/c{i}" for i in range(10)],
                *[f"k1/c{i}" for i in range(10)], *[f"k2/c{i}" for i in range(10)],
                *[f"k3/c{i}" for i in range(10)])
    [v] = verdicts({"op": "add", "path": "k4/c0"}, tree=big, held={})
    assert v.status == "rejected" and "nodes" in v.why


def test_operations_see_what_the_earlier_ones_did():
    first, second, third = verdicts({"op": "rename", "path": "misc", "target": "general"},
                                    {"op": "merge", "path": "general", "target": "home"},
                                    {"op": "remove", "path": "misc"})
    assert first.status == second.status == "ok"
    assert third.status == "rejected" and "no node" in third.why


# -- applied through Memory ----------------------------------------------------------------

def proposal(*ops):
    return json.dumps({"operations": [{"target": None, "description": None, "reason": "tidy",
                                       **op} for op in ops]})


@pytest.fixture
def tree_mem(home, clock):
    opened = []

    def factory(*replies):
        fake = FakeLLM(*replies)
        mem = Memory.open("rebuild-agent", home=home, clock=clock, llm=fake.client())
        for path in ("home/pets/dog", "home/garden", "work/team", "misc"):
            mem.tree_add(path, "")
        mem.remember("Biscuit the beagle was born in April 2020", category="home/pets/dog")
        mem.remember("The dog's vet is Dr Patel", category="home/pets/dog")
        old = mem.remember("Priya leads the routing team", category="work/team")
        new = mem.remember("Jonas now leads the routing team", category="work/team")
        mem.supersede(old.id, new.id)
        opened.append(mem)
        return mem, fake

    yield factory
    for mem in opened:
        mem.close()


def test_dry_run_shows_the_plan_and_changes_nothing(tree_mem):
    mem, fake = tree_mem(proposal({"op": "merge", "path": "home/pets/dog", "target": "home/pets"},
                                  {"op": "remove", "path": "work/team"}))
    def state():
        # The LLM call itself is counted in metrics; nothing else may change.
        counters = {k: v for k, v in mem.store.metrics().items() if not k.startswith("llm.")}
        return mem.tree, mem.store.outbox_depth(), counters, list(mem.store.iter_facts())

    before = state()
    report = mem.consolidate("monthly", dry_run=True)
    assert report["dry_run"] is True and fake.calls == 1
    rebuild = report["tree_rebuild"]
    assert rebuild["status"] == "dry-run" and rebuild["accepted"] == 1 and rebuild["rejected"] == 1
    assert [op["status"] for op in rebuild["operations"]] == ["ok", "rejected"]
    assert state() == before
    assert mem.metrics()["counters"]["llm.calls"] == 1
    with pytest.raises(ValidationError, match="monthly"):
        mem.consolidate("quick", dry_run=True)


def test_monthly_applies_the_valid_operations(tree_mem):
    mem, fake = tree_mem(proposal(
        {"op": "merge", "path": "home/pets/dog", "target": "home/pets"},
        {"op": "remove", "path": "work/team"},             # holds a superseded fact too
        {"op": "rename", "path": "work", "target": "job", "description": "Work and colleagues"},
        {"op": "remove", "path": "home/garden"},
        {"op": "add", "path": "travel", "description": "Trips"}))
    report = mem.consolidate("monthly")
    rebuild = report["tree_rebuild"]
    assert fake.calls == 1 and rebuild["status"] == "applied"
    assert rebuild["accepted"] == 4 and rebuild["rejected"] == 1
    paths = {n.path for n in mem.tree}
    assert {"home/pets", "job", "job/team", "travel"} <= paths
    assert not {"home/pets/dog", "work", "work/team", "home/garden"} & paths
    categories = {f.category for f in mem.store.iter_facts()}
    assert categories == {"home/pets", "job/team"}         # superseded fact moved too
    counts = {n.path: n.warm_count for n in mem.tree}
    assert counts["home/pets"] == 2 and counts["job/team"] == 1   # recounted from data
    assert next(n for n in mem.tree if n.path == "job").description == "Work and colleagues"
    assert [r.path for r in mem.retrieve("dog vet")][0] == "home/pets"
    assert mem.metrics()["counters"]["tree_rebuild.operations"] == 4


def test_no_llm_or_a_failing_llm_leaves_the_tree_alone(tree_mem, home, clock):
    mem, fake = tree_mem(500)
    before = mem.tree
    report = mem.consolidate("monthly")
    assert report["tree_rebuild"]["status"] == "failed"
    assert "HTTP 500" in report["tree_rebuild"]["reason"]
    assert [n.path for n in mem.tree] == [n.path for n in before]
    assert "cold_deleted" in report                        # the rest of monthly still ran
    with Memory.open("plain", home=home, clock=clock) as plain:
        assert rebuild_tree(plain) == {"status": "skipped", "reason": "no LLM configured"}


def test_cli_consolidate_dry_run(home):
    env = {"EVOCLAW_HOME": str(home)}
    runner = CliRunner()
    result = runner.invoke(cli, ["consolidate", "--mode", "monthly", "--dry-run"], env=env)
    assert result.exit_code == 0, result.output
    assert "tree_rebuild:" in result.output and "no LLM configured" in result.output
    data = runner.invoke(cli, ["consolidate", "--mode", "full", "--dry-run", "--json"], env=env)
    assert json.loads(data.stdout)["tree_rebuild"]["status"] == "skipped"
    quick = runner.invoke(cli, ["consolidate", "--dry-run"], env=env)
    assert quick.exit_code == 8
