"""What made a result: code version and machine, for every file a user reads."""
from __future__ import annotations

import platform
import subprocess
from functools import lru_cache
from pathlib import Path

from segstruct._version import __version__


@lru_cache(maxsize=1)
def code_version() -> str:
    """The package version, plus the git commit of the code that runs.

    Returns e.g. ``"0.1.0+g1a2b3c4d5e"`` for commit 1a2b3c4d5e, with
    ``.dirty`` appended when the tracked files had local changes, whether the
    package runs from a checkout (editable install: git is asked) or from an
    installed copy (the commit ``setup.py`` recorded at build time); plain
    ``"0.1.0"`` when neither knows a commit (built outside git).
    """
    commit = _checkout_commit()
    if commit is None:
        try:
            from segstruct._build import COMMIT
            commit = COMMIT
        except ImportError:
            commit = ""
    return f"{__version__}+g{commit}" if commit else __version__


def _checkout_commit() -> str | None:
    """``<sha>[.dirty]`` when this package's files are those of a git checkout."""
    here = Path(__file__).resolve().parents[1]          # the segstruct package folder
    try:
        def git(*args):
            return subprocess.run(["git", *args], cwd=here, capture_output=True,
                                  text=True, timeout=5, check=True).stdout.strip()
        top = Path(git("rev-parse", "--show-toplevel"))
        if not (top / "pyproject.toml").exists() or here.parent != top:
            return None     # some other repository around an install
        sha = git("rev-parse", "--short=10", "HEAD")
        dirty = bool(git("status", "--porcelain", "--untracked-files=no"))
    except (OSError, subprocess.SubprocessError):
        return None
    return sha + (".dirty" if dirty else "")


def data_provenance(extractor) -> dict:
    """The data set, feature settings and code version a record names.

    Parameters
    ----------
    extractor : FeatureExtractor
        Read for its ``dataset`` (``name`` and ``root``) and its ``config``
        (``FeatureConfig``, recorded by ``to_dict``).

    Returns
    -------
    dict
        ``{"dataset", "data_root", "features", "code_version"}``: what a
        report needs so that its numbers can be traced to their data, their
        features and the code that computed them.
    """
    dataset = extractor.dataset
    return {"dataset": dataset.name, "data_root": str(dataset.root),
            "features": extractor.config.to_dict(), "code_version": code_version()}


#: The distributions whose versions a result or a timing depends on.
DEPENDENCIES = ("numpy", "scipy", "highspy", "PyMaxflow", "scikit-image",
                "opencv-python-headless", "threadpoolctl")


def machine(versions: bool = False) -> dict:
    """A short description of the machine a result was measured on.

    Parameters
    ----------
    versions : bool
        Also the versions of :data:`DEPENDENCIES` (None for one not
        installed), the Python implementation, the cores this process may
        use and ``OMP_NUM_THREADS``: what a benchmark's seconds depend on.

    Returns
    -------
    dict (JSON-able): ``platform``, ``python``, ``processor``, ``cpu_count``,
    and with ``versions`` one entry per distribution, ``python_implementation``,
    ``cores_available`` and ``OMP_NUM_THREADS``.
    """
    import os
    out = {"platform": platform.platform(), "python": platform.python_version(),
           "processor": platform.processor() or platform.machine(),
           "cpu_count": os.cpu_count()}
    if versions:
        from importlib import metadata
        for dist in DEPENDENCIES:
            try:
                out[dist] = metadata.version(dist)
            except metadata.PackageNotFoundError:
                out[dist] = None
        out["python_implementation"] = platform.python_implementation()
        out["cores_available"] = (len(os.sched_getaffinity(0))
                                  if hasattr(os, "sched_getaffinity") else os.cpu_count())
        out["OMP_NUM_THREADS"] = os.environ.get("OMP_NUM_THREADS")
    return out


def source_digest() -> str:
    """SHA-256 (hex) over the package's Python sources (segstruct, its
    inference and datasets packages): it tells two working trees apart where
    :func:`code_version` (``0.1.0+g<sha>.dirty``) cannot."""
    import hashlib

    import segstruct.datasets as datasets_package
    import segstruct.inference as inference_package
    h = hashlib.sha256()
    packages = (("segstruct", Path(__file__).resolve().parents[1]),
                *((pkg.__name__, Path(str(pkg.__file__)).resolve().parent)
                  for pkg in (inference_package, datasets_package)))
    for name, root in packages:
        for path in sorted(root.rglob("*.py")):
            h.update(f"{name}/{path.relative_to(root).as_posix()}\0".encode())
            h.update(path.read_bytes())
    return h.hexdigest()
