"""WordNet relatives stand in for a query word no fact holds (issue 13, dev-set paraphrase).

Real SQLite stores and the shipped word list; no LLM. A made-up word ("zorblat") that no
word list knows is the control: it weighs exactly what an unknown real word weighs, so any
difference between the two queries is the relatives' doing (compared through the retriever,
which does not reinforce what it returns, so the second query sees the same store).
"""

import gzip
from importlib import resources

from evoclaw_memory.retrieval import related
from evoclaw_memory.retrieval.retriever import RELATED_MAX_DF


def test_the_word_list_ships_with_the_wordnet_licence_and_reads_stemmed():
    data = resources.files("evoclaw_memory.retrieval").joinpath("data", "wordnet.tsv.gz")
    head = gzip.decompress(data.read_bytes()).decode("utf-8")[:2000]
    assert "WordNet 3.0 Copyright 2006 by Princeton University" in head
    assert "LICENSEE agrees to preserve same" in head
    out = related.related(["aspirin", "skim"], {})
    assert (related.HYPERNYM_CREDIT, "analgesy") in [(r.credit, r.word) for r in out["aspirin"]]
    # A definition's words too: "used of milk and milk products from which the cream ...".
    assert any(r.word == "milk" for r in out["skim"])
    assert all(len(rels) <= related.MAX_RELATIVES for rels in out.values())


def test_the_word_list_is_keyed_by_todays_stem_in_sorted_members():
    """A query looks its word up by text.stem in one gzip member found by the index: a key
    that is not the stem of its word, or out of order, would never be found. If text.stem
    changes, `python scripts/build_wordnet.py --rekey` rewrites the file."""
    from evoclaw_memory.text import stem
    keys, spans, _ = related._chunks()
    assert len(keys) > 50 and keys == sorted(keys)
    seen = []
    for i in range(len(spans)):
        chunk = related._chunk(i)
        assert min(chunk) == keys[i]
        seen += sorted(chunk)
    assert seen == sorted(seen) and len(seen) == len(set(seen)) > 10_000
    text = gzip.decompress(
        resources.files("evoclaw_memory.retrieval").joinpath("data", "wordnet.tsv.gz").read_bytes()
    ).decode("utf-8")
    rows = [line.split("\t") for line in text.splitlines() if line and not line.startswith("#")]
    assert len(rows) == len(seen)
    assert all(key == stem(word) for key, word, *_ in rows)
    assert related.lookup("zzzzqx") is None and related.lookup("") is None


def test_only_query_words_few_facts_hold_are_expanded_and_only_a_few():
    assert "aspirin" in related.related(["aspirin"], {})
    assert "aspirin" in related.related(["aspirin"], {"aspirin": related.EXPAND_MAX_DF})
    assert "aspirin" not in related.related(["aspirin"], {"aspirin": related.EXPAND_MAX_DF + 1})
    many = ["aspirin", "skim", "faucet", "sofa", "trout", "dinner"]
    assert len(related.related(many, {})) <= related.MAX_EXPANDED
    assert related.related(["zorblat", "the"], {}) == {}


def _chen_li(mem):
    analgesic = mem.remember("Chen Li must avoid any analgesic except paracetamol",
                              category="owner/family/chen-li", created_at=1_700_000_000)
    for i, text in enumerate(["Chen Li works late shifts on Tuesdays",
                              "Chen Li likes orchids, not cut flowers",
                              "Chen Li's birthday is 2 August",
                              "Chen Li drives the blue Kia to the hospital",
                              "Chen Li is learning the guitar on Sundays",
                              "Chen Li's mother visits every spring"]):
        mem.remember(text, category="owner/family/chen-li", created_at=1_700_000_100 + i)
    return analgesic


def test_a_query_word_reaches_a_fact_through_a_wordnet_hypernym(mem):
    analgesic = _chen_li(mem)
    ids = [h.fact.id for h in mem.retrieve("Can Chen Li take aspirin?")]
    assert analgesic.id in ids[:5]
    # The control: the same query with a word no list knows leaves the oldest fact out.
    control = [h.fact.id for h in mem.retrieve("Can Chen Li take zorblat?")]
    assert analgesic.id not in control[:5]


def test_a_relative_many_facts_hold_says_nothing(mem):
    _chen_li(mem)
    assert RELATED_MAX_DF < 3
    for i in range(3):
        mem.remember(f"Analgesic note {i}: Chen Li keeps them in the cupboard",
                     category="health/notes", created_at=1_700_000_200 + i)
    with_word = [(h.fact.id, h.score) for h in mem.retriever().retrieve("Can Chen Li take aspirin?")]
    control = [(h.fact.id, h.score) for h in mem.retriever().retrieve("Can Chen Li take zorblat?")]
    assert with_word == control


def test_a_query_with_a_direct_match_is_left_unchanged(mem):
    vet = mem.remember("Biscuit's vet is Kirkstall Vets, Dr Amir Rahman", category="home/pets/biscuit")
    mem.remember("The vet says Biscuit must never get an analgesic meant for people",
                 category="home/pets/biscuit")
    for text in ("Biscuit gets 120 g of salmon kibble twice a day", "Biscuit's lead hangs by the door",
                 "Biscuit is scared of fireworks"):
        mem.remember(text, category="home/pets/biscuit")
    # The query matches one fact almost fully, so the gate keeps WordNet out: "aspirin", whose
    # relative "analgesic" one fact holds, ranks exactly as a made-up word would.
    query = "Is Biscuit's vet still Dr Amir Rahman at Kirkstall Vets, for aspirin?"
    with_word = [(h.fact.id, h.score) for h in mem.retriever().retrieve(query)]
    control = [(h.fact.id, h.score) for h in mem.retriever().retrieve(query.replace("aspirin", "zorblat"))]
    assert with_word[0][0] == vet.id
    assert with_word == control
    # Without the direct match the same relative does move that fact.
    weak = "Is aspirin ok for Biscuit?"
    assert [h.score for h in mem.retriever().retrieve(weak)] != \
        [h.score for h in mem.retriever().retrieve(weak.replace("aspirin", "zorblat"))]


def test_the_package_data_glob_ships_the_gzipped_list():
    import pathlib
    import re

    pyproject = (pathlib.Path(__file__).parent.parent / "pyproject.toml").read_text()
    globs = re.search(r'^"evoclaw_memory\.retrieval" = \[(.*)\]', pyproject, re.M)
    assert globs and '"data/*.tsv.gz"' in globs.group(1)
