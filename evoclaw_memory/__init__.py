"""evoclaw-memory: tiered, local-first long-term memory for AI agents on edge devices.

The public names load on first use (PEP 562): `import evoclaw_memory` costs nothing, so a
CLI command imports only what it needs; `from evoclaw_memory import Memory` works as ever.
"""

from __future__ import annotations

# Not `from typing import ...`: typing costs every CLI run several milliseconds (a per-turn
# command relayed to serve imports nothing else of the library); mypy reads these the same.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__version__ = "0.1.0"

# name -> the module that defines it
_EXPORTS = {
    "Memory": "evoclaw_memory.memory",
    "Config": "evoclaw_memory.config", "load_config": "evoclaw_memory.config",
    **{name: "evoclaw_memory.models" for name in (
        "Distilled", "Fact", "FactDraft", "HotState", "Metadata", "PathChoice",
        "RetrievalResult", "TreeNode")},
    "KeywordNavigator": "evoclaw_memory.retrieval.retriever",
    "TreeNavigator": "evoclaw_memory.retrieval.retriever",
    **{name: "evoclaw_memory.errors" for name in (
        "AuthError", "ConfigError", "CryptoError", "EvoclawError", "LimitError", "LLMError",
        "NotFoundError", "RemoteError", "StoreError", "Unavailable", "ValidationError",
        "DeviceRevoked")},
}

__all__ = [
    "Memory", "Config", "load_config", "Fact", "FactDraft", "HotState", "Metadata",
    "Distilled", "TreeNode", "RetrievalResult", "PathChoice", "TreeNavigator",
    "KeywordNavigator", "EvoclawError", "ConfigError", "ValidationError", "LimitError",
    "NotFoundError", "StoreError", "RemoteError", "AuthError", "Unavailable", "CryptoError",
    "LLMError", "DeviceRevoked", "__version__",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'evoclaw_memory' has no attribute {name!r}")
    import importlib
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value          # once: later lookups are plain attribute reads
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:
    from evoclaw_memory.config import Config, load_config
    from evoclaw_memory.errors import (AuthError, ConfigError, CryptoError, DeviceRevoked,
                                       EvoclawError, LimitError, LLMError, NotFoundError,
                                       RemoteError, StoreError, Unavailable, ValidationError)
    from evoclaw_memory.memory import Memory
    from evoclaw_memory.models import (Distilled, Fact, FactDraft, HotState, Metadata, PathChoice,
                                       RetrievalResult, TreeNode)
    from evoclaw_memory.retrieval.retriever import KeywordNavigator, TreeNavigator
