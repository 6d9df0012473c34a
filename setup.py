"""Build hook: a regular install records the git commit it was built from.

Everything else is in pyproject.toml. ``segstruct.io.provenance.code_version``
reads the commit from git when the package runs from a checkout (an editable
install), and from ``segstruct/_build.py``, written here, when it runs from
an installed copy: so both name the same code the same way.
"""
import subprocess
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


def git_commit(root: Path) -> str:
    """``<sha>`` or ``<sha>.dirty`` of the checkout at ``root``; "" outside git."""
    # The same questions segstruct.io.provenance asks at run time; written
    # again here because the build runs before the package can be imported.
    def git(*args):
        return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True,
                              timeout=10, check=True).stdout.strip()
    try:
        if Path(git("rev-parse", "--show-toplevel")).resolve() != root.resolve():
            return ""       # a source tree inside some other repository
        sha = git("rev-parse", "--short=10", "HEAD")
        dirty = bool(git("status", "--porcelain", "--untracked-files=no"))
    except (OSError, subprocess.SubprocessError):
        return ""
    return sha + (".dirty" if dirty else "")


class BuildPyWithCommit(build_py):
    def run(self):
        super().run()
        target = Path(self.build_lib) / "segstruct" / "_build.py"
        commit = git_commit(Path(__file__).resolve().parent)
        target.write_text('"""Written by setup.py at build time."""\n'
                          f"COMMIT = {commit!r}\n")


setup(cmdclass={"build_py": BuildPyWithCommit})
