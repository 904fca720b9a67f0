"""Build evoclaw_memory/data/zipf_en.tsv: how common each English word is.

    pip install wordfreq==3.1.1        # into a scratch venv; not a dependency of the package
    python scripts/build_wordfreq.py

Not run by the package or the tests: it documents how the shipped file was made, so it can be
remade (another cut-off, a wordfreq release, text.stem changes) instead of edited by hand.

The write-time decision (distill/sameness.py, through english.zipf) weighs a word by how rare it is in English, not
only in one owner's memory: in a young memory every word is rare, and "live" or "work" must
still count for little beside "Leeds" or "penicillin". wordfreq's Zipf scale (log10 of
occurrences per billion words) is that measure. Kept: the alphabetic words of wordfreq's
English list with a Zipf frequency of at least MIN_ZIPF (about 29,000), keyed by text.stem (the
tokens the memory compares), each stem at the highest value of its words; a word not in the
file is rarer than MIN_ZIPF. Lines: "<stem><TAB><zipf x 10>", sorted by stem (code point
order), after the notice's "#" lines. Sorted, so a fresh process finds a query word by
bisection in the file's text (english.zipf; ~20 µs) instead of parsing or scanning all of it;
plain text, not gzip, because decompressing it was ~0.7 ms of every CLI `retrieve`.
Nothing is picked by hand.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from evoclaw_memory.text import stem  # noqa: E402

MIN_ZIPF = 3.0
OUT = ROOT / "evoclaw_memory" / "data" / "zipf_en.tsv"
NOTICE = """\
# English word frequencies (Zipf scale x 10) keyed by evoclaw_memory.text.stem, made by
# scripts/build_wordfreq.py from wordfreq 3.1.1 (Robyn Speer, https://github.com/rspeer/wordfreq),
# whose data is redistributed under the Creative Commons Attribution-ShareAlike 4.0 licence
# (https://creativecommons.org/licenses/by-sa/4.0/); so is this file. wordfreq's English
# figures draw on Google Books Ngrams (http://books.google.com/ngrams), the Leeds Internet
# Corpus, Wikipedia, ParaCrawl, OpenSubtitles, Twitter, Reddit and SUBTLEX (Brysbaert, New
# et al.; SUBTLEX is freely available data).
"""


def main() -> int:
    from wordfreq import top_n_list, zipf_frequency

    best: dict[str, int] = {}
    for word in top_n_list("en", 200_000):
        if not word.isascii() or not word.isalpha():
            continue
        zipf = zipf_frequency(word, "en")
        if zipf < MIN_ZIPF:
            continue
        key = stem(word)
        best[key] = max(best.get(key, 0), round(zipf * 10))
    lines = [f"{key}\t{best[key]}" for key in sorted(best)]
    OUT.write_text(NOTICE + "\n".join(lines) + "\n", encoding="utf-8", newline="\n")
    print(f"{len(best)} stems -> {OUT} ({OUT.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
