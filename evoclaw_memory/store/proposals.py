"""ProposalKeeper: what a sub-agent proposes instead of writing (issue 18, gated writes).

A proposal is one row (store, content, confidence, who, when) and nothing else: no fact, no
outbox entry, no hot change, until the main agent accepts it (lifecycle.gate applies it
then, through the ordinary write path) or rejects it with a reason. Proposals stay on the
device: they are the main agent's inbox, not memory.
"""

from __future__ import annotations

# `json` is imported in the functions that use it: a CLI run of store/retrieve/context/hot
# starts without it (start-up time, one process per agent turn).

from typing import Any, Optional

import msgspec

from evoclaw_memory.errors import NotFoundError, ValidationError
from evoclaw_memory.store.local import LocalStore

_COLUMNS = ("id, store, content, confidence, actor, created_at, status, decided_at, "
            "decided_by, reason, result")


class Proposal(msgspec.Struct, omit_defaults=True):
    """A write a sub-agent proposed; `store` is 'warm' (a fact) or 'hot' (a hot update)."""

    id: str
    store: str
    content: dict[str, Any]
    confidence: float
    actor: str
    created_at: float
    status: str = "pending"
    decided_at: Optional[float] = None
    decided_by: Optional[str] = None
    reason: Optional[str] = None
    result: Optional[str] = None


def _row(r: tuple) -> Proposal:
    import json
    return Proposal(id=r[0], store=r[1], content=json.loads(r[2]), confidence=r[3], actor=r[4],
                    created_at=r[5], status=r[6], decided_at=r[7], decided_by=r[8],
                    reason=r[9], result=r[10])


class ProposalKeeper:
    """The proposals table of one LocalStore."""

    def __init__(self, store: LocalStore):
        self.store = store

    def add(self, proposal: Proposal) -> Proposal:
        import json
        with self.store.transaction():
            self.store.conn.execute(
                f"INSERT INTO proposals ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, 'pending', "
                "NULL, NULL, NULL, NULL)",
                (proposal.id, proposal.store, json.dumps(proposal.content, ensure_ascii=False),
                 proposal.confidence, proposal.actor, proposal.created_at))
            self.store.audit("propose", proposal.id, f"{proposal.store} actor={proposal.actor}",
                             proposal.created_at)
        return proposal

    def list(self, status: Optional[str] = "pending", limit: int = 100) -> list[Proposal]:
        where, args = ("WHERE status = ?", [status]) if status else ("", [])
        return [_row(r) for r in self.store.conn.execute(
            f"SELECT {_COLUMNS} FROM proposals {where} ORDER BY created_at, rowid LIMIT ?",
            (*args, limit))]

    def pending(self, proposal_id: str) -> Proposal:
        row = self.store.conn.execute(f"SELECT {_COLUMNS} FROM proposals WHERE id = ?",
                                      (proposal_id,)).fetchone()
        if row is None:
            raise NotFoundError(f"no proposal {proposal_id!r} (see `evoclaw-memory proposals list`)")
        found = _row(row)
        if found.status != "pending":
            raise ValidationError(f"proposal {proposal_id!r} was already {found.status}")
        return found

    def decide(self, proposal: Proposal, status: str, by: str, now: float,
               reason: Optional[str] = None, result: Optional[str] = None) -> Proposal:
        """Record the decision (inside the caller's transaction when it applies a write)."""
        with self.store.transaction():
            self.store.conn.execute(
                "UPDATE proposals SET status = ?, decided_at = ?, decided_by = ?, reason = ?, "
                "result = ? WHERE id = ? AND status = 'pending'",
                (status, now, by, reason, result, proposal.id))
            self.store.audit(f"proposal.{status[:-2] if status.endswith('ed') else status}",
                             proposal.id, f"{proposal.store} from {proposal.actor} "
                             f"actor={by}", now)
        return msgspec.structs.replace(proposal, status=status, decided_at=now, decided_by=by,
                                       reason=reason, result=result)
