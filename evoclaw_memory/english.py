"""What the memory knows about English words, from lists shipped in the package (data/).

- `zipf(term)`: how common a word is in English (wordfreq's Zipf scale; data/zipf_en.txt.gz,
  made by scripts/build_wordfreq.py). The write-time decision weighs words by it, so "live"
  counts for little beside "Leeds" however young the memory is.
- `neighbours(term)`: the words used like it (data/neighbours.tsv.gz, made by
  scripts/build_neighbours.py from a sentence model, run once at build time: the package
  never loads a model). "teeth" -> "dentist", "yarn" -> "knit", "mother" -> "mum".
- `indexed_lookup(path, term)`: the reader of the member-indexed word lists (this one and
  retrieval's WordNet list): one gzip stream whose first member holds a header and an index
  line ("# index " + JSON: each later member's first key, offset, length), each later member
  ~16 KB of lines "key<TAB>word<TAB>columns...", sorted by key. A lookup decompresses one
  member (~0.2 ms) where parsing a whole list costs 40-100 ms, which a CLI call would pay.

Keys are text.stem forms (computed when the lists were built). Pure reads, each list once per
process; no state beyond those caches.
"""

from __future__ import annotations

import bisect
import functools
import gzip
from pathlib import Path
from typing import Optional

INDEX_PREFIX = "# index "
DATA = Path(__file__).with_name("data")
ZIPF_FILE = DATA / "zipf_en.txt.gz"
NEIGHBOURS_FILE = DATA / "neighbours.tsv.gz"
# Zipf frequency (log10 per billion words) of a word missing from the list: rarer than its
# cut-off (3.0).
UNLISTED_ZIPF = 2.5


def _read(path: Path) -> bytes:
    if path.is_file():              # the usual install: a plain file beside the module
        return path.read_bytes()
    from importlib import resources    # a zipped install
    inside = path.relative_to(Path(__file__).parent)
    return resources.files("evoclaw_memory").joinpath(*inside.parts).read_bytes()


@functools.cache
def _members(path: Path) -> tuple[list[str], list[tuple[int, int]], bytes]:
    """(first key of each member, (offset, length) of each, the bytes after the header)."""
    import json
    import zlib
    raw = _read(path)
    head = zlib.decompressobj(wbits=31)          # gzip: the first member only
    header = head.decompress(raw).decode("utf-8")
    line = next(ln for ln in header.splitlines() if ln.startswith(INDEX_PREFIX))
    index = json.loads(line[len(INDEX_PREFIX):])
    return [k for k, _, _ in index], [(o, n) for _, o, n in index], head.unused_data


@functools.cache
def member(path: Path, i: int) -> dict[str, tuple[str, ...]]:
    """key -> its columns after the word, for every line of member `i` of a list."""
    import zlib
    _, spans, rest = _members(path)
    offset, length = spans[i]
    out: dict[str, tuple[str, ...]] = {}
    for line in zlib.decompress(rest[offset:offset + length], wbits=31).decode("utf-8").splitlines():
        key, _word, *columns = line.split("\t")
        out[key] = tuple(columns)
    return out


def member_keys(path: Path) -> tuple[list[str], int]:
    """(first key of each member, number of members) of a list."""
    keys, spans, _ = _members(path)
    return keys, len(spans)


def indexed_lookup(path: Path, term: str) -> Optional[tuple[str, ...]]:
    """The columns of `term`'s line in a member-indexed list, or None."""
    keys, _, _ = _members(path)
    i = bisect.bisect_right(keys, term) - 1
    return member(path, i).get(term) if i >= 0 else None


@functools.cache
def _zipf_table() -> dict[str, float]:
    """stem -> Zipf frequency, read once."""
    table: dict[str, float] = {}
    for line in gzip.decompress(_read(ZIPF_FILE)).decode("utf-8").splitlines():
        if not line or line.startswith("#"):
            continue
        value, _, stems = line.partition("\t")
        zipf_value = int(value) / 10
        for stem in stems.split():
            table.setdefault(stem, zipf_value)
    return table


def zipf(term: str) -> float:
    """How common a (stemmed) English term is, on the Zipf scale (UNLISTED_ZIPF if rare)."""
    return _zipf_table().get(term, UNLISTED_ZIPF)


@functools.lru_cache(maxsize=4096)
def neighbours(term: str) -> tuple[tuple[float, str], ...]:
    """(similarity 0..1, stem) of the words used like `term` (a stem), nearest first."""
    columns = indexed_lookup(NEIGHBOURS_FILE, term)
    if not columns:
        return ()
    out = []
    for item in columns[-1].split():
        word, _, tenths = item.rpartition(":")
        if word and tenths.isdigit():
            out.append((int(tenths) / 10, word))
    return tuple(out)
