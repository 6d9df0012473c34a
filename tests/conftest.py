"""Shared fixtures: the real VOC-layout data sets in ../shared/data, the
scripts of scripts/ imported as modules, and small chain-graph problems.

The data sets are read in place, never copied. Set SEGSTRUCT_SHARED_DATA to
point elsewhere; tests that need them are skipped when they are absent.
"""
import importlib.util
import os
import sys
from pathlib import Path

# The suite's results must not depend on how many BLAS threads the machine
# gives numpy: with several, a sum's order (and so where L-BFGS-B stops) can
# change from one run to the next. Set before numpy loads, and inherited by
# the worker processes and the commands the tests start.
for _threads in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_threads, "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

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


@pytest.fixture(scope="module")
def data_root(tmp_path_factory, request) -> Path:
    """A small generated VOC-layout data set, one per test module: 6 training
    and 3 val images, or the module's ``DATA_SIZE = (n_train, n_val)``."""
    from segstruct.datasets import make_synthetic_voc
    n_train, n_val = getattr(request.module, "DATA_SIZE", (6, 3))
    return make_synthetic_voc(tmp_path_factory.mktemp("syn") / "voc", n_train=n_train,
                              n_val=n_val)


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


@pytest.fixture(scope="session")
def chain_graphs():
    """``chain_graphs(seed, n_graphs, n, lean)``: (X, Y) of chain graphs.

    Each graph has ``n`` nodes with 3 unary features that lean ``lean``
    towards its (N,) 0/1 targets (about 40 % ones, node 0 always one) and 2
    pairwise features per edge.
    """
    from segstruct.feature_map import Graph

    def make(seed=0, n_graphs=8, n=8, lean=1.0):
        rng = np.random.default_rng(seed)
        X, Y = [], []
        for _ in range(n_graphs):
            t = (rng.random(n) < 0.4).astype(np.uint8)
            t[0] = 1
            edges = np.array([(i, i + 1) for i in range(n - 1)])
            X.append(Graph(rng.normal(size=(n, 3)) + lean * t[:, None], edges,
                           rng.uniform(0, 1, (n - 1, 2))))
            Y.append(t)
        return X, Y
    return make
