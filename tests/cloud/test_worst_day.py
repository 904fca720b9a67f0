"""The worst day (issue 27): an owner whose device is lost restores the agent on a new one.

Against a real sqld (and the default local-file cloud): a restore of an agent the cloud does
not hold says so and names the ones it holds, on an encrypted cloud too; a failed restore
leaves no new agent folder; `agents` lists what the cloud holds; devices get names that tell
them apart, and a re-restored device retires its own old id; the counts a restore and a
refused restore print are what a person counts."""

from __future__ import annotations

import contextlib

import json
import socket
import time
from pathlib import Path

from click.testing import CliRunner

from evoclaw_memory import Memory
from evoclaw_memory.cli.main import cli
from evoclaw_memory.cloud.hrana import HranaClient
from evoclaw_memory.cloud.remote import SqlRemote

FAST = 2 ** 12
PASS = "correct horse battery staple"


def run(home: Path, *args: str, env: dict | None = None):
    """The CLI as a person runs it on the new device (no config.toml: the environment)."""
    return CliRunner().invoke(cli, ["--home", str(home), *args], env=env or {},
                              prog_name="evoclaw-memory")


def cloud_env(url: str, token: str, **extra: str) -> dict:
    return {"TURSO_DATABASE_URL": url, "TURSO_AUTH_TOKEN": token, **extra}


def error_line(result) -> str:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


def remote_for(url, token, timeout=2.0, retries=1):
    return SqlRemote(HranaClient(url, token, timeout=timeout, retries=retries, backoff=0.05,
                                 max_backoff=0.1), label=url)


def fill(mem, n, tag, category="projects/greenhouse"):
    return [mem.remember(f"{tag} note {i}: the greenhouse vent {i} sticks in the cold",
                         category=category) for i in range(n)]


def encrypted_sam(url, token, home: Path, n: int = 3) -> None:
    with Memory.open("sam", home=home, cloud_url=url, cloud_token=token) as mem:
        mem.init_encryption(PASS, scrypt_n=FAST)
        fill(mem, n, "sam")
        mem.sync()


# -- 1. the wrong agent name on an encrypted cloud -------------------------------------------

def test_restore_of_a_missing_agent_on_an_encrypted_cloud_names_the_agents(fresh_db, tmp_path):
    url, token = fresh_db
    encrypted_sam(url, token, tmp_path / "old-phone")
    new = tmp_path / "new-device"
    env = cloud_env(url, token, EVOCLAW_PASSPHRASE=PASS)
    result = run(new, "restore", env=env)               # no --agent-id: 'default'
    assert result.exit_code == 3, result.output
    assert error_line(result) == (
        "error: the cloud has no memory for agent 'default'; it holds: sam (list them with "
        "`evoclaw-memory agents`)")
    assert "key init" not in result.stderr
    assert not (new / "agents").exists()               # no empty agent, no marker left behind
    # The same mistake with the JSON error for scripts.
    scripted = run(new, "--json", "restore", env=env)
    assert scripted.exit_code == 3 and json.loads(scripted.stdout)["code"] == "not_found"
    # The name found, the restore works.
    restored = run(new, "restore", "--agent-id", "sam", env=env)
    assert restored.exit_code == 0, restored.output
    assert "restored agent sam" in restored.stdout


