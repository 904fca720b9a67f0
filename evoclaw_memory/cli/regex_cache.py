"""The library's compiled regular expressions, kept from one per-turn run to the next.

CPython's `re` parses and compiles a pattern in Python; the library compiles ~50 at import
time (sentence splitting, signals, slots, metadata, validation), ~15 ms of a per-turn
`store`/`retrieve`/`context` on a 2-core VM, the largest single cost above its imports
floor. What a pattern compiles to depends only on the pattern, its flags and the
interpreter, so the click-free path (cli.fast) keeps the compiled programs in a file beside
the package's byte code (its __pycache__ folder, where Python keeps .pyc files) and, before
it imports the library, puts the patterns made from them into `re`'s own cache, where the
library's `re.compile(...)` calls find them.

Which patterns: only those a module of the package holds in its globals (compiled at
import, or on first use by a cached function without arguments: from constants, so never
built from a stored fact, a query or a name), and those the standard library's modules bind
to a module-level name (platform, json... compile theirs at import, under msgspec and
pathlib). A pattern is kept only when
the one made from the file compares equal to the one `re` made (same flags, same program),
and `_sre` checks every program it is given. Anything unexpected (another interpreter, a
damaged or foreign file, a `re` whose cache works differently) leaves `re` as it was and the
patterns compile as always; a pattern not in the file is compiled as always, and the file
is written again (atomically) after the command, once its output is out.
"""

from __future__ import annotations

import marshal
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Optional

# Bumped when the layout of the file changes.
FORMAT = 1
PACKAGE = "evoclaw_memory"
# A file that grew past this (patterns edited in a checkout, same version) starts over.
MAX_ENTRIES = 400


def _cache_path() -> Optional[str]:
    return cache_file("regex")


def package_dir() -> str:
    """The package's folder (where its modules and their __pycache__ are)."""
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cache_file(kind: str) -> Optional[str]:
    """The file of one of the CLI's caches (this one, cli.code_cache's), beside the
    package's byte code; None where Python keeps none."""
    tag = sys.implementation.cache_tag
    if tag is None:
        return None
    return os.path.join(package_dir(), "__pycache__", f"{kind}.{tag}.marshal")


def replace_file(path: str, data: bytes) -> None:
    """Write a cache file whole: readers see the old file or the new one, never a part."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    temporary = f"{path}.{os.getpid()}.tmp"
    try:
        with open(temporary, "wb") as f:
            f.write(data)
        os.replace(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)


def _stamp() -> tuple:
    """What the file is valid for: this interpreter, its regex engine, this package."""
    import _sre
    from evoclaw_memory import __version__
    return (FORMAT, sys.hexversion, _sre.MAGIC, _sre.CODESIZE, __version__)


def _re_cache() -> Optional[dict]:
    import re
    cache = getattr(re, "_cache", None)
    return cache if isinstance(cache, dict) else None


class Loaded:
    """What `load` put into `re`'s cache (the keys), and the modules whose patterns the file
    holds, for `save` to tell whether anything can be missing."""

    def __init__(self, keys: frozenset = frozenset(), modules: frozenset = frozenset()):
        self.keys = keys
        self.modules = modules


def load(path: Optional[str] = None) -> Loaded:
    """Put the patterns kept in the file (`path`, default: beside the byte code) into `re`'s
    cache; never raises."""
    try:
        return _load(path or _cache_path())
    except Exception:       # a damaged file, another `re`: everything compiles as always
        return Loaded()


def _load(path: Optional[str]) -> Loaded:
    cache = _re_cache()
    if path is None or cache is None:
        return Loaded()
    try:
        with open(path, "rb") as f:
            stamp, modules, entries = marshal.loads(f.read())
    except (OSError, EOFError, ValueError, TypeError):
        return Loaded()
    if stamp != _stamp():
        return Loaded()
    import re
    import _sre
    made = {}
    for (kind, pattern, flags), (final_flags, code, groups, groupindex, indexgroup) in entries:
        key = (str if kind == "s" else bytes, pattern, flags)
        made[key] = _sre.compile(pattern, final_flags, list(code), groups, groupindex,
                                 indexgroup)
    if not made:
        return Loaded()
    # `re.compile` must find them where they were put: else take them out again.
    (kind, pattern, flags), compiled = next(iter(made.items()))
    cache.update(made)
    if re.compile(pattern, flags) is not compiled:
        for key in made:
            cache.pop(key, None)
        return Loaded()
    return Loaded(frozenset(made), frozenset(modules))


def save(loaded: Loaded, path: Optional[str] = None) -> None:
    """Write the file again when a module imported since it was written holds a pattern; never
    raises (a folder that cannot be written keeps things as they are: compiled each run)."""
    try:
        cache = _re_cache()
        modules = _kept_modules()
        if cache is None or modules <= loaded.modules:
            return          # the usual run: every module imported had its patterns kept
        path = path or _cache_path()
        if path is None or not writable_place(path):
            return          # a read-only install: finding the patterns (~10 ms) for nothing
        held = _held_patterns(modules)
        new = {key: pattern for key, pattern in cache.items()
               if id(pattern) in held and key not in loaded.keys}
        # Keep what the file had too: another command imports other modules.
        kept = {key: pattern for key, pattern in cache.items() if key in loaded.keys}
        if len(kept) >= MAX_ENTRIES:
            kept, modules = {}, modules
        else:
            modules = modules | loaded.modules
        _write({**kept, **new}, modules, path)
    except Exception:
        pass


def writable_place(path: str) -> bool:
    """Whether the file's folder (or, missing, the nearest folder above it) can be written
    (cli.code_cache asks it too)."""
    folder = os.path.dirname(os.path.abspath(path))
    while not os.path.exists(folder) and os.path.dirname(folder) != folder:
        folder = os.path.dirname(folder)
    return os.access(folder, os.W_OK)


def _kept_modules() -> frozenset:
    """The modules whose patterns are kept: the package's, and the standard library's
    (platform, json... compile theirs at import too), but `re`'s own (its cache holds every
    pattern of the run, a query's included)."""
    stdlib: frozenset[str] = getattr(sys, "stdlib_module_names", frozenset())
    return frozenset(
        name for name, module in list(sys.modules.items()) if module is not None
        and (name == PACKAGE or name.startswith(PACKAGE + ".")
             or (name.partition(".")[0] in stdlib and name.partition(".")[0] not in _NOT_KEPT)))


