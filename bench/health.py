"""Area 11 — memory health over months of the loop an agent runs (issue 25).

The dev long-run simulation (../shared/eval/longrun-dev/: simulator, persona, metrics; set
EVOCLAW_LONGRUN to its folder elsewhere) driven closed loop against this checkout: one
`Memory.open(..., clock=)` per conversation, `context(first user message)` at the start —
its output feeds the simulated assistant, which restates and sometimes pastes it —
`end_conversation(messages)` at the end, rule mode (the embedded default, no LLM). Full mode:
120 days, checkpoints at days 30, 60 and 120; quick: 30 days. The metrics are the dataset's
own (its README defines each), computed on a copy of the memory at each checkpoint.

Each row: the value at the last checkpoint (the earlier ones beside it), the reference
28c61d5 scored on the same persona (baseline_results.json, shipped with the dataset), the
goal of issue 25 (held out: judged on another persona, so these are dev figures).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, Callable, Optional

from .util import ROOT, AreaResult, Workspace, log, verdict

TITLE = "11. Memory health over months (long-run simulation, dev persona)"


def longrun_dir() -> Path:
    env = os.environ.get("EVOCLAW_LONGRUN")
    path = Path(env) if env else ROOT.parent / "shared" / "eval" / "longrun-dev"
    if not (path / "simulate.py").is_file():
        raise FileNotFoundError(f"the long-run dataset is missing: looked for {path} (set "
                                "EVOCLAW_LONGRUN to the folder holding simulate.py)")
    return path


def _pct(value: Optional[float]) -> str:
    return "-" if value is None else f"{100 * value:.0f}%"


def _num(value: Optional[float]) -> str:
    return "-" if value is None else f"{value:.2f}"


# (metric, how to read one checkpoint, how to show it, goal, check on the last checkpoint)
Reader = Callable[[dict], Any]


def _rows() -> list[tuple[str, Reader, Callable[[Any], str], str, Callable[[Any], bool]]]:
    return [
        ("live facts ÷ ground-truth facts stated (growth)", lambda c: c["growth"], _num,
         "<= 2.0", lambda v: v is not None and v <= 2.0),
        ("echo facts (markup / assistant phrasing / assistant restating)",
         lambda c: (c["echo"]["share"], c["echo"]["markup"]),
         lambda v: f"{_pct(v[0])} ({v[1]} with markup)",
         "0 with markup; <= 2% in all", lambda v: v[1] == 0 and (v[0] or 0) <= 0.02),
        ("ground-truth facts with more than one live copy", lambda c: c["near_dup"]["share"],
         _pct, "<= 10%", lambda v: v is not None and v <= 0.10),
        ("live facts lumping 2+ statements", lambda c: c["lumping"]["share"], _pct, "<= 2%",
         lambda v: v is not None and v <= 0.02),
        ("changed facts whose current value ranks first",
         lambda c: (c["staleness"]["current_first"], c["staleness"]["changed_facts"]),
         lambda v: f"{v[0]}/{v[1]}", "all", lambda v: v[1] == 0 or v[0] == v[1]),
        ("recall@5 of current facts, question in other words",
         lambda c: c["recall_at_5"]["share"], _pct, ">= 80%, not falling",
         lambda v: v is not None and v >= 0.80),
        ("share of context fact lines on the question's topic",
         lambda c: c["context"]["on_topic_share_mean"], _pct, ">= 60%",
         lambda v: v is not None and v >= 0.60),
    ]


def run(ws: Workspace) -> AreaResult:
    folder = longrun_dir()
    sys.path.insert(0, str(folder))
    import metrics as M            # the dataset's own metrics and simulator
    import simulate as S
    days = 30 if ws.quick else 120
    checkpoints = (30,) if ws.quick else (30, 60, 120)
    persona = folder / "persona_dev.json"
    home = ws.new_home("longrun")
    os.rmdir(home)                 # the simulator wants a home that does not exist yet
    log(f"health: simulating {days} days of {persona.name}")
    sim = S.simulate(persona, days=days, seed=1, home=str(home), checkpoints=checkpoints,
                     on_checkpoint=M.compute)
    cost = M.cost(sim["timings"], days)
    baseline = json.loads((folder / "baseline_results.json").read_text())
    res = AreaResult("health", TITLE)
    cps = sim["checkpoints"]
    last = cps[days]
    base_cp = baseline["checkpoints"].get(str(days), {})
    for name, read, show, goal, ok in _rows():
        value = read(last)
        trail = " → ".join(show(read(cps[d])) for d in sorted(cps))
        ref = show(read(base_cp)) if base_cp else "-"
        status = ok(value)
        if name.startswith("recall") and len(cps) > 1:
            first = read(cps[min(cps)])
            status = status and value >= first - 0.05          # not falling over time
        res.add(f"{name} (day {days})", trail, f"28c61d5: {ref}", goal, verdict(status))
    forgets = sim["forget_checks"]
    clean = sum(c["clean"] for c in forgets)
    res.add(f"owner's forget requests that removed the fact and nothing else (day {days})",
            f"{clean}/{len(forgets)}", "28c61d5: 0/3" if not ws.quick else "28c61d5: -",
            "all", verdict(clean == len(forgets) if forgets else None))
    ratio = cost["ratio_p50"]
    res.add("end_conversation p50, last 10 days ÷ first 10",
            f"{_num(ratio)} ({_num(cost['last10_p50_ms'])} / {_num(cost['first10_p50_ms'])} ms)",
            f"28c61d5: {_num(baseline.get('cost', {}).get('ratio_p50'))}", "<= 1.2",
            verdict(None if ratio is None else ratio <= 1.2))
    res.notes.append(
        f"{len(sim['conversations'])} conversations over {days} days ({sim['modes']}), closed "
        f"loop: the simulated assistant restates and pastes what this checkout's context() "
        f"gave it. Dataset: {folder}. Values at days {', '.join(map(str, sorted(cps)))}; the "
        "reference is the commit the dataset was made with, scored on the same persona.")
    res.data.update({"days": days, "checkpoints": {d: _plain(c) for d, c in cps.items()},
                     "forget_checks": forgets, "cost": cost, "modes": sim["modes"]})
    return res


def _plain(value: Any) -> Any:
    """A checkpoint without its bulky private entries (keys starting with "_")."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if not str(k).startswith("_")}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value
