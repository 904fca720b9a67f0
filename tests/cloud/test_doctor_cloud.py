"""doctor against a real sqld: reachability, auth (bad and expired tokens) and keys."""

from __future__ import annotations

import json

from click.testing import CliRunner

from evoclaw_memory.cli.main import cli


def doctor(home, **env):
    result = CliRunner().invoke(cli, ["--json", "doctor"], catch_exceptions=False,
                                env={"EVOCLAW_HOME": str(home), **env})
    return result.exit_code, {c["name"]: c for c in json.loads(result.stdout)["checks"]}


def test_doctor_cloud_auth_and_keys(sqld, fresh_db, tmp_path):
    url, token = fresh_db
    code, found = doctor(tmp_path / "ok", TURSO_DATABASE_URL=url, TURSO_AUTH_TOKEN=token,
                         EVOCLAW_ENCRYPTION="off")
    assert code == 0 and found["cloud"]["ok"] and "answered in" in found["cloud"]["detail"]
    assert found["keys"]["ok"] and "encryption is off" in found["keys"]["detail"]

    # A network cloud wants end-to-end encryption by default: no key yet is a failure.
    code, found = doctor(tmp_path / "nokey", TURSO_DATABASE_URL=url, TURSO_AUTH_TOKEN=token)
    assert code == 1 and found["cloud"]["ok"]
    assert not found["keys"]["ok"] and "key init" in found["keys"]["fix"]

    bad = "not-a-jwt-SECRET"
    code, found = doctor(tmp_path / "bad", TURSO_DATABASE_URL=url, TURSO_AUTH_TOKEN=bad,
                         EVOCLAW_ENCRYPTION="off")
    assert code == 1 and not found["cloud"]["ok"]
    assert "TURSO_AUTH_TOKEN" in found["cloud"]["fix"] and bad not in json.dumps(found)
    expired = sqld.mint_token("rw", expires_in=-3600)
    code, found = doctor(tmp_path / "expired", TURSO_DATABASE_URL=url,
                         TURSO_AUTH_TOKEN=expired, EVOCLAW_ENCRYPTION="off")
    assert not found["cloud"]["ok"] and "expired" in found["cloud"]["detail"].lower()
    assert "keys" not in found                            # not checked without a cloud


def test_doctor_names_a_read_only_token_as_the_problem(sqld, fresh_db, tmp_path):
    """Issue 26: a read-only token answers reads; doctor says writing is what it cannot do."""
    url, token = fresh_db
    ok, _ = doctor(tmp_path / "rw", TURSO_DATABASE_URL=url, TURSO_AUTH_TOKEN=token,
                   EVOCLAW_ENCRYPTION="off")
    code, found = doctor(tmp_path / "ro", TURSO_DATABASE_URL=url,
                         TURSO_AUTH_TOKEN=sqld.mint_token("ro"), EVOCLAW_ENCRYPTION="off")
    assert ok == 0 and code == 1
    assert not found["cloud"]["ok"] and "read-only" in found["cloud"]["detail"]
    assert "read-write" in found["cloud"]["fix"] and "read access" not in found["cloud"]["fix"]
