"""The `evoclaw-memory` command line: one module per command group over one shared helper
module (`common`, and its click-free half `plain`), the root group (`root`), the
click-free path of the per-turn commands (`fast`), and the relay that runs them in the
agent's `serve` (`relay`, the caller's side; `relay_server`, serve's); `main` is the console
entry point (`evoclaw_memory.cli:main`)."""

from evoclaw_memory.cli.main import main

__all__ = ["main"]
