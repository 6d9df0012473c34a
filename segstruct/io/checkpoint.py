"""Training checkpoints: the whole state of a cutting-plane run in one file.

A checkpoint is a single ``.npz`` (arrays plus a JSON document stored as
bytes, so no pickle), written to a temporary file and renamed into place:
a run killed at any moment leaves either the previous checkpoint or the new
one, never a half-written file that looks valid. It carries a fingerprint of
the training data and settings, so a run cannot resume on other data.
"""
from __future__ import annotations

import hashlib
import io
import json
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from segstruct.io.files import atomic_write_bytes

FORMAT = "segstruct-checkpoint"
FORMAT_VERSION = 1
_META = "__meta__"


class CheckpointError(ValueError):
    """A checkpoint is unreadable, or belongs to other data or settings.

    ``changes`` lists, for the latter, each setting that differs as
    ``(name, value in the checkpoint, value now)``, by the dotted names of
    the estimator's parameters and the training data's settings
    (``"C"``, ``"features.n_words"``), so that a caller can name them as its
    user gave them (the command line: by option).
    """

    def __init__(self, message: str, changes=()):
        super().__init__(message)
        self.changes: list[tuple[str, object, object]] = list(changes)


def save_checkpoint(path, arrays: dict, meta: dict) -> None:
    """Write ``arrays`` (name -> ndarray) and ``meta`` (JSON-able) atomically."""
    doc = {"format": FORMAT, "format_version": FORMAT_VERSION, **meta}
    buffer = io.BytesIO()
    # numpy's stub takes **arrays as possibly allow_pickle (a bool): Any values
    # keep it from matching the arrays against that keyword's type
    named: dict[str, Any] = {k: np.asarray(v) for k, v in arrays.items()}
    meta_array: dict[str, Any] = {_META: np.frombuffer(json.dumps(doc).encode(), np.uint8)}
    np.savez(buffer, **named, **meta_array)
    payload = buffer.getvalue()
    atomic_write_bytes(Path(path), lambda f: f.write(payload))


def load_checkpoint(path) -> tuple[dict, dict]:
    """Read a checkpoint: (arrays, meta). Raises CheckpointError if it is damaged."""
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {k: data[k] for k in data.files}
        meta = json.loads(arrays.pop(_META).tobytes().decode())
    except (OSError, ValueError, KeyError, EOFError, UnicodeDecodeError,
            zipfile.BadZipFile) as err:
        raise CheckpointError(f"checkpoint {path} is unreadable ({err}); delete it to "
                              "start the training again") from err
    if meta.get("format") != FORMAT or meta.get("format_version") != FORMAT_VERSION:
        raise CheckpointError(f"{path} is not a segstruct checkpoint of format version "
                              f"{FORMAT_VERSION}")
    return arrays, meta


def fingerprint(arrays, settings: dict) -> str:
    """SHA-256 of a sequence of arrays (values, dtypes, shapes) and of ``settings``."""
    h = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(f"{a.dtype.str}{a.shape}".encode())
        h.update(a.tobytes())
    h.update(json.dumps(settings, sort_keys=True, default=repr).encode())
    return h.hexdigest()