def test_failed_restores_leave_no_new_agent_folder(fresh_db, tmp_path):
    url, token = fresh_db
    encrypted_sam(url, token, tmp_path / "old-phone")
    new = tmp_path / "new-device"
    wrong = run(new, "restore", "--agent-id", "sam",
                env=cloud_env(url, token, EVOCLAW_PASSPHRASE="not the passphrase"))
    assert wrong.exit_code == 6 and "wrong passphrase" in error_line(wrong)
    assert not (new / "agents").exists()
    with socket.socket() as probe:                      # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{probe.getsockname()[1]}"
    offline = run(new, "restore", "--agent-id", "sam",
                  env=cloud_env(dead, token, EVOCLAW_PASSPHRASE=PASS))
    assert offline.exit_code == 5, offline.output
    assert not (new / "agents").exists()
    # An agent folder that was there before a failed restore is left as it was.
    with Memory.open("sam", home=new, encryption="off") as mine:
        mine.remember("a note only this device has", category="notes")
    before = sorted(p.name for p in (new / "agents" / "sam").iterdir())
    refused = run(new, "restore", "--agent-id", "sam", "--force", "--discard-unsynced",
                  env=cloud_env(url, token, EVOCLAW_PASSPHRASE="not the passphrase"))
    assert refused.exit_code == 6
    assert sorted(p.name for p in (new / "agents" / "sam").iterdir()) == before
    with Memory.open("sam", home=new, encryption="off") as mine:
        assert [f.text for f in mine.store.iter_facts()] == ["a note only this device has"]


# -- 2. the agents a cloud holds -------------------------------------------------------------

def test_agents_lists_what_the_cloud_holds_in_one_request(fresh_db, tmp_path):
    url, token = fresh_db
    encrypted_sam(url, token, tmp_path / "phone", n=4)
    with Memory.open("sam", home=tmp_path / "laptop", cloud_url=url, cloud_token=token) as mem:
        mem.restore(passphrase=PASS)
        mem.sync()                                      # sam's second device
    with Memory.open("kim", home=tmp_path / "pi", cloud_url=url, cloud_token=token,
                     encryption="off") as mem:
        fill(mem, 2, "kim", category="home/plants")
        mem.sync()
        stolen = mem.sync_status()["device_id"]
    with Memory.open("kim", home=tmp_path / "pi2", cloud_url=url, cloud_token=token,
                     encryption="off") as mem:
        mem.sync()
        assert mem.revoke_device(stolen)                # revoked: not counted as a device
    started = time.time()
    home = tmp_path / "new-device"
    listed = run(home, "--json", "agents", env=cloud_env(url, token))
    assert listed.exit_code == 0, listed.output
    rows = json.loads(listed.stdout)
    assert [{k: v for k, v in r.items() if k != "last_sync"} for r in rows] == [
        {"agent_id": "kim", "devices": 1, "facts": 2, "encrypted": False},
        {"agent_id": "sam", "devices": 2, "facts": 4, "encrypted": True}]
    for row in rows:
        assert row["last_sync"].endswith("Z") and row["last_sync"][:4].isdigit()
    human = run(home, "agents", env=cloud_env(url, token))
    assert human.exit_code == 0
    lines = human.stdout.splitlines()
    assert lines[0].startswith("kim  1 device  2 facts  last sync ") and lines[0].endswith(
        " UTC  not encrypted")
    assert lines[1].startswith("sam  2 devices  4 facts  last sync ") and lines[1].endswith(
        " UTC  encrypted")
    assert not (home / "agents").exists()               # listing opened no agent's memory
    with remote_for(url, token) as remote:
        remote.assume_schema()
        before = remote.sql.pipeline_count
        found = remote.agents()
        assert remote.sql.pipeline_count - before == 1
    assert {a.agent_id: a.last_sync for a in found}["sam"] <= time.time() + 1
    assert started - 600 < {a.agent_id: a.last_sync for a in found}["kim"]


def test_local_file_cloud_lists_agents_and_restore_names_them(tmp_path):
    """No cloud configured: the default local file ($EVOCLAW_HOME/cloud.db)."""
    home = tmp_path / "home"
    empty = run(home, "agents")
    assert empty.exit_code == 0 and empty.stdout.strip() == "(the cloud holds no agents yet)"
    nothing = run(home, "restore")
    assert nothing.exit_code == 3
    assert error_line(nothing) == ("error: the cloud has no memory for agent 'default'; "
                                   "it holds no agents")
    for agent in ("sam", "kim"):
        assert run(home, "--agent-id", agent, "store", "--text", f"{agent} likes tea",
                   "--category", "owner/preferences").exit_code == 0
        assert run(home, "--agent-id", agent, "sync").exit_code == 0
    rows = json.loads(run(home, "agents", "--json").stdout)
    assert [(r["agent_id"], r["devices"], r["facts"], r["encrypted"]) for r in rows] == [
        ("kim", 1, 1, False), ("sam", 1, 1, False)]
    missing = run(home, "restore", "--agent-id", "bob")
    assert missing.exit_code == 3
    assert error_line(missing) == ("error: the cloud has no memory for agent 'bob'; it holds: "
                                   "kim, sam (list them with `evoclaw-memory agents`)")
    assert sorted(p.name for p in (home / "agents").iterdir()) == ["kim", "sam"]


