"""Shared machinery of the benchmarks: timing, results, tables, stores, sqld, processes."""

from __future__ import annotations

import contextlib
import gc
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Optional

from .data import Generator, load_store, percentile

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).resolve().parent / "results"
AGENT = "bench"
KB = 1024

if str(ROOT) not in sys.path:          # sync/ (the sqld launcher) lives at the repo root
    sys.path.insert(0, str(ROOT))


# -- results ----------------------------------------------------------------------------------

@dataclass
class Row:
    """One line of an area's table: a figure, the reference it is compared with, a target."""

    metric: str
    value: str
    reference: str = ""
    target: str = ""
    status: str = ""          # PASS / FAIL / n/a / "" (no target)


@dataclass
class AreaResult:
    area: str
    title: str
    rows: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    error: Optional[str] = None

    def add(self, metric: str, value: str, reference: str = "", target: str = "",
            status: str = "") -> Row:
        row = Row(metric, value, reference, target, status)
        self.rows.append(row)
        return row

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> "AreaResult":
        return cls(**{**data, "rows": [Row(**row) for row in data.get("rows", [])]})


def verdict(ok: Optional[bool]) -> str:
    return "n/a" if ok is None else ("PASS" if ok else "FAIL")


def median(values: list) -> Any:
    """The middle value (the upper one of the two middles for an even count)."""
    return sorted(values)[len(values) // 2]


def stats(samples: list[float]) -> dict[str, float]:
    """p50/p95/mean/min/max of timings in seconds, and how many there were."""
    if not samples:
        return {"n": 0}
    return {"n": len(samples), "p50": percentile(samples, 50), "p95": percentile(samples, 95),
            "mean": sum(samples) / len(samples), "min": min(samples), "max": max(samples)}


def ms(seconds: float, digits: int = 2) -> str:
    if seconds != seconds:   # NaN
        return "-"
    value = seconds * 1e3
    if value >= 100:
        return f"{value:,.0f} ms"
    if value >= 10:
        return f"{value:.1f} ms"
    return f"{value:.{digits}f} ms"


def secs(seconds: float) -> str:
    return f"{seconds:.2f} s" if seconds < 100 else f"{seconds:,.0f} s"


def p50_p95(st: dict) -> str:
    return f"{ms(st['p50'])} / {ms(st['p95'])}"


def human_bytes(n: float) -> str:
    if n >= 1024 ** 2:
        return f"{n / 1024 ** 2:.1f} MB"
    if n >= 1024:
        return f"{n / 1024:.1f} KB"
    return f"{n:.0f} B"


def count_label(n: int) -> str:
    if n >= 1_000_000 and n % 1_000_000 == 0:
        return f"{n // 1_000_000}M"
    if n >= 1000 and n % 1000 == 0:
        return f"{n // 1000}k"
    return f"{n:,}"


# -- timing -----------------------------------------------------------------------------------

def time_calls(fn: Callable[[Any], Any], args: list, warmup: int = 5,
               budget_s: Optional[float] = None, min_n: int = 5) -> list[float]:
    """Seconds of fn(arg) for each arg, after `warmup` untimed calls on the first args.

    With `budget_s`, stops early once at least `min_n` timed calls have been made and the
    budget is spent (used for the slow baselines at a million facts)."""
    for a in args[:warmup]:
        fn(a)
    out: list[float] = []
    gc.collect()          # start clean; collections during the run are part of the cost
    began = time.perf_counter()
    for a in args[warmup:]:
        t = time.perf_counter()
        fn(a)
        out.append(time.perf_counter() - t)
        if budget_s is not None and len(out) >= min_n and time.perf_counter() - began > budget_s:
            break
    return out


# -- tables -----------------------------------------------------------------------------------

HEADERS = ("Metric", "Value", "Reference (same run)", "Target", "Status")


def table(rows: Iterable[Row]) -> str:
    """A Markdown table (aligned, so it reads in a terminal and pastes into the README)."""
    cells = [HEADERS] + [(r.metric, r.value, r.reference, r.target, r.status) for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(len(HEADERS))]
    lines = []
    for k, c in enumerate(cells):
        lines.append("| " + " | ".join(c[i].ljust(widths[i]) for i in range(len(HEADERS))) + " |")
        if k == 0:
            lines.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def render_area(res: AreaResult) -> str:
    out = [f"### {res.title}  ({res.seconds:.1f} s)", ""]
    if res.error:
        out.append(f"ERROR: {res.error}")
        out.append("")
    if res.rows:
        out.append(table(res.rows))
    for note in res.notes:
        out.append(f"- {note}")
    return "\n".join(out)


# -- stores -----------------------------------------------------------------------------------

class Workspace:
    """A temporary folder for one benchmark run, with cached generated stores."""

    def __init__(self, quick: bool, root: Optional[Path] = None):
        """A new folder, or (root given) the folder of a run this process takes part in:
        each area runs in its own process, and the stores built by one are reused by the next."""
        self.quick = quick
        self._owned = root is None
        self.root = Path(tempfile.mkdtemp(prefix="evoclaw-bench-")) if root is None else root
        self._gen: dict[tuple[int, int], list] = {}
        self.sqld_cache = Path(tempfile.gettempdir()) / "evoclaw-bench-cache"

    def close(self) -> None:
        if self._owned:
            shutil.rmtree(self.root, ignore_errors=True)

    def new_home(self, label: str = "home") -> Path:
        return Path(tempfile.mkdtemp(prefix=f"{label}-", dir=self.root))

    def generated(self, n: int, seed: int = 42) -> list:
        key = (n, seed)
        if key not in self._gen:
            self._gen[key] = Generator(seed).facts(n)
        return self._gen[key]

    def store(self, n: int, seed: int = 42, hot: bool = True) -> Path:
        """A home holding a bulk-loaded store of n facts (built once per run; do not mutate:
        use copy_store)."""
        from evoclaw_memory import Memory
        home = self.root / f"store{n}-{seed}"
        built = home / ".built"           # written last: a store an area died building is redone
        if not built.exists():
            shutil.rmtree(home, ignore_errors=True)
            home.mkdir()
            began = time.perf_counter()
            with Memory.open(AGENT, home) as mem:
                load_store(mem, n, gen=self.generated(n, seed))
                if hot:
                    for k, v in Generator(seed + 1).hot_updates():
                        mem.update_hot(k, v)
                mem.store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            built.touch()
            log(f"  built a store of {n:,} facts in {time.perf_counter() - began:.1f} s")
        return home

    def copy_store(self, n: int, seed: int = 42) -> Path:
        src = self.store(n, seed)
        dst = self.new_home(f"copy{n}")
        shutil.rmtree(dst)
        shutil.copytree(src, dst)
        return dst

    def drop_store(self, n: int, seed: int = 42) -> None:
        self._gen.pop((n, seed), None)
        shutil.rmtree(self.root / f"store{n}-{seed}", ignore_errors=True)


def db_path(home: Path) -> Path:
    return home / "agents" / AGENT / "memory.db"


# -- sqld -------------------------------------------------------------------------------------

class Cloud:
    """One real sqld on loopback (JWT auth on, namespaces on) for the cloud benchmarks."""

    def __init__(self, ws: Workspace):
        from sync.launcher import SqldServer
        self.ws = ws
        self.server = SqldServer(ws.root / "sqld", cache_dir=ws.sqld_cache, namespaces=True)
        self._ns = 0

    def __enter__(self) -> "Cloud":
        self.server.start()
        self.token = self.server.mint_token("rw")
        return self

    def __exit__(self, *exc) -> None:
        self.server.stop()

    def new_db(self, label: str) -> str:
        self._ns += 1
        return self.server.create_namespace(f"b{self._ns}-{label}")

    def client(self, url: str, timeout: float = 60.0, retries: int = 2):
        from evoclaw_memory.cloud.hrana import HranaClient
        return HranaClient(url, self.token, timeout=timeout, retries=retries, backoff=0.05)

    def remote(self, url: str, **kw):
        from evoclaw_memory.cloud.remote import SqlRemote
        return SqlRemote(self.client(url, **kw), label=url)


# -- processes --------------------------------------------------------------------------------

def cli_path() -> str:
    """The `evoclaw-memory` console script of this interpreter's environment."""
    candidate = Path(sys.executable).parent / "evoclaw-memory"
    if candidate.exists():
        return str(candidate)
    found = shutil.which("evoclaw-memory")
    if not found:
        raise RuntimeError("the evoclaw-memory console script is not installed "
                           "(pip install -e . in this environment)")
    return found


def clean_env(home: Optional[Path] = None) -> dict[str, str]:
    """The environment for CLI runs: no cloud/LLM settings leaking in from the caller, and
    Python writing byte code as on a user's machine (this VM sets PYTHONDONTWRITEBYTECODE;
    the CLI keeps its modules' byte code in one file only where Python writes byte code:
    cli/code_cache.py)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("TURSO_", "EVOCLAW_")) and k != "PYTHONDONTWRITEBYTECODE"}
    if home is not None:
        env["EVOCLAW_HOME"] = str(home)
    return env


def run_timed(cmd: list[str], env: dict, check: bool = True) -> tuple[float, subprocess.CompletedProcess]:
    t = time.perf_counter()
    proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          stdin=subprocess.DEVNULL)
    elapsed = time.perf_counter() - t
    if check and proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:4])}... exited {proc.returncode}: "
                           f"{proc.stderr.decode(errors='replace').strip()[:300]}")
    return elapsed, proc


_RSS_WRAPPER = ("import resource, subprocess, sys\n"
                "p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)\n"
                "r = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
                "print(p.returncode, r)\n"
                "sys.stderr.write(p.stderr.decode(errors='replace'))\n")


def peak_rss_kb(cmd: list[str], env: dict) -> int:
    """Peak RSS (KiB) of `cmd` alone: a fresh wrapper process reports RUSAGE_CHILDREN."""
    proc = subprocess.run([sys.executable, "-c", _RSS_WRAPPER, *cmd], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    code, rss = proc.stdout.decode().split()
    if int(code) != 0:
        raise RuntimeError(f"{' '.join(cmd[:4])}... exited {code}: "
                           f"{proc.stderr.decode(errors='replace').strip()[:300]}")
    return int(rss)


# -- misc -------------------------------------------------------------------------------------

# Seconds since the run began, also in the area processes python -m bench starts.
_T0 = float(os.environ.get("EVOCLAW_BENCH_STARTED") or time.time())


def log(msg: str) -> None:
    """Progress on stderr (tables go to stdout)."""
    print(f"[{time.time() - _T0:7.1f}s] {msg}", file=sys.stderr, flush=True)


def write_json(path: Path, payload: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(payload, indent=1, ensure_ascii=False, default=str) + "\n")
    tmp.replace(path)


@contextlib.contextmanager
def memory(home: Path, **kw) -> Iterator[Any]:
    from evoclaw_memory import Memory
    mem = Memory.open(AGENT, home, **kw)
    try:
        yield mem
    finally:
        mem.close()
