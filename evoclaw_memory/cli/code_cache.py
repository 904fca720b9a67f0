"""The byte code of the library's modules in one file, kept from one per-turn run to the next.

A per-turn command (`store`, `retrieve`, `context`, `hot`) is a fresh process that imports
~45 of the package's modules. Python finds each one on its own: the finder's Python code,
a stat of the source, an open and a read of its .pyc, the check of its header: ~60-90 µs a
module above unmarshalling and running it, ~3 ms of every run on a 2-core VM (issue 29).
So the click-free path (cli.fast) keeps those modules' code objects in one file beside the
package's byte code (its __pycache__ folder, as cli.regex_cache does for patterns) and,
before it imports the library, puts a finder first on sys.meta_path that serves them from
it: one read for all of them.

What stays as it was: each module is still a source file's module, loaded by a
SourceFileLoader (its __file__, __spec__, __loader__, resources and tracebacks are Python's
own); only its code object comes from the file instead of its .pyc. A module is served only
while its source has the size and modification time (ns) it had when its code was kept,
under a stamp of the interpreter (its version, cache tag and -O level) and the package's
version; anything else (an edited source, another interpreter, a damaged or foreign file, a
value that is not code) is imported as always, and the file is written again (atomically)
after the command, once its output is out, with what that run imported; never where Python
writes no byte code (PYTHONDONTWRITEBYTECODE, -B). The file is as trusted as the .pyc files
beside it (whoever can write one can write the other).
"""

from __future__ import annotations

import marshal
import os
import sys
import types
from _frozen_importlib import ModuleSpec                    # importlib.machinery's own
from _frozen_importlib_external import SourceFileLoader

from evoclaw_memory.cli.regex_cache import (PACKAGE, cache_file, package_dir, replace_file,
                                            writable_place)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Optional

# Bumped when the layout of the file changes. The file: 4 bytes (big-endian) giving the
# length of a marshalled (stamp, index), that, then the modules' marshalled code objects
# one after the other; the index gives each module's (path in the package, package?,
# mtime_ns, size, offset, length) of its code after the index. The file is mapped, not
# read: a run unmarshals only the modules it imports, with no copy of the rest.
FORMAT = 2
# A file that grew past this (modules renamed in a checkout, same version) starts over.
MAX_ENTRIES = 400


def _cache_path() -> Optional[str]:
    return cache_file("modules")


def _stamp() -> tuple:
    """What the file is valid for: this interpreter and its -O level, this package."""
    from evoclaw_memory import __version__
    return (FORMAT, sys.hexversion, sys.implementation.cache_tag, sys.flags.optimize,
            __version__)


class _KeptCode(SourceFileLoader):
    """A source file's loader whose code object was kept in the file (`get_code` falls back
    to the .pyc, or the source, if it is not a code object)."""

    def __init__(self, fullname: str, path: str, code: Any):
        super().__init__(fullname, path)
        self._code = code           # the marshalled code object (bytes, or a view of the file)

    def get_code(self, fullname: str) -> Any:
        code = marshal.loads(self._code)
        if type(code) is not types.CodeType:
            return super().get_code(fullname)
        return code


class _Finder:
    """First on sys.meta_path: the package's modules whose code the file keeps."""

    def __init__(self, root: str, entries: dict):
        self.root = root
        self.entries = entries  # name -> (path in the package, package?, mtime_ns, size, code)
        self.served: set[str] = set()

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        entry = self.entries.get(fullname)
        if entry is None:
            return None
        relative, is_package, mtime_ns, size, code = entry
        origin = os.path.join(self.root, relative)
        try:
            st = os.stat(origin)
        except OSError:
            return None
        if st.st_mtime_ns != mtime_ns or st.st_size != size:
            return None                 # edited since: imported as always, kept again after
        spec = ModuleSpec(fullname, _KeptCode(fullname, origin, code), origin=origin,
                          is_package=is_package)
        spec.has_location = True
        if is_package:
            spec.submodule_search_locations = [os.path.dirname(origin)]
        self.served.add(fullname)
        return spec

    # importlib.invalidate_caches() asks every finder on sys.meta_path.
    def invalidate_caches(self) -> None:
        pass


class Loaded:
    """The finder `load` installed (None: none) and the package's modules imported before
    it (cli.fast's own: never served, never kept), for `save`."""

    def __init__(self, finder: Optional[_Finder] = None, before: frozenset = frozenset()):
        self.finder = finder
        self.before = before


