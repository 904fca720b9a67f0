"""One exception hierarchy for the whole package.

The CLI turns any EvoclawError into one line on stderr and a non-zero exit status, so every
message here must make sense on its own, without a traceback, and must never contain a
credential.

Exit statuses (the table is EXIT_TABLE in cli/plain.py, rendered in docs/cli.md; 2 is
click's usage error, so no error here uses it): 1 other, 3 not found, 4 local store,
5 cloud, 6 keys/crypto, 7 LLM, 8 invalid input, 9 configuration; the CLI adds 2 usage,
70 internal error, 130 interrupted.
"""


class EvoclawError(Exception):
    """Base of every error this package raises on purpose."""

    exit_code = 1

    @classmethod
    def code(cls) -> str:
        """A stable name for scripts (`--json` errors): the class name in snake case without
        `Error` (ValidationError -> "validation", DeviceRevoked -> "device_revoked")."""
        name = cls.__name__[:-5] if cls.__name__.endswith("Error") else cls.__name__
        # A capital after a lower-case letter or digit starts a word; an acronym stays one
        # (LLMError -> "llm", not "l_l_m"). (No regex: cli.plain builds EXIT_TABLE from
        # these at import, in every CLI run.)
        out = []
        for i, char in enumerate(name):
            if i and char in _UPPER and name[i - 1] in _LOWER_OR_DIGIT:
                out.append("_")
            out.append(char)
        return "".join(out).lower() or "error"


_UPPER = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
_LOWER_OR_DIGIT = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")


class ConfigError(EvoclawError):
    """The configuration (file, environment or flags) is unusable."""

    exit_code = 9


class LauncherError(EvoclawError, RuntimeError):
    """sqld (`evoclaw-memory server`, cloud.sqld) could not be found, unpacked or started."""


class PortInUseError(LauncherError, ConfigError):
    """The port asked for is taken by another program: a setting to change (exit 9)."""

    def __init__(self, port: "int | None"):
        super().__init__(f"port {port} is in use")
        self.port = port


class ValidationError(EvoclawError):
    """Input was rejected: bad JSON, unknown key, oversized text, bad path or agent id."""

    exit_code = 8


class NestingError(ValidationError):
    """JSON input nested deeper than the library reads (a depth bomb, not data)."""


class LimitError(ValidationError):
    """An operation would break one of the hard limits (tree nodes, depth, children...)."""


class NotFoundError(EvoclawError):
    """A fact, node, task or file that was asked for does not exist."""

    exit_code = 3


class NoPendingTask(NotFoundError, ValidationError):
    """`hot --complete-task` (or a task update marked done) for a task that is not pending:
    not found for the caller who asked (exit 3, code `not_found`), and still a refused
    update to code that applies a batch of hot updates (distillation, legacy import), which
    catches ValidationError and keeps the rest."""

    @classmethod
    def code(cls) -> str:
        return NotFoundError.code()


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
    # The server's own error code (SQLITE_CONSTRAINT, ...) when it gave one. Not `code`:
    # that is EvoclawError.code(), the stable name `--json` errors print.
    server_code: "str | None" = None


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


class UnusableCloudWarning(UserWarning):
    """The configured cloud URL cannot be used: the memory works locally, sync is off until
    it is fixed (Memory.open warns; sync and restore raise ConfigError)."""
