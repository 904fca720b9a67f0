"""A regular (non-editable) install of this checkout, as users install it, for the rows that
time the CLI as a process.

The bench's own environment has the package installed editable (`pip install -e .`, as
scripts/_venv.sh does). An editable install adds a finder to every start of that
interpreter, `python -c pass` included, and the finder imports pathlib, urllib.parse,
ipaddress and fnmatch (~20 ms on the 2-core VM) before anything runs. A CLI row measured
there hides that much of the package's own imports inside its reference: measured side by
side on 2026-12-02, `python -c pass` took 58 ms in the editable environment and 26 ms in a
regular one, and `hot` was +45 ms over it in the first and +80 ms in the second.

Users install the package (`pip install PATH`, README "Install"), so the
CLI rows run here: a venv of the same base interpreter, the wheel of this checkout built and
installed by pip, byte-code compiled as pip's install does, and the bench environment's
site-packages on its path for the dependencies (a plain path line in a .pth file: that
folder's own .pth files, the editable finder's among them, are not run for it)."""

from __future__ import annotations

import compileall
import subprocess
import sys
import sysconfig
from pathlib import Path

from .util import ROOT, log

_DONE = "installed.txt"      # written last: a half-built install is built again


def regular_install(root: Path) -> tuple[str, str]:
    """(python, evoclaw-memory console script) of a regular install under `root`, built on
    first use (one per run's folder: every area that times the CLI shares it)."""
    base = root / "regular-install"
    venv = base / "venv"
    python, exe = venv / "bin" / "python", venv / "bin" / "evoclaw-memory"
    if (base / _DONE).exists():
        return str(python), str(exe)
    log("bench: a regular (non-editable) install of this checkout for the CLI rows")
    interpreter = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([interpreter, "-m", "venv", "--clear", "--without-pip", str(venv)], check=True)
    wheels = base / "wheel"
    for old in wheels.glob("*.whl"):
        old.unlink()
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir",
                    str(wheels), str(ROOT)], check=True)
    wheel = next(wheels.glob("evoclaw_memory-*.whl"))
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet",
                    "--no-deps", "--no-index", str(wheel)], check=True)
    site = subprocess.run([str(python), "-c", "import sysconfig; "
                           "print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    ours = sorted({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})
    Path(site, "_bench_dependencies.pth").write_text("\n".join(ours) + "\n")
    # This machine sets PYTHONDONTWRITEBYTECODE=1; a user's pip install compiles the package.
    compileall.compile_dir(site, quiet=1)
    for lib in ours:
        compileall.compile_dir(lib, quiet=1)
    # (run in `base`: `python -c` puts its working folder first on the path)
    check = subprocess.run([str(python), "-c", "import evoclaw_memory, msgspec; "
                            "print(evoclaw_memory.__file__)"], cwd=base,
                           check=True, capture_output=True, text=True).stdout.strip()
    if not check.startswith(site):
        raise RuntimeError(f"the regular install imports the package from {check}, not {site}")
    (base / _DONE).write_text(f"{wheel.name}\n")
    return str(python), str(exe)
