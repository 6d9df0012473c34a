"""Shared fixtures: the real VOC-layout data sets in ../shared/data, and the
scripts of scripts/ imported as modules.

The data sets are read in place, never copied. Set SEGSTRUCT_SHARED_DATA to
point elsewhere; tests that need them are skipped when they are absent.
"""
import importlib.util
import os
import sys
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


@pytest.fixture(scope="session")
def load_script():
    """``load_script(name)``: scripts/<name>.py imported as the module ``name``.

    Registered in sys.modules while the tests run (dataclasses and pickling
    look a module up there) and removed at the end.
    """
    loaded = []

    def load(name):
        spec = importlib.util.spec_from_file_location(name, REPO_ROOT / "scripts" / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        loaded.append(name)
        spec.loader.exec_module(module)
        return module
    yield load
    for name in loaded:
        sys.modules.pop(name, None)
