"""Work on a Dask cluster (segstruct.cluster, --scheduler): a LocalCluster of
2 worker processes stands for one.

What must hold: every result is the one of the same work done locally
(features, the cross-validation curve, compare's records), and a worker
that dies mid-run changes nothing: its task runs again elsewhere (a compare
pair resumes from its checkpoint).
"""
import importlib
import json
import os
import sys

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")

from segstruct.cli import main  # noqa: E402
from segstruct.cluster import on_cluster, parallel_map, use_scheduler  # noqa: E402
from segstruct.datasets import VOCDataset  # noqa: E402
from segstruct.features.cache import ArrayCache  # noqa: E402
from segstruct.features.config import FeatureConfig  # noqa: E402
from segstruct.features.extraction import FeatureExtractor  # noqa: E402

# The tasks below run in the workers, which must import them by name: not
# from this module (pytest imports it by path; putting the repository on
# the workers' path would import segstruct's source tree instead of the
# installed package), but from a module written for the cluster's lifetime.
TASKS = '''
import os


def square_and_pid(x):
    return x * x, os.getpid()


def die_once(x, marker):
    """x squared; the first call for x == 3 kills its worker process."""
    if x == 3 and not os.path.exists(marker):
        open(marker, "w").close()
        os._exit(1)
    return x * x


def kill_after_checkpoints(marker, n):
    """In a worker: die (once, over all workers) right after the n-th checkpoint."""
    from segstruct.learn.callbacks import Checkpoint
    real = Checkpoint.on_iteration
    Checkpoint.real_on_iteration = real
    saves = []

    def save_then_die(self, *args, **kwargs):
        real(self, *args, **kwargs)
        saves.append(1)
        if len(saves) == n and not os.path.exists(marker):
            open(marker, "w").close()
            os._exit(1)
    Checkpoint.on_iteration = save_then_die


def restore_checkpoint():
    """Undo kill_after_checkpoints in a worker that still has it."""
    from segstruct.learn.callbacks import Checkpoint
    if hasattr(Checkpoint, "real_on_iteration"):
        Checkpoint.on_iteration = Checkpoint.real_on_iteration
        del Checkpoint.real_on_iteration
'''

SMALL = ["--no-top-down", "--words", "16", "--codebook-descriptors", "2000",
         "--superpixels", "felzenszwalb", "--fz-min-size", "400", "-q"]

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def tasks(tmp_path_factory):
    """The module of TASKS, importable as segstruct_test_tasks here and in the
    workers: they start with this process's sys.path (a killed one too, when
    its nanny restarts it), so the folder stays on it for the module."""
    folder = tmp_path_factory.mktemp("tasks")
    (folder / "segstruct_test_tasks.py").write_text(TASKS)
    sys.path.insert(0, str(folder))
    try:
        yield importlib.import_module("segstruct_test_tasks")
    finally:
        sys.path.remove(str(folder))
        sys.modules.pop("segstruct_test_tasks", None)


@pytest.fixture(scope="module")
def cluster(tasks):
    """A scheduler and 2 single-threaded worker processes; yields its address."""
    import dask
    # a task that kills every worker it reaches fails after 3 tries instead of
    # hanging the suite (one death is what the tests here cause)
    with dask.config.set({"distributed.scheduler.allowed-failures": 2}), \
            distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                     dashboard_address=":0", silence_logs=40) as c:
        yield c.scheduler_address


def test_tasks_run_on_the_workers_in_order(cluster, tasks):
    with use_scheduler(cluster) as client:
        assert on_cluster() and client is not None
        out = parallel_map(tasks.square_and_pid, [(x,) for x in range(8)], n_jobs=1)
    assert not on_cluster()
    assert [v for v, _ in out] == [x * x for x in range(8)]
    assert os.getpid() not in {pid for _, pid in out}


def test_a_killed_worker_loses_no_task(cluster, tasks, tmp_path):
    marker = str(tmp_path / "killed")
    with use_scheduler(cluster):
        out = parallel_map(tasks.die_once, [(x, marker) for x in range(6)])
    assert os.path.exists(marker)                # a worker did die
    assert out == [x * x for x in range(6)]


def test_features_on_the_cluster_equal_local_ones(cluster, data_root, tmp_path):
    config = FeatureConfig(n_words=16, codebook_descriptors=2000, detector=None)

    def graphs(cache):
        ex = FeatureExtractor(VOCDataset(data_root), config, ArrayCache(cache), progress=False)
        return ex.examples("train", "car")
    local = graphs(tmp_path / "local")
    with use_scheduler(cluster):
        remote = graphs(tmp_path / "remote")
    assert len(remote) == len(local) == 6
    for a, b in zip(local, remote):
        for name in ("unary", "edges", "pairwise"):
            np.testing.assert_array_equal(getattr(a.graph, name), getattr(b.graph, name))
        np.testing.assert_array_equal(a.pixel_counts, b.pixel_counts)


