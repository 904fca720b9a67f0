"""Files outside SQLite that survive a power cut (issue 26): MEMORY.md, exports, markers,
keys. SQLite fsyncs its own commits; a plain write then rename does not: after a power cut
the new name may point at an empty or half-written file (ext4 and others may commit the
rename before the data). So the data goes to a temporary name in the same folder, is fsynced,
renamed over the target, and the folder is fsynced so the rename itself is on disk. A write
that fails leaves the previous file as it was."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import IO, Iterator


def fsync_dir(folder: Path) -> None:
    """Make the entries of `folder` (a rename, a new file) durable; a no-op where folders
    cannot be opened (Windows)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass                     # some filesystems refuse fsync on a folder: nothing to add
    finally:
        os.close(fd)


@contextlib.contextmanager
def replacing(path: Path, mode: int = 0o600) -> Iterator[IO[str]]:
    """A text handle whose content replaces `path` whole when the block ends without error
    (created `mode` from its first byte); on an error `path` keeps its previous content."""
    import tempfile     # here: it imports shutil, random, bz2, lzma (~4 ms of a CLI run)
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        os.chmod(tmp, mode)
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def write_text(path: Path, text: str, mode: int = 0o600) -> None:
    """Replace `path` with `text`, durably and whole (see replacing)."""
    with replacing(path, mode) as handle:
        handle.write(text)


def write_new(path: Path, data: bytes, mode: int = 0o600) -> bool:
    """Create `path` with `data` only if it does not exist (False then), durably; `mode` from
    the first byte (a private key is never readable by others, even for a moment)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    except FileExistsError:
        return False
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    fsync_dir(Path(path).parent)
    return True
