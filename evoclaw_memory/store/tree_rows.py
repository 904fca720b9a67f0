"""TreeRows: the tree_nodes table as this connection last saw it, kept in memory.

Reading the table is ~85 µs for a full tree of 50 rows (SQLite hands Python six columns a
row), and a held Memory reads it often: every retrieval, every push of the critical state,
and every `remember` that files under a path the tree lacks (which, on a full tree, merges a
leaf and reads the tree to choose it). So LocalStore keeps the rows once read, and stays
exact the way its entity cache does (store.entities.EntityCache):
- every write LocalStore makes to tree_nodes is applied here too, with SQLite's own
  arithmetic and column affinities, so the rows are what a SELECT would return;
- a rollback drops them (LocalStore.transaction), as do writes that replace the table
  wholesale (replace_tree, wipe);
- a commit by another connection moves PRAGMA data_version, and they are read again.
Nothing else writes the table: code that must change a node calls a LocalStore method.
"""

from __future__ import annotations

from typing import Iterable

from evoclaw_memory.models import TreeNode

# A row as SELECT path, description, warm_count, cold_count, last_access, created_at
# returns it: TreeNode's fields in their order, so a node is TreeNode(*row).
Row = tuple[str, str, int, int, float, float]


class TreeRows:
    """The rows of tree_nodes by path, as of `version` (PRAGMA data_version)."""

    def __init__(self, rows: Iterable[Row], version: int):
        self.version = version
        self.rows: dict[str, Row] = {row[0]: row for row in rows}

    def nodes(self) -> list[TreeNode]:
        """The nodes ordered by path, each a new TreeNode (callers may change theirs). Python
        orders str by code point, as SQLite's BINARY collation orders their UTF-8 bytes."""
        return [TreeNode(*self.rows[path]) for path in sorted(self.rows)]

    def upsert(self, node: TreeNode) -> None:
        """LocalStore.upsert_node: an existing row keeps its created_at."""
        old = self.rows.get(node.path)
        created_at = old[5] if old is not None else float(node.created_at)
        self.rows[node.path] = (node.path, node.description, int(node.warm_count),
                                int(node.cold_count), float(node.last_access), created_at)

    def delete(self, path: str) -> None:
        self.rows.pop(path, None)

    def adjust_counts(self, path: str, warm: int, cold: int) -> None:
        """LocalStore.adjust_counts: max(0, count + delta), as its UPDATE computes it."""
        row = self.rows.get(path)
        if row is not None:
            self.rows[path] = (path, row[1], max(0, row[2] + warm), max(0, row[3] + cold),
                               row[4], row[5])

    def touch(self, paths: Iterable[str], now: float) -> None:
        for path in paths:
            row = self.rows.get(path)
            if row is not None:
                self.rows[path] = row[:4] + (float(now), row[5])

    def describe(self, path: str, description: str) -> None:
        row = self.rows.get(path)
        if row is not None:
            self.rows[path] = (path, description) + row[2:]