# -- 3. device names, and the ghost of a re-restored device ----------------------------------

def test_devices_are_named_after_the_host_and_their_id(fresh_db, tmp_path):
    url, token = fresh_db
    ids = []
    for home in ("a", "b"):
        with Memory.open("sam", home=tmp_path / home, cloud_url=url, cloud_token=token,
                         encryption="off") as mem:
            mem.sync()
            ids.append(mem.sync_status()["device_id"])
        listed = {d.device_id: d.name for d in mem.devices(remote_for(url, token))}
    host = socket.gethostname()
    assert listed == {i: f"{host}-{i.removeprefix('dev-')[:4]}" for i in ids}
    assert len(set(listed.values())) == 2               # two devices on one host: told apart


def _device_id(home: Path, env: dict) -> str:
    return json.loads(run(home, "--agent-id", "sam", "sync", "--status", "--json",
                          env=env).stdout)["device_id"]


def test_restore_force_retires_the_old_id_and_keeps_the_name(fresh_db, tmp_path):
    url, token = fresh_db
    env = cloud_env(url, token, EVOCLAW_ENCRYPTION="off")
    owner, pi = tmp_path / "owner", tmp_path / "pi"
    assert run(owner, "--agent-id", "sam", "store", "--text", "Biscuit likes carrots",
               "--category", "home/pets", env=env).exit_code == 0
    assert run(owner, "--agent-id", "sam", "sync", env=env).exit_code == 0
    assert run(pi, "--agent-id", "sam", "restore", env=env).exit_code == 0
    assert run(pi, "--agent-id", "sam", "sync", env=env).exit_code == 0
    old = _device_id(pi, env)
    # Named by the owner from another device: the name lives only in the cloud.
    assert run(owner, "--agent-id", "sam", "devices", "rename", old, "Kitchen Pi",
               env=env).exit_code == 0
    again = run(pi, "--agent-id", "sam", "restore", "--force", env=env)
    assert again.exit_code == 0, again.output
    new = _device_id(pi, env)
    assert new != old
    listed = json.loads(run(owner, "--agent-id", "sam", "devices", "list", "--json",
                            env=env).stdout)
    assert old not in {d["device_id"] for d in listed}          # no ghost
    assert {d["device_id"]: d["name"] for d in listed}[new] == "Kitchen Pi"
    assert len(listed) == 2
    # The owner cannot revoke the ghost, and the restored device keeps syncing.
    ghost = run(owner, "--agent-id", "sam", "devices", "revoke", old, "--yes", env=env)
    assert ghost.exit_code == 3
    assert run(pi, "--agent-id", "sam", "store", "--text", "The pi moved to the shed",
               "--category", "home/devices", env=env).exit_code == 0
    assert run(pi, "--agent-id", "sam", "sync", env=env).exit_code == 0
    assert run(owner, "--agent-id", "sam", "sync", env=env).exit_code == 0
    found = run(owner, "--agent-id", "sam", "--json", "retrieve", "where is the pi", env=env)
    assert "shed" in found.stdout
    # Revoking the device now revokes the real one, under its new id.
    assert run(owner, "--agent-id", "sam", "devices", "revoke", new, "--yes",
               env=env).exit_code == 0
    assert run(pi, "--agent-id", "sam", "sync", env=env).exit_code == 5


