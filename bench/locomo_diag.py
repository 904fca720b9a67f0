"""Where lifecycle evidence is lost on LoCoMo dev (issue 13): one line of buckets per run.

    python -m bench.locomo_diag [--quick] [--show BUCKET] [--n 20]

For every (question, evidence turn) pair of categories 1-4, the same run as bench/locomo.py's
lifecycle way (sessions through end_conversation at their own times, the clock simulated),
and the turn is put in one bucket:
  top5          a fact credited to the turn is in the top 5
  no-draft      the rule distiller made no fact credited to the turn (sub-bucket: why)
  not-stored    a draft was credited to it, but no stored fact is (merged away)
  superseded    stored, but every fact credited to it is superseded (not searchable)
  rank-6-10 / rank-11+ / not-found   live, but ranked below the top 5
Beside each bucket: how many of its turns were in the top 5 of turns-as-facts (the loss
that counts). Nothing here runs in the test suite; no LLM.
"""

from __future__ import annotations

import argparse
import collections
import sys
from typing import Any

from .locomo import DAY, SimClock, _turns_as_facts, conversations, credited_turns
from .util import Workspace, memory


def _why_no_draft(text: str) -> str:
    from evoclaw_memory.distill.classify import is_worth_keeping
    from evoclaw_memory.distill.signals import analyse
    from evoclaw_memory.distill.sentences import clause_spans
    spans = clause_spans(text, 120)
    sentences = analyse(text, spans).sentences
    kept = [s for s in sentences if is_worth_keeping(s)]
    if not kept:
        if all(s.question for s in sentences):
            return "all-questions"
        return "all-dropped"
    return "kept-but-uncredited"


def run(quick: bool) -> dict[str, Any]:
    from evoclaw_memory.distill.rules import distill_conversation
    ws = Workspace(quick=quick)
    buckets: collections.Counter = collections.Counter()
    turns_top5: collections.Counter = collections.Counter()
    why: collections.Counter = collections.Counter()
    examples: dict[str, list[str]] = collections.defaultdict(list)
    try:
        for conv in conversations(quick):
            tf, _ = _turns_as_facts(ws, conv)
            home = ws.new_home(f"diag-{conv.name}")
            clock = SimClock(conv.sessions[0].at)
            credit: dict[str, set[str]] = {}
            drafted: set[str] = set()
            a = conv.speakers[0]
            by_id = {t.dia_id: t for t in conv.turns}
            with memory(home, clock=clock) as mem:
                for s in conv.sessions:
                    clock.t = s.at
                    messages = [{"role": "user" if t.speaker == a else "assistant", "name": t.speaker,
                                 "content": t.text} for t in s.turns]
                    for draft in distill_conversation(messages, [], s.at)[0]:
                        drafted |= credited_turns(draft.text, s.turns, conv.speakers)
                    report = mem.end_conversation(messages, at=s.at, sync=False)
                    for key in ("added", "reinforced", "duplicates"):
                        for fact in report.get(key) or []:
                            if hasattr(fact, "id"):
                                credit.setdefault(fact.id, set()).update(
                                    credited_turns(fact.text, s.turns, conv.speakers))
                clock.t = conv.sessions[-1].at + DAY
                live = {f.id for f in mem.store.iter_facts(live_only=True)}
                retriever = mem.retriever()
                texts = {f.id: f.text for f in mem.store.iter_facts(live_only=False)}
                for q, tf_ranked in zip(conv.questions, tf):
                    results = retriever.retrieve(q.question, limit=50, now=mem.clock())
                    tf_top = set().union(*(t for t, _ in tf_ranked[:5])) if tf_ranked else set()
                    for e in q.evidence:
                        ids = [fid for fid, turns in credit.items() if e in turns]
                        ranks = [i for i, r in enumerate(results) if e in credit.get(r.fact.id, set())]
                        if ranks and ranks[0] < 5:
                            b = "top5"
                        elif e not in drafted:
                            b = "no-draft"
                            w = _why_no_draft(by_id[e].text)
                            why[w] += 1
                            b = f"no-draft:{w}"
                        elif not ids:
                            b = "not-stored"
                        elif not any(fid in live for fid in ids):
                            b = "superseded"
                        elif ranks:
                            b = "rank-6-10" if ranks[0] < 10 else "rank-11-50"
                        else:
                            b = "not-found"
                        buckets[b] += 1
                        turns_top5[b] += e in tf_top
                        if len(examples[b]) < 400:
                            facts = [texts[f] for f in ids if f in texts][:3]
                            top = [r.fact.text[:90] for r in results[:3]]
                            mark = " TF5" if e in tf_top else ""
                            examples[b].append(f"[{q.category}]{mark} Q: {q.question}\n   TURN {e} "
                                               f"{by_id[e].speaker}: {by_id[e].text[:200]}\n"
                                               f"   FACTS: {facts}\n   TOP3: {top}")
    finally:
        ws.close()
    return {"buckets": dict(buckets), "in_turns_top5": dict(turns_top5), "examples": examples}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--show", default="")
    p.add_argument("--n", type=int, default=15)
    args = p.parse_args(argv)
    out = run(args.quick)
    total = sum(out["buckets"].values())
    for b, n in sorted(out["buckets"].items(), key=lambda kv: -kv[1]):
        print(f"{b:32s} {n:5d} ({n / total:.1%})  in turns-as-facts top5: {out['in_turns_top5'][b]}")
    for b in filter(None, args.show.split(",")):
        print(f"\n== {b}")
        for line in out["examples"].get(b, [])[: args.n]:
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
