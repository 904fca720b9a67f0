"""End-to-end encryption: the keyring, and proofs against a real sqld's own files."""

from __future__ import annotations

from pathlib import Path

import pytest

from evoclaw_memory import CryptoError, Memory
from evoclaw_memory.cloud.crypto import Keyring, decode_record, encode_record
from evoclaw_memory.cloud.hrana import HranaClient
from evoclaw_memory.cloud.remote import SqlRemote

FAST = 2 ** 12        # scrypt cost for tests only; the stored parameters travel with the wrap
PASS = "correct horse battery staple"
SECRET_FACTS = [
    ("Lily's allergist is Dr Hargreaves at Spire Leeds", "owner/family/kids"),
    ("The NAS admin password hint is the cat's birthday", "technical/home-server"),
    ("我女儿对花生过敏", "health/allergies"),
    ("Flash the garden bot with `pio run -t upload`", "projects/garden-bot/firmware"),
]


def test_keyring_seal_open_binding_and_secrets():
    ring, record, recovery = Keyring.create("sam", PASS, FAST)
    sealed = ring.seal("hello", "row-1", "text")
    assert sealed.startswith("enc:v1:") and "hello" not in sealed
    assert ring.open(sealed, "row-1", "text") == "hello"
    with pytest.raises(CryptoError, match="row-2"):
        ring.open(sealed, "row-2", "text")                       # moved to another row
    with pytest.raises(CryptoError):
        Keyring.unlock("mallory", record, passphrase=PASS)       # bound to its agent
    import json
    stolen = json.loads(ring.export_local())
    stolen["agent"] = "mallory"
    with pytest.raises(CryptoError):
        Keyring.import_local(json.dumps(stolen)).open(sealed, "row-1", "text")  # other agent
    tampered = sealed[:-3] + ("A" if sealed[-3] != "A" else "B") + sealed[-2:]
    with pytest.raises(CryptoError, match="tampered"):
        ring.open(tampered, "row-1", "text")
    with pytest.raises(CryptoError, match="wrong passphrase"):
        Keyring.unlock("sam", record, passphrase="wrong")
    by_recovery = Keyring.unlock("sam", record, recovery_key=recovery.lower())
    assert by_recovery.open(sealed, "row-1", "text") == "hello"
    changed = ring.change_passphrase(record, "a new passphrase", FAST)
    with pytest.raises(CryptoError):
        Keyring.unlock("sam", changed, passphrase=PASS)
    assert Keyring.unlock("sam", changed, passphrase="a new passphrase").open(sealed, "row-1", "text") == "hello"
    rotated = ring.rotate(decode_record(encode_record(changed)))
    again = Keyring.unlock("sam", rotated, recovery_key=recovery)
    assert again.current != record.current
    assert again.open(sealed, "row-1", "text") == "hello"       # old rows still open
    assert again.category_token("home/pets") == ring.category_token("home/pets")
    material = json.loads(ring.export_local())
    assert all(v not in repr(ring) for v in [material["master"], *material["keys"].values()])


def _server_files_text(server) -> bytes:
    blob = b""
    for path in Path(server.data_dir).rglob("*"):
        if path.is_file() and "keys" not in path.parts:
            blob += path.read_bytes()
    return blob


def _fill(mem):
    mem.update_hot("identity", {"agent_name": "Claw", "owner_name": "Samantha Whitcombe"})
    mem.update_hot("lesson", {"text": "Never share the garage code 4471-8823", "importance": 0.95})
    return [mem.remember(text, category=cat, importance=0.8) for text, cat in SECRET_FACTS]


def test_cloud_sees_only_ciphertext(make_sqld, tmp_path):
    server = make_sqld()
    url, token = server.url, server.mint_token("rw")
    with Memory.open("sam", home=tmp_path / "a", cloud_url=url, cloud_token=token) as mem:
        recovery = mem.init_encryption(PASS, scrypt_n=FAST)
        _fill(mem)
        report = mem.sync()
        assert report.pushed_facts == 4 and report.state_pushed
    server.stop()                       # checkpoint: everything is in the server's own files
    raw = _server_files_text(server)
    assert b"enc:v1:" in raw
    # Needles long enough not to turn up by chance in log timestamps, ports or ciphertext
    # (a bare "4471" once matched a microsecond field of the server log).
    for needle in ["Hargreaves", "Spire", "Samantha", "Whitcombe", "garage code", "4471-8823",
                   "pio run", "owner/family", "home-server", "garden-bot", "花生", "allergies"]:
        assert needle.encode() not in raw, needle
    assert recovery.encode() not in raw


