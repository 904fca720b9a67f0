"""Configuration: defaults < TOML file < environment < explicit arguments (CLI flags).

The file is `$EVOCLAW_HOME/config.toml` (or the path given). Secrets (cloud token, LLM key)
are kept out of every rendering of the config: `redacted()` is what `config show` prints.

No `from __future__ import annotations`: msgspec would compile each of Config's annotations
on every start-up (see models.py).
"""

import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec

from evoclaw_memory.errors import ConfigError, ValidationError
from evoclaw_memory.validate import CLOUD_FORMS, cloud_target, finite

_AGENT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
SECRET_FIELDS = ("cloud_token", "llm_api_key")

# Environment variable -> config field (Turso's own names for the cloud).
ENV_VARS = {
    "EVOCLAW_AGENT_ID": "agent_id",
    "EVOCLAW_WORKSPACE": "workspace",
    "TURSO_DATABASE_URL": "cloud_url",
    "TURSO_AUTH_TOKEN": "cloud_token",
    "EVOCLAW_LLM_BASE_URL": "llm_base_url",
    "EVOCLAW_LLM_MODEL": "llm_model",
    "EVOCLAW_LLM_API_KEY": "llm_api_key",
    "EVOCLAW_ENCRYPTION": "encryption",
}

# TOML layout: [section] key -> field.
_FILE_LAYOUT = {
    None: {"agent_id": "agent_id", "workspace": "workspace", "memory_md": "memory_md",
           "encryption": "encryption"},
    "scoring": {"decay_days": "decay_days", "access_boost": "access_boost"},
    "warm": {"max_bytes": "warm_max_bytes", "retention_days": "warm_retention_days"},
    "cold": {"retention_days": "cold_retention_days"},
    "vault": {"max_bytes": "vault_max_bytes"},
    "cloud": {"url": "cloud_url", "auth_token": "cloud_token"},
    "llm": {"base_url": "llm_base_url", "model": "llm_model", "api_key": "llm_api_key",
            "timeout": "llm_timeout"},
}


def validate_agent_id(agent_id: str) -> str:
    """The agent id if it is safe as a folder name, else ValidationError."""
    if not isinstance(agent_id, str) or not _AGENT_ID.fullmatch(agent_id):
        raise ValidationError(f"invalid agent id {str(agent_id)[:70]!r}: use 1-64 letters, "
                              "digits, '-' or '_' (starting with a letter or digit)")
    return agent_id


def private_dir(path: Path | str) -> Path:
    """Create the folder `path`, and every missing folder above it, readable by the owner only
    (0700) whatever the umask: mkdir(parents=True, mode=...) applies the mode to the last
    folder only, and the umask still masks it. Folders that already exist (the user's home,
    a chosen $EVOCLAW_HOME) are left as they are."""
    path = Path(path)
    missing = []
    level = path
    while not level.exists() and level.parent != level:
        missing.append(level)
        level = level.parent
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=0o700)
        except FileExistsError:
            continue        # made meanwhile by another process: its maker set it up
        os.chmod(folder, 0o700)
    return path


def default_home() -> Path:
    return Path(os.environ.get("EVOCLAW_HOME") or Path.home() / ".evoclaw").expanduser()


class Config(msgspec.Struct, kw_only=True):
    """Everything configurable, with the defaults of SPEC §1-2."""

    home: str
    agent_id: str = "default"
    workspace: str | None = None      # default: <home>/agents/<agent_id>/workspace
    memory_md: str | None = None      # default: <workspace>/MEMORY.md
    decay_days: float = 30.0
    access_boost: float = 0.1
    warm_max_bytes: int = 50 * 1024
    warm_retention_days: float = 30.0
    cold_retention_days: float = 3650.0
    vault_max_bytes: int = 8 * 1024       # pinned facts: their own cap, apart from warm's
    cloud_url: str | None = None
    cloud_token: str | None = None
    llm_base_url: str | None = None
    llm_model: str | None = None
    llm_api_key: str | None = None
    llm_timeout: float = 20.0
    # "auto": end-to-end encryption for a network cloud (Turso/sqld), none for a local file.
    encryption: str = "auto"
    # Why cloud_url cannot be used, naming where it came from (set by load_config, never
    # read from a file): "the cloud URL from config.toml is unusable ('htps://x' has an
    # unsupported scheme (htps://))". The memory still works locally (offline first); only
    # what needs the cloud fails, through require_cloud().
    cloud_url_problem: str | None = None

    def __repr__(self) -> str:  # never leak a secret through a repr in a traceback or log
        return f"Config({self.redacted()!r})"

    __str__ = __repr__

    @property
    def agent_dir(self) -> Path:
        return Path(self.home) / "agents" / self.agent_id

    @property
    def db_path(self) -> Path:
        return self.agent_dir / "memory.db"

    @property
    def workspace_path(self) -> Path:
        return Path(self.workspace).expanduser() if self.workspace else self.agent_dir / "workspace"

    @property
    def memory_md_path(self) -> Path:
        return Path(self.memory_md).expanduser() if self.memory_md else self.workspace_path / "MEMORY.md"

    @property
    def cloud_is_network(self) -> bool:
        """True for a network cloud (Turso/sqld), False for a local file, the default or an
        unusable URL (whatever then reaches for the cloud fails in require_cloud)."""
        return bool(self.cloud_url) and not self.cloud_url_problem \
            and cloud_target(self.cloud_url)[0] == "network"

    def require_cloud(self) -> None:
        """ConfigError (exit 9) when the configured cloud URL cannot be used: what a command
        that exists to reach the cloud (sync, restore, agents...) calls before anything."""
        if self.cloud_url_problem:
            raise ConfigError(f"{self.cloud_url_problem}: use {CLOUD_FORMS}")

    def cloud_warning(self) -> str | None:
        """The one line a local command prints when the cloud URL is unusable, or None."""
        if not self.cloud_url_problem:
            return None
        return f"{self.cloud_url_problem}; working locally, sync is off until it is fixed"

    @property
    def wants_encryption(self) -> bool:
        return self.encryption == "on" or (self.encryption == "auto" and self.cloud_is_network)

    def redacted(self) -> dict[str, Any]:
        """The config as a dict with every secret replaced by '***' (or None when unset)."""
        data = msgspec.structs.asdict(self)
        for field in SECRET_FIELDS:
            data[field] = "***" if data[field] else None
        if data["cloud_url_problem"] is None:
            del data["cloud_url_problem"]       # shown only when there is one
        return data


