"""Every data file the code reads ships inside the package (a wheel install has them too)."""

from __future__ import annotations

import gzip
from importlib import resources

from evoclaw_memory.distill import lexicon


def test_every_distill_data_file_is_in_the_package_and_not_empty():
    data = resources.files("evoclaw_memory.distill").joinpath("data")
    for name in lexicon.DATA_FILES:
        item = data.joinpath(name)
        assert item.is_file(), name
        assert item.read_text(encoding="utf-8").strip(), name
    # And nothing in data/ that the code does not read (a forgotten, unshipped edit).
    assert sorted(p.name for p in data.iterdir() if p.name.endswith(".txt")) == sorted(lexicon.DATA_FILES)



def test_every_section_the_code_reads_is_present_and_not_empty():
    for name, sections in (("lexicon.txt", lexicon._LEXICON), ("words.txt", lexicon._WORDS)):
        assert sections == lexicon.read_sections(name)
        for section, lines in sections.items():
            assert any(line.strip() for line in lines), (name, section)


def test_the_package_data_glob_covers_the_data_files():
    import pathlib
    import re

    pyproject = (pathlib.Path(__file__).parent.parent / "pyproject.toml").read_text()
    assert re.search(r'^"evoclaw_memory\.distill" = \["data/\*\.txt"\]', pyproject, re.M)
    assert re.search(r'^evoclaw_memory = \[.*"data/\*\.gz", "data/\*\.tsv"\]', pyproject, re.M)


def test_the_english_word_lists_ship_and_read():
    from evoclaw_memory import english
    data = resources.files("evoclaw_memory").joinpath("data")
    assert sorted(p.name for p in data.iterdir() if p.name.endswith((".gz", ".tsv"))) == \
        sorted([english.ZIPF_FILE.name, english.NEIGHBOURS_FILE.name])
    for name in (english.ZIPF_FILE.name, english.NEIGHBOURS_FILE.name):      # the licence
        raw = data.joinpath(name).read_bytes()
        head = (gzip.decompress(raw) if name.endswith(".gz") else raw).decode("utf-8")[:1500]
        assert "creativecommons.org/licenses/by-sa/4.0" in head and "wordfreq" in head, name
    from evoclaw_memory.text import stem          # the lists are keyed by stems
    assert english.zipf("the") > 7 > english.zipf(stem("live")) > english.zipf(stem("leeds")) \
        > english.UNLISTED_ZIPF
    assert english.zipf("zorblat") == english.UNLISTED_ZIPF
    assert "dentist" in {word for _, word in english.neighbours("teeth")}


def test_a_word_found_by_bisection_has_the_figure_the_whole_table_gives():
    """A fresh process looks its first words up by bisection in the sorted list's text
    (english._zipf_lookup); a long one builds the table. Both must give the same figure for
    every stem in the list, and UNLISTED_ZIPF for words between, before and after them."""
    from evoclaw_memory import english
    table = english._zipf_table()
    assert len(table) > 19_000
    stems = sorted(table)
    assert stems == list(table)                   # the file is sorted, as bisection needs
    absent = ["", "0", "aaaaaaaaaaaaaa", "zzzzzzzz", "the ", "a\tb", "café", "\uffff"] + \
        [s + "qq" for s in stems[::500]] + [s[:-1] + "~" for s in stems[::700]]
    try:
        for term in stems:
            english._zipf_lookup.cache_clear()
            assert english._zipf_lookup(term) == table[term], term
        for term in absent:
            english._zipf_lookup.cache_clear()
            assert term in table or english._zipf_lookup(term) == english.UNLISTED_ZIPF, term
    finally:
        english._zipf_lookup.cache_clear()