_NOT_KEPT = frozenset({"re", "sre_compile", "sre_parse", "sre_constants", "functools"})


def _held_patterns(modules: frozenset) -> set[int]:
    """The ids of the patterns `modules` hold in their globals (in a small dict, list,
    tuple or set there, two levels deep; word lists are not searched), and of those their
    functions without arguments have cached (`@functools.cache def _speaker_re()`: a
    pattern compiled on first use, from constants)."""
    import re
    held: set[int] = set()

    def visit(value: Any, depth: int) -> None:
        if isinstance(value, re.Pattern):
            held.add(id(value))
        elif depth and isinstance(value, (dict, list, tuple, set, frozenset)) \
                and len(value) <= 64:
            for item in (value.values() if isinstance(value, dict) else value):
                visit(item, depth - 1)
        elif depth and _cached_without_arguments(value):
            visit(value(), 1)           # the cached value: nothing runs again

    for name in modules:
        module = sys.modules.get(name)
        if module is None:
            continue
        # The standard library's: only a pattern bound to a module-level name (a constant).
        depth = 2 if name == PACKAGE or name.startswith(PACKAGE + ".") else 0
        for value in list(vars(module).values()):
            visit(value, depth)
    return held


def _cached_without_arguments(value: Any) -> bool:
    """A functools.cache'd function taking no argument, whose value is cached already."""
    info = getattr(value, "cache_info", None)
    code = getattr(getattr(value, "__wrapped__", None), "__code__", None)
    if info is None or code is None or not callable(info):
        return False
    takes = code.co_argcount + code.co_kwonlyargcount + code.co_posonlyargcount
    varargs = code.co_flags & 0x0C                     # CO_VARARGS | CO_VARKEYWORDS
    return takes == 0 and not varargs and info().currsize == 1


def _write(keep: dict, modules: frozenset, path: Optional[str]) -> None:
    from re import _compiler, _parser   # type: ignore[attr-defined]
    import _sre
    entries = []
    for (kind, pattern, flags), compiled in keep.items():
        if kind not in (str, bytes) or flags & 128:            # 128: re.DEBUG
            continue
        parsed = _parser.parse(pattern, flags)
        code = [int(op) for op in _compiler._code(parsed, flags)]
        groupindex = dict(parsed.state.groupdict)
        indexgroup: list = [None] * parsed.state.groups
        for group, index in groupindex.items():
            indexgroup[index] = group
        entry = (int(flags | parsed.state.flags), code, parsed.state.groups - 1, groupindex,
                 tuple(indexgroup))
        if _sre.compile(pattern, entry[0], list(code), *entry[2:]) != compiled:
            continue                        # not what `re` made: leave it to `re`
        entries.append((("s" if kind is str else "b", pattern, int(flags)), entry))
    if path is None:
        return
    replace_file(path, marshal.dumps((_stamp(), tuple(sorted(modules)), entries)))
