"""The code version a result records names the commit, however segstruct was installed."""
from __future__ import annotations

import subprocess
import sys
import types
from pathlib import Path

import pytest

import segstruct
from segstruct.io import provenance

REPO = Path(__file__).resolve().parents[2]


def _git(*args) -> str:
    return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=10, check=True).stdout.strip()


@pytest.fixture
def fresh_version():
    provenance.code_version.cache_clear()
    yield
    provenance.code_version.cache_clear()


def test_the_version_names_this_checkouts_commit(fresh_version):
    """From a checkout, an editable install asks git and a regular one reads what
    setup.py recorded at build time: both give the commit the tests run on."""
    try:
        if Path(_git("rev-parse", "--show-toplevel")).resolve() != REPO:
            pytest.skip("the tests are not in a git checkout of segstruct")
        sha = _git("rev-parse", "--short=10", "HEAD")
        dirty = bool(_git("status", "--porcelain", "--untracked-files=no"))
    except (OSError, subprocess.SubprocessError):
        pytest.skip("no git")
    installed = Path(segstruct.__file__).resolve().parent
    if installed.parent != REPO and dirty:
        pytest.skip("an installed copy of a tree with local changes: which changes "
                    "it was built from is not known here")
    expected = f"{segstruct.__version__}+g{sha}" + (".dirty" if dirty else "")
    assert provenance.code_version() == expected


@pytest.mark.parametrize("commit, expected", [("1a2b3c4d5e", "+g1a2b3c4d5e"),
                                              ("1a2b3c4d5e.dirty", "+g1a2b3c4d5e.dirty"),
                                              ("", "")])
def test_an_installed_copy_reads_the_commit_recorded_at_build_time(
        commit, expected, fresh_version, monkeypatch):
    monkeypatch.setattr(provenance, "_checkout_commit", lambda: None)
    build = types.ModuleType("segstruct._build")
    build.COMMIT = commit
    monkeypatch.setitem(sys.modules, "segstruct._build", build)
    assert provenance.code_version() == segstruct.__version__ + expected


def test_without_a_recorded_commit_the_version_is_the_release(fresh_version, monkeypatch):
    monkeypatch.setattr(provenance, "_checkout_commit", lambda: None)
    monkeypatch.setitem(sys.modules, "segstruct._build", None)     # import fails
    assert provenance.code_version() == segstruct.__version__
