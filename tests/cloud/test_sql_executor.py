"""The SqlExecutor contract, run against both implementations: a local file and a real sqld."""

from __future__ import annotations

import math
import os
import stat

import pytest

from evoclaw_memory.cloud.hrana import HranaClient
from evoclaw_memory.cloud.sql import FileExecutor, ResultSet, SqlExecutor, Stmt
from evoclaw_memory.errors import RemoteError, ValidationError

VALUES = [
    None,
    0,
    2**62,
    -(2**63),
    2**63 - 1,
    3.141592653589793,
    -0.1,
    1e300,
    "",
    "plain ascii",
    "中文记忆 — ünïcödé ✓ 🦞",
    b"",
    b"\x00\x01\x02",
    bytes(range(256)),
]


@pytest.fixture(params=["file", "hrana"])
def db(request, tmp_path) -> SqlExecutor:
    """A fresh, empty database behind each SqlExecutor implementation."""
    if request.param == "file":
        executor = FileExecutor(tmp_path / "cloud" / "cloud.db")
    else:
        url, token = request.getfixturevalue("fresh_db")
        executor = HranaClient(url, token, timeout=5.0, retries=1, backoff=0.01)
    yield executor
    executor.close()


def test_implements_protocol(db):
    assert isinstance(db, SqlExecutor)


def test_round_trip_every_value_type(db):
    db.execute("CREATE TABLE v (id INTEGER PRIMARY KEY, x)")
    for i, value in enumerate(VALUES):
        db.execute("INSERT INTO v (id, x) VALUES (?, ?)", (i, value))
    rows = db.execute("SELECT id, x FROM v ORDER BY id").rows
    assert [r[1] for r in rows] == VALUES
    for (_, got), want in zip(rows, VALUES):
        assert type(got) is type(want)


def test_round_trip_in_one_row_and_column_names(db):
    db.execute("CREATE TABLE r (n, i, f, t, b)")
    row = (None, 2**62, 1.5, "记忆", b"\xff\x00")
    db.execute("INSERT INTO r VALUES (?, ?, ?, ?, ?)", list(row))
    result = db.execute("SELECT n, i, f, t, b FROM r")
    assert result.columns == ["n", "i", "f", "t", "b"]
    assert result.rows == [row]


def test_bool_and_bytearray_arguments_are_normalised(db):
    result = db.execute("SELECT ?, ?, ?", (True, False, bytearray(b"ab")))
    assert result.rows == [(1, 0, b"ab")]


def test_write_counters(db):
    db.execute("CREATE TABLE c (id INTEGER PRIMARY KEY, x TEXT)")
    first = db.execute("INSERT INTO c (x) VALUES (?)", ["a"])
    assert (first.affected_row_count, first.last_insert_rowid) == (1, 1)
    db.execute("INSERT INTO c (x) VALUES (?)", ["b"])
    update = db.execute("UPDATE c SET x = 'z'")
    assert (update.affected_row_count, update.last_insert_rowid) == (2, None)
    select = db.execute("SELECT count(*) FROM c")
    assert (select.rows, select.affected_row_count, select.last_insert_rowid) == ([(2,)], 0, None)


def test_transaction_returns_one_result_per_statement(db):
    db.execute("CREATE TABLE t (id TEXT PRIMARY KEY, n INTEGER)")
    results = db.transaction([
        Stmt("INSERT INTO t VALUES (?, ?)", ("a", 1)),
        Stmt("INSERT INTO t VALUES (?, ?)", ["b", 2]),
        Stmt("SELECT id, n FROM t ORDER BY id"),
    ])
    assert len(results) == 3 and all(isinstance(r, ResultSet) for r in results)
    assert results[0].affected_row_count == 1
    assert results[2].rows == [("a", 1), ("b", 2)]


def test_empty_transaction_is_a_no_op(db):
    assert db.transaction([]) == []


