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
    assert re.search(r'^evoclaw_memory = \[.*"data/\*\.gz"\]', pyproject, re.M)


def test_the_english_word_lists_ship_and_read():
    from evoclaw_memory import english
    data = resources.files("evoclaw_memory").joinpath("data")
    assert sorted(p.name for p in data.iterdir() if p.name.endswith(".gz")) == \
        sorted([english.ZIPF_FILE.name, english.NEIGHBOURS_FILE.name])
    for name in (english.ZIPF_FILE.name, english.NEIGHBOURS_FILE.name):      # the licence
        head = gzip.decompress(data.joinpath(name).read_bytes()).decode("utf-8")[:1500]
        assert "creativecommons.org/licenses/by-sa/4.0" in head and "wordfreq" in head, name
    from evoclaw_memory.text import stem          # the lists are keyed by stems
    assert english.zipf("the") > 7 > english.zipf(stem("live")) > english.zipf(stem("leeds")) \
        > english.UNLISTED_ZIPF
    assert english.zipf("zorblat") == english.UNLISTED_ZIPF
    assert "dentist" in {word for _, word in english.neighbours("teeth")}
