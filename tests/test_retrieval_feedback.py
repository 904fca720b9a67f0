"""Gated pseudo-relevance feedback (issue 18, multi-hop without an LLM): a confident first
result's rarest words rank up the other facts about the same thing, and add no relevance.

Real SQLite stores; no LLM.
"""

from evoclaw_memory.retrieval import retriever

DAY = 86_400


def _load(mem, clock):
    parade = mem.remember("Caroline marched in the Pride parade with the Rainbow Riders cycling club",
                          created_at=clock.now - 30 * DAY)
    club = mem.remember("Caroline says the Rainbow Riders cycling club meets on Tuesday nights",
                        created_at=clock.now - 90 * DAY)
    tea = mem.remember("Caroline likes green tea", created_at=clock.now - 2 * DAY)
    site = mem.remember("The Rainbow Riders cycling club has a new website", created_at=clock.now - DAY)
    for i, text in enumerate(["Melanie paints on Sundays", "The car is due its MOT in May",
                              "Melanie's kids love the dinosaur museum", "The boiler is serviced yearly"]):
        mem.remember(text, created_at=clock.now - (i + 3) * DAY)
    return parade, club, tea, site


QUERY = "Where did Caroline march in the Pride parade?"


def test_a_confident_first_result_ranks_up_the_facts_about_the_same_thing(mem, clock):
    parade, club, tea, site = _load(mem, clock)
    ids = [h.fact.id for h in mem.retrieve(QUERY)]
    assert ids[0] == parade.id
    assert ids.index(club.id) < ids.index(tea.id)
    # Feedback words add rank, never relevance: a fact holding none of the query's words
    # (only the club's name) does not come back.
    assert site.id not in ids


def test_without_feedback_the_other_fact_stays_below(mem, clock, monkeypatch):
    parade, club, tea, _ = _load(mem, clock)
    monkeypatch.setattr(retriever, "FEEDBACK_RELEVANCE", 2.0)     # the gate never opens
    ids = [h.fact.id for h in mem.retrieve(QUERY)]
    assert ids[0] == parade.id and ids.index(tea.id) < ids.index(club.id)


def test_an_unconfident_first_result_gives_no_feedback(mem, clock):
    # Two facts match equally well: the first outranks the second by less than the margin.
    mem.remember("Caroline marched in the Pride parade with the Rainbow Riders", created_at=clock.now - 30 * DAY)
    mem.remember("Caroline marched in the Pride parade with her choir", created_at=clock.now - 31 * DAY)
    mem.remember("The Rainbow Riders meet on Tuesdays", created_at=clock.now - DAY)
    r = mem.retriever()
    calls = []
    original = r._feedback

    def spy(ranked, q, df, rows):
        calls.append(original(ranked, q, df, rows))
        return calls[-1]

    r._feedback = spy
    r.retrieve(QUERY)
    assert calls == [False]
