"""Files written whole or not at all: a reader sees the old file or the new one.

Every file segstruct writes for a user (models, checkpoints, logs, results,
tables, figures, cache entries) goes through :func:`atomic_write_bytes`, so
an interrupted run never leaves half a file that looks valid (a SIGTERM or
SIGINT lets the file being written finish, :mod:`segstruct.io.stopping`).
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Callable

from segstruct.io.stopping import deferred_stop

__all__ = ["atomic_write_bytes", "write_text", "write_json"]


def atomic_write_bytes(path: Path, write: Callable) -> None:
    """Call ``write(file)`` on a temporary sibling of path, then rename it in.

    The rename is atomic on POSIX file systems, so readers see either the
    old file or the complete new one. A SIGTERM or SIGINT that arrives
    meanwhile (under :func:`segstruct.io.stopping.stop_on_signals`) stops
    the work once the file is in place, and any other exception removes
    the temporary file.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with deferred_stop():
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                # mkstemp makes the file private (0600); results are for reading
                os.fchmod(f.fileno(), 0o666 & ~_UMASK)
                write(f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass
            raise


def _read_umask() -> int:
    """The process umask (reading it means setting it: put it straight back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


# read once at import: changing the umask while other threads write races
_UMASK = _read_umask()


def write_text(path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    atomic_write_bytes(Path(path), lambda f: f.write(text.encode()))


def write_json(path, payload, indent: int = 2) -> None:
    """Write ``payload`` as JSON (and a final newline) to ``path`` atomically."""
    write_text(path, json.dumps(payload, indent=indent) + "\n")
