"""Checkpoints: an interrupted training run resumes and ends with the same model."""
import functools
import json
import os
import random
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from segstruct.datasets import make_synthetic_voc
from segstruct.inference import loss_augmented
from segstruct.inference.proposed import ProposedOracle
from segstruct.io.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from segstruct.learn.callbacks import Checkpoint
from segstruct.learn.estimators.structured_svm import StructuredSVM, oracle_name
from segstruct.feature_map import Graph


class Crash(Exception):
    pass


class CrashingOracle:
    """Calls ``oracle`` and raises on call number ``at`` (a simulated kill)."""

    def __init__(self, oracle, at):
        self.oracle, self.at, self.calls = oracle, at, 0

    def __call__(self, *args):
        self.calls += 1
        if self.calls == self.at:
            raise Crash
        return self.oracle(*args)

    def get_state(self):
        return self.oracle.get_state() if hasattr(self.oracle, "get_state") else {}

    def set_state(self, state):
        if hasattr(self.oracle, "set_state"):
            self.oracle.set_state(state)

    def __repr__(self):          # the checkpoint fingerprint must not see the wrapper
        return oracle_name(self.oracle)


def problem(seed, n_graphs=4, n=7, du=4):
    rng = np.random.default_rng(seed)
    X, Y = [], []
    for _ in range(n_graphs):
        t = (rng.random(n) < 0.4).astype(np.uint8)
        t[0] = 1
        pairs = [(i, j) for i in range(n) for j in range(i + 1, n) if rng.random() < 0.5]
        edges = np.array(pairs, np.int64).reshape(-1, 2)
        unary = rng.normal(size=(n, du)) + np.outer(2.0 * t - 1, np.ones(du)) * 0.3
        X.append(Graph(unary, edges, rng.uniform(0, 1, (len(edges), 2))))
        Y.append(t)
    return X, Y


CASES = {
    "bl1-oneslack": dict(loss="adjusted_hamming", solver="oneslack", scope="image"),
    "hamming-nslack": dict(loss="hamming", solver="nslack", scope="image"),
    "proposed-dataset": dict(loss="iou", scope="dataset", oracle="triangles"),
    "proposed-image": dict(loss="iou", scope="image", solver="nslack", oracle="triangles"),
}


def make(case, tmp_path=None, crash_at=None, resume=False):
    params = dict(CASES[case])
    base = ProposedOracle(8) if params.pop("oracle", None) else loss_augmented
    oracle = base if crash_at is None else CrashingOracle(base, crash_at)
    # inactive_limit=2: constraints get pruned, so the saved working set matters
    svm = StructuredSVM(**params, C=5.0, tol=1e-4, max_iter=60, oracle=oracle,
                        inactive_limit=2)
    if tmp_path is not None:
        # the checkpoint is a callback of fit: bind it, so svm.fit(X, Y) keeps one
        svm.fit = functools.partial(svm.fit, callbacks=[
            Checkpoint(tmp_path / "run.ckpt.npz", resume=resume)])
    return svm


TIMING = {"oracle_seconds", "qp_seconds", "seconds"}


