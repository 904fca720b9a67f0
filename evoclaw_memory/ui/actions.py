"""The actions (POST routes): each calls the Memory method the CLI calls for the same
change, as the actor `owner:ui` (so the audit log says the owner did it from the page), and
answers with a redirect to the page that shows the result (a reload repeats nothing).

A change goes into the outbox like any other and reaches the cloud and the other devices
at the next sync (`serve`'s heartbeat, or "Sync now" on the Sync page)."""

from __future__ import annotations

from typing import Any

from starlette.responses import Response

from evoclaw_memory.errors import NotFoundError, ValidationError
from evoclaw_memory.ui import ACTOR, params
from evoclaw_memory.ui.app import View


def _id(v: View) -> str:
    return v.path["fact_id"]


def _back(v: View, done: str) -> Response:
    return v.redirect(f"/facts/{_quote(_id(v))}", done=done)


def _quote(value: str) -> str:
    from urllib.parse import quote
    return quote(value, safe="")


# -- a fact ----------------------------------------------------------------------------------

def edit(v: View) -> Response:
    """Only what the form changed is passed on (an unchanged field is not an edit)."""
    fact = v.mem.get(_id(v))
    changes: dict[str, Any] = {}
    text = v.arg("text")
    if text and text != fact.text:
        changes["text"] = text
    category = v.arg("category")
    if category and category != fact.category:
        changes["category"] = category
    importance = v.arg("importance")
    if importance:
        try:
            value = float(importance)
        except ValueError:
            raise ValidationError(f"importance must be a number from 0 to 1, not "
                                  f"{importance[:20]!r}") from None
        if value != fact.importance:
            changes["importance"] = value
    meta = {"urls": params.lines(v.arg("urls")), "commands": params.lines(v.arg("commands")),
            "paths": params.lines(v.arg("paths"))}
    if "urls" in v.form and meta != {"urls": fact.metadata.urls,
                                     "commands": fact.metadata.commands,
                                     "paths": fact.metadata.paths}:
        changes["metadata"] = meta
    if not changes:
        return _back(v, "unchanged")
    v.mem.edit(fact.id, by=ACTOR, **changes)
    return _back(v, "edited")


def pin(v: View) -> Response:
    v.mem.pin(_id(v), by=ACTOR)
    return _back(v, "pinned")


def unpin(v: View) -> Response:
    v.mem.unpin(_id(v), by=ACTOR)
    return _back(v, "unpinned")


def private(v: View) -> Response:
    v.mem.mark_private(_id(v), True, by=ACTOR)
    return _back(v, "private")


def shared(v: View) -> Response:
    v.mem.mark_private(_id(v), False, by=ACTOR)
    return _back(v, "shared")


def supersede(v: View) -> Response:
    newer = v.arg("by")
    if not newer:
        raise ValidationError("give the id of the fact that replaces this one")
    v.mem.supersede(_id(v), newer, by=ACTOR)
    return _back(v, "superseded")


def forget(v: View) -> Response:
    """Erases only with the confirmation's field: a bare POST shows the confirmation."""
    fact = v.mem.get(_id(v))
    if v.arg("confirm") != "yes":
        return v.render("confirm_forget.html", fact=fact)
    v.mem.forget(fact.id, by=ACTOR)
    v.mem.store.erase_forgotten_words()     # its words leave the full-text files now
    return v.redirect("/facts", done="forgotten")


# -- tree, proposals -------------------------------------------------------------------------

def tree_move(v: View) -> Response:
    moved = v.mem.tree_move(v.arg("old"), v.arg("new"), by=ACTOR)
    return v.redirect("/tree", done="moved", n=moved)


def accept(v: View) -> Response:
    v.mem.accept(v.path["proposal_id"], by=ACTOR)
    return v.redirect("/proposals", done="accepted")


def reject(v: View) -> Response:
    v.mem.reject(v.path["proposal_id"], reason=v.arg("reason"), by=ACTOR)
    return v.redirect("/proposals", done="rejected")


# -- sync and devices ------------------------------------------------------------------------

def sync_now(v: View) -> Response:
    v.state.last_report = _sync_line(v.mem.sync())
    return v.redirect("/sync", done="synced")


