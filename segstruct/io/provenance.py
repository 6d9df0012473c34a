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


def machine() -> dict:
    """A short description of the machine a result was measured on."""
    import os
    return {"platform": platform.platform(), "python": platform.python_version(),
            "processor": platform.processor() or platform.machine(),
            "cpu_count": os.cpu_count()}
