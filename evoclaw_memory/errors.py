"""One exception hierarchy for the whole package.

The CLI turns any EvoclawError into one line on stderr and a non-zero exit status, so every
message here must make sense on its own, without a traceback, and must never contain a
credential.
"""


class EvoclawError(Exception):
    """Base of every error this package raises on purpose."""

    exit_code = 1


class ConfigError(EvoclawError):
    """The configuration (file, environment or flags) is unusable."""

    exit_code = 2


class ValidationError(EvoclawError):
    """Input was rejected: bad JSON, unknown key, oversized text, bad path or agent id."""

    exit_code = 2


class NestingError(ValidationError):
    """JSON input nested deeper than the library reads (a depth bomb, not data)."""


class LimitError(ValidationError):
    """An operation would break one of the hard limits (tree nodes, depth, children...)."""


class NotFoundError(EvoclawError):
    """A fact, node, task or file that was asked for does not exist."""

    exit_code = 3


class StoreError(EvoclawError):
    """The local database is unusable: corrupted, from a newer version, not writable."""

    exit_code = 4


class DamagedStoreError(StoreError):
    """The database of an agent folder that held memory is missing, empty or unreadable."""


class ReadOnlyStoreError(StoreError):
    """The database or its folder cannot be written by this process."""


class RemoteError(EvoclawError):
    """The cloud side failed."""

    exit_code = 5


class AuthError(RemoteError):
    """The cloud refused the credentials: token missing, invalid, expired or read-only."""


class Unavailable(RemoteError):
    """The cloud could not be reached or kept failing; the work stays queued locally."""


class ConflictError(RemoteError):
    """A compare-and-set lost against a newer remote version."""


class DeviceRevoked(RemoteError):
    """This device was revoked by its owner; its local memory has been wiped."""


class CryptoError(EvoclawError):
    """A key or ciphertext problem: wrong passphrase, tampered data, missing key."""

    exit_code = 6


class LLMError(EvoclawError):
    """The LLM endpoint failed or answered something unusable (callers fall back)."""

    exit_code = 7
