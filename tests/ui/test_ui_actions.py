"""Each action of the owner's window: its effect on the memory, its audit line (actor
`owner:ui`) and its outbox entry (it syncs like any change) — issue 28, item 2."""

from __future__ import annotations

from evoclaw_memory.ui import ACTOR


def _outbox(mem, kind, ref):
    return mem.store.conn.execute("SELECT count(*) FROM outbox WHERE kind = ? AND ref = ?",
                                  (kind, ref)).fetchone()[0]


def test_edit_changes_the_fact_keeps_the_old_version_and_is_audited(page):
    fact = page.mem.remember("Owner drinks tea", category="owner/preferences")
    response = page.post(f"/facts/{fact.id}/edit", text="Owner drinks green tea",
                         category="owner/drinks", importance="0.9", urls="https://tea.example",
                         commands="", paths="")
    assert response.status_code == 303
    assert response.headers["location"] == f"/facts/{fact.id}?done=edited"
    now = page.mem.get(fact.id)
    assert (now.text, now.category, now.importance) == ("Owner drinks green tea",
                                                         "owner/drinks", 0.9)
    assert now.metadata.urls == ["https://tea.example"]
    assert page.mem.history(fact.id).versions[0].text == "Owner drinks tea"
    assert page.audit("edit", fact.id).endswith(f"actor={ACTOR}")
    assert _outbox(page.mem, "fact", fact.id) == 1
    shown = page.get(f"/facts/{fact.id}?done=edited").text
    assert "Saved" in shown and "Owner drinks tea" in shown          # the old version listed


def test_an_edit_that_changes_nothing_is_not_an_edit(page):
    fact = page.mem.remember("Owner drinks tea", category="owner/preferences")
    response = page.post(f"/facts/{fact.id}/edit", text=fact.text, category=fact.category,
                         importance=str(fact.importance), urls="", commands="", paths="")
    assert response.headers["location"].endswith("done=unchanged")
    assert page.audit("edit") is None


def test_pin_and_unpin(page):
    fact = page.mem.remember("The safe code is in the blue book", category="home")
    assert page.post(f"/facts/{fact.id}/pin").status_code == 303
    assert page.mem.get(fact.id).pinned
    assert page.audit("pin", fact.id).endswith(f"actor={ACTOR}")
    assert "Unpin" in page.get(f"/facts/{fact.id}").text
    page.post(f"/facts/{fact.id}/unpin")
    assert not page.mem.get(fact.id).pinned
    assert page.audit("unpin", fact.id) == f"actor={ACTOR}"


def test_private_and_shared(page):
    fact = page.mem.remember("Owner plays chess on Sundays", category="hobbies", private=False)
    page.post(f"/facts/{fact.id}/private")
    assert page.mem.get(fact.id).private
    assert page.audit("private", fact.id) == f"actor={ACTOR}"
    page.post(f"/facts/{fact.id}/shared")
    assert not page.mem.get(fact.id).private
    assert page.audit("shared", fact.id) == f"actor={ACTOR}"


def test_supersede(page):
    old = page.mem.remember("Owner lives in Leeds", category="owner/home")
    new = page.mem.remember("Owner lives in York", category="owner/home")
    assert page.post(f"/facts/{old.id}/supersede", by=new.id).status_code == 303
    assert page.mem.get(old.id).superseded_by == new.id
    assert page.audit("supersede", old.id) == f"by {new.id} actor={ACTOR}"
    assert page.mem.history(old.id).events[-1].actor == ACTOR
    bad = page.post(f"/facts/{old.id}/supersede", by="no-such-fact")
    assert bad.status_code == 404 and "no fact" in bad.text


def test_forget_asks_first_naming_the_fact_then_erases_it_everywhere(page):
    fact = page.mem.remember("Owner's old gym code is 4411", category="owner/gym")
    confirm = page.get(f"/facts/{fact.id}/forget")
    assert "Owner&#39;s old gym code is 4411" in confirm.text and 'name="confirm"' in confirm.text
    unconfirmed = page.post(f"/facts/{fact.id}/forget")          # no confirmation: only asks
    assert unconfirmed.status_code == 200 and "Forget this fact?" in unconfirmed.text
    assert page.mem.get(fact.id)
    done = page.post(f"/facts/{fact.id}/forget", confirm="yes")
    assert done.status_code == 303 and done.headers["location"] == "/facts?done=forgotten"
    assert page.mem.store.get_fact(fact.id) is None
    assert page.audit("forget", fact.id) == f"actor={ACTOR}"
    assert _outbox(page.mem, "forget", fact.id) == 1                 # the cloud follows
    assert "4411" not in page.get("/facts").text
    gone = page.get(f"/facts/{fact.id}")
    assert gone.status_code == 200 and "Forgotten" in gone.text and "4411" not in gone.text
    assert page.get("/facts/never-known").status_code == 404


