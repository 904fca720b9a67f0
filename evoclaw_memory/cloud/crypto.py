"""End-to-end encryption of everything that leaves the device (SPEC §7).

Envelope encryption: each agent has random 256-bit data keys; every value pushed to the cloud
is sealed with AES-256-GCM under the current one, with the agent id, the row id and the field
bound as associated data (a row copied to another agent or id fails to open). Data keys are
stored only wrapped: by a key derived from the owner's passphrase (scrypt, parameters kept
with the wrap) and, separately, by a random recovery key shown once. Changing the passphrase
rewraps; rotation adds a new data key (old ones stay in the keyring to read old rows).

Formats (versioned, so a later format can live beside old rows):
    sealed value   enc:v1:<key id>:<base64url(nonce 12 bytes | ciphertext | tag)>
                   associated data: agent id, row id, field
    sealed value   enc:v2:<key id>:<same>   (fact rows, since the "nothing lost" release)
                   associated data: the v1 data + the row's clear columns (clear_context)
    category       h:<hex of HMAC-SHA256(category key, path)[:16 bytes]>
v1 values still open (the release before sealed them); they authenticate no clear column.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
import secrets
from typing import Optional

import msgspec
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.hazmat.primitives.kdf.scrypt import Scrypt

from evoclaw_memory.errors import CryptoError

PREFIX = "enc:v1:"
PREFIX_V2 = "enc:v2:"
_PREFIX_LENGTH = len(PREFIX)        # both versions: "enc:vN:"
CATEGORY_PREFIX = "h:"
SCRYPT_N = 2 ** 17          # ~0.3 s on a laptop core, a few seconds on a Raspberry Pi
SCRYPT_R = 8
SCRYPT_P = 1
_RECOVERY_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"   # no 0/O, 1/I/L: read aloud safely


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


_URLSAFE_TO_STANDARD = bytes.maketrans(b"-_", b"+/")


def _unb64(text: str) -> bytes:
    # base64.urlsafe_b64decode, minus its Python-level checks and copies: a restore opens
    # hundreds of thousands of values. Equally lenient; a forged value still fails its tag.
    data = text.encode("ascii").translate(_URLSAFE_TO_STANDARD)
    return binascii.a2b_base64(data + b"=" * (-len(data) % 4))


class Wrap(msgspec.Struct, omit_defaults=True):
    """One data key sealed under a key-encryption key (from a passphrase or recovery key)."""

    nonce: str
    sealed: str
    salt: str = ""          # scrypt only
    n: int = 0
    r: int = 0
    p: int = 0


class SealedKey(msgspec.Struct):
    """A data key sealed under the master key."""

    key_id: str
    nonce: str
    sealed: str


class KeyringRecord(msgspec.Struct):
    """What is stored (the cloud's evoclaw_keys table, and locally): wrapped keys only.

    The passphrase and the recovery key each wrap one master key; the master key wraps the
    data keys. So a passphrase change rewraps one key, and a rotation needs neither secret."""

    version: int
    current: str
    by_passphrase: Wrap
    by_recovery: Wrap
    keys: list[SealedKey]
    check: str              # a sealed known value: tells a wrong key from a damaged record


def encode_record(record: KeyringRecord) -> str:
    return msgspec.json.encode(record).decode()


def decode_record(text: str) -> KeyringRecord:
    try:
        return msgspec.json.decode(text, type=KeyringRecord)
    except msgspec.MsgspecError as exc:
        raise CryptoError(f"the stored keyring is damaged: {exc}") from exc


def _scrypt(passphrase: str, salt: bytes, n: int, r: int, p: int) -> bytes:
    if not passphrase:
        raise CryptoError("the passphrase is empty")
    return Scrypt(salt=salt, length=32, n=n, r=r, p=p).derive(passphrase.encode())


def recovery_key_bytes(recovery_key: str) -> bytes:
    """The 32-byte key behind a human-friendly recovery key (groups, any case, any dashes)."""
    clean = "".join(ch for ch in recovery_key.upper() if ch.isalnum())
    if len(clean) < 40 or any(ch not in _RECOVERY_ALPHABET for ch in clean):
        raise CryptoError("that is not a recovery key (expected groups like ABCDE-FGHJK-...)")
    return hashlib.sha256(("evoclaw-recovery:" + clean).encode()).digest()


def new_recovery_key() -> str:
    """A random recovery key, ~270 bits, in eleven groups of five characters."""
    chars = "".join(secrets.choice(_RECOVERY_ALPHABET) for _ in range(55))
    return "-".join(chars[i:i + 5] for i in range(0, 55, 5))


def _seal_raw(key: bytes, plaintext: bytes, aad: bytes) -> tuple[bytes, bytes]:
    nonce = os.urandom(12)
    return nonce, AESGCM(key).encrypt(nonce, plaintext, aad)


def _wrap(kek: bytes, key: bytes, label: str, **scrypt_params) -> Wrap:
    nonce, sealed = _seal_raw(kek, key, f"evoclaw-wrap:{label}".encode())
    return Wrap(nonce=_b64(nonce), sealed=_b64(sealed), **scrypt_params)


def _unwrap(kek: bytes, wrap: Wrap, label: str, what: str) -> bytes:
    try:
        return AESGCM(kek).decrypt(_unb64(wrap.nonce), _unb64(wrap.sealed),
                                   f"evoclaw-wrap:{label}".encode())
    except (InvalidTag, ValueError) as exc:
        raise CryptoError(f"wrong {what}") from exc


def _passphrase_wrap(passphrase: str, master: bytes, n: int) -> Wrap:
    salt = os.urandom(16)
    kek = _scrypt(passphrase, salt, n, SCRYPT_R, SCRYPT_P)
    return _wrap(kek, master, "master", salt=_b64(salt), n=n, r=SCRYPT_R, p=SCRYPT_P)


def _seal_data_key(master: bytes, key_id: str, data_key: bytes) -> SealedKey:
    w = _wrap(master, data_key, f"data:{key_id}")
    return SealedKey(key_id=key_id, nonce=w.nonce, sealed=w.sealed)


class Keyring:
    """The unwrapped keys of one agent, and the sealing/opening done with them."""

    def __init__(self, agent_id: str, master: bytes, keys: dict[str, bytes], current: str,
                 first: str):
        self.agent_id = agent_id
        self._master = master
        self._keys = keys
        self.current = current
        self._first = first         # category hashes always use the first key: stable tokens
        self._subkeys: dict[str, tuple[AESGCM, bytes]] = {}
        self._tokens: dict[str, str] = {}

    def __repr__(self) -> str:      # never show key material
        return f"Keyring(agent={self.agent_id!r}, keys={len(self._keys)}, current={self.current!r})"

    # -- creation and unlocking -----------------------------------------------------------

    @classmethod
    def create(cls, agent_id: str, passphrase: str, scrypt_n: int = SCRYPT_N
               ) -> tuple["Keyring", KeyringRecord, str]:
        """A new keyring: (keyring, the record to store, the recovery key to show ONCE)."""
        recovery = new_recovery_key()
        master = AESGCM.generate_key(bit_length=256)
        key_id = secrets.token_hex(4)
        data_key = AESGCM.generate_key(bit_length=256)
        ring = cls(agent_id, master, {key_id: data_key}, key_id, key_id)
        record = KeyringRecord(
            version=1, current=key_id,
            by_passphrase=_passphrase_wrap(passphrase, master, scrypt_n),
            by_recovery=_wrap(recovery_key_bytes(recovery), master, "master"),
            keys=[_seal_data_key(master, key_id, data_key)],
            check=ring.seal("evoclaw-check", "keyring", "check"))
        return ring, record, recovery

    @classmethod
    def unlock(cls, agent_id: str, record: KeyringRecord, *, passphrase: Optional[str] = None,
               recovery_key: Optional[str] = None) -> "Keyring":
        """Unwrap the keys with the passphrase or the recovery key (CryptoError if wrong)."""
        if recovery_key:
            master = _unwrap(recovery_key_bytes(recovery_key), record.by_recovery, "master",
                             "recovery key")
        elif passphrase:
            w = record.by_passphrase
            master = _unwrap(_scrypt(passphrase, _unb64(w.salt), w.n, w.r, w.p), w, "master",
                             "passphrase")
        else:
            raise CryptoError("this memory is encrypted: give the passphrase (EVOCLAW_PASSPHRASE "
                              "or the prompt) or the recovery key (EVOCLAW_RECOVERY_KEY)")
        keys = {}
        for sealed in record.keys:
            keys[sealed.key_id] = _unwrap(master, Wrap(nonce=sealed.nonce, sealed=sealed.sealed),
                                          f"data:{sealed.key_id}", "keyring (damaged)")
        ring = cls(agent_id, master, keys, record.current, record.keys[0].key_id)
        if ring.open(record.check, "keyring", "check") != "evoclaw-check":
            raise CryptoError("the keyring check value does not match")
        return ring

    def change_passphrase(self, record: KeyringRecord, new_passphrase: str,
                          scrypt_n: int = SCRYPT_N) -> KeyringRecord:
        """The record with the master key rewrapped under a new passphrase (no re-encryption)."""
        return msgspec.structs.replace(
            record, version=record.version + 1,
            by_passphrase=_passphrase_wrap(new_passphrase, self._master, scrypt_n))

    def rotate(self, record: KeyringRecord) -> KeyringRecord:
        """Add a new current data key; old ones stay so old rows open until re-sealed."""
        key_id = secrets.token_hex(4)
        data_key = AESGCM.generate_key(bit_length=256)
        self._keys[key_id] = data_key
        self.current = key_id
        return msgspec.structs.replace(record, version=record.version + 1, current=key_id,
                                       keys=record.keys + [_seal_data_key(self._master, key_id,
                                                                          data_key)])

    def export_local(self) -> str:
        """The unwrapped keys, for the device's own 0600 database only (the device is trusted:
        it holds the plaintext memory anyway)."""
        return msgspec.json.encode({"agent": self.agent_id, "master": _b64(self._master),
                                    "current": self.current, "first": self._first,
                                    "keys": {k: _b64(v) for k, v in self._keys.items()}}).decode()

    @classmethod
    def import_local(cls, text: str) -> "Keyring":
        data = msgspec.json.decode(text)
        return cls(data["agent"], _unb64(data["master"]),
                   {k: _unb64(v) for k, v in data["keys"].items()}, data["current"],
                   data["first"])

    # -- sealing ---------------------------------------------------------------------------

    def _sub(self, key_id: str) -> tuple[AESGCM, bytes]:
        """(cipher, category-hash key) derived from one data key with HKDF, made once: a
        restore opens hundreds of thousands of values."""
        if key_id not in self._subkeys:
            if key_id not in self._keys:
                raise CryptoError(f"data key {key_id} is not in this keyring")
            material = HKDF(algorithm=hashes.SHA256(), length=64, salt=None,
                            info=b"evoclaw-memory v1").derive(self._keys[key_id])
            self._subkeys[key_id] = (AESGCM(material[:32]), material[32:])
        return self._subkeys[key_id]

    def _aad(self, row_id: str, field: str, clear: Optional[str] = None) -> bytes:
        base = f"{self.agent_id}\x1f{row_id}\x1f{field}"
        return (base if clear is None else f"{base}\x1e{clear}").encode()

    def seal(self, plaintext: str, row_id: str, field: str, clear: Optional[str] = None) -> str:
        """Seal under the current key; with `clear` (clear_context) the v2 form, which also
        authenticates the row's clear columns."""
        cipher, _ = self._sub(self.current)
        nonce = os.urandom(12)
        sealed = cipher.encrypt(nonce, plaintext.encode(), self._aad(row_id, field, clear))
        prefix = PREFIX if clear is None else PREFIX_V2
        return f"{prefix}{self.current}:{_b64(nonce + sealed)}"

    def open(self, value: str, row_id: str, field: str, clear: Optional[str] = None) -> str:
        """The plaintext of a sealed value; CryptoError naming the row if it was tampered with.

        A v2 value opens only with the clear columns it was sealed with (`clear`); a v1 value
        (no clear columns bound) ignores them."""
        if clear is not None and type(value) is str and value.startswith(PREFIX_V2):
            # Today's form, first: a mirror opens two or three values a fact, 100k facts.
            aad = f"{self.agent_id}\x1f{row_id}\x1f{field}\x1e{clear}".encode()
        elif isinstance(value, str) and value.startswith(PREFIX):
            aad = self._aad(row_id, field)
        elif isinstance(value, str) and value.startswith(PREFIX_V2):
            raise CryptoError(f"row {row_id}: {field} is bound to clear columns not given")
        else:
            raise CryptoError(f"row {row_id}: {field} is not encrypted (or not by evoclaw)")
        try:
            key_id, _, body = value[_PREFIX_LENGTH:].partition(":")
            blob = _unb64(body)
            sub = self._subkeys.get(key_id) or self._sub(key_id)
            return sub[0].decrypt(blob[:12], blob[12:], aad).decode()
        except CryptoError:
            raise
        except (InvalidTag, ValueError, UnicodeError, binascii.Error) as exc:
            what = "its clear columns (importance, created_at, superseded_by, category) or " \
                if clear is not None and value.startswith(PREFIX_V2) else ""
            raise CryptoError(f"row {row_id}: {field} failed authentication ({what}the value "
                              "tampered with, or moved from another row)") from exc

    def category_token(self, path: str) -> str:
        """A keyed hash of a category path: the cloud can filter by it, not read it."""
        if path not in self._tokens:
            _, mac_key = self._sub(self._first)
            digest = hmac.new(mac_key, f"{self.agent_id}\x1f{path}".encode(),
                              hashlib.sha256).digest()
            self._tokens[path] = CATEGORY_PREFIX + digest[:16].hex()
        return self._tokens[path]