def sync_verify(v: View) -> Response:
    """As `sync --verify`: check, sync (re-pushing what the cloud lost), check again."""
    mem = v.mem
    found = mem.verify_cloud()
    report = mem.sync()
    again = mem.verify_cloud(repair=False) if found.requeued else found
    depth = mem.store.outbox_depth()
    still = again.missing + int(again.state_missing)
    lost = (f"the cloud had lost {found.missing} fact(s)"
            f"{' and the critical state' if found.state_missing else ''}; re-pushed"
            if found.requeued else "the cloud holds everything this device acknowledged")
    verdict = "verified" if depth == 0 and still == 0 else "NOT verified"
    v.state.last_report = (f"{verdict}: checked {found.buckets} day(s) of facts: {lost}; "
                           + _sync_line(report)
                           + (f"; the cloud still lacks {again.missing} fact(s)"
                              if again.missing else ""))
    return v.redirect("/sync", done="verified")


def _sync_line(report: Any) -> str:
    return (f"pushed {report.pushed_facts} fact(s), pulled {report.pulled_facts}; remote "
            f"version {report.remote_version}; outbox {report.outbox_depth}"
            + (f"; {report.rejected} entries refused by the cloud, set aside"
               if report.rejected else ""))


def _device(v: View) -> str:
    return v.path["device_id"]


def rename_device(v: View) -> Response:
    device = _device(v)
    if not v.mem.rename_device(device, v.arg("name")):
        raise NotFoundError(f"no device {device!r} for agent {v.mem.agent_id}")
    _audit(v, "device.rename", device)
    v.state.devices = None
    return v.redirect("/sync", done="renamed")


def revoke_device(v: View) -> Response:
    """The CLI's guard: this device only with its own box ticked (`--this-device`), and any
    device only with the confirmation box (the terminal's question)."""
    device = _device(v)
    me = v.mem.sync_status()["device_id"]
    if device == me and v.arg("this_device") != "yes":
        raise ValidationError(f"{device} is this device: revoking it wipes this memory at the "
                              "next sync; tick 'this device' if that is what you want")
    if v.arg("confirm") != "yes":
        raise ValidationError("revoking a device cannot be undone: tick the confirmation box")
    if not v.mem.revoke_device(device):
        raise NotFoundError(f"no active device {device!r} for agent {v.mem.agent_id}")
    _audit(v, "device.revoke", device)
    v.state.devices = None
    return v.redirect("/sync", done="revoked")


def _audit(v: View, op: str, target: str, detail: str = "") -> None:
    """The device commands leave no audit row of their own; the page records who asked."""
    store = v.mem.store
    with store.transaction():
        store.audit(op, target, f"{detail} actor={ACTOR}".strip(), v.mem.clock())


# -- forget by description -------------------------------------------------------------------

def forget_matching(v: View) -> Response:
    """Erases exactly the facts the owner saw listed: if the matches changed since (a new
    fact arrived), the new list is shown again and nothing is erased."""
    query, category = v.arg("q"), v.arg("category") or None
    found = v.mem.forget_matching(query, category=category, dry_run=True)
    seen = set(params.lines(v.arg("ids")))
    if v.arg("confirm") != "yes" or {f.id for f in found} != seen:
        return v.render("forget.html", query=query, category=category or "", found=found,
                        changed=v.arg("confirm") == "yes", count="")
    gone = v.mem.forget_matching(query, category=category, dry_run=False, by=ACTOR)
    v.mem.store.erase_forgotten_words()
    return v.redirect("/forget", done="forgotten", n=len(gone))


ROUTES = [("POST", f"/facts/{{fact_id}}/{name}", fn) for name, fn in
          (("edit", edit), ("pin", pin), ("unpin", unpin), ("private", private),
           ("shared", shared), ("supersede", supersede), ("forget", forget))] + [
    ("POST", "/tree/move", tree_move),
    ("POST", "/proposals/{proposal_id}/accept", accept),
    ("POST", "/proposals/{proposal_id}/reject", reject),
    ("POST", "/sync/now", sync_now), ("POST", "/sync/verify", sync_verify),
    ("POST", "/sync/devices/{device_id}/rename", rename_device),
    ("POST", "/sync/devices/{device_id}/revoke", revoke_device),
    ("POST", "/forget", forget_matching)]
