"""English <-> Chinese without an LLM (issue 13, dev-set cjk-cross): the word list's
translations stand for a query word, and stated aliases reach one hop further.

Real SQLite stores; no LLM, except the labelled HTTP fake of tests/llm_fakes.py in the last
test (the navigator's own search terms across scripts).
"""

import json
from importlib import resources

from evoclaw_memory import Memory
from evoclaw_memory.retrieval import crosslang
from evoclaw_memory.text import query_terms

from llm_fakes import FakeLLM


def test_the_word_list_ships_and_reads_both_ways():
    data = resources.files("evoclaw_memory.retrieval").joinpath("data", "crosslang.tsv")
    assert data.is_file() and "CC-CEDICT" in data.read_text(encoding="utf-8")[:400]
    lex = crosslang._lexicon()
    assert len(lex.zh_en) > 5000
    assert "subway" in lex.zh_en["地铁"] or "metro" in lex.zh_en["地铁"]
    assert "地铁" in lex.en_zh["metro"]
    # Every English side is stemmed the way the index stems ("allergic" -> "allergy").
    assert "allergy" in lex.zh_en["过敏"]


def test_chinese_runs_are_cut_into_dictionary_words_longest_first():
    words = crosslang.chinese_words("我想坐地铁去公司")
    assert "地铁" in words and "公司" in words
    assert all(len(w) >= 2 for w in words)
    assert crosslang.chinese_words("Biscuit is a beagle") == []


def test_translations_map_each_side_to_the_other_and_stay_bounded():
    q = "Which metro line goes to the hospital?"
    out = crosslang.translations(q, query_terms(q))
    assert ("地铁",) in out["metro"]
    zh = "Biscuit对什么过敏？"
    out = crosslang.translations(zh, query_terms(zh))
    assert ("allergy",) in out["过敏"]
    many = " ".join(["metro hospital doctor school teacher birthday dinner company weather"] * 3)
    assert len(crosslang.translations(many, query_terms(many))) <= crosslang.MAX_TRANSLATED


def test_an_english_query_finds_a_chinese_fact_it_shares_no_word_with(mem):
    metro = mem.remember("岳父母家在成都高升桥附近，走路五分钟就到地铁3号线高升桥站。",
                         category="owner/family/in-laws")
    mem.remember("The in-laws love long walks by the river", category="owner/family/in-laws")
    mem.remember("岳母的生日是农历八月十五", category="owner/family/in-laws")
    mem.remember("Metropolis is Maya's favourite film", category="media")
    ids = [h.fact.id for h in mem.retrieve("Which metro station is near the in-laws?")]
    assert metro.id in ids[:2]


def test_a_chinese_query_finds_an_english_fact(mem):
    allergy = mem.remember("Biscuit is allergic to chicken, it makes his paws itch",
                           category="home/pets/biscuit")
    for text in ("Biscuit gets 120 g of salmon kibble twice a day",
                 "Biscuit's vet is Kirkstall Vets; the booster is due in March",
                 "Biscuit boards at the kennels when we travel",
                 "Biscuit steals socks from the laundry basket",
                 "Biscuit's insurance renews on 1 June",
                 "Biscuit walks with Hannah on Mondays"):
        mem.remember(text, category="home/pets/biscuit")
    hits = mem.retrieve("Biscuit对什么过敏？")
    assert hits[0].fact.id == allergy.id


def test_a_word_the_fact_holds_itself_needs_no_translation(mem):
    both = mem.remember("Metro card top-up: 地铁卡 at any station", category="travel")
    only_zh = mem.remember("地铁卡在抽屉里", category="travel")
    hits = mem.retrieve("metro card")
    assert [h.fact.id for h in hits[:2]] == [both.id, only_zh.id]
    assert hits[0].relevance > hits[1].relevance


def test_aliases_reach_one_hop_further(mem):
    # "Lily" is stated for "Chen Li" in one fact, "陈莉" in another: Lily reaches 陈莉, so of
    # two Chinese facts about cooking the one about her wins.
    mem.remember("Sam's wife is Chen Li, called Lily at work", category="owner/family/partner")
    mem.remember("Chen Li (陈莉) was born in Chengdu", category="owner/family/partner")
    lily = mem.remember("陈莉不吃羊肉，做饭要避开", category="owner/family/partner")
    other = mem.remember("王静做饭很好吃，喜欢放辣椒", category="owner/family/partner")
    ids = [h.fact.id for h in mem.retrieve("What should I know when I cook for Lily?")]
    assert lily.id in ids and other.id in ids
    assert ids.index(lily.id) < ids.index(other.id)


TERMS = ["Rahman", "vet"]


def test_an_llm_navigators_english_terms_reach_the_index_for_a_chinese_query(home, clock):
    # The scripted HTTP fake of tests/llm_fakes.py answers the one navigator call with a path
    # and English search terms; "看病" has no one-word gloss in the word list, so only the
    # navigator's terms can reach the English fact (the path it picks does not hold it).
    fake = FakeLLM(json.dumps({"paths": ["home/house"], "terms": TERMS, "nothing_relevant": False}))
    with Memory.open("crosslang", home=home, clock=clock, llm=fake.client()) as mem:
        vet = mem.remember("Dr Amir Rahman at Kirkstall sees Biscuit every March", category="home/pets")
        mem.remember("The boiler is serviced every October", category="home/house")
        assert crosslang.translations("谁给狗看病？", query_terms("谁给狗看病？")).get("看病") is None
        hits = mem.retrieve("谁给狗看病？")
        assert fake.calls == 1
        assert vet.id in [h.fact.id for h in hits]


def test_an_english_word_is_looked_up_without_building_the_index():
    """_glossed_by reads only the lines that can gloss a word (a CLI retrieve is a fresh
    process and indexing the list costs ~15 ms): it must answer exactly what the index
    answers, for every word the index holds and for words it does not."""
    from evoclaw_memory.text import stem
    full = crosslang._Lexicon().en_zh
    crosslang._lexicon.cache_clear()
    others = ["allergies", "lamb", "metro", "zzzq", "the", "x", "running", "beagles", "sheep"]
    words = sorted(full) + [stem(w) for w in others]
    assert len(full) > 5000
    for word in words:
        assert crosslang._glossed_by(word) == full.get(word, []), word
    assert crosslang._lexicon.cache_info().currsize == 0        # it never built the index
    q = "should I cook lamb for Lily?"
    assert crosslang.translations(q, query_terms(q))           # and translations use it
    assert crosslang._lexicon.cache_info().currsize == 0


def test_the_shipped_word_index_is_the_one_derived_from_the_shipped_list():
    """data/crosslang_words.tsv is derived (crosslang.word_index): a list edited without
    remaking it would send _glossed_by to the wrong lines."""
    data = resources.files("evoclaw_memory.retrieval").joinpath("data")
    raw = data.joinpath("crosslang.tsv").read_bytes()
    shipped = data.joinpath("crosslang_words.tsv").read_text(encoding="utf-8")
    assert shipped == crosslang.word_index(raw)
    assert "CC BY-SA 4.0" in shipped[:400]
