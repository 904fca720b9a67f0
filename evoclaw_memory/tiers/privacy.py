"""Privacy levels (issue 18, the main-session-only rule): pure functions, no I/O.

A fact or hot entry is `private` when the owner says so, or by default when it is filed under
a health, finance, credentials, family or identity-document category, or when its own words
are of that kind (an allergy, a PIN, a passport number): a fact filed under `general` is no
less the owner's. The owner profile is private as a whole. A shared session (a group chat, a
session others see) gets a rendering without any private item, told how many it left out.
"""

from __future__ import annotations

# `copy` is imported in the functions that use it: a CLI run of store/retrieve/context/hot
# starts without it (start-up time, one process per agent turn).
import functools
import re
from typing import Optional

from evoclaw_memory.models import HotState


# Category segments whose facts are private unless the owner says otherwise.
PRIVATE_SEGMENTS = frozenset("""
health medical medicine allergies allergy medications medication doctor diagnosis therapy
finance finances banking bank money accounts tax taxes salary insurance
credentials credential passwords password secrets secret keys pins
family kids children partner
identity documents document ids passport
""".split())

@functools.cache
def _private_words() -> re.Pattern[str]:
    """Words that make a text private wherever it is filed (English stems and Chinese
    words): health, finance, credentials and identity documents. Compiled on first use
    (~1 ms every CLI process paid at import; only a new fact's default needs it)."""
    return re.compile(_PRIVATE_PATTERN, re.I)


_PRIVATE_PATTERN = (
    r"\b(?:allerg\w*|anaphyla\w*|epipen|diagnos\w*|medication\w*|prescri\w*|diabet\w*|asthma|"
    r"pregnan\w*|therap\w*|pin(?:\s*(?:code|number))?|passwords?|passcodes?|passphrases?|"
    r"api[\s_-]?keys?|ssn|social\s+security|passport|driver'?s\s+licen[cs]e|iban|"
    r"bank\s+account|credit\s+card|debit\s+card|card\s+number|account\s+number|salary|"
    r"mortgage|debt)\b"
    r"|过敏|诊断|药物|病历|怀孕|密码|口令|银行|信用卡|账号|工资|护照|身份证|驾照|社保"
)


def private_category(path: str) -> bool:
    """True when any segment of a category path is a private kind (health, finance ...)."""
    return any(seg.lower() in PRIVATE_SEGMENTS for seg in path.split("/"))


def private_text(text: str) -> bool:
    """True when the words themselves are private (an allergy, a PIN, a passport ...)."""
    return _private_words().search(text) is not None


def default_private(category: str, text: str, given: Optional[bool] = None) -> bool:
    """The privacy of a new fact: what the owner said, else by its category and words."""
    if given is not None:
        return bool(given)
    return private_category(category) or private_text(text)


def shared_hot(state: HotState) -> tuple[HotState, int]:
    """The hot state a shared session may see, and how many items were left out: no owner
    profile, no private lesson, event, task or project."""
    shared = state.copied()
    omitted = len(shared.owner_profile)
    shared.owner_profile = {}
    ctx = shared.active_context

    def keep(entries: list, *texts: str) -> list:
        nonlocal omitted
        out = []
        for entry in entries:
            words = " ".join(str(getattr(entry, t, "") or "") for t in texts)
            if entry.private or private_text(words) or private_category(
                    str(getattr(entry, "category", ""))):
                omitted += 1
            else:
                out.append(entry)
        return out

    shared.critical_lessons = keep(shared.critical_lessons, "text")
    ctx.events = keep(ctx.events, "text")
    ctx.tasks = keep(ctx.tasks, "text")
    ctx.projects = keep(ctx.projects, "name", "description")
    shared.clock = {}
    return shared, omitted
