"""Callbacks of StructuredSVM.fit: the loop does no I/O, the callbacks do it all."""
import json

import numpy as np
import pytest

from segstruct.learn.callbacks import (Callback, Checkpoint, JSONLog, ProgressBar, TrainingState,
                                 training_callbacks)
from segstruct.learn.methods import estimator_for
from segstruct.learn.estimators.structured_svm import StructuredSVM


def problem(chain_graphs, seed):
    return chain_graphs(seed, n_graphs=4, n=7, lean=0.5)


class Recorder(Callback):
    def __init__(self):
        self.events = []

    def on_fit_start(self, run, state):
        self.events.append(("start", state.iteration))

    def on_iteration(self, run, state):
        assert state.log[-1]["iteration"] == state.iteration
        self.events.append(("iteration", state.iteration, state.best_primal))

    def on_fit_end(self, run, state):
        self.events.append(("end", state.iteration))


def test_callbacks_see_every_iteration_and_change_nothing(tmp_path, monkeypatch, chain_graphs):
    X, Y = problem(chain_graphs, 1)
    monkeypatch.chdir(tmp_path)
    plain = StructuredSVM(loss="hamming", scope="image", C=5.0, tol=1e-4).fit(X, Y)
    assert list(tmp_path.iterdir()) == []         # no callbacks: no file written
    recorder = Recorder()
    log = tmp_path / "run.log.json"
    seen = StructuredSVM(loss="hamming", scope="image", C=5.0, tol=1e-4).fit(
        X, Y, callbacks=[recorder, JSONLog(log), ProgressBar()])
    np.testing.assert_array_equal(seen.w_, plain.w_)
    assert recorder.events[0] == ("start", 0) and recorder.events[-1] == ("end", seen.n_iter_)
    its = [e for e in recorder.events if e[0] == "iteration"]
    assert [e[1] for e in its] == list(range(1, seen.n_iter_ + 1))
    assert its[-1][2] == seen.primal_
    written = json.loads(log.read_text())
    assert len(written) == seen.n_iter_
    assert [e["primal"] for e in written] == [e["primal"] for e in seen.log_]


def test_fit_end_is_called_when_training_fails(chain_graphs):
    X, Y = problem(chain_graphs, 2)
    recorder = Recorder()

    class Stop(Exception):
        pass

    class Boom(Callback):
        def on_iteration(self, run, state):
            if state.iteration == 2:
                raise Stop

    with pytest.raises(Stop):
        StructuredSVM(loss="hamming", scope="image", C=5.0).fit(
            X, Y, callbacks=[recorder, Boom()])
    assert recorder.events[-1] == ("end", 2)


def test_fit_does_not_change_its_oracle(chain_graphs):
    # the proposed oracle keeps warm-start labellings between calls: they
    # belong to the fit (oracle_), so refitting the same estimator, or another
    # one with the same oracle object, gives the same model
    X, Y = problem(chain_graphs, 3)
    est = estimator_for("proposed", n_triangles=8, scope="image", C=5.0, tol=1e-4)
    oracle = est.oracle
    first = est.fit(X, Y).w_.copy()
    assert oracle.get_state() == {} and est.oracle_ is not oracle
    assert est.oracle_.get_state()                # the fit's copy did warm-start
    np.testing.assert_array_equal(est.fit(X, Y).w_, first)
    other = StructuredSVM(**est.get_params(deep=False)).fit(X, Y)
    np.testing.assert_array_equal(other.w_, first)


def test_a_warm_start_goes_on_with_the_last_fits_oracle(chain_graphs):
    X, Y = problem(chain_graphs, 4)
    est = estimator_for("proposed", n_triangles=8, scope="image", C=0.5, warm_start=True)
    est.fit(X, Y)
    copy_of_first = est.oracle_
    est.C = 5.0
    est.fit(X, Y)
    assert est.oracle_ is copy_of_first           # same data and settings: continued
    est.fit(*problem(chain_graphs, 5))            # other data: a fresh copy
    assert est.oracle_ is not copy_of_first and est.oracle.get_state() == {}


def test_training_callbacks_builds_the_commands_set(tmp_path):
    assert training_callbacks() == []
    got = training_callbacks(progress=True, log_path=tmp_path / "l.json",
                             checkpoint_path=tmp_path / "c.npz", resume=True)
    assert [type(c) for c in got] == [Checkpoint, JSONLog, ProgressBar]
    assert got[0].resume and got[0].path == tmp_path / "c.npz"
    with pytest.raises(ValueError, match="checkpoint_path"):
        training_callbacks(resume=True)


def test_a_resumed_run_rewrites_its_log_from_the_checkpoint(tmp_path, chain_graphs):
    # the process may die between the checkpoint and the log
    X, Y = problem(chain_graphs, 6)
    ckpt, log = tmp_path / "c.npz", tmp_path / "l.json"
    short = StructuredSVM(loss="hamming", scope="image", C=5.0, tol=1e-4, max_iter=3)
    short.fit(X, Y, callbacks=training_callbacks(log_path=log, checkpoint_path=ckpt))
    log.write_text("[]")
    resumed = StructuredSVM(loss="hamming", scope="image", C=5.0, tol=1e-4, max_iter=3)
    resumed.fit(X, Y, callbacks=training_callbacks(log_path=log, checkpoint_path=ckpt,
                                                   resume=True))
    assert len(json.loads(log.read_text())) == 3 == resumed.n_iter_
    np.testing.assert_array_equal(resumed.w_, short.w_)


def test_start_state_is_the_origin():
    state = TrainingState.start(4, 2)
    assert state.iteration == 0 and not state.converged and state.qp_solved
    assert np.array_equal(state.w, np.zeros(4)) and state.xi.shape == (2,)
    assert state.best_primal == np.inf and state.log == []
