"""What made a result: code version and machine, for every file a user reads."""
from __future__ import annotations

import platform
import subprocess
from functools import lru_cache
from pathlib import Path

from segstruct._version import __version__


@lru_cache(maxsize=1)
def code_version() -> str:
    """The package version, plus the git commit when run from a checkout.

    Returns e.g. ``"0.1.0"`` for an installed release, ``"0.1.0+g1a2b3c4"``
    from a clean checkout and ``"0.1.0+g1a2b3c4.dirty"`` with local changes.
    """
    here = Path(__file__).resolve().parents[1]          # the segstruct package folder
    try:
        def git(*args):
            return subprocess.run(["git", *args], cwd=here, capture_output=True,
                                  text=True, timeout=5, check=True).stdout.strip()
        top = Path(git("rev-parse", "--show-toplevel"))
        if not (top / "pyproject.toml").exists() or here.parent != top:
            return __version__      # some other repository around an install
        sha = git("rev-parse", "--short=10", "HEAD")
        dirty = bool(git("status", "--porcelain", "--untracked-files=no"))
    except (OSError, subprocess.SubprocessError):
        return __version__
    return f"{__version__}+g{sha}" + (".dirty" if dirty else "")


def machine() -> dict:
    """A short description of the machine a result was measured on."""
    import os
    return {"platform": platform.platform(), "python": platform.python_version(),
            "processor": platform.processor() or platform.machine(),
            "cpu_count": os.cpu_count()}