@contextlib.contextmanager
def _second_device(tmp_path, url: str, token: str, facts: int):
    """Device "a" stores `facts` facts and syncs; device "b" restores them and syncs (so
    its id is registered in the cloud): b, open."""
    with Memory.open("sam", home=tmp_path / "a", encryption="off") as a:
        fill(a, facts, "synced")
        a.sync(remote=remote_for(url, token))
    with Memory.open("sam", home=tmp_path / "b", encryption="off") as b:
        b.restore(remote=remote_for(url, token))
        b.sync(remote=remote_for(url, token))
        yield b


def test_a_retire_the_restore_could_not_send_is_sent_by_the_next_sync(fresh_db, fault_proxy,
                                                                         tmp_path):
    url, token = fresh_db
    with _second_device(tmp_path, url, token, facts=3) as b:
        old = b.sync_status()["device_id"]

        def cut_at_the_end(stage: str, done: int, total: int) -> None:
            if stage == "done":
                fault_proxy.set_mode("down")

        report = b.restore(force=True, progress=cut_at_the_end,
                           remote=remote_for(fault_proxy.url_for(url), token, timeout=0.5))
        assert report.warm_facts == 3                   # the restore stands
        new = b.sync_status()["device_id"]
        assert new != old
        ids = {d.device_id for d in b.devices(remote_for(url, token))}
        assert old in ids                               # not retired yet: the cloud was gone
        fault_proxy.set_mode("pass")
        b.sync(remote=remote_for(url, token))
        ids = {d.device_id for d in b.devices(remote_for(url, token))}
        assert old not in ids and new in ids
        assert b.store.get_setting("sync.retire_device_id") is None


def test_a_revoked_old_id_stays_revoked_and_the_new_id_is_not(fresh_db, tmp_path):
    url, token = fresh_db
    with _second_device(tmp_path, url, token, facts=2) as b:
        old = b.sync_status()["device_id"]
        with remote_for(url, token) as remote:
            assert remote.revoke("sam", old)
        b.restore(force=True, remote=remote_for(url, token))
        b.remember("after the restore", category="notes")
        assert b.sync(remote=remote_for(url, token)).pushed_facts == 1   # not revoked
        rows = {d.device_id: d.revoked_at for d in b.devices(remote_for(url, token))}
        assert rows[old] is not None and rows[b.sync_status()["device_id"]] is None


# -- 10. the counts a restore prints ---------------------------------------------------------

def test_restore_counts_say_what_a_person_counts(tmp_path):
    home = tmp_path / "home"
    cloud = {"TURSO_DATABASE_URL": str(tmp_path / "cloud.db")}
    for i in range(5):
        assert run(home, "--agent-id", "sam", "store", "--text", f"Fact number {i} about tea",
                   "--category", "owner/preferences", env=cloud).exit_code == 0
    assert run(home, "--agent-id", "sam", "sync", env=cloud).exit_code == 0
    new = tmp_path / "new"
    full = run(new, "--agent-id", "sam", "restore", "--full", env=cloud)
    assert full.exit_code == 0, full.output
    assert "5 of the archive's 5 fact(s) on this device (5 warm)" in full.stdout
    assert "0 mirrored" not in full.stdout
    # One stored fact in a new category: the fact and the tree it made, said as such.
    assert run(new, "--agent-id", "sam", "store", "--text", "The kettle is blue",
               "--category", "home/kitchen", env=cloud).exit_code == 0
    refused = run(new, "--agent-id", "sam", "restore", "--force", env=cloud)
    assert refused.exit_code == 8
    assert error_line(refused).startswith(
        "error: this device has 1 fact and a hot memory/category tree change not yet synced")
    assert "2 change(s)" not in refused.stderr
    dropped = run(new, "--agent-id", "sam", "restore", "--force", "--discard-unsynced",
                  env=cloud)
    assert dropped.exit_code == 0
    assert dropped.stdout.strip().endswith(
        "discarded 1 fact and a hot memory/category tree change not yet synced")
