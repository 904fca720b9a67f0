import math

import pytest

from evoclaw_memory import ValidationError
from evoclaw_memory.tiers.scoring import score, tier_of


def test_score_formula_and_tiers():
    now = 100 * 86_400
    assert score(0.8, now, 0, now) == pytest.approx(0.8)
    assert score(0.8, now - 30 * 86_400, 2, now) == pytest.approx(0.8 * math.exp(-1) * 1.2)
    assert score(1.0, now - 30 * 86_400, 0, now, decay_days=60, access_boost=0.5) == \
        pytest.approx(math.exp(-0.5))
    assert [tier_of(v) for v in (0.7, 0.69, 0.3, 0.29, 0.05, 0.049)] == \
        ["hot", "warm", "warm", "cold", "cold", "frozen"]


def test_old_weak_fact_goes_straight_to_cold(mem, clock):
    old = mem.remember("An old note", category="misc", importance=0.5,
                       created_at=clock.now - 90 * 86_400)
    new = mem.remember("A new note", category="misc", importance=0.5)
    assert old.tier == "cold" and new.tier == "warm"


def test_consolidate_archives_by_age_and_score_never_drops(mem, clock):
    weak = mem.remember("weak fact", category="misc", importance=0.4)
    strong = mem.remember("strong fact", category="misc", importance=1.0)
    clock.advance(31)
    report = mem.consolidate("quick")
    assert report["archived"] == 1
    assert mem.get(weak.id).tier == "cold"
    assert mem.get(strong.id).tier == "warm"   # 1.0*exp(-31/30)=0.36 >= 0.3
    assert mem.store.count_facts() == 2
    node = next(n for n in mem.tree if n.path == "misc")
    assert (node.warm_count, node.cold_count) == (1, 1)
    assert mem.metrics()["counters"]["evictions"] == 1


def test_warm_cap_evicts_lowest_score_to_cold(home, clock):
    from evoclaw_memory import Memory
    with Memory.open("cap", home=home, clock=clock, warm_max_bytes=2_000) as m:
        facts = [m.remember(f"fact number {i} " + "x" * 80, category="bulk",
                            importance=0.3 + (i % 7) / 10) for i in range(60)]
        assert m.store.warm_bytes() <= 2_000
        assert m.store.count_facts() == 60                 # archived, never dropped
        cold = [f for f in facts if m.get(f.id).tier == "cold"]
        warm = [f for f in facts if m.get(f.id).tier == "warm"]
        assert cold and warm
        assert min(f.importance for f in warm) >= max(f.importance for f in cold) - 1e-9 or \
            sum(f.importance for f in warm) / len(warm) > sum(f.importance for f in cold) / len(cold)


def test_exact_duplicate_reinforces(mem):
    first = mem.remember("Sam's dog is called Biscuit", category="home/pets")
    again = mem.remember("  sam's DOG is called biscuit!  ", category="home/pets")
    assert again.id == first.id
    assert again.access_count == 1
    assert mem.store.count_facts() == 1


def test_retrieval_reinforces(mem):
    fact = mem.remember("The router admin page is at 192.168.1.1", category="technical/network")
    hits = mem.retrieve("router admin page")
    assert hits and hits[0].fact.id == fact.id
    assert mem.get(fact.id).access_count == 1
    assert mem.metrics()["counters"]["retrievals"] == 1


def test_bad_inputs(mem):
    with pytest.raises(ValidationError, match="bytes"):
        mem.remember("x" * 10_000_001, category="misc")
    with pytest.raises(ValidationError, match="importance"):
        mem.remember("ok", category="misc", importance=1.5)
    with pytest.raises(ValidationError, match="empty"):
        mem.remember("   ", category="misc")
    with pytest.raises(ValidationError, match="created_at"):
        mem.remember("ok", category="misc", created_at="yesterday")
    assert mem.store.count_facts() == 0


def test_cold_cleanup_deletes_only_expired_frozen(mem, clock):
    ancient = mem.remember("ancient", category="misc", importance=0.1,
                           created_at=clock.now - 3700 * 86_400)
    old_but_kept = mem.remember("old", category="misc", importance=0.9,
                                created_at=clock.now - 400 * 86_400)
    report = mem.consolidate("monthly")
    assert report["cold_deleted"] == 1
    assert mem.store.get_fact(ancient.id) is None
    assert mem.get(old_but_kept.id).tier == "cold"
    assert mem.metrics()["timestamps"]["last_consolidation.monthly"] == clock.now


def test_lesson_promotion(mem):
    mem.remember("Always back up before flashing firmware", category="lessons/debugging",
                 importance=0.9)
    report = mem.consolidate("quick")
    assert report["promoted"] == 1
    assert any("back up" in l.text for l in mem.hot.critical_lessons)
    assert mem.consolidate("quick")["promoted"] == 0    # once only


def test_a_conversation_sums_warm_once_and_keeps_the_true_total(mem):
    """end_conversation stores its facts in one transaction: the warm total each remember
    leaves behind serves the next (it summed the warm tier again for every fact: ~1.2 ms
    each on a 100k-fact store), and the total it carries is the true one."""
    sums = []
    mem.store.conn.set_trace_callback(lambda sql: sums.append(sql) if "SUM(size)" in sql else None)
    mem.end_conversation([
        {"role": "user", "name": "Sam", "content": "My sister Ana moved to Lisbon in March."},
        {"role": "assistant", "content": "Noted: Ana lives in Lisbon now."},
        {"role": "user", "name": "Sam", "content": "Ana's new flat has a view of the river."},
        {"role": "user", "name": "Sam", "content": "The boiler service is booked for 12 May."},
        {"role": "assistant", "content": "I will remind you about the boiler on 11 May."},
        {"role": "user", "name": "Sam", "content": "Our router firmware is OpenWrt 23.05."},
    ], sync=False)
    mem.store.conn.set_trace_callback(None)
    stored = mem.store.count_facts()
    assert stored >= 4 and len(sums) <= 1
    true_total = mem.store.conn.execute(
        "SELECT COALESCE(SUM(size), 0) FROM facts WHERE tier = 'warm' AND pinned = 0").fetchone()[0]
    assert mem.store.warm_bytes() == true_total
