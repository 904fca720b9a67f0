"""Retrieval across wording (issue 13): stems, stated aliases, unknown words, the update rule,
and the LLM navigator's chosen paths and terms as candidate sources.

Real SQLite stores throughout; the LLM is the scripted HTTP fake of tests/llm_fakes.py
(httpx.MockTransport, no network, no model).
"""

import json
import re
import sqlite3
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evoclaw_memory import Memory
from evoclaw_memory.store import migrate
from evoclaw_memory.text import _RELATIONS, alias_pairs, stem, tokens

from llm_fakes import FakeLLM


@pytest.mark.parametrize("forms", [
    ("dance", "dances", "danced", "dancing"),
    ("hike", "hikes", "hiked", "hiking"),
    ("beach", "beaches"),
    ("allergy", "allergies", "allergic"),
    ("agree", "agreed"),
    ("note", "notes", "noted"),
])
def test_every_inflection_lands_on_one_stem(forms):
    assert len({stem(w) for w in forms}) == 1


def test_stems_never_become_stopwords_and_short_words_stay():
    assert tokens("notes need speed") == ["note", "need", "speed"]


def test_the_spelled_out_stemmed_stopwords_are_the_stopwords_and_their_stems():
    from evoclaw_memory.text import STEMMED_STOPWORDS, STOPWORDS
    assert STEMMED_STOPWORDS == STOPWORDS | {stem(w) for w in STOPWORDS}


def test_dance_finds_dancing_and_allergy_finds_allergic(mem):
    dancing = mem.remember("Dancing is my passion since school", category="owner/hobbies")
    allergic = mem.remember("Luna is allergic to peanuts", category="health/allergies")
    mem.remember("The boiler service is due in March", category="home/house")
    assert mem.retrieve("Who likes to dance?")[0].fact.id == dancing.id
    assert mem.retrieve("any allergy I should know about?")[0].fact.id == allergic.id


def test_alias_pairs_are_read_from_what_the_text_states():
    pairs = alias_pairs("Sam's wife is Chen Li (陈莉), called Lily at work.")
    assert {("chen li", "陈莉"), ("chen li", "lily")} <= set(pairs)
    assert (stem("wife"), "chen li") in pairs
    assert ("son", "oscar") in alias_pairs("Son Oscar was born in January 2022.")
    # A "called X" belongs to the name right before it, not to the clause's subject.
    assert alias_pairs("Hannah walks a greyhound called Pixel") == []
    assert alias_pairs("The boiler pressure should be 1.5 bar") == []


# The alias hint as one regex, which text._alias_hints answers for without running it.
_ALIAS_HINT = re.compile(r"[(（]|called|goes by|known as|nicknamed|aka|a\.k\.a|"
                         rf"\b(?:{'|'.join(_RELATIONS)})\b", re.IGNORECASE)
# Pieces that sit on the edges of the alias hint: its words in every case, inside other
# words and glued by an underscore (a word character), punctuation, and characters that
# case-fold into ASCII letters (long s, Kelvin sign, dotted I).
_HINT_PIECES = ["son", "Son", "SON", "sons", "son_x", "x_son", "my son", "Wife's", "aka",
                "Osaka", "a.k.a", "A.K.A.", "called", "CALLED", "goes by", "goes  by", "Goes By",
                "known as", "nicknamed", "pet", "petal", "vet", "(", "（", ")", "'", "-", ".",
                "ſon", "\u212aid", "İ", "ß", "陈莉", "Chen Li", "the", "x", "9", "ı", "WİFE",
                "wıfe", "ſiſter", "\u212aID", "sonä", "ä", "£", "á", "Son。", "，son", "\u0307",
                "ǅ", "Ω", "ﬁance", "fiance", "ＳＯＮ", "ca\u0301lled"]


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(_HINT_PIECES), min_size=1, max_size=8),
       st.sampled_from(["", " "]))
def test_the_alias_hint_without_its_regex_says_what_the_regex_says(pieces, glue):
    from evoclaw_memory.text import _alias_hints
    text = glue.join(pieces)
    assert any(_alias_hints(text)) == (_ALIAS_HINT.search(text) is not None), text