@pytest.fixture
def encrypted_cloud(make_sqld, tmp_path):
    server = make_sqld()
    url, token = server.url, server.mint_token("rw")
    with Memory.open("sam", home=tmp_path / "origin", cloud_url=url, cloud_token=token) as mem:
        recovery = mem.init_encryption(PASS, scrypt_n=FAST)
        facts = _fill(mem)
        for i in range(30):
            mem.remember(f"note {i}: the greenhouse vent opens at {20 + i % 5} degrees",
                         category="projects/garden-bot", importance=0.5)
        mem.sync()
    return server, url, token, recovery, facts


def test_restore_with_passphrase_recovery_key_and_wrong_one(encrypted_cloud, tmp_path, monkeypatch):
    server, url, token, recovery, facts = encrypted_cloud
    with Memory.open("sam", home=tmp_path / "wrong", cloud_url=url, cloud_token=token) as mem:
        with pytest.raises(CryptoError, match="wrong passphrase"):
            mem.restore(passphrase="not it")
        assert mem.store.is_empty()                           # nothing written locally
        monkeypatch.delenv("EVOCLAW_PASSPHRASE", raising=False)
        with pytest.raises(CryptoError, match="passphrase"):
            mem.restore()                                     # no secret at all: clear error
    with Memory.open("sam", home=tmp_path / "p", cloud_url=url, cloud_token=token) as mem:
        report = mem.restore(passphrase=PASS, full=True)
        assert report.archive_facts == 34 and not report.rejected
        assert mem.hot.identity.owner_name == "Samantha Whitcombe"
        assert mem.retrieve("who is Lily's allergist")[0].fact.id == facts[0].id
    monkeypatch.setenv("EVOCLAW_RECOVERY_KEY", recovery)
    with Memory.open("sam", home=tmp_path / "r", cloud_url=url, cloud_token=token) as mem:
        mem.restore()
        assert "garage code" in mem.config.memory_md_path.read_text()


def test_tampered_row_is_reported_and_skipped(encrypted_cloud, tmp_path):
    server, url, token, recovery, facts = encrypted_cloud
    victim = facts[1].id
    with SqlRemote(HranaClient(url, token), "raw") as raw:
        text = raw.sql.execute("SELECT text FROM cold_memories WHERE id = ?", (victim,)).rows[0][0]
        flipped = text[:-5] + ("A" if text[-5] != "A" else "B") + text[-4:]
        raw.sql.execute("UPDATE cold_memories SET text = ? WHERE id = ?", (flipped, victim))
    with Memory.open("sam", home=tmp_path / "t", cloud_url=url, cloud_token=token) as mem:
        report = mem.restore(passphrase=PASS, full=True)
        assert any(victim in line for line in report.rejected)
        assert mem.store.get_fact(victim) is None              # never decrypted into garbage
        assert mem.store.count_facts() == 33


def test_retrieval_is_the_same_with_encryption_on_and_off(make_sqld, tmp_path):
    results = {}
    for mode in ("on", "off"):
        server = make_sqld()
        url, token = server.url, server.mint_token("rw")
        with Memory.open("sam", home=tmp_path / f"src-{mode}", cloud_url=url, cloud_token=token,
                         encryption=mode) as mem:
            if mode == "on":
                mem.init_encryption(PASS, scrypt_n=FAST)
            _fill(mem)
            mem.sync()
        with Memory.open("sam", home=tmp_path / f"dst-{mode}", cloud_url=url, cloud_token=token,
                         encryption=mode) as mem:
            mem.restore(passphrase=PASS if mode == "on" else None, full=True)
            results[mode] = [[(h.fact.text, h.method, h.path) for h in mem.retriever().retrieve(q)]
                             for q in ("allergist", "花生过敏", "garden bot firmware", "password")]
            cold = mem.cold_query(category="owner/family")
            results[mode].append(sorted(f.text for f in cold))
    assert results["on"] == results["off"]
    assert results["on"][0] and results["on"][-1] == [SECRET_FACTS[0][0]]


