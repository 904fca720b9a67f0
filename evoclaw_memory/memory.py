"""Memory: the one object an agent holds; the API, which validates and delegates.

It composes a LocalStore (store/), the keepers that apply the tier rules to it (TreeKeeper:
the tree and its counts; WarmKeeper: inserts, eviction, archive), retrieval, and the
lifecycle modules (conversation end, consolidation, distillation, the cloud side). Every
mutation runs in one local transaction together with its outbox entry (for the sync engine)
and its audit row; nothing but the cloud methods touches the network.
"""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Optional, Union

from evoclaw_memory import durable, validate
from evoclaw_memory.config import (Config, load_config, private_dir, validate_agent_id,
                                   warn_unusable_cloud)
from evoclaw_memory.errors import ConfigError, NotFoundError, ValidationError
from evoclaw_memory.lifecycle.audience import AudienceControl
from evoclaw_memory.lifecycle.control import OwnerControl
from evoclaw_memory.lifecycle.control import actor as check_actor
from evoclaw_memory.lifecycle.entities import STORE_CALL_BATCH, EntityGraph
from evoclaw_memory.lifecycle.gate import GateControl
from evoclaw_memory.lifecycle.vault import VaultControl
from evoclaw_memory.limits import FACT_MAX_TEXT, INPUT_MAX_BYTES, TIER_HOT
from evoclaw_memory.models import Fact, FactDraft, HotState, Metadata, TreeNode
from evoclaw_memory.retrieval.retriever import KeywordNavigator, Retriever, TreeNavigator
from evoclaw_memory.store.cloud_time import CloudTime
from evoclaw_memory.store.local import LocalStore
from evoclaw_memory.store.tree_keeper import TreeKeeper
from evoclaw_memory.store.warm_keeper import WarmKeeper, new_id
from evoclaw_memory.text import collapse_spaces, normalized_key
from evoclaw_memory.tiers import hot as hot_rules
from evoclaw_memory.tiers import tree as tree_rules
from evoclaw_memory.tiers.scoring import score, tier_of

# Not imported here: lifecycle.cloud_side (the cloud methods), lifecycle.distillation
# (distill, apply_distillation), store.intake (what a restore or a pull stores) and
# tiers.privacy (remember's default for `private`). Each
# method that uses one imports it (a dictionary look-up once loaded): every CLI command
# imports this module, and a per-turn one (store, retrieve, context, hot) uses none of
# them (issue 29: each module imported costs ~0.1-0.3 ms of a run).

__all__ = ["Memory", "new_id"]     # new_id: agent/legacy.py imports it from here

Timestamp = Union[float, int, dt.datetime, None]


def _epoch(value: Timestamp, now: float) -> float:
    if value is None:
        return now
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.timezone.utc)
        value = value.timestamp()
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValidationError("created_at must be epoch seconds or a datetime")
    return validate.timestamp("created_at", value)


