"""Run a self-hosted libSQL server (sqld) on this machine and mint tokens for it.

The server itself lives in the package (evoclaw_memory/cloud/sqld.py), so an installed
evoclaw-memory runs it as `evoclaw-memory server --data DIR [--port N]`; this module keeps
the checkout's older entry point and the import the tests and benchmarks use:

    python -m sync.launcher --port 8080 --data ./cloud-data
"""

from __future__ import annotations

import argparse
import sys

from evoclaw_memory.cloud.sqld import (LauncherError, SqldServer, find_sqld, free_port,
                                       install_stop_handlers, run_until_stopped, sign_jwt,
                                       stopped_line)

__all__ = ["LauncherError", "SqldServer", "find_sqld", "free_port", "main", "sign_jwt"]


def main(argv: list[str] | None = None) -> int:
    """CLI: start sqld, print its URL and tokens, run until Ctrl-C."""
    p = argparse.ArgumentParser(prog="python -m sync.launcher", description=__doc__.splitlines()[0])
    p.add_argument("--port", type=int, default=8080, help="HTTP port (0 = any free port)")
    p.add_argument("--host", default="127.0.0.1", help="listen address (default loopback only)")
    p.add_argument("--data", default="./sqld-data", help="data directory: databases and keys")
    p.add_argument("--no-auth", action="store_true", help="no JWT auth (loopback experiments only)")
    p.add_argument("--expires-in", type=float, default=None, help="token lifetime in seconds")
    args = p.parse_args(argv)
    server = SqldServer(args.data, args.port or None, host=args.host, auth=not args.no_auth,
                        die_with_parent=False)
    install_stop_handlers()
    # One guarded block, as `evoclaw-memory server`: a stop at any point stops sqld.
    try:
        server.start()          # PortInUseError (before any token is printed) on a taken port
        print(f"sqld {server.url}  (pid {server.pid}, data {server.data_dir.resolve()})")
        print(f"TURSO_DATABASE_URL={server.url}")
        if server.auth:
            print(f"TURSO_AUTH_TOKEN={server.mint_token('rw', args.expires_in)}")
            print(f"read-only token:  {server.mint_token('ro', args.expires_in)}")
        print("Ctrl-C to stop", flush=True)
        return run_until_stopped(server)
    except LauncherError as e:
        print(f"error: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt as stop:       # a signal before the wait began
        server.stop()
        print(stopped_line(stop, server), flush=True)
        return 0
    finally:
        server.stop()

if __name__ == "__main__":
    sys.exit(main())
