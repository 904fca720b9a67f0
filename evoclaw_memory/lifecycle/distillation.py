"""Distillation as the memory runs it: rules or the LLM (falling back to rules), and
applying a result (facts, supersedes, duplicates, hot updates) in one transaction.

The distillers themselves are in distill/ (rules) and llm/distill (the LLM); Memory.distill
and Memory.apply_distillation validate and delegate here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Union

from evoclaw_memory.errors import ConfigError, ValidationError
from evoclaw_memory.models import Fact

if TYPE_CHECKING:
    from evoclaw_memory.memory import Memory


def distill(mem: "Memory", messages: Union[str, list[dict]],
            llm: Optional[bool], at: Optional[float] = None) -> dict[str, Any]:
    """Distill validated `messages` (llm: None auto, True required, False rules) said at
    `at` (epoch seconds; None: now); a message's own time wins for its words."""
    from evoclaw_memory.distill.rules import core_summary, distill_conversation, distill_structured
    at = mem.clock() if at is None else at
    nodes = mem.store.tree_nodes()
    record = distill_structured(messages)
    result: dict[str, Any] = {"record": record, "summary": core_summary(record),
                              "facts": [], "mode": "rules", "hot_updates": [],
                              "supersedes": [], "duplicates": [], "llm_calls": 0}
    if llm and mem.llm is None:
        raise ConfigError("no LLM configured: set EVOCLAW_LLM_BASE_URL and "
                          "EVOCLAW_LLM_MODEL (or [llm] base_url in config.toml), or use "
                          "rule mode")
    if mem.llm is not None and llm is not False:
        from evoclaw_memory.errors import EvoclawError
        from evoclaw_memory.llm.distill import conversation_text, conversation_turns, distill_with_llm, \
            related_facts
        turns = conversation_turns(messages)
        if turns:
            calls = mem.llm.stats.calls
            try:
                related = related_facts(mem.store, conversation_text(turns))
                out = distill_with_llm(mem.llm, turns, nodes, related, mem.clock(),
                                       messages=messages, at=at)
            except EvoclawError as exc:
                result["mode"], result["llm_error"] = "rules-fallback", str(exc)
            else:
                result.update(out, mode="llm", summary=out["summary"] or result["summary"])
            result["llm_calls"] = mem.llm.stats.calls - calls
            if result["mode"] == "llm":
                return result
    result["facts"], result["hot_updates"] = distill_conversation(messages, [n.path for n in nodes], at)
    return result


def apply(mem: "Memory", result: dict[str, Any]) -> dict[str, Any]:
    """Store a `distill` result in one transaction; the report of what changed."""
    from evoclaw_memory.llm.distill import fresh_hot_updates
    now = mem.clock()
    drafts = list(result.get("facts") or [])
    replaces = {s["fact"]: s["old_id"] for s in result.get("supersedes") or []}
    added: list[Fact] = []
    reinforced: list[Fact] = []
    superseded: list[str] = []
    duplicates: list[str] = []
    applied: list[dict] = []
    rejected: list[dict] = []
    with mem.store.transaction():
        mem.note_entities(result.get("entities") or [])    # before the facts: they link to them
        for index, draft in enumerate(drafts):
            stored = mem.store_drafts([draft])
            added += stored["added"]
            reinforced += stored["reinforced"]
            fact = (stored["added"] + stored["reinforced"])[0]
            if getattr(draft, "speaker", None):
                mem.link_speaker(fact, draft.speaker)
            old = mem.store.get_fact(replaces.get(index, ""))
            if old is not None and old.id != fact.id and old.superseded_by is None:
                mem.supersede(old.id, fact.id)
                superseded.append(old.id)
        for dup in result.get("duplicates") or []:
            old = mem.store.get_fact(dup.get("old_id", ""))
            if old is not None and old.superseded_by is None:
                mem.warm.reinforce([old.id], now, op="distill.duplicate")
                duplicates.append(old.id)
        for update in fresh_hot_updates(list(result.get("hot_updates") or []), mem.hot):
            try:
                mem.update_hot(update["key"], update["value"])
                applied.append(update)
            except ValidationError as exc:     # one bad update must not lose the rest
                rejected.append({**update, "why": str(exc)})
    return {"added": added, "reinforced": reinforced, "superseded": superseded,
            "duplicates": duplicates, "hot_updates": applied, "hot_rejected": rejected,
            "counts": {"added": len(added), "reinforced": len(reinforced),
                       "superseded": len(superseded), "duplicates": len(duplicates),
                       "hot_updates": len(applied), "hot_rejected": len(rejected)}}