def same_log(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert set(x) == set(y)
        for k in set(x) - TIMING:
            if x[k] is None or isinstance(x[k], str):
                assert x[k] == y[k], k
            else:
                assert x[k] == pytest.approx(y[k], rel=1e-9, abs=1e-12), k


@pytest.mark.parametrize("case", sorted(CASES))
def test_interrupted_and_resumed_equals_uninterrupted(case, tmp_path):
    X, Y = problem(3)
    reference = make(case).fit(X, Y)
    assert reference.n_iter_ >= 4
    calls_per_evaluation = 1 if CASES[case]["scope"] == "dataset" else len(X)
    for crash_iteration in (2, reference.n_iter_ - 1):
        ckpt = tmp_path / "run.ckpt.npz"
        ckpt.unlink(missing_ok=True)
        # the first oracle call of that iteration (the 1-slack line search
        # evaluates the objective several times an iteration)
        before = sum(e["oracle_calls"] for e in reference.log_[:crash_iteration - 1])
        with pytest.raises(Crash):
            make(case, tmp_path, crash_at=before * calls_per_evaluation + 1).fit(X, Y)
        _, meta = load_checkpoint(ckpt)
        assert meta["iteration"] == crash_iteration - 1
        resumed = make(case, tmp_path, resume=True).fit(X, Y)
        # the same cutting-plane path: the same weights and, entry by entry, log
        # (constraints, pruning, QP gaps, routes: the working set was restored)
        np.testing.assert_allclose(resumed.w_, reference.w_, rtol=1e-9, atol=1e-12)
        assert resumed.converged_ == reference.converged_
        same_log(resumed.log_, reference.log_)
    assert any(e.get("pruned") for e in reference.log_) or case.startswith("proposed")


def test_restored_state_is_the_saved_state(tmp_path):
    # the QP working set and the oracle's warm starts come back exactly
    X, Y = problem(3)
    svm = make("proposed-dataset", tmp_path)
    svm.max_iter = 5
    svm.fit(X, Y)
    arrays, _ = load_checkpoint(tmp_path / "run.ckpt.npz")
    from segstruct.learn.solvers.qp import WorkingSetQP
    qp = WorkingSetQP(arrays["qp_G"].shape[1], [1.0])
    qp.set_state({k[3:]: v for k, v in arrays.items() if k.startswith("qp_")})
    for name, value in qp.get_state().items():
        assert np.array_equal(value, arrays[f"qp_{name}"]), name
    oracle = ProposedOracle(8)
    oracle.set_state({k[7:]: v for k, v in arrays.items() if k.startswith("oracle_")})
    saved = {k[7:]: v for k, v in arrays.items() if k.startswith("oracle_")}
    assert saved and all(np.array_equal(oracle.get_state()[k], v) for k, v in saved.items())


def test_oracles_without_a_stable_name_cannot_checkpoint(tmp_path):
    X, Y = problem(3)
    svm = StructuredSVM(oracle=lambda *a: loss_augmented(*a))
    with pytest.raises(ValueError, match="stable across processes"):
        svm.fit(X, Y, callbacks=[Checkpoint(tmp_path / "c.npz")])


def test_resume_needs_the_same_data_and_settings(tmp_path):
    X, Y = problem(4)
    make("bl1-oneslack", tmp_path).fit(X, Y)
    X2, Y2 = problem(5)
    # other data (here the adjusted Hamming loss's kappa, the data's ratio, differs too)
    with pytest.raises(CheckpointError, match="was made with other"):
        make("bl1-oneslack", tmp_path, resume=True).fit(X2, Y2)
    other_c = make("bl1-oneslack", tmp_path, resume=True)
    C = other_c.C
    other_c.C = 50.0
    with pytest.raises(CheckpointError, match=rf"other settings: C {C!r} \(now 50.0\)") as err:
        other_c.fit(X, Y)
    assert err.value.changes == [("C", C, 50.0)]      # for a caller to name as it likes


def test_resume_of_a_finished_run_does_no_iteration(tmp_path):
    X, Y = problem(6)
    first = make("bl1-oneslack", tmp_path).fit(X, Y)
    assert first.converged_
    again = make("bl1-oneslack", tmp_path, crash_at=1, resume=True)  # any call would raise
    again.fit(X, Y)
    assert np.array_equal(again.w_, first.w_) and again.n_iter_ == first.n_iter_


def test_raising_max_iter_continues_a_stopped_run(tmp_path):
    X, Y = problem(7)
    reference = make("bl1-oneslack").fit(X, Y)
    short = make("bl1-oneslack", tmp_path)
    short.max_iter = 3
    short.fit(X, Y)
    assert short.n_iter_ == 3 and not short.converged_
    longer = make("bl1-oneslack", tmp_path, resume=True).fit(X, Y)
    np.testing.assert_allclose(longer.w_, reference.w_, rtol=1e-9, atol=1e-12)


def test_damaged_checkpoint_is_refused_with_its_name(tmp_path):
    path = tmp_path / "x.ckpt.npz"
    save_checkpoint(path, {"w": np.arange(3.0)}, {"iteration": 1})
    arrays, meta = load_checkpoint(path)
    assert meta["iteration"] == 1 and np.array_equal(arrays["w"], np.arange(3.0))
    path.write_bytes(path.read_bytes()[:40])
    with pytest.raises(CheckpointError, match="x.ckpt.npz"):
        load_checkpoint(path)


# ----------------------------------------------------------------------------
# A real process killed with SIGKILL at a random moment, then resumed.

# the top-down block (on by default) costs a detector per class; these tests are
# about other things (the top-down ones switch it on)
SMALL = ["--no-top-down", "--words", "16", "--codebook-descriptors", "2000",
         "--superpixels", "felzenszwalb", "--fz-min-size", "200", "-q"]


def _train(root, cache, out, *extra):
    return [sys.executable, "-m", "segstruct.cli", "train", "--data", str(root),
            "--class", "car", "--method", "proposed", "--tol", "1e-4",
            "--max-iter", "400", "--cache", str(cache), "--out", str(out), *SMALL, *extra]


@pytest.mark.slow
def test_sigkill_mid_training_then_resume_gives_the_same_model(tmp_path):
    from segstruct.io.persistence import load_model
    root = make_synthetic_voc(tmp_path / "voc", n_train=8, n_val=2)
    cache = tmp_path / "cache"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    # run from elsewhere: in the repository, ./segstruct would shadow the
    # installed package (whose datasets/ and inference/ are mapped in)
    run = dict(env=env, cwd=tmp_path)
    subprocess.run(_train(root, cache, tmp_path / "ref"), check=True, **run)
    reference, *_ = load_model(tmp_path / "ref")
    n_iter = json.loads((tmp_path / "ref.json").read_text())["training"]["n_iter"]
    assert n_iter >= 10

    out = tmp_path / "killed"
    log = tmp_path / "killed.log.json"
    ckpt = tmp_path / "killed.ckpt.npz"
    proc = subprocess.Popen(_train(root, cache, out), **run)
    # kill at a random moment: after a random number of iterations, plus a
    # random part of the next one
    rng = random.Random(os.getpid())
    after = rng.randint(1, n_iter - 2)
    deadline = time.time() + 300
    while time.time() < deadline and proc.poll() is None:
        try:
            if len(json.loads(log.read_text())) >= after:
                break
        except (FileNotFoundError, json.JSONDecodeError):
            pass
        time.sleep(0.005)
    time.sleep(rng.uniform(0.0, 0.05))
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL, "the run ended before it could be killed"
    assert not (tmp_path / "killed.json").exists()
    done_before = len(json.loads(log.read_text())) if log.exists() else 0
    assert done_before < n_iter
    # without --resume the interrupted run is not silently overwritten
    refused = subprocess.run(_train(root, cache, out), capture_output=True, text=True, **run)
    assert refused.returncode == 2 and "--resume" in refused.stderr
    subprocess.run(_train(root, cache, out, "--resume"), check=True, **run)
    resumed, *_ = load_model(out)
    np.testing.assert_allclose(resumed.w_, reference.w_, rtol=1e-6, atol=1e-9)
    assert not ckpt.exists()       # spent once the model is saved
    assert len(json.loads(log.read_text())) == n_iter
