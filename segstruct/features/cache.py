"""A disk cache of numpy arrays keyed by everything that changes them.

Entries are ``.npz`` files named by a SHA-256 of their key (a JSON-able dict
that must hold every input and parameter of the computation). Writes go to a
temporary file that is renamed into place, so an interrupted write never
leaves an entry that looks valid; the key is stored inside the entry and
compared on load, and zip CRCs catch corrupted bytes. A bad entry is
recomputed with a warning, never trusted.
"""
from __future__ import annotations

import hashlib
import json
import os
import warnings
import zipfile
from pathlib import Path
from typing import Callable

import numpy as np

from segstruct.datasets.voc import exif_orientation
from segstruct.io.files import atomic_write_bytes

_KEY_FIELD = "__cache_key__"


def default_cache_dir() -> Path:
    """The user's segstruct cache folder.

    ``$SEGSTRUCT_CACHE`` if set, else ``$XDG_CACHE_HOME/segstruct``, else
    ``~/.cache/segstruct``.
    """
    env = os.environ.get("SEGSTRUCT_CACHE")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "segstruct"


def canonical_json(obj) -> str:
    """Deterministic JSON text of a key (sorted keys, no whitespace)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=_jsonable)


def _jsonable(obj):
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (np.floating,)):
        return float(obj)
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"cache keys must be JSON-able, got {type(obj).__name__}")


def key_digest(key: dict) -> str:
    """SHA-256 hex digest of a key's canonical JSON."""
    return hashlib.sha256(canonical_json(key).encode()).hexdigest()


def file_digest(path: str | os.PathLike) -> str:
    """SHA-256 hex digest of a file's bytes (identifies an image by content)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def image_digest(path: str | os.PathLike) -> str:
    """:func:`file_digest` of an image, with its EXIF orientation appended
    where that turns it (not 1).

    Images are read as viewers show them, their orientation applied; earlier
    versions read a data set's images as stored. Cache entries made so from
    the same bytes must not be taken for the turned image's, and images
    without a turn keep their entries.
    """
    digest = file_digest(path)
    turn = exif_orientation(path)
    return digest if turn == 1 else f"{digest}-exif{turn}"


class ArrayCache:
    """Named groups of arrays on disk, keyed by dicts.

    Parameters
    ----------
    directory : path of the cache folder, or None for ``default_cache_dir()``.
    enabled : bool; when False nothing is read or written (compute always).
    """

    def __init__(self, directory: str | os.PathLike | None = None, enabled: bool = True):
        self.directory = Path(directory) if directory is not None else default_cache_dir()
        self.enabled = enabled

    def path(self, kind: str, key: dict) -> Path:
        digest = key_digest({"kind": kind, **key})
        return self.directory / kind / digest[:2] / f"{digest}.npz"

    def load(self, kind: str, key: dict) -> dict | None:
        """The stored arrays, or None when absent or invalid (with a warning)."""
        if not self.enabled:
            return None
        path = self.path(kind, key)
        if not path.exists():
            return None
        expected = canonical_json({"kind": kind, **key})
        try:
            with np.load(path, allow_pickle=False) as data:
                arrays = {name: data[name] for name in data.files}
            stored = str(arrays.pop(_KEY_FIELD))
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
            warnings.warn(f"cache entry {path} is unreadable ({exc}); recomputing it",
                          RuntimeWarning, stacklevel=2)
            return None
        if stored != expected:
            warnings.warn(f"cache entry {path} holds another key; recomputing it",
                          RuntimeWarning, stacklevel=2)
            return None
        return arrays

    def save(self, kind: str, key: dict, arrays: dict) -> None:
        if not self.enabled:
            return
        payload = {name: np.asarray(a) for name, a in arrays.items()}
        payload[_KEY_FIELD] = np.array(canonical_json({"kind": kind, **key}))
        # numpy's stub takes **payload as possibly allow_pickle (a bool)
        atomic_write_bytes(self.path(kind, key),
                           lambda f: np.savez_compressed(f, **payload))  # type: ignore[arg-type]

    def get_or_compute(self, kind: str, key: dict, compute: Callable[[], dict]) -> dict:
        """Load the entry, or compute, store and return it."""
        arrays = self.load(kind, key)
        if arrays is None:
            arrays = compute()
            self.save(kind, key, arrays)
        return arrays
