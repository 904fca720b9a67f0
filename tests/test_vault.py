"""The vault (issue 18): pinned facts never decay, never leave the device, have their own cap."""

import pytest

from evoclaw_memory import Memory
from evoclaw_memory.errors import LimitError


def test_pinned_fact_survives_200kb_of_newer_facts_and_a_year(mem, clock):
    kept = mem.remember("The spare house key is under the blue flowerpot", category="home",
                        importance=0.3, pinned=True)
    loose = mem.remember("The garden tap washer was replaced", category="home", importance=0.3)
    clock.advance(365)
    filler = "sensor {i} logged a humidity reading of {i} percent in the greenhouse today " * 2
    written = 0
    i = 0
    while written < 200 * 1024:
        text = filler.format(i=i)
        mem.remember(text, category="projects/garden", importance=0.9)
        written += len(text.encode())
        i += 1
    mem.consolidate("quick")
    assert mem.get(kept.id).tier == "warm" and mem.get(kept.id).pinned
    assert mem.get(loose.id).tier == "cold"          # the same fact unpinned was evicted
    assert mem.tier_of(mem.get(kept.id)) == "warm"   # no decay: importance 0.3 a year on
    assert mem.metrics()["sizes"]["warm_bytes"] <= mem.config.warm_max_bytes
    hits = mem.retrieve("spare house key flowerpot")
    assert hits and hits[0].fact.id == kept.id and hits[0].fact.pinned
    assert "[pinned] [home] The spare house key" in mem.context("spare house key")


def test_vault_cap_is_its_own_and_configurable(home, clock):
    with Memory.open("capped", home=home, clock=clock, vault_max_bytes=100) as mem:
        mem.remember("a" * 60, pinned=True)
        with pytest.raises(LimitError, match=r"vault is full.*\[vault\] max_bytes"):
            mem.remember("b" * 60, pinned=True)
        assert mem.facts()[-1].text == "a" * 60        # the refused one stored nothing
        other = mem.remember("c" * 60)
        with pytest.raises(LimitError):
            mem.pin(other.id)
        mem.unpin(mem.facts()[0].id)
        assert mem.pin(other.id).pinned
        assert mem.vault_status() == {"bytes": 60, "max_bytes": 100, "facts": 1}
    (home / "config.toml").write_text("[vault]\nmax_bytes = 4096\n")
    with Memory.open("capped", home=home, clock=clock) as mem:
        assert mem.config.vault_max_bytes == 4096


def test_pin_brings_a_cold_fact_back_and_history_names_the_actor(mem, clock):
    old = mem.remember("Grandma's recipe uses two spoons of honey", category="food",
                       created_at=clock() - 200 * 86_400, importance=0.2)
    assert old.tier == "cold"
    pinned = mem.pin(old.id)
    assert pinned.tier == "warm" and mem.get(old.id).tier == "warm"
    mem.unpin(old.id)
    events = [(e.op, e.actor) for e in mem.history(old.id).events]
    assert ("pin", "manual") in events and ("unpin", "manual") in events


def test_never_forget_in_a_conversation_pins_and_does_not_forget(mem):
    mem.remember("Luna's birthday is on the 3rd of May", category="social")
    report = mem.end_conversation([{"role": "user", "content":
                                    "Never forget: the wifi router admin page is 192.168.1.1"}],
                                  sync=False)
    assert report["pinned"] and report["forgotten"] == []
    fact = mem.get(report["pinned"][0])
    assert fact.pinned and "192.168.1.1" in fact.text
    assert ("pin", "bot:trigger-remember") in [(e.op, e.actor)
                                               for e in mem.history(fact.id).events]
    assert len(mem.facts()) == 2                        # "never forget" is not a forget


def test_a_pinned_fact_a_year_old_ranks_as_if_fresh(mem, clock):
    """Pinned facts never decay in search either: a year-old pinned fact ranks exactly with
    the same fact stored today, and far above the same year-old fact unpinned."""
    pinned = mem.remember("The gate code for the allotment is 1111", category="home",
                          importance=0.6, pinned=True)
    loose = mem.remember("The gate code for the allotment is 2222", category="home",
                         importance=0.6)
    clock.advance(365)
    fresh = mem.remember("The gate code for the allotment is 3333", category="home",
                         importance=0.6)
    ranks = {r.fact.id: r.score for r in mem.retrieve("allotment gate code", limit=5)}
    assert ranks[pinned.id] == pytest.approx(ranks[fresh.id])
    assert ranks[loose.id] < 0.7 * ranks[pinned.id]
    mem.unpin(pinned.id)                 # out of the vault, its year counts again
    ranks = {r.fact.id: r.score for r in mem.retrieve("allotment gate code", limit=5)}
    assert ranks[pinned.id] == pytest.approx(ranks[loose.id])