def test_tree_move(page):
    a = page.mem.remember("Rex is a beagle", category="home/pets")
    response = page.post("/tree/move", old="home/pets", new="family/animals")
    assert response.status_code == 303
    assert page.mem.get(a.id).category == "family/animals"
    assert page.audit("tree.move", "home/pets") == f"to family/animals (1 facts) actor={ACTOR}"
    tree = page.get("/tree?done=moved").text
    assert "family/animals" in tree and "Category moved" in tree
    assert page.post("/tree/move", old="nowhere", new="x").status_code == 400


def _proposals(home):
    from evoclaw_memory import Memory
    with Memory.open("ui-agent", home=home, actor="subagent:scout") as scout:
        keep = scout.remember("Owner's sister is called Ana", category="family")
        drop = scout.remember("Owner hates Mondays", category="owner/moods")
    return keep, drop


def test_proposals_accept_and_reject_with_a_reason(page, home):
    keep, drop = _proposals(home)
    listed = page.get("/proposals").text
    assert "Owner&#39;s sister is called Ana" in listed and "subagent:scout" in listed
    assert page.post(f"/proposals/{keep.id}/accept").status_code == 303
    accepted = page.mem.proposals(status="accepted")[0]
    assert accepted.decided_by == ACTOR
    assert page.mem.get(accepted.result).text == "Owner's sister is called Ana"
    assert page.audit("proposal.applied").endswith(f"actor={ACTOR}")
    page.post(f"/proposals/{drop.id}/reject", reason="a mood, not a fact")
    rejected = page.mem.proposals(status="rejected")[0]
    assert (rejected.reason, rejected.decided_by) == ("a mood, not a fact", ACTOR)
    assert "No proposal waiting" in page.get("/proposals").text
    assert "a mood, not a fact" in page.get("/proposals?all=yes").text
    again = page.post(f"/proposals/{drop.id}/reject")
    assert again.status_code == 400 and "already rejected" in again.text
    assert page.post("/proposals/no-such/accept").status_code == 404


def test_sync_now_and_verify_empty_the_outbox_through_the_configured_cloud(page):
    page.mem.remember("Owner flies to Lisbon in May", category="travel")
    assert page.mem.store.outbox_depth() > 0
    assert page.post("/sync/now").headers["location"] == "/sync?done=synced"
    assert page.mem.store.outbox_depth() == 0
    shown = page.get("/sync?done=synced").text
    assert "pushed 1 fact(s)" in shown and "Synced." in shown
    page.post("/sync/verify")
    assert "verified: checked" in page.get("/sync").text


def test_devices_rename_and_revoke_with_the_clis_guard_for_this_device(page):
    page.post("/sync/now")                                  # registers this device
    me = page.mem.sync_status()["device_id"]
    assert me in page.get("/sync").text
    assert page.post(f"/sync/devices/{me}/rename", name="kitchen pi").status_code == 303
    assert [d.name for d in page.mem.devices()] == ["kitchen pi"]
    assert page.audit("device.rename", me) == f"actor={ACTOR}"
    refused = page.post(f"/sync/devices/{me}/revoke", confirm="yes")
    assert refused.status_code == 400 and "is this device" in refused.text
    unconfirmed = page.post(f"/sync/devices/{me}/revoke", this_device="yes")
    assert unconfirmed.status_code == 400 and "cannot be undone" in unconfirmed.text
    assert not page.mem.devices()[0].revoked_at
    done = page.post(f"/sync/devices/{me}/revoke", this_device="yes", confirm="yes")
    assert done.status_code == 303
    assert page.mem.devices()[0].revoked_at
    assert page.audit("device.revoke", me) == f"actor={ACTOR}"
    assert page.post("/sync/devices/nope/rename", name="x").status_code == 404


def test_forget_by_description_lists_the_matches_before_erasing(page):
    a = page.mem.remember("The old gym door code is 1234", category="owner/gym")
    b = page.mem.remember("The gym door code changed to 9876", category="owner/gym")
    keep = page.mem.remember("The office door code is 5555", category="work")
    listed = page.get("/forget?q=gym+door+code")
    assert listed.status_code == 200
    assert "2 fact(s) would be forgotten" in listed.text and a.text in listed.text
    assert keep.text not in listed.text
    assert page.mem.store.get_fact(a.id)                     # listing erased nothing
    ids = "\n".join([a.id, b.id])
    response = page.post("/forget", q="gym door code", category="", ids=ids, confirm="yes")
    assert response.status_code == 303
    assert page.mem.store.get_fact(a.id) is None and page.mem.store.get_fact(b.id) is None
    assert page.mem.store.get_fact(keep.id)
    assert page.audit("forget", a.id) == f"actor={ACTOR}"
    assert "2 fact(s) forgotten" in page.get(response.headers["location"]).text


def test_forget_by_description_erases_nothing_when_the_matches_changed(page):
    a = page.mem.remember("The old gym door code is 1234", category="owner/gym")
    page.get("/forget?q=gym+door+code")                      # the owner saw one match
    late = page.mem.remember("The new gym door code is 2468", category="owner/gym")
    response = page.post("/forget", q="gym door code", category="", ids=a.id, confirm="yes")
    assert response.status_code == 200 and "matches changed" in response.text
    assert page.mem.store.get_fact(a.id) and page.mem.store.get_fact(late.id)