# Pieces that make each alias pattern match, or nearly: names, parentheses, relation words and
# hint phrases in several cases and scripts, next to the hint's own edge pieces.
_PATTERN_PIECES = _HINT_PIECES + ["Chen Li", "Lily", "(Lily)", "（陈莉）", "Sam's", "my", "My",
                                  "our", "wife", "WİFE", "ſister", "Sarah", "Oscar", "is",
                                  "named", "called Lily", "known as Sal", "a.k.a. Bo", ",", ". ",
                                  "; ", "?", "Mary-Jane", "Dr", "Kid"]


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(_PATTERN_PIECES), min_size=1, max_size=8),
       st.sampled_from(["", " "]))
def test_each_alias_pattern_runs_only_where_its_hint_holds_and_misses_nothing(pieces, glue):
    # alias_pairs runs a pattern only when its own part of the hint holds: each pattern's
    # match must imply that part, else skipping it would lose a pair.
    from evoclaw_memory.text import _alias_hints, _alias_patterns
    text = glue.join(pieces)
    paren, phrase, relation = _alias_hints(text)
    pat = _alias_patterns()
    assert paren or not pat.paren.search(text), text
    assert phrase or not pat.known_as.search(text), text
    assert relation or not pat.relation.search(text), text


def test_a_query_naming_one_alias_finds_facts_naming_the_other(mem):
    mem.remember("Sam's wife is Chen Li, known as Lily at work", category="owner/family")
    shifts = mem.remember("Chen Li works late shifts on Tuesdays", category="owner/family")
    mem.remember("Late checkout at the hotel is 2pm", category="travel")
    hits = mem.retrieve("When does Lily work late?")
    assert hits[0].fact.id == shifts.id
    sarah = mem.remember("My wife Sarah runs the bakery on Otley Road", category="owner/family")
    tea = mem.remember("Sarah drinks oolong tea, never coffee", category="owner/family")
    ids = [h.fact.id for h in mem.retrieve("what does my wife drink?")]
    assert tea.id in ids and sarah.id not in ids[:0]


def test_an_alias_of_a_superseded_or_deleted_fact_no_longer_expands(mem):
    stated = mem.remember("My dentist Dr Kowalski is at Smile Studio", category="health")
    filling = mem.remember("Dr Kowalski replaced a filling in May", category="health")
    assert filling.id in [h.fact.id for h in mem.retrieve("when did the dentist fix my tooth")]
    with mem.store.transaction():
        mem.store.delete_facts([stated.id])
    assert mem.store.aliases_of(["dentist"]) == {}
    assert mem.retrieve("when did the dentist fix my tooth") == []


def test_an_edit_takes_the_aliases_of_the_new_text(mem):
    """The aliases a fact states follow its text: an edit that drops "(Lily)" stops the
    expansion, one that states another alias starts it."""
    stated = mem.remember("Sam's wife is Chen Li, known as Lily at work", category="owner/family")
    assert mem.store.aliases_of([stem("lily")])
    mem.edit(stated.id, text="Sam's wife is Chen Li")
    assert mem.store.aliases_of([stem("lily")]) == {}
    mem.edit(stated.id, text="Sam's wife is Chen Li, known as Lulu at work")
    assert mem.store.aliases_of([stem("lulu")]) == {stem("lulu"): ["chen li"]}


def test_a_word_found_nowhere_does_not_sink_the_words_that_are_found(mem):
    peanut = mem.remember("My daughter Luna has a peanut allergy; EpiPen in her bag",
                          category="health/allergies")
    for i in range(10):
        mem.remember(f"Recipe {i}: tomato sauce with basil", category="food/recipes")
    hits = mem.retrieve("can my daughter eat satay sauce?")    # "satay" is in no fact
    assert peanut.id in [h.fact.id for h in hits]