class Memory(OwnerControl, VaultControl, GateControl, AudienceControl, EntityGraph):
    """One agent's memory on this device."""

    def __init__(self, config: Config, store: LocalStore,
                 navigator: Optional[TreeNavigator] = None,
                 clock: Callable[[], float] = time.time):
        self.config = config
        self.store = store
        # The device's clock corrected by the cloud's (store/cloud_time.py): every time this
        # memory stamps or compares goes by it; `device_clock` is the uncorrected one.
        self.device_clock = clock
        self.clock = CloudTime(clock, store)
        self.keyword_navigator = KeywordNavigator()
        self.navigator: TreeNavigator = navigator or self.keyword_navigator
        self.llm = None              # LLMClient when an LLM is configured (see open)
        self._owns_llm = False
        self.distill_llm: Optional[bool] = None   # what distill(llm=None) does (None: auto)
        self.trees = TreeKeeper(store, self.clock)     # the tree, kept true to the facts
        self.warm = WarmKeeper(store, config, self.trees)    # inserts, eviction, archive
        self._remote: Any = None     # the cloud remote, opened at first use (cloud_side)

    # -- lifecycle -------------------------------------------------------------------------

    @classmethod
    def open(cls, agent_id: Optional[str] = None, home: Optional[Union[str, Path]] = None, *,
             config: Optional[Config] = None, navigator: Optional[TreeNavigator] = None,
             clock: Callable[[], float] = time.time, llm=None, recover_damaged: bool = False,
             actor: Optional[str] = None, **overrides: Any) -> "Memory":
        """Open (creating if needed) the memory of `agent_id` under `home` or EVOCLAW_HOME.

        With an LLM configured (llm_base_url) or given (`llm`, an LLMClient), tree search and
        distillation use it; `navigator` still overrides the tree search. A folder that held
        memory and whose database is now missing, empty or unreadable raises StoreError;
        `recover_damaged` (for restore --force) sets the damaged file aside instead and opens
        an empty memory that only a completed restore makes usable. `actor`: who writes
        (audit rows carry it); "subagent:NAME" opens a read-all, propose-only view."""
        if config is None:
            config = load_config(home=home, agent_id=agent_id, **overrides)
            warn_unusable_cloud(config)     # a caller passing its config checks it itself
        validate_agent_id(config.agent_id)
        owns_llm = False
        if llm is None and config.llm_base_url:
            from evoclaw_memory.llm.client import LLMClient          # lazy: httpx costs start-up time
            llm, owns_llm = LLMClient.from_config(config), True
        if llm is not None and navigator is None:
            from evoclaw_memory.llm.navigator import LLMNavigator
            navigator = LLMNavigator(llm)
        store = LocalStore.open(config.db_path, recover=recover_damaged)
        memory = cls(config, store, navigator=navigator, clock=clock)
        if actor is not None:
            memory.act_as(actor)
        if llm is not None:
            memory.llm, memory._owns_llm = llm, owns_llm
            llm.on_call = memory._record_llm_call
        return memory

    def close(self) -> None:
        if self._remote is not None:
            self._remote, remote = None, self._remote
            remote.close()
        if self.llm is not None and self._owns_llm:
            self.llm.close()
        self.store.close()

    def _record_llm_call(self, record: Any) -> None:
        """Count one LLM call in metrics: calls, tokens, seconds (and errors)."""
        with self.store.transaction():
            self.store.incr_metric("llm.calls")
            self.store.incr_metric("llm.tokens_prompt", record.prompt_tokens)
            self.store.incr_metric("llm.tokens_completion", record.completion_tokens)
            self.store.incr_metric("llm.seconds", record.seconds)
            if not record.ok:
                self.store.incr_metric("llm.errors")

    def __enter__(self) -> "Memory":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def agent_id(self) -> str:
        return self.config.agent_id

    def _score(self, fact: Fact, now: float) -> float:
        return score(fact.importance, fact.created_at, fact.access_count, now,
                     self.config.decay_days, self.config.access_boost, pinned=fact.pinned)

    # -- warm facts ------------------------------------------------------------------------

    def remember(self, text: str, category: str = "general", importance: float = 0.5,
                 created_at: Timestamp = None, metadata: Optional[Union[Metadata, dict]] = None,
                 source: str = "manual", pinned: bool = False, private: Optional[bool] = None,
                 by: str = "") -> Fact:
        """Store a fact (or reinforce its exact duplicate) and return it. pinned: into the
        vault; private: None decides by category and words (tiers.privacy); by: the actor."""
        now = self.clock()
        text = self._check_text(text)
        category = tree_rules.validate_path(category)
        importance = validate.importance(importance)
        source = validate.text("source", source, max_len=64)
        created = _epoch(created_at, now)
        meta = self._metadata(text, metadata)
        pin, mark, who = validate.flag("pinned", pinned), validate.optional_flag("private", private), \
            check_actor(by or self.actor)
        from evoclaw_memory.tiers import privacy    # not at the top: retrieve/context skip it
        # The fact and its entity links in ONE transaction: one commit (one fsync) per call.
        with self.store.transaction():
            fact = self.warm.add(text, category, importance, created, meta, source, now,
                                 pinned=pin, private=privacy.default_private(category, text, mark),
                                 actor=who)
            self.link_new_facts(STORE_CALL_BATCH)
        return self._settle_remembered(fact, pin, mark, who)

    def _check_text(self, text: str) -> str:
        validate.text("fact text", text)
        if len(text.encode()) > INPUT_MAX_BYTES:
            raise ValidationError(f"text is {len(text.encode())} bytes; the limit for one input "
                                  f"is {INPUT_MAX_BYTES}")
        text = collapse_spaces(text)
        if not text:
            raise ValidationError("fact text is empty")
        if len(text) > FACT_MAX_TEXT:
            raise ValidationError(f"a fact is at most {FACT_MAX_TEXT} characters ({len(text)} "
                                  "given); distill long text first (`evoclaw-memory distill`)")
        return text

    def _metadata(self, text: str, metadata: Optional[Union[Metadata, dict]]) -> Metadata:
        from evoclaw_memory.distill.metadata import extract_metadata, merge_metadata
        metadata = validate.metadata(metadata)
        found = extract_metadata(text)
        return merge_metadata(metadata, found) if metadata else found

    # The write path's internals, kept for agent/legacy.py (its import inserts through them).
    def get(self, fact_id: str) -> Fact:
        """The fact with this id (NotFoundError if none)."""
        fact = self.store.get_fact(fact_id)
        if fact is None:
            raise NotFoundError(f"no fact {fact_id!r}")
        return fact

    def supersede(self, old_id: str, new_id_: str, *, by: str = "") -> None:
        """Mark `old_id` superseded by `new_id_`: kept for history, excluded from search.
        by: the actor its audit row names (default: this Memory's)."""
        now = self.clock()
        who = check_actor(by or self.actor)
        old, new = self.get(old_id), self.get(new_id_)
        if old.id == new.id:
            raise ValidationError("a fact cannot supersede itself")
        self.warm.supersede(old, new, now, actor=who)

    # -- retrieval ---------------------------------------------------------------------------

    def retriever(self) -> Retriever:
        return Retriever(self.store, self.navigator, self.keyword_navigator,
                         decay_days=self.config.decay_days, access_boost=self.config.access_boost)

    def search_url(self, fragment: str, limit: int = 20) -> list[Fact]:
        """Facts whose URLs, commands, paths or text contain `fragment`."""
        fragment = validate.text("fragment", "" if fragment is None else fragment,
                                 allow_nul=True).strip()
        if not fragment:
            raise ValidationError("give a URL fragment to search for")
        limit = validate.integer("limit", limit, 1, 1000)
        return self.store.search_metadata(fragment[:500], limit=limit)

    # -- hot memory --------------------------------------------------------------------------

    @property
    def hot(self) -> HotState:
        return self.store.load_hot()

    def update_hot(self, key: str, value: Any) -> HotState:
        """Apply one hot-memory update (identity, owner_profile, lesson, event, task, project,
        complete_task); value is a dict or a JSON string. Re-renders MEMORY.md."""
        validate.text("hot memory key", key, max_len=64)
        if isinstance(value, str) and (key != "complete_task" or value.lstrip().startswith("{")):
            value = validate.loads_json(f"hot --update {key}", value)
        now = self.clock()
        with self.store.transaction():
            state = hot_rules.apply_update(self.store.load_hot(), key, value, now, new_id)
            self.store.save_hot(state, now)
            self.store.enqueue_state(now)
            self.store.audit(f"hot.{key}", "hot", f"actor={self.actor}", now)
            # Inside the transaction: if MEMORY.md cannot be written the update is rolled
            # back, so a retry does not apply it twice.
            self.write_memory_md()
        return state

    def render_memory_md(self) -> str:
        return hot_rules.render_markdown(self.store.load_hot(), self.clock())

    def write_memory_md(self) -> Path:
        """Write MEMORY.md into the workspace (atomically, owner-readable only)."""
        path = self.config.memory_md_path
        self.check_memory_md_path()
        try:
            _write_private(path, self.render_memory_md())
        except OSError as exc:
            raise ConfigError(f"cannot write MEMORY.md at {path}: {exc.strerror or exc}; set "
                              "memory_md or workspace in config.toml to a writable place") \
                from None
        return path

    def memory_md_problem(self) -> Optional[str]:
        """What is wrong with MEMORY.md on disk (None: it shows the hot state): empty (a
        power cut during an older release's write), stale (another program changed it, or a
        write was lost) or missing while there is hot state to show. `hot --rebuild` fixes
        each. The "Generated at" line is left out of the comparison."""
        path = self.config.memory_md_path
        expected = _without_stamp(self.render_memory_md())
        try:
            found = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            empty = _without_stamp(hot_rules.render_markdown(HotState(), self.clock()))
            return None if expected == empty else "missing"
        except (OSError, UnicodeDecodeError) as exc:
            return f"unreadable ({exc})"
        if not found.strip():
            return "empty"
        return None if _without_stamp(found) == expected else "stale"

    def check_memory_md_path(self) -> None:
        """ConfigError unless MEMORY.md's path can be a file: no file where a folder must be
        (checked before a change commits, so a failed write cannot half-apply it)."""
        path = self.config.memory_md_path
        if path.is_dir():
            raise ConfigError(f"cannot write MEMORY.md at {path}: it is a folder")
        for folder in path.parents:
            if folder.exists():
                if not folder.is_dir():
                    raise ConfigError(f"cannot write MEMORY.md at {path}: {folder} is a file, "
                                      "not a folder; fix memory_md or workspace in config.toml")
                return

    # -- tree --------------------------------------------------------------------------------

    @property
    def tree(self) -> list[TreeNode]:
        return self.store.tree_nodes()

    def tree_text(self) -> str:
        return tree_rules.render(self.store.tree_nodes())

    def tree_add(self, path: str, description: str = "") -> TreeNode:
        """Add a node (and missing parents); refused with LimitError when a limit would break."""
        return self.trees.add(path, description)

    def tree_remove(self, path: str) -> None:
        """Remove a node and its empty descendants; refused while any of them holds facts."""
        self.trees.remove(path)

    def tree_prune(self, idle_days: Optional[float] = None) -> list[str]:
        """Remove empty nodes idle for 60 days (configurable); returns the removed paths."""
        return self.trees.prune(idle_days)

    def recount_tree(self) -> int:
        """Recompute every node's counts from the facts; returns how many nodes changed."""
        return self.trees.recount()

    # -- distillation, notes, consolidation ---------------------------------------------------

    def distill(self, messages: Union[str, list[dict]],
                llm: Optional[bool] = None, at: Timestamp = None) -> dict[str, Any]:
        """Distill without storing: structured record, summary, fact drafts, and with the
        LLM also hot updates, supersedes and duplicates (apply with `apply_distillation`).

        llm: None follows `self.distill_llm` (None: the LLM when one is configured), True
        requires it, False uses rules. `mode` says what ran: "llm", "rules", or
        "rules-fallback" (the LLM failed; the reason is in `llm_error`). at: when the
        conversation took place (epoch seconds, datetime or ISO 8601; default now): relative
        dates resolve against it, or against a message's own `timestamp`/`time`/`created_at`."""
        validate.conversation(messages)
        _check_input_size(messages)
        when = None if at is None else validate.when("at", at)
        from evoclaw_memory.lifecycle import distillation
        return distillation.distill(self, messages, self.distill_llm if llm is None else llm, when)

    def apply_distillation(self, result: dict[str, Any]) -> dict[str, Any]:
        """Store a `distill` result in one transaction: its facts (via store_drafts), the
        facts they supersede (kept, marked), the duplicates (reinforced) and hot updates."""
        from evoclaw_memory.lifecycle import distillation
        return distillation.apply(self, result)

    def store_drafts(self, drafts: Iterable[FactDraft]) -> dict[str, list[Fact]]:
        """Store distilled facts: {'added': [...], 'reinforced': [...]}."""
        added: list[Fact] = []
        reinforced: list[Fact] = []
        for draft in drafts:
            before = self.store.find_live_by_norm_key(normalized_key(draft.text))
            fact = self.remember(draft.text, category=draft.category, importance=draft.importance,
                                 created_at=draft.created_at, metadata=draft.metadata,
                                 source=draft.source)
            (reinforced if before is not None else added).append(fact)
        return {"added": added, "reinforced": reinforced}

    def end_conversation(self, messages: Union[str, list[dict]], *, at: Timestamp = None,
                         sync: Optional[bool] = None, consolidate: Optional[bool] = None,
                         remote=None) -> dict[str, Any]:
        """The end of a conversation, in one call: distill (LLM or rules) -> store facts ->
        hot updates -> MEMORY.md -> quick consolidation when due (4 h) -> push where `sync`
        pushes: the cloud, or the local archive when none is configured (offline: queued;
        sync=False: not pushed). `at`: when it took place (see `distill`). Returns a report
        (see lifecycle.end_conversation)."""
        from evoclaw_memory.lifecycle.conversation import end_conversation
        validate.conversation(messages)
        when = None if at is None else validate.when("at", at)
        self.check_memory_md_path()        # before anything commits (see update_hot)
        return end_conversation(self, messages, at=when, sync=sync, consolidate=consolidate,
                                remote=remote)

    def ingest_daily(self, days: int = 2, workspace: Optional[Path] = None,
                     progress: Optional[Callable[[str, int, int], None]] = None,
                     dry_run: bool = False) -> dict[str, Any]:
        """Store the facts of the last `days` daily notes (memory/YYYY-MM-DD*.md); `folder`
        and `dates` in the report say where it looked. dry_run: count, store nothing.

        `progress(stage, done, total)` is told after each file (the CLI draws a bar)."""
        from evoclaw_memory.distill.notes import extract_note_facts, find_daily_notes
        root = Path(workspace) if workspace else self.config.workspace_path
        today = dt.datetime.fromtimestamp(self.clock()).date()
        files = find_daily_notes(root, days=days, today=today)
        first = today - dt.timedelta(days=days - 1)
        report: dict[str, Any] = {"files": len(files), "found": 0, "stored": 0, "skipped": 0,
                                  "folder": str(root / "memory"), "dates": [str(first), str(today)],
                                  "dry_run": dry_run}
        known = [n.path for n in self.store.tree_nodes()]
        for done, path in enumerate(files, 1):
            text = _read_text(path)
            for draft in extract_note_facts(text, known):
                report["found"] += 1
                if self.store.find_live_by_norm_key(normalized_key(draft.text)) is not None:
                    report["skipped"] += 1
                    continue
                if dry_run:
                    report["stored"] += 1          # would be stored
                    continue
                self.remember(draft.text, category=draft.category, importance=draft.importance,
                              metadata=draft.metadata, source=draft.source)
                report["stored"] += 1
            if progress:
                progress("reading daily notes", done, len(files))
        return report

    def consolidate(self, mode: str = "quick", dry_run: bool = False,
                    progress: Optional[Callable[[str, int, int], None]] = None) -> dict[str, Any]:
        """Run a consolidation (quick, daily, monthly or full) and report what it did.

        dry_run (monthly/full): only show the LLM's tree-rebuild plan; change nothing.
        `progress(stage, done, total)` is told as each step starts (the CLI draws a bar)."""
        from evoclaw_memory.lifecycle.consolidation import run_consolidation
        return run_consolidation(self, mode, dry_run=dry_run, progress=progress)

    # -- cloud: sync, restore, devices ---------------------------------------------------------

    def open_remote(self, passphrase: Optional[str] = None, recovery_key: Optional[str] = None):
        """The configured Remote: Turso/sqld over Hrana, a file, or the embedded default file
        ($EVOCLAW_HOME/cloud.db) when no cloud URL is configured; sealing and opening
        everything with the agent's keys when the memory is end-to-end encrypted."""
        from evoclaw_memory.lifecycle import cloud_side
        return cloud_side.open_secured(self, passphrase, recovery_key)

    def secure_remote(self, remote, passphrase: Optional[str] = None,
                      recovery_key: Optional[str] = None, probe: bool = False):
        """Attach the agent's keyring to `remote` when this memory is (or must be) encrypted.

        Encrypted when this device holds keys, when the config wants it, or (with `probe`, as
        restore does) when the cloud holds a keyring for the agent. No request is made when
        the device already knows: a plaintext push is refused by the cloud-side guard if
        another device turned encryption on meanwhile (see SqlRemote.push)."""
        from evoclaw_memory.lifecycle import cloud_side
        return cloud_side.secure_remote(self, remote, passphrase, recovery_key, probe)

    def refresh_keys(self, remote) -> None:
        """Adopt the cloud's newer keyring (a rotation on another device) and re-attach it."""
        from evoclaw_memory.lifecycle import cloud_side
        cloud_side.refresh_keys(self, remote)

    def init_encryption(self, passphrase: str, remote=None, scrypt_n: Optional[int] = None,
                        progress=None, shown_on_return: bool = True) -> Optional[str]:
        """Set up end-to-end encryption for this agent and re-seal its whole cloud archive;
        returns the recovery key (show ONCE), or None when the cloud already had a keyring
        that this passphrase opens (adopted; its recovery key was shown where it was made).
        `progress(stage, done, total)` follows the re-seal; see reseal_status().

        Until the key is shown, this device keeps it: an init interrupted at any point (the
        re-seal of a big archive included) gives it again at the next `init_encryption`
        with the same passphrase. With `shown_on_return` False the caller says when it has
        shown it (recovery_key_shown), so a kill between the return and the display loses
        nothing either."""
        from evoclaw_memory.lifecycle import cloud_side
        recovery = cloud_side.init_encryption(self, passphrase, remote, scrypt_n, progress)
        if shown_on_return:
            self.recovery_key_shown()
        return recovery

    def recovery_key_shown(self) -> None:
        """The owner has the recovery key of this device's `key init`: stop keeping it."""
        from evoclaw_memory.cloud import keys
        keys.forget_pending(self.store)

    def reseal(self, remote, progress=None):
        """Continue the pending re-seal of the agent's cloud archive (see cloud.keys.reseal)."""
        from evoclaw_memory.lifecycle import cloud_side
        return cloud_side.reseal(self, remote, progress)

    def reseal_status(self):
        """Where the re-seal of the cloud archive stands (no network)."""
        from evoclaw_memory.cloud import keys
        return keys.reseal_status(self.store)

    def sync_engine(self, remote=None):
        """A SyncEngine between this memory and `remote` (default: the configured one)."""
        from evoclaw_memory.cloud.engine import SyncEngine
        return SyncEngine(self, remote or self.open_remote(), self.agent_id)

    def sync(self, remote=None):
        """Push the outbox (facts + critical state) and pull what other devices wrote.

        Returns a SyncReport. Offline, raises Unavailable and the work stays queued."""
        from evoclaw_memory.lifecycle import cloud_side
        return cloud_side.sync(self, remote)

    def sync_status(self) -> dict[str, Any]:
        """Outbox depth, last push, last known remote version and the entries set aside
        (refused by the cloud for good, with the reason), without the network."""
        from evoclaw_memory.lifecycle import cloud_side
        return cloud_side.sync_status(self)

    def verify_cloud(self, remote=None, repair: bool = True):
        """Check that the cloud still holds every fact (and the critical state) it
        acknowledged; with `repair`, re-queue what it lost for the next sync. A VerifyReport.

        Reads only ids, times and versions, which are clear even in an encrypted cloud, so
        no passphrase is needed."""
        from evoclaw_memory.lifecycle import cloud_side
        with cloud_side.remote_scope(self, remote, secure=False) as scoped:
            return self.sync_engine(scoped).verify(repair=repair)

    def restore(self, *, full: bool = False, force: bool = False,
                discard_unsynced: bool = False, remote=None, progress=None,
                passphrase: Optional[str] = None, recovery_key: Optional[str] = None):
        """Rebuild this device's memory from the cloud; see cloud.restore.

        Refused, before any request, over a memory without `force` or over changes not yet
        synced without `discard_unsynced`. Then the keys are unlocked (passphrase or recovery
        key) and everything is fetched before the old memory is replaced in one transaction:
        a wrong key or an unreachable cloud leaves the device as it was."""
        from evoclaw_memory.lifecycle import cloud_side
        return cloud_side.restore(self, full=full, force=force,
                                  discard_unsynced=discard_unsynced, remote=remote,
                                  progress=progress, passphrase=passphrase,
                                  recovery_key=recovery_key)

    def change_passphrase(self, current: str, new: str, remote=None) -> None:
        """Rewrap the encryption keys under a new passphrase (no data is re-encrypted)."""
        from evoclaw_memory.lifecycle import cloud_side
        cloud_side.change_passphrase(self, current, new, remote)

    def rotate_key(self, passphrase: Optional[str] = None, recovery_key: Optional[str] = None,
                   remote=None, progress=None) -> str:
        """Start a new data key and re-seal the cloud archive under it (resumed by the next
        syncs if interrupted); local changes follow through the outbox."""
        from evoclaw_memory.lifecycle import cloud_side
        return cloud_side.rotate_key(self, passphrase, recovery_key, remote, progress)

    def critical_state(self):
        """Hot memory + tree, as pushed to the cloud's critical_state row."""
        from evoclaw_memory.lifecycle import cloud_side
        return cloud_side.critical_state(self)

    def adopt_remote_state(self, remote_state) -> bool:
        """Merge another device's critical state into ours; True if ours now differs from it."""
        from evoclaw_memory.lifecycle import cloud_side
        return cloud_side.adopt_remote_state(self, remote_state)

    def insert_pulled(self, facts: list[Fact]) -> int:
        """Store facts another device pushed (not queued back to the cloud)."""
        from evoclaw_memory.store import intake
        return self.linked(intake.insert_pulled(self.warm, facts, self.clock()))

    def apply_changes(self, facts: list[Fact]) -> int:
        """Take other devices' newer versions of facts held here (pulled; not queued back);
        a changed text brings its entity links along."""
        from evoclaw_memory.store import intake
        with self.store.transaction():
            before = {f.id: f.text for f in self.store.facts_by_ids([f.id for f in facts])}
            changed = intake.apply_changed(self.warm, facts, self.clock())
            if changed:
                self.relink(before)
        return self.linked(changed)

    def install_state(self, state, keep_counts: bool) -> None:
        """Replace hot memory and the tree with a restored critical state."""
        from evoclaw_memory.store import intake
        intake.install_state(self.warm, state, keep_counts, self.clock())
        self.install_entities(state.entities, state.entity_removals)

    def bulk_insert(self, facts: list[Fact], tier_by_score: bool) -> int:
        """Insert restored facts quickly (no outbox: they came from the cloud)."""
        return self.insert_prepared(self.prepare_bulk(facts, tier_by_score))

    def prepare_bulk(self, facts: list[Fact], tier_by_score: bool) -> list[tuple]:
        """The CPU half of bulk_insert (tier, duplicate key, size, index body); touches no
        database. Restore's mirror calls the two halves itself."""
        from evoclaw_memory.store import intake
        return intake.prepare_bulk(self.warm, facts, tier_by_score, self.clock())

    def insert_prepared(self, rows: list[tuple], aliases: Optional[list] = None) -> int:
        """The database half of bulk_insert: rows from prepare_bulk(), skipping known ids;
        `aliases`: each row's text's alias_pairs(), when worked out already."""
        from evoclaw_memory.store import intake
        return intake.insert_prepared(self.store, rows, aliases)

    def wipe_local(self) -> None:
        """Erase this agent's memory on this device (a revoked device does this)."""
        with self.store.transaction():
            self.store.wipe()
        self.store.conn.execute("VACUUM")
        self.config.memory_md_path.unlink(missing_ok=True)

    def cloud_agents(self, remote=None) -> list:
        """The agents the cloud holds (AgentSummary: devices, facts, last sync, encrypted),
        from counts and metadata only: no key needed, one request."""
        from evoclaw_memory.lifecycle import cloud_side
        with cloud_side.remote_scope(self, remote, secure=False) as scoped:
            return scoped.agents()

    def devices(self, remote=None) -> list:
        """Devices registered for this agent (no keys needed)."""
        from evoclaw_memory.lifecycle import cloud_side
        with cloud_side.remote_scope(self, remote, secure=False) as scoped:
            return scoped.devices(self.agent_id)

    def revoke_device(self, device: str, remote=None) -> bool:
        """Revoke a device: it wipes itself at its next sync and can write nothing."""
        from evoclaw_memory.lifecycle import cloud_side
        with cloud_side.remote_scope(self, remote, secure=False) as scoped:
            return scoped.revoke(self.agent_id, device)

    def rename_device(self, device: str, name: str, remote=None) -> bool:
        """Give a device a name people recognise (this device's is kept locally too)."""
        from evoclaw_memory.lifecycle import cloud_side
        return cloud_side.rename_device(self, device, name, remote)

    def cold_query(self, text: Optional[str] = None, category: Optional[str] = None,
                   limit: int = 20, remote=None) -> list[Fact]:
        """Query the cloud archive directly (by category and/or text fragment)."""
        paths = None
        if category:
            category = tree_rules.validate_path(category)
            paths = [category] + [n.path for n in self.store.tree_nodes()
                                  if n.path.startswith(category + "/")]
        from evoclaw_memory.lifecycle import cloud_side
        with cloud_side.remote_scope(self, remote) as scoped:
            return scoped.query_cold(self.agent_id, text, paths, limit)

    # -- metrics -----------------------------------------------------------------------------

    def metrics(self) -> dict[str, Any]:
        """Counters and timestamps recorded so far, plus the live sizes of every tier."""
        stored = self.store.metrics()
        nodes = self.store.tree_nodes()
        return {
            "counters": {k: v for k, v in stored.items() if not k.startswith("last_")},
            "timestamps": {k: v for k, v in stored.items() if k.startswith("last_")},
            "sizes": {
                "hot_bytes": hot_rules.state_size(self.store.load_hot()),
                "memory_md_bytes": len(self.render_memory_md().encode()),
                "warm_bytes": self.store.warm_bytes(),
                "warm_facts": self.store.count_facts("warm"),
                "cold_facts": self.store.count_facts("cold"),
                "tree_nodes": len(nodes),
                "tree_bytes": tree_rules.render_size(nodes),
                "outbox_depth": self.store.outbox_depth(),
            },
        }

    def hot_candidates(self, now: Optional[float] = None) -> list[Fact]:
        """Warm facts scoring >= 0.7 (the hot tier)."""
        now = now or self.clock()
        return [f for f in self.store.iter_facts(tier="warm", live_only=True)
                if self._score(f, now) >= TIER_HOT]

    def tier_of(self, fact: Fact, now: Optional[float] = None) -> str:
        return tier_of(self._score(fact, now or self.clock()))


def _check_input_size(messages: Union[str, list]) -> None:
    import json
    size = len(messages.encode()) if isinstance(messages, str) else len(
        json.dumps(messages, ensure_ascii=False, default=str).encode())
    if size > INPUT_MAX_BYTES:
        raise ValidationError(f"conversation is {size} bytes; the limit is {INPUT_MAX_BYTES}")


def _read_text(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ValidationError(f"cannot read {path}: {exc.strerror}") from exc
    if len(data) > INPUT_MAX_BYTES:
        raise ValidationError(f"{path} is {len(data)} bytes; the limit is {INPUT_MAX_BYTES}")
    return data.decode("utf-8", errors="replace")


def _without_stamp(markdown: str) -> str:
    """MEMORY.md without its "_Generated at ..._" line (the time it was written)."""
    return "\n".join(line for line in markdown.splitlines()
                     if not line.startswith("_Generated at ")).strip()


def _write_private(path: Path, text: str) -> None:
    """Write a file whole and durably (a power cut leaves the old or the new one, never an
    empty one: durable.py) with mode 0600 (folder 0700 when created)."""
    private_dir(path.parent)
    durable.write_text(path, text)
