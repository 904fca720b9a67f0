"""python -m bench [AREA ...] [--quick]

Runs every benchmark area (or the ones named), each in its own process, prints one table per
area with each figure beside its reference from the same run and PASS/FAIL next to each
target, and writes
bench/results/latest.json (quick.json with --quick; <area>[-quick].json when areas are
named) and the PNG plots.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import sqlite3
import subprocess
import sys
import time

from .util import RESULTS, ROOT, AreaResult, Row, Workspace, log, render_area, table, write_json

AREAS = ["retrieval", "write", "sync", "restore", "offline", "footprint", "context", "quality",
         "control", "load", "health", "ui"]


def _meta(quick: bool, areas: list[str]) -> dict:
    try:
        commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True, timeout=5).stdout.strip()
        dirty = bool(subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain"],
                                    capture_output=True, text=True, timeout=5).stdout.strip())
    except (OSError, subprocess.SubprocessError):
        commit, dirty = "", False
    return {"mode": "quick" if quick else "full", "areas": areas,
            "started": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "python": platform.python_version(), "sqlite": sqlite3.sqlite_version,
            "platform": platform.platform(), "machine": platform.machine(),
            "cpus": os.cpu_count(), "commit": commit + ("+dirty" if dirty else ""),
            "loadavg_start": [round(x, 2) for x in os.getloadavg()]}


def isolate_environment() -> None:
    """Benchmarks measure the library's defaults: no cloud, LLM or home settings of the
    caller's shell may reach the stores they open (the quality area reads the LLM endpoint
    from its EVOCLAW_BENCH_ copy and builds its own client)."""
    # The LLM endpoint is kept aside for the quality area only (it builds its own client).
    for key in ("EVOCLAW_LLM_BASE_URL", "EVOCLAW_LLM_MODEL", "EVOCLAW_LLM_API_KEY"):
        os.environ[key.replace("EVOCLAW_", "EVOCLAW_BENCH_")] = os.environ.get(key, "")
    os.environ["EVOCLAW_BENCH_LLM_CONFIGURED"] = "1" if os.environ.get("EVOCLAW_LLM_BASE_URL") else ""
    for key in list(os.environ):
        if key.startswith("TURSO_") or (key.startswith("EVOCLAW_") and key != "EVOCLAW_DEVSET"
                                         and not key.startswith("EVOCLAW_BENCH_")):
            del os.environ[key]


def _run_in_own_process(name: str, ws: Workspace) -> AreaResult:
    """Run one area in a fresh Python process (python -m bench.area), sharing `ws`'s folder.

    In one process, an area ran slower after another: after the retrieval area (a 1M-fact
    store built and searched), the mirror took 5.0 s instead of 3.8 s and the encrypted
    mirror's ratio read 1.34x instead of 1.12-1.20x. A fresh heap per area measures each alone."""
    out = ws.root / f"{name}.result.json"
    cmd = [sys.executable, "-m", "bench.area", name, "--root", str(ws.root), "--out", str(out)]
    code = subprocess.run(cmd + (["--quick"] if ws.quick else []), cwd=ROOT).returncode
    try:
        return AreaResult.from_json(json.loads(out.read_text()))
    except (OSError, ValueError, TypeError):
        res = AreaResult(name, name)
        res.error = f"its process exited with code {code} and left no result"
        print(render_area(res) + "\n", flush=True)
        return res


QUICK_RUN_TARGET_S = 180.0      # the smoke run, every area, on 2 cores (issue 29)


def _whole_run_row(quick: bool, named: bool, seconds: float, results: list[AreaResult]) -> Row:
    """The whole run's wall time, judged in quick mode with every area (the smoke run must
    stay short enough to run before every commit); each area's own time beside it."""
    slowest = sorted(results, key=lambda r: -r.seconds)[:4]
    parts = ", ".join(f"{r.area} {r.seconds:.0f} s" for r in slowest)
    if quick and not named:
        return Row("python -m bench --quick, whole run (wall)", f"{seconds:.0f} s",
                   f"slowest areas: {parts}", f"≤ {QUICK_RUN_TARGET_S:.0f} s on 2 cores",
                   "PASS" if seconds <= QUICK_RUN_TARGET_S else "FAIL")
    return Row("whole run (wall)", f"{seconds:.0f} s", f"slowest areas: {parts}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    p.add_argument("areas", nargs="*", metavar="AREA",
                   help=f"areas to run (default all): {', '.join(AREAS)}")
    p.add_argument("--quick", action="store_true",
                   help="smoke mode: smaller sizes and fewer repetitions (< 3 min)")
    args = p.parse_args(argv)
    unknown = [a for a in args.areas if a not in AREAS]
    if unknown:
        p.error(f"unknown area(s) {', '.join(unknown)}; choose from {', '.join(AREAS)}")
    areas = args.areas or AREAS
    isolate_environment()
    os.environ.setdefault("EVOCLAW_BENCH_STARTED", repr(time.time()))
    ws = Workspace(quick=args.quick)
    meta = _meta(args.quick, areas)
    results: list[AreaResult] = []
    began = time.perf_counter()
    try:
        for name in areas:
            log(f"== {name} ==")
            results.append(_run_in_own_process(name, ws))
    finally:
        ws.close()
    total = time.perf_counter() - began
    meta["seconds"] = round(total, 1)
    meta["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]

    targets = [(r.title.split(" ", 1)[0] + " " + row.metric, row) for r in results
               for row in r.rows if row.status in ("PASS", "FAIL")]
    whole = _whole_run_row(args.quick, bool(args.areas), total, results)
    if whole.status:
        targets.append((whole.metric, whole))
    meta["whole_run"] = {"seconds": round(total, 1), "status": whole.status,
                         "areas": {r.area: round(r.seconds, 1) for r in results}}
    print(f"## Targets ({meta['mode']} mode, {total / 60:.1f} min; load average at start "
          f"{meta['loadavg_start'][0]}, at end {meta['loadavg_end'][0]} on {meta['cpus']} CPUs)\n")
    print(table([Row(name, row.value, row.reference, row.target, row.status)
                 for name, row in targets]))
    if not whole.status:
        print(f"\n{whole.metric}: {whole.value} ({whole.reference})")
    failed = [name for name, row in targets if row.status == "FAIL"]
    errors = [r.area for r in results if r.error]
    print(f"\n{len(targets) - len(failed)}/{len(targets)} targets met"
          + (f"; FAIL: {', '.join(failed)}" if failed else "")
          + (f"; areas with errors: {', '.join(errors)}" if errors else ""))

    if args.areas:
        name = "-".join(args.areas) + ("-quick" if args.quick else "")
    else:
        name = "quick" if args.quick else "latest"
    out = RESULTS / f"{name}.json"
    write_json(out, {"meta": meta, "areas": [r.to_json() for r in results]})
    log(f"wrote {out.relative_to(ROOT)} ({total:.0f} s)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
