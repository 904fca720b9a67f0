"""The full-text index's segments merged by the daily consolidation (store.fulltext
merge_fulltext): searches find the same facts after the merge, a merged index has nothing
left to merge, and a daily consolidation reports the merge."""

from __future__ import annotations

PETS = ["Biscuit", "Luna", "Pepper", "Mochi", "Ziggy", "Olive"]


def _search(mem, words):
    """Each query's matches with their BM25 scores, as the index itself ranks them (retrieve
    would count its finds as uses, which changes the next ranking)."""
    return [mem.store.conn.execute(
        "SELECT rowid, round(bm25(facts_fts), 9) FROM facts_fts WHERE facts_fts MATCH ? "
        "ORDER BY rank, rowid", (w,)).fetchall() for w in words]


def test_merge_keeps_every_search_and_leaves_one_segment(mem):
    # Several flushes (each a segment of its own): the batch is flushed by every search.
    for round_ in range(6):
        for pet in PETS:
            mem.remember(f"{pet} had her checkup number {round_} at the vet on Elm Street",
                         category="home/pets")
        mem.retrieve("vet checkup")
    words = ["biscuit checkup", "vet AND elm", "mochi", "number AND 3"]
    before = _search(mem, words)
    assert mem.store.merge_fulltext(pages=8) > 0          # segments to merge, several steps
    assert mem.store.merge_fulltext(pages=8) == 0         # one segment: nothing left
    assert all(before) and _search(mem, words) == before
    row = mem.store.conn.execute(
        "SELECT count(*) FROM facts_fts WHERE facts_fts MATCH 'biscuit'").fetchone()[0]
    assert row == 6


def test_daily_consolidation_merges_the_index(mem, clock):
    for pet in PETS:
        mem.remember(f"{pet} sleeps on the blue sofa", category="home/pets")
        mem.retrieve(pet)
    report = mem.consolidate("daily")
    assert report["fulltext_merges"] >= 1
    assert mem.consolidate("daily")["fulltext_merges"] == 0