@pytest.mark.parametrize("bad", [
    Stmt("INSERT INTO t VALUES (?, ?)", ("a", 99)),  # duplicate key: fails while running
    Stmt("INSERT INTO nowhere VALUES (1)"),  # missing table
    Stmt("THIS IS NOT SQL"),  # syntax error
], ids=["constraint", "no-table", "syntax"])
def test_transaction_is_all_or_nothing(db, bad):
    db.execute("CREATE TABLE t (id TEXT PRIMARY KEY, n INTEGER)")
    db.execute("INSERT INTO t VALUES ('a', 1)")
    with pytest.raises(RemoteError) as info:
        db.transaction([
            Stmt("INSERT INTO t VALUES (?, ?)", ("b", 2)),
            Stmt("UPDATE t SET n = n + 100"),
            bad,
            Stmt("INSERT INTO t VALUES (?, ?)", ("c", 3)),
        ])
    message = str(info.value)
    assert "\n" not in message
    assert "rolled back" in message or "nothing was run" in message
    assert db.execute("SELECT id, n FROM t ORDER BY id").rows == [("a", 1)]
    # The connection/stream is usable afterwards: no transaction left open.
    db.transaction([Stmt("INSERT INTO t VALUES ('d', 4)")])
    assert db.execute("SELECT count(*) FROM t").rows == [(2,)]


def test_transaction_error_names_the_failing_statement(db):
    db.execute("CREATE TABLE u (id TEXT PRIMARY KEY)")
    with pytest.raises(RemoteError) as info:
        db.transaction([Stmt("INSERT INTO u VALUES ('x')"), Stmt("INSERT INTO u VALUES ('x')")])
    assert "statement 2" in str(info.value)
    assert "UNIQUE" in str(info.value) or "CONSTRAINT" in str(info.value)
    assert info.value.server_code.startswith("SQLITE_CONSTRAINT")
    assert info.value.code() == "remote"            # the --json error name still works


def test_idempotent_statements_can_be_replayed(db):
    db.execute("CREATE TABLE f (id TEXT PRIMARY KEY, v TEXT)")
    push = [Stmt("INSERT OR IGNORE INTO f VALUES (?, ?)", ("f1", "one")),
            Stmt("INSERT INTO f VALUES (?, ?) ON CONFLICT(id) DO UPDATE SET v = excluded.v",
                 ("f2", "two"))]
    db.transaction(push)
    db.transaction(push)  # what a retry after a lost answer does
    assert db.execute("SELECT id, v FROM f ORDER BY id").rows == [("f1", "one"), ("f2", "two")]


def test_statement_error_is_remote_error_with_code(db):
    with pytest.raises(RemoteError) as info:
        db.execute("SELECT * FROM missing_table")
    assert "missing_table" in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("value", [2**63, -(2**63) - 1, math.nan, math.inf, object(), [1]])
def test_unstorable_arguments_are_rejected_before_sending(db, value):
    with pytest.raises(ValidationError):
        db.execute("SELECT ?", (value,))
    with pytest.raises(ValidationError):
        db.transaction([Stmt("SELECT ?", (value,))])


# ---- FileExecutor only ----------------------------------------------------------------------

def test_file_is_created_private(tmp_path):
    path = tmp_path / "new-dir" / "cloud.db"
    FileExecutor(path).close()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700


def test_existing_file_permissions_are_left_alone(tmp_path):
    path = tmp_path / "shared.db"
    path.touch(mode=0o644)
    os.chmod(path, 0o644)
    FileExecutor(path).close()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o644


def test_file_uses_wal(tmp_path):
    with FileExecutor(tmp_path / "w.db") as db:
        assert db.execute("PRAGMA journal_mode").rows == [("wal",)]


def test_not_a_database_is_one_line_remote_error(tmp_path):
    path = tmp_path / "garbage.db"
    path.write_bytes(b"this is not sqlite at all" * 100)
    with pytest.raises(RemoteError) as info:
        with FileExecutor(path) as db:
            db.execute("SELECT * FROM sqlite_master")
    assert "not a database" in str(info.value) and "\n" not in str(info.value)


def test_file_data_survives_reopen(tmp_path):
    path = tmp_path / "keep.db"
    with FileExecutor(path) as db:
        db.execute("CREATE TABLE k (x)")
        db.transaction([Stmt("INSERT INTO k VALUES (?)", ("kept",))])
    with FileExecutor(path) as db:
        assert db.execute("SELECT x FROM k").rows == [("kept",)]