def test_plain_device_cannot_write_clear_text_into_encrypted_agent(encrypted_cloud, tmp_path):
    server, url, token, recovery, facts = encrypted_cloud
    with Memory.open("sam", home=tmp_path / "plain", cloud_url=url, cloud_token=token,
                     encryption="auto") as mem:
        mem.remember("clear text that must not leak", category="misc")
        plain = SqlRemote(HranaClient(url, token), "plain")     # no keys attached
        with pytest.raises(CryptoError, match="encrypted"):
            mem.sync_engine(plain).sync()
        plain.close()
        assert mem.store.outbox_depth() > 0                      # kept, not lost
    with SqlRemote(HranaClient(url, token), "raw") as raw:
        texts = [r[0] for r in raw.sql.execute("SELECT text FROM cold_memories").rows]
    assert all(t.startswith("enc:v2:") for t in texts)


def test_change_passphrase_and_rotate_reencrypt_via_outbox(encrypted_cloud, tmp_path):
    server, url, token, recovery, facts = encrypted_cloud
    with Memory.open("sam", home=tmp_path / "d", cloud_url=url, cloud_token=token) as mem:
        mem.restore(passphrase=PASS, full=True)
        mem.change_passphrase(PASS, "brand new passphrase")
        key_id = mem.rotate_key()
        mem.sync()
        assert mem.store.outbox_depth() == 0
    with SqlRemote(HranaClient(url, token), "raw") as raw:
        texts = [r[0] for r in raw.sql.execute("SELECT text FROM cold_memories").rows]
    assert all(t.startswith(f"enc:v2:{key_id}:") for t in texts)   # all re-sealed
    with Memory.open("sam", home=tmp_path / "e", cloud_url=url, cloud_token=token) as mem:
        with pytest.raises(CryptoError):
            mem.restore(passphrase=PASS)
        report = mem.restore(passphrase="brand new passphrase", full=True)
        assert report.archive_facts == 34 and not report.rejected


def test_file_cloud_can_be_encrypted_too(tmp_path):
    cloud = tmp_path / "backup-drive.db"
    with Memory.open("sam", home=tmp_path / "a", cloud_url=str(cloud), encryption="on") as mem:
        mem.init_encryption(PASS, scrypt_n=FAST)
        _fill(mem)
        mem.sync()
    assert b"Hargreaves" not in cloud.read_bytes()
    with Memory.open("sam", home=tmp_path / "b", cloud_url=str(cloud)) as mem:
        mem.restore(passphrase=PASS)
        assert mem.hot.identity.agent_name == "Claw"


def test_rotation_on_one_device_is_picked_up_by_another(encrypted_cloud, tmp_path):
    server, url, token, recovery, facts = encrypted_cloud
    with Memory.open("sam", home=tmp_path / "a", cloud_url=url, cloud_token=token) as a, \
            Memory.open("sam", home=tmp_path / "b", cloud_url=url, cloud_token=token) as b:
        a.restore(passphrase=PASS)
        b.restore(passphrase=PASS)
        a.rotate_key()
        new = a.remember("Written under the rotated key: the shed code is 7712", category="home")
        a.sync()
        report = b.sync()                                  # b still holds the old keyring
        assert b.store.get_fact(new.id) is not None, report
        assert b.retrieve("shed code")[0].fact.id == new.id
        b.remember("b writes after adopting the new key", category="home")
        b.sync()
    with SqlRemote(HranaClient(url, token), "raw") as raw:
        texts = [r[0] for r in raw.sql.execute("SELECT text FROM cold_memories").rows]
    current = {t.split(":")[2] for t in texts}
    assert len(current) == 1                                # everything sealed under one key
