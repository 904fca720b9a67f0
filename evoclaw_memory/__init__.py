"""evoclaw-memory: tiered, local-first long-term memory for AI agents on edge devices."""

from evoclaw_memory.config import Config, load_config
from evoclaw_memory.errors import (AuthError, ConfigError, CryptoError, DeviceRevoked, EvoclawError,
                                   LimitError, LLMError, NotFoundError, RemoteError, StoreError,
                                   Unavailable, ValidationError)
from evoclaw_memory.memory import Memory
from evoclaw_memory.models import (Distilled, Fact, FactDraft, HotState, Metadata, PathChoice,
                     RetrievalResult, TreeNode)
from evoclaw_memory.retrieval.retriever import KeywordNavigator, TreeNavigator

__version__ = "0.1.0"

__all__ = [
    "Memory", "Config", "load_config", "Fact", "FactDraft", "HotState", "Metadata",
    "Distilled", "TreeNode", "RetrievalResult", "PathChoice", "TreeNavigator",
    "KeywordNavigator", "EvoclawError", "ConfigError", "ValidationError", "LimitError",
    "NotFoundError", "StoreError", "RemoteError", "AuthError", "Unavailable", "CryptoError",
    "LLMError", "DeviceRevoked", "__version__",
]
