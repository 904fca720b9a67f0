"""Import the files of the original skill ("EvoClaw tiered memory", up to v2.2.0).

The skill kept one agent's memory as JSON files in its workspace: `memory/` for the
default agent and `memory/<agent>/` for the others:

    hot-memory-state.json   {identity, owner_profile, active_context{projects, events, tasks},
                             critical_lessons}
    warm-memory.json        a list of facts {id, text, category, importance, created_at,
                             access_count, ...} (or {"facts"|"memories": [...]}, or {id: fact})
    memory-tree.json        {path: {desc, children: [paths], ...}} with a "root" node, or a
                             nested {name: {description, children: {...}}}, or {"nodes": ...}
    metrics.json            counters {retrieval_count, consolidation_count, last_consolidation..}

Shapes vary between versions and hand edits, so every reader is tolerant (aliases, epoch
seconds / milliseconds / ISO times, importance on a 0-10 scale) and every item that does not
fit is refused with its own reason; nothing is silently dropped. Re-running an import is
safe: facts already stored (same id or same text) and hot entries (stable ids) are not
duplicated, and a metrics file is counted once.

The original's MEMORY.md is not imported: it is rendered from hot memory, and is re-rendered
from the imported state.
The import is split by job: `files` (the file names, the report, finding and reading the
files), `values` (pure parsing of times, importance, categories, ids), one module per file
shape (`facts`, `hot`, `tree`, `metrics`) and `importer`, which runs them in order.
"""

from evoclaw_memory.agent.legacy.facts import import_facts, plan_fact
from evoclaw_memory.agent.legacy.files import (FILE_MAX_BYTES, HOT_FILE, LEGACY_FILES, METRICS_FILE, TREE_FILE,
                                               WARM_FILE, Progress, Report, find_agents, memory_root,
                                               source_folder)
from evoclaw_memory.agent.legacy.hot import import_hot, plan_hot
from evoclaw_memory.agent.legacy.importer import import_legacy
from evoclaw_memory.agent.legacy.metrics import import_metrics
from evoclaw_memory.agent.legacy.tree import import_tree
from evoclaw_memory.agent.legacy.values import normalize_category, parse_importance, parse_time

__all__ = [
    "FILE_MAX_BYTES", "HOT_FILE", "LEGACY_FILES", "METRICS_FILE", "TREE_FILE", "WARM_FILE", "Progress",
    "Report", "find_agents", "import_facts", "import_hot", "import_legacy", "import_metrics",
    "import_tree", "memory_root", "normalize_category", "parse_importance", "parse_time",
    "plan_fact", "plan_hot", "source_folder",
]
