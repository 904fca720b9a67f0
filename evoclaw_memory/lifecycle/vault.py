"""The vault and privacy marks on the Memory API (issue 18): validation, then store.vault.

`VaultControl` is a mixin of Memory: pin and unpin (pinned facts never decay, are never
evicted from the device and have their own cap, `[vault] max_bytes`), the vault's listing,
and marking a fact private or shared (a shared session never sees a private fact).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Optional

from evoclaw_memory import validate
from evoclaw_memory.errors import NotFoundError
from evoclaw_memory.lifecycle.control import actor as check_actor
from evoclaw_memory.lifecycle.control import fact_id as check_id
from evoclaw_memory.models import Fact

if TYPE_CHECKING:
    from evoclaw_memory.config import Config
    from evoclaw_memory.store.vault import VaultKeeper
    from evoclaw_memory.store.local import LocalStore


class VaultControl:
    """Memory's vault and privacy methods (mixed into Memory)."""

    store: "LocalStore"
    config: "Config"
    clock: Callable[[], float]
    actor: str

    @property
    def vault(self) -> VaultKeeper:
        # Imported here: Memory's import (every CLI command) skips it (issue 29).
        from evoclaw_memory.store.vault import VaultKeeper
        return VaultKeeper(self.store)

    def _fact(self, fact_id_: Any) -> Fact:
        fid = check_id(fact_id_)
        fact = self.store.get_fact(fid)
        if fact is None:
            raise NotFoundError(f"no fact {fid!r}")
        return fact

    def _settle_remembered(self, fact: Fact, pinned: bool, private: Optional[bool],
                           who: str) -> Fact:
        """remember() of a fact already stored reinforces it; a pin or a privacy mark given
        with it still applies (saying "remember forever" again pins the fact it names)."""
        if pinned and not fact.pinned:
            fact = self.vault.pin(fact, who, self.clock(), self.config.vault_max_bytes)
        if private is not None and fact.private != private:
            fact = self.vault.set_private(fact, private, who, self.clock())
        return fact

    def pin(self, fact_id_: str, *, by: str = "") -> Fact:
        """Put a fact in the vault: it never decays and never leaves the device (LimitError
        past the vault's cap, [vault] max_bytes, 8 KB by default)."""
        who = check_actor(by or self.actor)
        return self.vault.pin(self._fact(fact_id_), who, self.clock(),
                              self.config.vault_max_bytes)

    def unpin(self, fact_id_: str, *, by: str = "") -> Fact:
        """Take a fact out of the vault: from now on it decays like any other."""
        return self.vault.unpin(self._fact(fact_id_), check_actor(by or self.actor), self.clock())

    def pinned(self) -> list[Fact]:
        """The vault's facts, oldest pin first."""
        by_id = {f.id: f for f in self.store.facts_by_ids(self.vault.pinned())}
        return [by_id[i] for i in self.vault.pinned() if i in by_id]

    def vault_status(self) -> dict[str, int]:
        """Bytes and facts in the vault, and its cap."""
        return {"bytes": self.vault.vault_bytes(), "max_bytes": self.config.vault_max_bytes,
                "facts": len(self.vault.pinned())}

    def mark_private(self, fact_id_: str, private: bool = True, *, by: str = "") -> Fact:
        """Mark a fact private (owner's sessions only) or shared (private=False)."""
        flag = validate.flag("private", private)
        return self.vault.set_private(self._fact(fact_id_), flag,
                                      check_actor(by or self.actor), self.clock())


def came_from(text: str, words: set[str]) -> bool:
    """True when most of the words of a fact's `text` are in a message's `words`: the fact
    was distilled from that message (how a "remember forever" finds the facts it names)."""
    from evoclaw_memory.text import query_terms
    terms = set(query_terms(text))
    return bool(terms) and len(terms & words) * 2 >= len(terms)


def pin_requests(messages: Any) -> list[set[str]]:
    """The words of each owner's "remember forever" / "never forget" message."""
    from evoclaw_memory.distill.triggers import find_pin_requests
    from evoclaw_memory.text import query_terms
    return [set(query_terms(said)) for said in find_pin_requests(messages)]


def pin_on_request(mem: VaultControl, messages: Any, stored: list[Fact]) -> dict[str, list]:
    """Pin the facts this conversation stored from an owner's "remember forever" / "never
    forget" message (distill.triggers): a fact most of whose words the message holds came
    from it. Past the vault's cap the pin is reported, not raised: the facts are stored."""
    from evoclaw_memory.errors import LimitError
    pinned: list[str] = []
    refused: list[dict[str, str]] = []
    for words in pin_requests(messages):
        for fact in stored:
            if fact.id in pinned or not came_from(fact.text, words):
                continue
            try:
                mem.pin(fact.id, by="bot:trigger-remember")
                pinned.append(fact.id)
            except LimitError as exc:
                refused.append({"fact_id": fact.id, "reason": str(exc)})
    return {"pinned": pinned, "pin_refused": refused}