def load(path: Optional[str] = None) -> Loaded:
    """Put the finder first on sys.meta_path when the file (`path`, default: beside the byte
    code) is valid here (one finder at most: an earlier one is taken off); never raises."""
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _Finder)]
    before = frozenset(_package_modules())
    try:
        return Loaded(_load(path or _cache_path()), before)
    except Exception:       # a damaged file: everything is imported as always
        return Loaded(None, before)


def _load(path: Optional[str]) -> Optional[_Finder]:
    if path is None:
        return None
    try:
        stamp, entries = _read(path)
    except (OSError, EOFError, ValueError, TypeError):
        return None
    if stamp != _stamp():
        return None
    finder = _Finder(package_dir(), entries)
    sys.meta_path.insert(0, finder)
    return finder


def _read(path: str) -> tuple[Any, dict]:
    """(stamp, {name: (path in the package, package?, mtime_ns, size, code view)})."""
    with open(path, "rb") as f:
        if os.name == "nt":         # a mapped file could not be replaced by `save` there
            view = memoryview(f.read())
        else:
            import mmap
            view = memoryview(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ))
    size = int.from_bytes(view[:4], "big")
    stamp, index = marshal.loads(view[4:4 + size])
    if not isinstance(index, dict):
        raise ValueError("not an index")
    base = 4 + size
    entries = {}
    for name, (relative, is_package, mtime_ns, source_size, offset, length) in index.items():
        if offset < 0 or length < 0 or base + offset + length > len(view):
            raise ValueError("an entry past the end of the file")
        entries[name] = (relative, is_package, mtime_ns, source_size,
                         view[base + offset:base + offset + length])
    return stamp, entries


def unload(loaded: Loaded) -> None:
    """Take the finder off sys.meta_path: later imports are Python's own."""
    if loaded.finder is not None and loaded.finder in sys.meta_path:
        sys.meta_path.remove(loaded.finder)


def save(loaded: Loaded, path: Optional[str] = None) -> None:
    """Take the finder off sys.meta_path (a later import in this process is Python's own),
    and write the file again when this run imported a module of the package the file does
    not hold (or holds stale); never raises (a folder that cannot be written keeps things as
    they are: imported as always)."""
    try:
        unload(loaded)
        finder = loaded.finder
        if sys.dont_write_bytecode:
            return          # PYTHONDONTWRITEBYTECODE / -B: no byte code written, this neither
        path = path or _cache_path()
        if path is None or not writable_place(path):
            return          # a read-only install: not worth reading 45 modules' code each run
        kept = finder.entries if finder else {}
        served = finder.served if finder else set()
        fresh = [name for name in _package_modules()
                 if name not in served and name not in loaded.before]
        if not fresh:
            return          # the usual run: every module of the package came from the file
        entries = dict(kept) if len(kept) < MAX_ENTRIES else {}
        for name in fresh:
            entry = _entry(name)
            if entry is not None:
                entries[name] = entry
            else:
                entries.pop(name, None)
        _write(entries, path)
    except Exception:
        pass



def _package_modules() -> list[str]:
    return [name for name, module in list(sys.modules.items()) if module is not None
            and (name == PACKAGE or name.startswith(PACKAGE + "."))]


def _entry(name: str) -> Optional[tuple]:
    """(path in the package's folder, package?, mtime_ns, size, marshalled code) of a
    module loaded from a source file of the package; None for anything else."""
    spec = getattr(sys.modules[name], "__spec__", None)
    if spec is None:
        return None
    origin = spec.origin
    root = package_dir()
    if not isinstance(origin, str) or not origin.endswith(".py") \
            or not isinstance(spec.loader, SourceFileLoader) \
            or os.path.commonpath([root, origin]) != root:
        return None
    before = os.stat(origin)
    code = SourceFileLoader(name, origin).get_code(name)     # its .pyc, as Python reads it
    after = os.stat(origin)
    if code is None or (before.st_mtime_ns, before.st_size) != (after.st_mtime_ns, after.st_size):
        return None                                         # edited while we read it
    return (os.path.relpath(origin, root), spec.submodule_search_locations is not None,
            before.st_mtime_ns, before.st_size, marshal.dumps(code))


def _write(entries: dict, path: Optional[str]) -> None:
    """The file for `entries` ({name: (path in the package, package?, mtime_ns, size,
    marshalled code)}), replaced whole."""
    if path is None:
        return
    index, blobs, offset = {}, [], 0
    for name, (relative, is_package, mtime_ns, size, code) in entries.items():
        blob = bytes(code)
        index[name] = (relative, is_package, mtime_ns, size, offset, len(blob))
        blobs.append(blob)
        offset += len(blob)
    head = marshal.dumps((_stamp(), index))
    replace_file(path, b"".join([len(head).to_bytes(4, "big"), head, *blobs]))
