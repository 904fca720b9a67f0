"""A cloud row's two decoders: the inline one for the usual row (cloud.codec._usual_row_fact,
what a mirror of 100,000 rows runs) must give exactly the Fact the full checks give
(_checked_row_fact), or give up (None) and leave the row to them. Never a Fact where the
full checks refuse the row: that would store a value no other entry point lets in."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evoclaw_memory.cloud.codec import _checked_row_fact, _usual_row_fact, fact_from_row
from evoclaw_memory.errors import ValidationError

_BIG = 2 ** 63
_EPOCH_MAX = 32_503_680_000
# Every column's usual values and the edges of each check: types, ranges, NUL, lone
# surrogates, lengths, NaN and infinities, milliseconds, bools (which are ints in Python).
_IDS = ["f1", "a" * 64, "a" * 65, "", "é", "x\x00", "\ud800", 7, None, b"f1", True]
_TEXTS = ["Biscuit is allergic to chicken", "陈莉 likes tea", "£5 for the café", "", "a\x00b",
          "bad \udcff byte", "x" * 5000, 3, None]
_CATEGORIES = ["home/pets", "Home/Pets", "ｈｏｍｅ", "a/b/c/d/e", "bad path!", "", 5, None]
_NUMBERS = [0, 1, 0.0, 0.5, 1.0, 1.5, -0.1, math.nan, math.inf, -math.inf, True, False,
            1_700_000_000, 1_700_000_000.5, 1_700_000_000_000, _EPOCH_MAX - 1, _EPOCH_MAX,
            32_503_680_000_000_000, _BIG, -1, None, "0.5", 3]
_METADATA = [None, "", "{}", '{"urls": ["https://x.dev"]}', '{"urls": [1]}', "not json",
             '{"commands": ["make test"], "paths": ["/etc/x"]}']
_SOURCES = ["manual", "bench", "", None, "s" * 65, 1]
_LINKS = [None, "f2", "", "x" * 65, 2]
_FLAGS = [0, 1, 2, 3, 4, -1, None, True, 1.0, "1"]
_SPEAKERS = [None, "", "Caroline", "two\nlines", 9]

_COLUMNS = [_IDS, _TEXTS, _CATEGORIES, _NUMBERS, _NUMBERS, _NUMBERS, _METADATA, _SOURCES,
            _NUMBERS, _LINKS, _FLAGS, _NUMBERS, _NUMBERS, _NUMBERS, _SPEAKERS, _NUMBERS]
# A row this library writes, each column a usual value of its own.
_USUAL = [["f1", "a" * 64], _TEXTS[:3], _CATEGORIES[:3], [0.5, 1.0, None],
          [1_700_000_000, 0, None], [0, 3, None], _METADATA[:4] + _METADATA[6:], ["manual", None],
          [1_700_000_000.5, 0, None], [None, "f2"], [0, 3, None], [0, 1_700_000_000.5],
          [0, 1_700_000_000], [0.0, 1_700_000_000.25], [None], [0, 1_700_000_000.75]]


@st.composite
def _rows(draw) -> tuple:
    """A usual row with up to three columns set to any value of their list (the edges): most
    rows differ from a good one in one place, where a wrong inline test would show."""
    row = [draw(st.sampled_from(usual)) for usual in _USUAL]
    for column in draw(st.lists(st.integers(0, len(_COLUMNS) - 1), max_size=3)):
        row[column] = draw(st.sampled_from(_COLUMNS[column]))
    return tuple(row)


def _checked(row: tuple):
    try:
        return _checked_row_fact(row)
    except ValidationError:
        return "refused"


@settings(max_examples=4000, deadline=None)
@given(_rows())
def test_the_usual_row_decoder_agrees_with_the_full_checks_or_gives_up(row):
    fast = _usual_row_fact(row)
    if fast is not None:
        assert _checked(row) == fast, row


def test_the_generated_rows_reach_both_decoders():
    # (the property above would pass vacuously if the fast path never answered)
    fast = refused = 0

    @settings(max_examples=500, deadline=None, database=None)
    @given(_rows())
    def count(row):
        nonlocal fast, refused
        fast += _usual_row_fact(row) is not None
        refused += _checked(row) == "refused"

    count()
    assert fast > 100 and refused > 50, (fast, refused)


@pytest.mark.parametrize("n_columns", [10, 11, 12, 14, 15])
def test_rows_of_older_cloud_schemas_take_the_full_checks(n_columns):
    row = ("f1", "Biscuit is allergic to chicken", "home/pets", 0.5, 1_700_000_000, 0, "{}",
           "manual", 1_700_000_000.0, None, 1, 0, 0, 0, None)[:n_columns]
    assert _usual_row_fact(row) is None
    assert fact_from_row(row) == _checked_row_fact(row)


def test_the_usual_rows_of_a_mirror_take_the_fast_path_and_keep_every_field():
    # The rows this library writes (what the fast path is for), one of each kind.
    rows = [("f1", "Biscuit is allergic to chicken", "home/pets", 0.8, 1_700_000_000, 2,
             '{"urls": ["https://vet.example"]}', "manual", 1_700_000_100.5, None, 3,
             1_700_000_200.0, 1_700_000_150.0, 1_700_000_200.0, None, 1_700_000_180.0),
            ("f2", "陈莉 likes jasmine tea", "people/friends", None, 1_600_000_000, None, None,
             None, None, "f1", None, None, 0, 0, None, 0)]
    for row in rows:
        fast = _usual_row_fact(row)
        assert fast is not None and fast == _checked_row_fact(row)
    first = _usual_row_fact(rows[0])
    assert (first.pinned, first.private, first.access_count, first.tier) == (True, True, 2, "cold")
    assert first.metadata.urls == ["https://vet.example"] and first.last_access == 1_700_000_100.5
    assert first.superseded_changed_at == 1_700_000_180.0
    second = _usual_row_fact(rows[1])
    assert (second.importance, second.source, second.superseded_by) == (0.5, "legacy", "f1")
