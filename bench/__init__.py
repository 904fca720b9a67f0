"""evoclaw-memory benchmarks: `python -m bench [AREA ...] [--quick]` (see bench/README.md)."""