# Numeric settings: (field, TOML name, smallest allowed, whether the smallest is allowed).
# decay_days divides every score, so 0 would be a ZeroDivisionError at the first retrieve.
_NUMBERS = (("decay_days", "[scoring] decay_days", 0.0, False),
            ("access_boost", "[scoring] access_boost", 0.0, True),
            ("warm_max_bytes", "[warm] max_bytes", 0, False),
            ("warm_retention_days", "[warm] retention_days", 0.0, False),
            ("cold_retention_days", "[cold] retention_days", 0.0, False),
            ("vault_max_bytes", "[vault] max_bytes", 0, True),
            ("llm_timeout", "[llm] timeout", 0.0, False))


def _check_numbers(config: Config) -> None:
    """ConfigError for a numeric setting that is not finite or out of its range."""
    for field, label, low, inclusive in _NUMBERS:
        value = getattr(config, field)
        try:
            number = finite(label, value)
        except ValidationError as exc:
            raise ConfigError(f"invalid configuration: {exc}") from None
        if number < low or (number == low and not inclusive):
            relation = "at least" if inclusive else "greater than"
            raise ConfigError(f"invalid configuration: {label} must be {relation} {low:g}, "
                              f"not {value}")


def config_file(home: Path) -> Path:
    return home / "config.toml"


def _read_file(path: Path, required: bool = False) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        if required:
            raise ConfigError(f"config file {path} does not exist") from None
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from exc
    # The TOML parser only when there is a file (its import is start-up of every CLI call).
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # Python 3.10
        import tomli as tomllib
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from exc
    values: dict[str, Any] = {}
    for key, item in raw.items():
        if isinstance(item, dict):
            layout = _FILE_LAYOUT.get(key)
            if layout is None:
                raise ConfigError(f"{path}: unknown section [{key}]")
            for sub, sub_item in item.items():
                if sub not in layout:
                    raise ConfigError(f"{path}: unknown key {sub!r} in [{key}]")
                values[layout[sub]] = sub_item
        elif key in _FILE_LAYOUT[None]:
            values[_FILE_LAYOUT[None][key]] = item
        else:
            raise ConfigError(f"{path}: unknown key {key!r}")
    return values


def warn_unusable_cloud(config: Config) -> None:
    """Note an unusable cloud URL as a Python warning (UnusableCloudWarning, shown once per
    place by default): for the library's callers; the CLI prints its own one line."""
    text = config.cloud_warning()
    if text:
        import warnings
        from evoclaw_memory.errors import UnusableCloudWarning
        # stacklevel 3: the line that called Memory.open, not Memory.open itself.
        warnings.warn(text, UnusableCloudWarning, stacklevel=3)


def _cloud_url_problem(url: str, source: str | None) -> str | None:
    """None for a usable cloud URL, else why not and where it came from. Not an error here:
    an offline-first memory keeps working locally on a sync setting it cannot use."""
    try:
        cloud_target(url)
    except ValidationError as exc:
        # "cloud URL 'htps://x' has an unsupported scheme (htps://): use <forms>" -> the
        # middle; require_cloud() adds the forms back to its error.
        why = str(exc).replace(f": use {CLOUD_FORMS}", "")
        why = why[len("cloud URL "):] if why.startswith("cloud URL ") else why
        return f"the cloud URL from {source or 'the configuration'} is unusable ({why})"
    return None


def load_config(home: Path | str | None = None, agent_id: str | None = None,
                env: Mapping[str, str] | None = None, config_path: Path | None = None,
                **overrides: Any) -> Config:
    """Build the Config: defaults, then the TOML file, then environment, then arguments."""
    env = os.environ if env is None else env
    home_path = Path(home).expanduser() if home else (
        Path(env["EVOCLAW_HOME"]).expanduser() if env.get("EVOCLAW_HOME")
        else Path.home() / ".evoclaw")
    values: dict[str, Any] = (_read_file(Path(config_path), required=True) if config_path
                              else _read_file(config_file(home_path)))
    url_source = (Path(config_path).name if config_path else "config.toml") \
        if values.get("cloud_url") else None
    for var, field in ENV_VARS.items():
        if env.get(var):
            values[field] = env[var]
            if field == "cloud_url":
                url_source = f"the environment ({var})"
    if agent_id is not None:
        values["agent_id"] = agent_id
    overrides.pop("cloud_url_problem", None)         # load_config's own finding, not a setting
    values.update({k: v for k, v in overrides.items() if v is not None})
    if overrides.get("cloud_url") is not None:
        url_source = "the arguments"
    values["home"] = str(home_path)
    try:
        config = msgspec.convert(values, Config, strict=False)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"invalid configuration: {exc}") from exc
    validate_agent_id(config.agent_id)
    _check_numbers(config)
    if config.cloud_url:
        config.cloud_url_problem = _cloud_url_problem(config.cloud_url, url_source)
    if config.encryption not in ("auto", "on", "off"):
        raise ConfigError("encryption must be 'auto', 'on' or 'off'")
    return config