def test_cross_validation_on_the_cluster_equals_local(cluster, data_root, tmp_path):
    from segstruct.learn.selection import cross_validate_C
    from segstruct.learn.estimators.structured_svm import StructuredSVM
    config = FeatureConfig(n_words=16, codebook_descriptors=2000, detector=None)
    ex = FeatureExtractor(VOCDataset(data_root), config, ArrayCache(tmp_path), progress=False)
    train = ex.examples("train", "car")
    X, Y = [e.graph for e in train], [e.pixel_counts for e in train]
    local = cross_validate_C(StructuredSVM, X, Y, [0.1, 1.0], folds=2)
    with use_scheduler(cluster):
        remote = cross_validate_C(StructuredSVM, X, Y, [0.1, 1.0], folds=2)
    for key in ("fold_counts", "pooled_counts", "n_iter", "converged", "fold_of_image"):
        assert remote[key] == local[key]


def test_the_command_line_refuses_a_dead_scheduler(data_root, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("segstruct.cluster.CONNECT_TIMEOUT", 2.0)
    code = main(["features", "--data", str(data_root), "--cache", str(tmp_path),
                 "--scheduler", "tcp://127.0.0.1:9", *SMALL])
    assert code == 2
    assert "no Dask scheduler answered at tcp://127.0.0.1:9 within 2 s" in capsys.readouterr().err


def test_compare_on_the_cluster_survives_a_killed_worker(cluster, tasks, data_root, tmp_path,
                                                         capsys):
    base = ["compare", "--data", str(data_root), "--classes", "car", "person",
            "--methods", "bl1", "bl2", "--no-figures", "--tol", "1e-4",
            "--cache", str(tmp_path / "cache"), *SMALL]
    assert main([*base, "--out", str(tmp_path / "local")]) == 0
    marker = str(tmp_path / "killed")
    client = distributed.Client(cluster)
    try:
        client.run(tasks.kill_after_checkpoints, marker, 3)
        capsys.readouterr()
        assert main([*base, "--out", str(tmp_path / "remote"), "--scheduler", cluster]) == 0
    finally:
        client.run(tasks.restore_checkpoint)
        client.close()
    assert os.path.exists(marker)                # a worker died mid-pair
    assert "on the Dask cluster" in capsys.readouterr().out
    for pair in ("car-bl1", "car-bl2", "person-bl1", "person-bl2"):
        local = json.loads((tmp_path / "local" / "runs" / f"{pair}.json").read_text())
        remote = json.loads((tmp_path / "remote" / "runs" / f"{pair}.json").read_text())
        assert remote["eval_score"] == local["eval_score"]
        assert remote["training"]["n_iter"] == local["training"]["n_iter"]
        assert remote["training"]["primal"] == pytest.approx(local["training"]["primal"])
        assert not (tmp_path / "remote" / "models" / f"{pair}.ckpt.npz").exists()
    local = json.loads((tmp_path / "local" / "results.json").read_text())
    remote = json.loads((tmp_path / "remote" / "results.json").read_text())
    assert remote["table"] == local["table"]


def test_train_with_C_auto_on_the_cluster_and_with_workers_equals_local(cluster, data_root,
                                                                       tmp_path):
    """The folds on the cluster, or on 2 local processes with the image
    scope's inference workers: the same curve and the same model."""
    from segstruct.io.persistence import load_model
    base = ["train", "--data", str(data_root), "--class", "car", "--method", "bl1",
            "--scope", "image", "--C", "auto", "--C-grid", "0.5", "5", "--folds", "2",
            "--cache", str(tmp_path / "cache"), *SMALL]
    runs = {"local": [], "cluster": ["--scheduler", cluster], "workers": ["-j", "2"]}
    models = {}
    for name, extra in runs.items():
        assert main([*base, "--out", str(tmp_path / name), *extra]) == 0
        models[name] = load_model(tmp_path / name)
    svm, _, _, doc = models["local"]
    for name in ("cluster", "workers"):
        other, _, _, other_doc = models[name]
        for key in ("fold_counts", "n_iter", "converged", "chosen_C"):
            assert other_doc["C_selection"][key] == doc["C_selection"][key], (name, key)
        np.testing.assert_array_equal(other.w_, svm.w_)
