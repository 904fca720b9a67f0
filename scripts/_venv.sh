# Sourced by scripts/demo and scripts/test: a project-local virtualenv with the package and
# the extras named in $EXTRAS installed from this checkout (so CI installs what we use).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
STAMP=".venv/.installed-${EXTRAS:-base}"
# Reinstall only when pyproject.toml changed since the last install (keeps reruns fast).
if [ ! -f "$STAMP" ] || [ pyproject.toml -nt "$STAMP" ]; then
    .venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
    .venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".${EXTRAS:+[$EXTRAS]}"
    touch "$STAMP"
fi
