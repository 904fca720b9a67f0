"""Private context (issue 18): a shared session never sees the owner's private memory."""

from evoclaw_memory.tiers import privacy


def _owner_with_secrets(mem):
    mem.update_hot("owner_profile", {"family": "daughter Luna, 7", "timezone": "Europe/London"})
    mem.update_hot("lesson", {"text": "Never give Luna anything with peanuts", "importance": 0.9,
                              "category": "health"})
    mem.update_hot("event", {"text": "Book club on Thursday", "when": "2026-12-12 19:00"})
    allergy = mem.remember("Sam has a severe peanut allergy and carries an EpiPen",
                           category="general", importance=0.9)
    pin = mem.remember("Sam's bank card PIN is 4712", category="general", importance=0.9)
    open_fact = mem.remember("Sam's favourite peanut-free snack shop is on Mill Road",
                             category="food", private=False)
    return allergy, pin, open_fact


def test_shared_context_holds_neither_the_allergy_nor_the_pin(mem):
    allergy, pin, open_fact = _owner_with_secrets(mem)
    assert allergy.private and pin.private and not open_fact.private
    shared = mem.context("peanut allergy bank PIN snack", audience="shared")
    for secret in ("allergy", "EpiPen", "4712", "PIN", "Luna", "Europe/London"):
        assert secret not in shared, secret
    assert "Mill Road" in shared and "Book club" in shared
    assert "private item(s) of the owner's left out" in shared
    owner = mem.context("peanut allergy bank PIN snack")
    assert "4712" in owner and "EpiPen" in owner and "Luna" in owner
    assert "Luna" in mem.config.memory_md_path.read_text()      # the file stays the owner's


def test_shared_retrieval_never_returns_a_private_fact(mem):
    _owner_with_secrets(mem)
    for i in range(30):
        mem.remember(f"Sam's health note {i}: peanut test {i} came back", category="health")
    for query in ("peanut", "PIN bank card", "health note peanut test"):
        results = mem.retrieve(query, limit=10, audience="shared")
        assert all(not r.fact.private for r in results)
    assert [r.fact.text for r in mem.retrieve("peanut", audience="shared")] == [
        "Sam's favourite peanut-free snack shop is on Mill Road"]


def test_owner_marks_privacy_and_defaults_by_category():
    assert privacy.default_private("health/allergies", "likes apples")
    assert privacy.default_private("owner/family", "anything")
    assert privacy.default_private("general", "我的银行密码是1234")
    assert not privacy.default_private("projects/garden", "the vent opens at 24 degrees")
    assert not privacy.default_private("owner/finance", "x", given=False)


def test_mark_private_and_edit_flow(mem):
    fact = mem.remember("The greenhouse vent opens at 24 degrees", category="projects/garden")
    assert not fact.private
    mem.mark_private(fact.id)
    assert mem.retrieve("greenhouse vent", audience="shared") == []
    assert mem.get(fact.id).private
    mem.mark_private(fact.id, False)
    assert mem.retrieve("greenhouse vent", audience="shared")
