"""Shared read, gated write (issue 18): a sub-agent reads everything and only proposes.

`Memory.open(..., actor="subagent:NAME")` calls `act_as`: that Memory reads as any other, but
its `remember` and `update_hot` become proposals (store, content, confidence, who, when), its
`end_conversation` distills as usual and proposes each fact and hot update it finds, and
every other write is refused. The main agent's Memory lists them (`proposals`), applies one
through the ordinary write path (`accept`: the fact or hot update carries the sub-agent as its
actor) or turns it down with a reason (`reject`). `GateControl` is a mixin of Memory.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Optional, Union

from evoclaw_memory import validate
from evoclaw_memory.errors import ValidationError
from evoclaw_memory.lifecycle.control import actor as check_actor
from evoclaw_memory.models import Fact, HotState, Metadata
from evoclaw_memory.tiers import hot as hot_rules
from evoclaw_memory.tiers import tree as tree_rules

if TYPE_CHECKING:
    from evoclaw_memory.store.local import LocalStore
    from evoclaw_memory.store.proposals import Proposal, ProposalKeeper

SUBAGENT = "subagent:"
# What a propose-only view may not do: every write but the two it turns into proposals.
WRITES = ("supersede", "ingest_daily", "consolidate", "tree_add",
          "tree_remove", "tree_prune", "recount_tree", "tree_move", "edit", "forget",
          "forget_matching", "unsupersede", "import_jsonl", "pin", "unpin", "mark_private",
          "accept", "reject", "sync", "restore", "init_encryption", "reseal",
          "change_passphrase", "rotate_key", "wipe_local", "revoke_device", "rename_device",
          "insert_pulled", "install_state", "bulk_insert", "adopt_remote_state",
          "apply_tombstones", "apply_changes", "write_memory_md", "verify_cloud")
# The confidence of the proposals a sub-agent's end_conversation makes: distillation gives no
# measure of its own, so every one is "as sure as not"; the main agent decides.
DISTILLED_CONFIDENCE = 0.5


def subagent_actor(value: Any) -> str:
    """'subagent:NAME' (NAME: letters, digits, '-', '_', '.'; at most 48)."""
    who = check_actor(value)
    name = who[len(SUBAGENT):] if who.startswith(SUBAGENT) else ""
    if not name or len(name) > 48 or not all(c.isalnum() or c in "-_." for c in name):
        raise ValidationError(f"a sub-agent is named subagent:NAME, not {who!r}")
    return who


def confidence(value: Any) -> float:
    return validate.importance(value, "confidence")


class GateControl:
    """Memory's gated-write methods (mixed into Memory)."""

    store: "LocalStore"
    clock: Callable[[], float]
    actor: str = "manual"           # who this Memory writes as (audit rows carry it)
    gated: bool = False             # True for a sub-agent's propose-only view
    if TYPE_CHECKING:
        def _check_text(self, text: str) -> str: ...
        def remember(self, text: str, category: str = ..., importance: float = ...,
                     created_at: Any = ..., metadata: Any = ..., source: str = ...,
                     pinned: bool = ..., private: Optional[bool] = ..., by: str = ...) -> Fact: ...
        def update_hot(self, key: str, value: Any) -> HotState: ...
        def distill(self, messages: Any, llm: Optional[bool] = ..., at: Any = ...) -> dict: ...
        hot: Any

    @property
    def proposal_keeper(self) -> ProposalKeeper:
        # Imported here: only a sub-agent's proposals need it, not Memory's import (which
        # every CLI command pays; issue 29).
        from evoclaw_memory.store.proposals import ProposalKeeper
        return ProposalKeeper(self.store)

    def act_as(self, actor: str) -> None:
        """Write as `actor` from now on; a sub-agent ('subagent:NAME') only proposes."""
        who = check_actor(actor)
        self.actor = who
        if not who.startswith(SUBAGENT):
            return
        self.actor, self.gated = subagent_actor(who), True
        # Instance attributes shadow the methods: this one Memory object is the view, the
        # main agent's Memory (another object, same database) is untouched.
        for name, view in (("remember", self._propose_remember), ("update_hot", self._propose_hot),
                           ("end_conversation", self._propose_conversation)):
            setattr(self, name, view)
        for name in WRITES:
            setattr(self, name, self._refuser(name))

    def _refuser(self, name: str) -> Callable[..., Any]:
        def refuse(*_args: Any, **_kwargs: Any) -> Any:
            raise ValidationError(f"{self.actor} may read and propose, not {name}; the main agent "
                                  "accepts proposals (`evoclaw-memory proposals list`)")
        return refuse

    # -- proposing ---------------------------------------------------------------------------

    def propose(self, text: str, category: str = "general", importance: float = 0.5, *,
                confidence: float = 0.5, metadata: Optional[Union[Metadata, dict]] = None,
                pinned: bool = False, private: Optional[bool] = None,
                by: str = "", created_at: Any = None) -> Proposal:
        """Propose a fact for the main agent to accept; nothing is stored until then.
        `created_at`: when it was said (a distilled message's time), kept for the accept."""
        content: dict[str, Any] = {
            "text": self._check_text(text), "category": tree_rules.validate_path(category),
            "importance": validate.importance(importance),
            "pinned": validate.flag("pinned", pinned),
            "private": validate.optional_flag("private", private)}
        if created_at is not None:
            content["created_at"] = validate.when("created_at", created_at)
        meta = validate.metadata(metadata)
        if meta is not None and not meta.is_empty():
            import msgspec
            content["metadata"] = msgspec.to_builtins(meta)
        return self._new_proposal("warm", content, confidence, by)

    def propose_hot(self, key: str, value: Any, *, confidence: float = 0.5,
                    by: str = "") -> Proposal:
        """Propose a hot-memory update (as update_hot takes it) for the main agent."""
        validate.text("hot memory key", key, max_len=64)
        if isinstance(value, str) and (key != "complete_task" or value.lstrip().startswith("{")):
            value = validate.loads_json(f"hot update {key}", value)
        value = validate.json_value(f"hot update {key}", value)
        # Checked now against the current state (a pure function): a proposal that could
        # never apply is refused to the sub-agent, not found broken by the main agent.
        hot_rules.apply_update(self.store.load_hot(), key, value, self.clock(), lambda: "probe")
        return self._new_proposal("hot", {"key": key, "value": value}, confidence, by)

    def _propose_remember(self, text: str, category: str = "general", importance: float = 0.5,
                          created_at: Any = None, metadata: Any = None, source: str = "manual",
                          pinned: bool = False, private: Optional[bool] = None,
                          by: str = "") -> Proposal:
        return self.propose(text, category, importance, metadata=metadata, pinned=pinned,
                            private=private, by=by, created_at=created_at)

    def _propose_hot(self, key: str, value: Any) -> Proposal:
        return self.propose_hot(key, value)

    def _propose_conversation(self, messages: Any, *, at: Any = None, sync: Optional[bool] = None,
                              consolidate: Optional[bool] = None, remote: Any = None) -> dict[str, Any]:
        """A sub-agent's end of a conversation: distilled as usual (rules or the LLM), then
        every fact and hot update becomes a proposal, in one transaction; nothing reaches
        warm, hot, MEMORY.md or the outbox until the main agent accepts. Forget triggers
        are not acted on (a sub-agent cannot forget); a fact an owner's "remember forever"
        names is proposed pinned (the vault's cap is checked when it is accepted). The report has the usual keys, with
        `proposals` and nothing added."""
        import time
        from evoclaw_memory.llm.distill import fresh_hot_updates
        started = time.perf_counter()
        validate.conversation(messages)
        result = self.distill(messages, at=None if at is None else validate.when("at", at))
        from evoclaw_memory.lifecycle.vault import came_from, pin_requests
        pins = pin_requests(messages)      # "remember forever": proposed pinned
        proposed: list[Proposal] = []
        refused: list[dict] = []
        hot_refused: list[dict] = []
        with self.store.transaction():
            for draft in result.get("facts") or []:
                try:
                    proposed.append(self.propose(draft.text, draft.category, draft.importance,
                                                 confidence=DISTILLED_CONFIDENCE,
                                                 metadata=draft.metadata,
                                                 created_at=draft.created_at,
                                                 pinned=any(came_from(draft.text, w) for w in pins)))
                except ValidationError as exc:      # one bad fact must not lose the rest
                    refused.append({"text": draft.text, "why": str(exc)})
            for update in fresh_hot_updates(list(result.get("hot_updates") or []), self.hot):
                try:
                    proposed.append(self.propose_hot(update["key"], update["value"],
                                                     confidence=DISTILLED_CONFIDENCE))
                except ValidationError as exc:
                    hot_refused.append({**update, "why": str(exc)})
        facts = sum(p.store == "warm" for p in proposed)
        return {"mode": result.get("mode", "rules"), "summary": result.get("summary", ""),
                "record": result.get("record"), "proposals": proposed, "added": [],
                "reinforced": [], "superseded": [], "duplicates": [], "hot_updates": [],
                "hot_rejected": hot_refused, "rejected": refused,
                "counts": {"added": 0, "reinforced": 0, "superseded": 0, "hot_updates": 0,
                           "hot_rejected": len(hot_refused), "proposals": len(proposed),
                           "proposed_facts": facts, "proposed_hot": len(proposed) - facts},
                "llm_calls": int(result.get("llm_calls", 0) or 0), "consolidation": None,
                "sync": {"status": "off", "detail": f"{self.actor} proposes; the main agent's "
                         "memory pushes what it accepts"},
                "outbox_depth": self.store.outbox_depth(),
                "seconds": round(time.perf_counter() - started, 4), "forgotten": [],
                "forget_candidates": [], "pinned": [], "pin_refused": []}

    def _new_proposal(self, store: str, content: dict, conf: float, by: str) -> Proposal:
        from evoclaw_memory.store.proposals import Proposal
        from evoclaw_memory.store.warm_keeper import new_id
        who = check_actor(by or self.actor)
        return self.proposal_keeper.add(Proposal(
            id=new_id(), store=store, content=content, confidence=confidence(conf), actor=who,
            created_at=self.clock()))

    # -- deciding (the main agent) -------------------------------------------------------------

    def proposals(self, status: Optional[str] = "pending", limit: int = 100) -> list[Proposal]:
        """Proposals waiting for the main agent (status=None: every one, decided too)."""
        if status not in (None, "pending", "accepted", "rejected"):
            raise ValidationError(f"status must be pending, accepted or rejected, not {status!r}")
        return self.proposal_keeper.list(status, validate.integer("limit", limit, 1, 10_000))

    def accept(self, proposal_id: str, *, by: str = "manual") -> Proposal:
        """Apply a proposal as written: the fact (or hot update) carries the sub-agent as its
        actor, the decision the main agent's. One transaction for both."""
        from evoclaw_memory.lifecycle.control import fact_id
        keeper, who = self.proposal_keeper, check_actor(by)
        found = keeper.pending(fact_id(proposal_id))
        content = found.content
        with self.store.transaction():
            result: Optional[str] = None
            if found.store == "warm":
                fact = self.remember(content["text"], category=content["category"],
                                     importance=content["importance"],
                                     created_at=content.get("created_at"),
                                     metadata=content.get("metadata"), source=found.actor,
                                     pinned=bool(content.get("pinned")),
                                     private=content.get("private"), by=found.actor)
                result = fact.id
                self.store.audit("proposal.applied", fact.id,
                                 f"proposal {found.id} from {found.actor} actor={who}",
                                 self.clock())
            else:
                self.update_hot(content["key"], content["value"])
                self.store.audit("proposal.applied", "hot", f"hot.{content['key']} proposal "
                                 f"{found.id} from {found.actor} actor={who}", self.clock())
            return keeper.decide(found, "accepted", who, self.clock(), result=result)

    def reject(self, proposal_id: str, reason: str = "", *, by: str = "manual") -> Proposal:
        """Turn a proposal down (kept, with the reason, for the record)."""
        from evoclaw_memory.lifecycle.control import fact_id
        found = self.proposal_keeper.pending(fact_id(proposal_id))
        why = validate.text("reason", reason or "", max_len=500).strip() or None
        return self.proposal_keeper.decide(found, "rejected", check_actor(by), self.clock(),
                                           reason=why)