def test_the_update_rule_fires_on_a_real_update(mem, clock):
    old = mem.remember("Biscuit gets 120 g of salmon kibble twice a day",
                       category="home/pets/biscuit", created_at=clock.now - 300 * 86_400)
    new = mem.remember("Biscuit now gets 100 g of kibble twice a day on his diet",
                       category="home/pets/biscuit", created_at=clock.now - 20 * 86_400)
    mem.remember("Biscuit's salmon treats are in the blue tin", category="home/pets/biscuit",
                 created_at=clock.now - 400 * 86_400)
    hits = mem.retrieve("how much salmon kibble does Biscuit get")
    ids = [h.fact.id for h in hits]
    assert ids.index(new.id) < ids.index(old.id)
    # On words alone the older fact wins (it holds "salmon" too): the rule moved it.
    ranks = {h.fact.id: h.score for h in hits}
    assert ranks[old.id] == pytest.approx(ranks[new.id] * 0.99, rel=1e-3)


def test_two_turns_sharing_the_speakers_names_are_not_updates(mem, clock):
    # LoCoMo-style turns: both name Caroline and the support group the query asks about;
    # the older one is the evidence and outranks the newer on words. It must stay first.
    day = 86_400
    evidence = mem.remember("Caroline: I went to the LGBTQ support group yesterday, so moving",
                            created_at=clock.now - 40 * day)
    chatter = mem.remember("Caroline: Melanie, the group was lovely, see you at the picnic",
                           created_at=clock.now - 10 * day)
    for i in range(6):
        mem.remember(f"Melanie: painting number {i} is done", created_at=clock.now - i * day)
    hits = mem.retrieve("When did Caroline go to the LGBTQ support group?")
    assert hits[0].fact.id == evidence.id
    assert chatter.id in [h.fact.id for h in hits]


def _nav_answer(paths, terms=(), nothing=False):
    return json.dumps({"paths": list(paths), "terms": list(terms), "nothing_relevant": nothing})


@pytest.fixture
def llm_mem(home, clock):
    opened = []

    def factory(*replies):
        fake = FakeLLM(*replies)
        mem = Memory.open("wording", home=home, clock=clock, llm=fake.client())
        opened.append(mem)
        return mem, fake

    yield factory
    for m in opened:
        m.close()


def test_facts_under_the_chosen_path_are_candidates_without_a_shared_word(llm_mem):
    mem, fake = llm_mem(_nav_answer(["health/allergies"]))
    luna = mem.remember("Luna is allergic to peanuts; carry her EpiPen",
                        category="health/allergies")
    mem.remember("My daughter's school play is on Friday", category="family/school")
    mem.remember("Satay skewers recipe: marinate overnight", category="food/recipes")
    hits = mem.retrieve("can my daughter eat satay sauce?")
    assert fake.calls == 1
    found = {h.fact.id: h for h in hits}
    assert luna.id in found
    assert (found[luna.id].method, found[luna.id].path) == ("llm-tree", "health/allergies")
    # The single call carried the schema with the paths as an enum.
    schema = fake.bodies[0]["response_format"]["json_schema"]["schema"]
    assert "health/allergies" in schema["properties"]["paths"]["items"]["enum"]


def test_the_navigators_terms_are_searched_too(llm_mem):
    # The path the LLM picked does not hold the fact; only its Chinese term can find it
    # ("hogget", a yearling sheep, is not in the word list crosslang.py translates with).
    mem, fake = llm_mem(_nav_answer(["owner"], terms=["羊肉", "lamb"]),
                        _nav_answer(["owner"]))
    lamb = mem.remember("陈莉不吃羊肉，闻到膻味就不舒服", category="food/preferences")
    mem.remember("Sam likes long walks in the Dales", category="owner")
    mem.remember("Dinner on Friday is at the Thai place", category="social")
    hits = mem.retrieve("Should I cook hogget?")
    assert fake.calls == 1
    found = {h.fact.id: h for h in hits}
    assert lamb.id in found and found[lamb.id].method == "fts-warm"
    assert lamb.id not in [h.fact.id for h in mem.retrieve("Should I cook hogget?")]


def test_nothing_relevant_makes_the_result_empty(llm_mem):
    mem, fake = llm_mem(_nav_answer([], nothing=True))
    mem.remember("Biscuit sees the vet every March", category="home/pets")
    assert mem.retrieve("Biscuit vet") == []
    assert fake.calls == 1


