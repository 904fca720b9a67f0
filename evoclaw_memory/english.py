"""What the memory knows about English words, from lists shipped in the package (data/).

- `zipf(term)`: how common a word is in English (wordfreq's Zipf scale; data/zipf_en.tsv,
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

import functools
from pathlib import Path
from typing import Optional

INDEX_PREFIX = "# index "
DATA = Path(__file__).with_name("data")
ZIPF_FILE = DATA / "zipf_en.tsv"
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


# A member-indexed list's header member is ~2.5 KB compressed: a lookup reads the start of
# the file and then its one member, not the whole list (~800 KB).
HEAD_READ = 1 << 16


def _read_span(path: Path, start: int, length: Optional[int]) -> bytes:
    """`length` bytes of the list at `start` (to the end when None)."""
    if not path.is_file():
        whole = _read(path)
        return whole[start:] if length is None else whole[start:start + length]
    with open(path, "rb") as f:
        f.seek(start)
        return f.read() if length is None else f.read(length)


@functools.cache
def _members(path: Path) -> tuple[list[str], list[tuple[int, int]], int]:
    """(first key of each member, (offset, length) of each, where the members start)."""
    import zlib

    import msgspec                  # loaded already (the models), where json is not
    raw = _read_span(path, 0, HEAD_READ)
    head = zlib.decompressobj(wbits=31)          # gzip: the first member only
    header = head.decompress(raw)
    if not head.eof:                             # a header longer than HEAD_READ
        raw = _read_span(path, 0, None)
        head = zlib.decompressobj(wbits=31)
        header = head.decompress(raw)
    line = next(ln for ln in header.decode("utf-8").splitlines() if ln.startswith(INDEX_PREFIX))
    index = msgspec.json.decode(line[len(INDEX_PREFIX):])
    start = len(raw) - len(head.unused_data)
    return [k for k, _, _ in index], [(o, n) for _, o, n in index], start


@functools.cache
def member(path: Path, i: int) -> dict[str, tuple[str, ...]]:
    """key -> its columns after the word, for every line of member `i` of a list."""
    import zlib
    _, spans, start = _members(path)
    offset, length = spans[i]
    out: dict[str, tuple[str, ...]] = {}
    data = _read_span(path, start + offset, length)
    for line in zlib.decompress(data, wbits=31).decode("utf-8").splitlines():
        key, _word, *columns = line.split("\t")
        out[key] = tuple(columns)
    return out


def member_keys(path: Path) -> tuple[list[str], int]:
    """(first key of each member, number of members) of a list."""
    keys, spans, _ = _members(path)
    return keys, len(spans)


def indexed_lookup(path: Path, term: str) -> Optional[tuple[str, ...]]:
    """The columns of `term`'s line in a member-indexed list, or None."""
    import bisect                   # here: a `retrieve` rarely gets this far (~0.27 ms)
    keys, _, _ = _members(path)
    i = bisect.bisect_right(keys, term) - 1
    return member(path, i).get(term) if i >= 0 else None


def sorted_lines(text: str) -> tuple[str, int]:
    """A sorted word list's text and where its lines start, after the "#" notice lines."""
    body = 0
    while text.startswith("#", body):
        body = text.find("\n", body) + 1 or len(text)
    return text, body


def first_line_from(text: str, body: int, key: str) -> int:
    """Where the first line whose word (before its tab) is >= `key` starts, by bisection over
    the lines from `body` (sorted by that word, in code point order: Python's string order);
    len(text) when there is none. What a fresh process reads a word list with: no parse of
    the whole list (data/zipf_en.tsv here, retrieval's crosslang_words.tsv)."""
    lo, hi = body, len(text)        # lo and hi are always the starts of lines (or the end)
    while lo < hi:
        mid = (lo + hi) // 2
        start = max(lo, text.rfind("\n", lo, mid) + 1)
        end = text.find("\n", start)
        end = len(text) if end == -1 else end
        if text[start:end].partition("\t")[0] < key:
            lo = end + 1
        else:
            hi = start
    return min(lo, len(text))


@functools.cache
def _zipf_text() -> tuple[str, int]:
    """The list's text ("stem<TAB>figure" lines sorted by stem) and where its lines start."""
    return sorted_lines(_read(ZIPF_FILE).decode("utf-8"))


@functools.cache
def _zipf_table() -> dict[str, float]:
    """stem -> Zipf frequency, read once."""
    text, body = _zipf_text()
    table: dict[str, float] = {}
    for line in text[body:].splitlines():
        stem, _, value = line.partition("\t")
        table[stem] = int(value) / 10
    return table


# The whole table costs ~5 ms to build (19,500 stems); a CLI `retrieve` asks for a dozen
# query words. So the first ZIPF_LOOKUPS_BEFORE_TABLE words are found by bisection in the
# list's text instead (~20 µs each), and the table is built only for a caller that asks for
# more (the write-time decision over many facts).
ZIPF_LOOKUPS_BEFORE_TABLE = 64


@functools.lru_cache(maxsize=ZIPF_LOOKUPS_BEFORE_TABLE)
def _zipf_lookup(term: str) -> float:
    """What _zipf_table().get(term, UNLISTED_ZIPF) gives, from the line first_line_from
    finds."""
    text, body = _zipf_text()
    start = first_line_from(text, body, term)
    end = text.find("\n", start)
    stem, _, value = text[start:len(text) if end == -1 else end].partition("\t")
    return int(value) / 10 if stem == term and value else UNLISTED_ZIPF


def zipf(term: str) -> float:
    """How common a (stemmed) English term is, on the Zipf scale (UNLISTED_ZIPF if rare)."""
    if _zipf_table.cache_info().currsize:
        return _zipf_table().get(term, UNLISTED_ZIPF)
    if _zipf_lookup.cache_info().currsize < ZIPF_LOOKUPS_BEFORE_TABLE:
        return _zipf_lookup(term)
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
