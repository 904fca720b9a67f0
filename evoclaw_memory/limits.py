"""Every hard limit of the product, in one place (SPEC §1-§3).

Property tests check them after every operation; nothing else should hard-code these numbers.
"""

HOT_MAX_BYTES = 5_120
HOT_MAX_LESSONS = 20
HOT_MAX_EVENTS = 10
HOT_MAX_PENDING_TASKS = 10
HOT_MAX_PROJECTS = 5

WARM_MAX_BYTES = 50 * 1024
WARM_RETENTION_DAYS = 30
COLD_RETENTION_DAYS = 3_650

TREE_MAX_BYTES = 2_048
TREE_MAX_NODES = 50
TREE_MAX_DEPTH = 4
TREE_MAX_CHILDREN = 10
TREE_MAX_DESCRIPTION = 100
TREE_PRUNE_IDLE_DAYS = 60

CONTEXT_RETRIEVED_MAX_BYTES = 3_072

FACT_MAX_TEXT = 2_000          # a stored fact; distilled facts aim for <= 150 chars
DISTILLED_FACT_MAX_CHARS = 150
CORE_SUMMARY_MAX_BYTES = 30
INPUT_MAX_BYTES = 1_000_000    # any single text handed to the library (a conversation, a note)

METADATA_MAX_URLS = 10
METADATA_MAX_COMMANDS = 5
METADATA_MAX_PATHS = 10

# Score thresholds (SPEC §1): hot candidate / warm / cold / frozen below.
TIER_HOT = 0.7
TIER_WARM = 0.3
TIER_COLD = 0.05

# The entity graph (issue 18).
ENTITY_KINDS = ("people", "projects", "tools", "concepts", "places", "other")
ENTITY_NAME_MAX = 80
ENTITY_ATTRIBUTES_MAX = 20     # attributes per entity (short text values)
ENTITY_SYNC_MAX = 500          # entities carried in the critical state (manual ones first)
ENTITY_CANDIDATES = 24         # newest facts of each entity a query names, as candidates
ENTITY_CONTEXT_MAX = 5         # entities context() lists