def is_sealed(value: object) -> bool:
    return isinstance(value, str) and value.startswith((PREFIX, PREFIX_V2))


def sealed_with(key_id: str) -> str:
    """The prefix of a fact value sealed in today's form under `key_id` (re-seal skips these)."""
    return f"{PREFIX_V2}{key_id}:"


def clear_context(importance: object, created_at: object, superseded_by: object,
                  category_token: object, flags: object = 0) -> str:
    """The clear columns of a fact row that its v2 values authenticate, as one string.

    These are the columns the cloud filters and ranks by (a forged supersession or importance
    would hide a fact). Access counts and last-access times are left out: devices merge them
    with max() in the cloud, so they legitimately differ from what any one device sealed.
    importance is compared at 6 decimals (the codec rounds it so before sending): SQLite's
    JSON renders REALs with 15 digits."""
    imp = "-" if importance is None else f"{float(importance):.6f}"  # type: ignore[arg-type]
    # An INTEGER column comes back as int; anything else (a REAL, a text) was not ours.
    created = str(created_at) if isinstance(created_at, int) else f"?{created_at!r}"
    context = f"{imp}\x1f{created}\x1f{superseded_by or ''}\x1f{category_token or ''}"
    # The pinned/private flags (issue 18) are bound only when set: a row sealed before they
    # existed (flags 0) keeps exactly the context it was sealed with.
    return context + (f"\x1fflags={int(flags)}" if flags else "")  # type: ignore[call-overload]
