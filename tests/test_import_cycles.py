"""No import circles inside the package: every module's imports (function-level ones
included, `if TYPE_CHECKING:` blocks excluded) form a graph without cycles."""

import ast
from pathlib import Path

import evoclaw_memory

ROOT = Path(evoclaw_memory.__file__).parent


def _modules() -> dict[str, Path]:
    out = {}
    for path in ROOT.rglob("*.py"):
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imported(tree: ast.AST, package: str) -> set[str]:
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                for other in child.orelse:
                    visit_one(other)
                continue
            visit_one(child)

    def visit_one(node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                kept = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(kept + ([base] if base else []))
            # `from pkg import sub` depends on the submodule pkg.sub; on pkg itself only for
            # the names that are not submodules (resolved in _graph).
            found.update(f"{base}.{alias.name}" for alias in node.names)
            found.add(base + "#from")
        visit(node)

    visit(tree)
    return found


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    graph = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        raw = _imported(ast.parse(path.read_text(encoding="utf-8")), package)
        deps = {d for d in raw if d in modules}
        for marker in [d for d in raw if d.endswith("#from")]:
            base = marker[:-len("#from")]
            names = {d for d in raw if d.startswith(base + ".") and "." not in d[len(base) + 1:]
                     and not d.endswith("#from")}
            if base in modules and not names <= set(modules):
                deps.add(base)              # a name defined in the package's __init__
        # The top package's __init__ is the public face, imported by everything's parent.
        graph[name] = deps - {name, "evoclaw_memory"}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        out.append(sorted(component))
    return out


def test_no_import_cycles():
    cycles = list(_cycles(_graph()))
    assert cycles == []


def test_the_checker_sees_a_cycle_and_ignores_type_checking_imports():
    graph = {"a": {"b"}, "b": {"a"}, "c": set()}
    assert _cycles(graph) == [["a", "b"]]
    tree = ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import x\n"
                     "def f():\n    import y\n")
    assert _imported(tree, "p") == {"typing#from", "typing.TYPE_CHECKING", "y"}


def test_memory_is_not_imported_at_run_time_from_below():
    graph = _graph()
    assert [m for m, deps in graph.items() if "evoclaw_memory.memory" in deps
            and m.split(".")[1:2] in (["lifecycle"], ["llm"], ["cloud"], ["retrieval"],
                                      ["distill"], ["store"], ["tiers"])] == []
