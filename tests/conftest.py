"""Shared fixtures: the real VOC-layout data sets in ../shared/data.

They are read in place, never copied. Set SEGSTRUCT_SHARED_DATA to point
elsewhere; tests that need them are skipped when they are absent.
"""
import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


def shared_data_dir() -> Path:
    env = os.environ.get("SEGSTRUCT_SHARED_DATA")
    return Path(env) if env else REPO_ROOT.parent / "shared" / "data"


def _shared_root(name: str) -> Path:
    root = shared_data_dir() / name
    if not (root / "ImageSets" / "Segmentation").is_dir():
        pytest.skip(f"shared data set {name} not found at {root}")
    return root


@pytest.fixture(scope="session")
def camvid_root() -> Path:
    return _shared_root("camvid_voc")


@pytest.fixture(scope="session")
def horse_root() -> Path:
    return _shared_root("weizmann_horse_voc")
