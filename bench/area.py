"""python -m bench.area NAME --root DIR --out FILE [--quick]

Runs one benchmark area in this process and writes its result as JSON; `python -m bench`
starts one of these per area, so that each area runs on a fresh heap (DIR is the run's
workspace: stores built by one area are reused by the next).
"""

from __future__ import annotations

import argparse
import importlib
import time
import traceback
from pathlib import Path

from .util import AreaResult, Workspace, log, render_area, write_json


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.area", description=__doc__.splitlines()[0])
    p.add_argument("area")
    p.add_argument("--root", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--quick", action="store_true")
    args = p.parse_args(argv)
    ws = Workspace(quick=args.quick, root=args.root)
    module = importlib.import_module(f"bench.{args.area}")
    started = time.perf_counter()
    try:
        res = module.run(ws)
    except Exception as exc:            # one broken area must not hide the others
        res = AreaResult(args.area, getattr(module, "TITLE", args.area))
        res.error = f"{type(exc).__name__}: {exc}"
        res.data["traceback"] = traceback.format_exc()
        log(res.data["traceback"])
    res.seconds = time.perf_counter() - started
    write_json(args.out, res.to_json())
    print(render_area(res) + "\n", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
