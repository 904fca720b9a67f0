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
    from evoclaw_memory.distill.rendered import scrub_messages
    from evoclaw_memory.distill.rules import core_summary, distill_conversation, distill_structured
    at = mem.clock() if at is None else at
    nodes = mem.store.tree_nodes()
    # Nothing the memory rendered (context, MEMORY.md, the tree) is distilled back in.
    messages = scrub_messages(messages, [n.path for n in nodes])
    agent_names = [mem.hot.identity.agent_name or ""]
    record = distill_structured(messages)
    result: dict[str, Any] = {"record": record, "summary": core_summary(record),
                              "facts": [], "mode": "rules", "hot_updates": [],
                              "supersedes": [], "duplicates": [], "llm_calls": 0,
                              "participants": participants(messages, agent_names)}
    if llm and mem.llm is None:
        raise ConfigError("no LLM configured: set EVOCLAW_LLM_BASE_URL and "
                          "EVOCLAW_LLM_MODEL (or [llm] base_url in config.toml), or use "
                          "rule mode")
    if mem.llm is not None and llm is not False:
        from evoclaw_memory.errors import EvoclawError
        from evoclaw_memory.lifecycle.novelty import related_to_statements
        from evoclaw_memory.llm.distill import conversation_turns, distill_with_llm
        turns = conversation_turns(messages)
        if turns:
            calls = mem.llm.stats.calls
            try:
                # The live facts each statement may repeat or change, for the model's
                # add / reinforce / supersede / nothing per fact (one call still).
                related = related_to_statements(mem.store, messages, agent_names)
                out = distill_with_llm(mem.llm, turns, nodes, related, mem.clock(),
                                       messages=messages, at=at)
            except EvoclawError as exc:
                result["mode"], result["llm_error"] = "rules-fallback", str(exc)
            else:
                result.update(out, mode="llm", summary=out["summary"] or result["summary"])
                _agents_words(result, agent_names)
            result["llm_calls"] = mem.llm.stats.calls - calls
            if result["mode"] == "llm":
                return result
    result["facts"], result["hot_updates"] = distill_conversation(
        messages, [n.path for n in nodes], at, agent_names=agent_names)
    return result


def _agents_words(result: dict[str, Any], agent_names: list[str]) -> None:
    """The LLM's facts held to the rules' line on the agent's own words: what it did for the
    owner stays a fact, what it promised becomes a task, the rest (its restatements of the
    memory, general knowledge) goes."""
    from evoclaw_memory.distill.agent_turns import is_commitment, is_done_for_owner
    from evoclaw_memory.distill.turns import ASSISTANT
    agents = {ASSISTANT.lower()} | {n.lower() for n in agent_names if n}
    kept: list[Any] = []
    supersedes: list[dict[str, Any]] = []
    index_map: dict[int, int] = {}
    for index, draft in enumerate(result.get("facts") or []):
        if (draft.speaker or "").lower() in agents and not is_done_for_owner(draft.text):
            if is_commitment(draft.text):
                result.setdefault("hot_updates", []).append(
                    {"key": "task", "value": {"text": draft.text}})
            continue
        index_map[index] = len(kept)
        kept.append(draft)
    for item in result.get("supersedes") or []:
        if item["fact"] in index_map:
            supersedes.append({**item, "fact": index_map[item["fact"]]})
    result["facts"], result["supersedes"] = kept, supersedes


def participants(messages: Union[str, list[dict]], agent_names: list[str]) -> list[str]:
    """Search tokens of the conversation's speakers' names (and the agent's): every fact of a
    speaker names them, so they say nothing about whether two facts say the same thing."""
    from evoclaw_memory.text import tokens
    names = ["Assistant", *agent_names]
    if not isinstance(messages, str):
        names += [m["name"] for m in messages or ()
                  if isinstance(m, dict) and isinstance(m.get("name"), str)]
    return sorted({tok for name in names for tok in tokens(name)})


def apply(mem: "Memory", result: dict[str, Any]) -> dict[str, Any]:
    """Store a `distill` result in one transaction; the report of what changed.

    Each fact goes through the write-time decision first (lifecycle.novelty): a restatement
    of a live fact reinforces it, a changed value supersedes the old fact, what hot memory
    already says is not added again. With the LLM, its own decisions (supersedes,
    duplicates) come first and only the strict rules check them."""
    from evoclaw_memory.lifecycle.novelty import judge
    from evoclaw_memory.llm.distill import fresh_hot_updates
    now = mem.clock()
    drafts = list(result.get("facts") or [])
    replaces = {s["fact"]: s["old_id"] for s in result.get("supersedes") or []}
    ignore = list(result.get("participants") or ())
    strict = result.get("mode") == "llm"
    added: list[Fact] = []
    reinforced: list[Fact] = []
    superseded: list[str] = []
    duplicates: list[str] = []
    applied: list[dict] = []
    rejected: list[dict] = []
    skipped = 0
    hot = mem.hot
    with mem.store.transaction():
        mem.note_entities(result.get("entities") or [])    # before the facts: they link to them
        for index, draft in enumerate(drafts):
            decision = judge(mem.store, draft.text, getattr(draft, "speaker", None), hot,
                             ignore, strict_only=strict)
            if decision.action == "skip":
                skipped += 1
                continue
            if decision.action == "reinforce" and decision.same is not None \
                    and index not in replaces:
                mem.warm.reinforce([decision.same], now, op="distill.restated")
                same = mem.store.get_fact(decision.same)
                if same is not None:
                    reinforced.append(same)
                    superseded += _supersede(mem, decision.replaces, same.id)
                continue
            stored = mem.store_drafts([draft])
            added += stored["added"]
            reinforced += stored["reinforced"]
            fact = (stored["added"] + stored["reinforced"])[0]
            if getattr(draft, "speaker", None):
                mem.link_speaker(fact, draft.speaker)
            old_ids = list(decision.replaces) + ([replaces[index]] if index in replaces else [])
            superseded += _supersede(mem, old_ids, fact.id)
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
            "skipped": skipped,
            "counts": {"added": len(added), "reinforced": len(reinforced),
                       "superseded": len(superseded), "duplicates": len(duplicates),
                       "hot_updates": len(applied), "hot_rejected": len(rejected),
                       "skipped": skipped}}


def _supersede(mem: "Memory", old_ids, new_id: str) -> list[str]:
    """Mark each live `old_ids` fact superseded by `new_id`; the ids it marked."""
    done = []
    for old_id in dict.fromkeys(old_ids):
        old = mem.store.get_fact(old_id)
        if old is None or old.id == new_id or old.superseded_by is not None:
            continue
        try:
            mem.supersede(old.id, new_id)
        except ValidationError:          # a chain back to the new fact: leave both as they are
            continue
        done.append(old.id)
    return done