def test_a_failed_llm_call_falls_back_to_words_in_the_same_retrieval(llm_mem):
    mem, fake = llm_mem(500)
    vet = mem.remember("Biscuit sees the vet every March", category="home/pets")
    hits = mem.retrieve("Biscuit vet")
    assert hits[0].fact.id == vet.id and hits[0].method != "llm-tree"
    assert fake.calls >= 1


def test_path_candidates_stay_bounded_in_a_big_category(llm_mem):
    mem, fake = llm_mem(_nav_answer(["logs"]))
    with mem.store.transaction():
        for i in range(300):
            mem.remember(f"log line {i}", category="logs")
    assert len(mem.store.newest_in_categories(["logs"], 8)) == 8
    hits = mem.retrieve("anything odd lately?", limit=5)
    assert len(hits) == 5 and all(h.path == "logs" for h in hits)


def test_migration_0007_rebuilds_old_stems_keys_and_aliases(tmp_path):
    """A store written before 0007 (bodies by the old stemmer: "dancing" stayed "danc" only
    for the query; stale duplicate keys; no aliases table) is rebuilt on open."""
    home = tmp_path / "home"
    mem = Memory.open("old", home=home)
    store = mem.store
    fact = mem.remember("Dancing is my passion; my wife Sarah dances too", category="owner")
    store.conn.execute("UPDATE facts_fts SET body = 'dancing is my passion' WHERE rowid = 1")
    store.conn.execute("UPDATE facts SET norm_key = 'stale'")
    store.conn.execute("DROP TRIGGER aliases_fact_deleted")
    store.conn.execute("DROP TABLE aliases")
    store.conn.execute("DELETE FROM schema_version WHERE version = 7")
    store.conn.commit()
    mem.close()
    mem = Memory.open("old", home=home)            # runs 0007 again, as on an old store
    store = mem.store
    assert mem.retrieve("who likes to dance")[0].fact.id == fact.id
    assert store.aliases_of(["sarah"]) == {"sarah": [stem("wife")]}
    again = mem.remember("Dancing is my passion; my wife Sarah dances too", category="owner")
    assert again.id == fact.id                     # the duplicate key was rebuilt too
    mem.close()


def test_the_rebuild_is_fast_at_scale(tmp_path):
    """0007 at 20k facts (100k is measured in the README): well under a second a 10k."""
    conn = sqlite3.connect(tmp_path / "big.db")
    migrate.apply_local(conn)
    conn.executemany(
        "INSERT INTO facts (id, text, category, importance, created_at, last_access, "
        "norm_key, size) VALUES (?, ?, 'work', 0.5, 0, 0, 'k', 40)",
        [(f"id{i}", f"Standup note {i}: the deploy pipeline for service {i % 97} is green")
         for i in range(20_000)])
    conn.execute("DELETE FROM schema_version WHERE version = 7")
    conn.execute("DROP TRIGGER aliases_fact_deleted")
    conn.execute("DROP TABLE aliases")
    conn.commit()
    t = time.perf_counter()
    migrate.apply_local(conn)
    elapsed = time.perf_counter() - t
    assert conn.execute("SELECT count(*) FROM facts_fts").fetchone()[0] == 20_000
    assert elapsed < 8.0, elapsed
    conn.close()


def test_length_normalisation_is_mild_for_short_facts(tmp_path, monkeypatch):
    """BM25's b is 0.5, not FTS5's 0.75: a fact is a sentence, and a longer one that says
    the word twice is about it more than a terse one that says it once (LoCoMo dev turns:
    recall@5 0.529 -> 0.544). At b = 0.75 the terse one would win."""
    from evoclaw_memory.retrieval import retriever as R
    mem = Memory.open("len", tmp_path)
    now = time.time()
    mem.remember("Kayak club meets near bridge", category="notes", created_at=now)
    long_fact = mem.remember(
        "Bought a kayak in spring and took the kayak along the river past the old mill, "
        "then back by the weir before dark with friends", category="misc", created_at=now)
    assert R.BM25_B == 0.5
    assert mem.retriever().retrieve("kayak", limit=2)[0].fact.id == long_fact.id
    monkeypatch.setattr(R, "BM25_B", 0.75)
    assert mem.retriever().retrieve("kayak", limit=2)[0].fact.id != long_fact.id
    mem.close()
