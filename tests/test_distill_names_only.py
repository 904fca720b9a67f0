"""find_people runs only the name scanners, so that storing a fact neither pays a full
analysis nor compiles the whole distiller's patterns (the keyword index is built on first
use). Its names must be exactly those a full analysis finds, on every kind of text."""

from __future__ import annotations

import subprocess
import sys

from bench.data import Generator
from evoclaw_memory.distill.signals import analyse, find_people

TEXTS = [
    "I met Chen Li and Oscar in Leeds at the Hilton.",
    "Maya's school called. Dinner was late.",
    "岳父陈建国、岳母刘芳住在成都",
    "我叫外卖了，王医生说没事。",
    "Melanie: I went camping with Caroline last weekend! It was great.",
    "my wife Sarah hates coffee; Sam hates tea. Dr Smith said rest.",
    "Yesterday Tom, Anna and Li Wei moved to Paris. The Louvre was closed.",
    "Biscuit had his jab. Biscuit's owner is Grace O'Neil — she lives near Bristol.",
    "我和陈莉决定明年春天去成都旅行，我很开心。张伟也来。",
    "Ask Priya about https://example.com/a?b=c and run `git push` in ~/src/Evo.",
    "HELLO THERE. iPhone and GitHub are not people, but Jean-Luc Picard is.",
    "  ", "", "no capitals at all here, just words.", "Ünïcödé Names like Zoë and Ærin.",
    "İstanbul is a city; Kemal lives there.",   # lowering changes the length of İ
]


def _full_names(text: str) -> list[str]:
    people: list[str] = []
    for sentence in analyse(text).sentences:
        people += [n for n in sentence.names if n not in people]
    return people


def test_names_only_finds_what_the_full_analysis_finds():
    gen = Generator(11)
    texts = TEXTS + [f.text for f in gen.facts(400)] + \
        [m["content"] for _ in range(40) for m in gen.conversation()]
    found = 0
    for text in texts:
        assert find_people(text) == _full_names(text), text
        found += bool(find_people(text))
    assert found >= 20          # the corpus does hold names (the check is not vacuous)


def test_finding_names_compiles_no_keyword_index():
    code = ("import evoclaw_memory.distill.lexicon as lx\n"
            "from evoclaw_memory.distill.entities import extract\n"
            "extract('my wife Sarah met 陈莉 in Paris')\n"
            "print(lx.keywords.cache_info().currsize)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "0"


def test_is_cjk_without_its_pattern_answers_as_the_pattern():
    """text.is_cjk checks the CJK ranges by number (the pattern costs ~1 ms to compile in
    every process): the same answer for every character of the BMP and for mixed tokens."""
    import re

    from evoclaw_memory.text import _CJK, is_cjk
    pattern = re.compile(f"[{_CJK}]+")
    chars = [chr(c) for c in range(0x20, 0x10000) if not 0xD800 <= c <= 0xDFFF]
    for ch in chars:
        assert is_cjk(ch) == bool(pattern.fullmatch(ch)), hex(ord(ch))
    for token in ("", "陈莉", "陈a", "カタカナ", "한국어", "ｶﾀ", "abc", "中文。", "ー"):
        assert is_cjk(token) == bool(pattern.fullmatch(token)), token
