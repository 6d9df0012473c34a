"""FirstOrderSVM(solver="subgradient" | "sgd" | "bcfw"): the learners of
segstruct.learn.solvers.first_order behind the estimator's interface, a sibling of the
cutting-plane StructuredSVM."""
import json

import numpy as np
import pytest

from segstruct.io.checkpoint import CheckpointError
from segstruct.learn.callbacks import Checkpoint, JSONLog, ProgressBar
from segstruct.learn.estimators.first_order_svm import FirstOrderSVM
from segstruct.learn.methods import estimator_for
from segstruct.learn.estimators.structured_svm import STOCHASTIC_SOLVERS, StructuredSVM
from segstruct.learn.solvers.first_order import ImageScopeProblem
from segstruct.report.figures import training_figure

C, TOL = 2.0, 1e-3


@pytest.fixture(scope="module")
def problem(chain_graphs):
    return chain_graphs(seed=3, n_graphs=6, n=8, lean=1.0)


@pytest.fixture(scope="module")
def reference(problem):
    """The n-slack cutting planes' optimum, to a tight tolerance."""
    X, Y = problem
    ref = StructuredSVM(solver="nslack", scope="image", C=C, tol=1e-7).fit(X, Y)
    assert ref.converged_
    return ref


def test_bcfw_reaches_the_nslack_optimum(problem, reference):
    X, Y = problem
    est = FirstOrderSVM(solver="bcfw", C=C, tol=TOL, max_iter=3000).fit(X, Y)
    assert est.converged_ and est.gap_ <= est.svm_C_ * TOL
    # weak duality both ways: each learner's bound lies below the other's objective
    assert est.dual_ <= reference.primal_ + 1e-9
    assert reference.dual_ <= est.primal_ + 1e-9
    assert abs(est.primal_ - reference.primal_) <= est.svm_C_ * TOL
    assert np.all(est.w_[-2:] <= 0)            # the pairwise block
    assert est.gap_ == pytest.approx(est.primal_ - est.dual_)
    # primal_ is the objective at w_, evaluated afresh
    assert ImageScopeProblem.from_data(X, Y, C=est.svm_C_).primal(est.w_) == pytest.approx(
        est.primal_, rel=1e-12)
    # one log entry per epoch, the last one at the returned weights
    assert len(est.log_) == est.n_iter_ >= 1
    assert [e["iteration"] for e in est.log_] == list(range(1, est.n_iter_ + 1))
    last = est.log_[-1]
    assert last["primal"] == est.primal_ and last["dual"] == est.dual_
    assert last["gap"] <= est.svm_C_ * TOL and last["solver"] == "bcfw"
    assert all(e["oracle_calls"] == 2 * len(X) for e in est.log_)   # steps + evaluation
    assert all(b["seconds"] >= a["seconds"] for a, b in zip(est.log_, est.log_[1:]))
    assert est.fit_seconds_ >= last["seconds"]


@pytest.mark.parametrize("solver, epochs, rel", [("sgd", 300, 0.03), ("subgradient", 300, 0.01)])
def test_subgradient_solvers_approach_the_optimum(solver, epochs, rel, problem, reference):
    X, Y = problem
    est = FirstOrderSVM(solver=solver, C=C, max_iter=epochs).fit(X, Y)
    assert reference.dual_ - 1e-9 <= est.primal_ <= reference.primal_ * (1 + rel)
    # no certificate: the trivial lower bound 0
    assert est.dual_ == 0.0 and est.gap_ == est.primal_
    assert "dual" not in est.log_[-1] and "gap" not in est.log_[-1]
    assert est.log_[-1]["best_primal"] == est.primal_
    if solver == "sgd":                       # no stopping test: every epoch runs
        assert not est.converged_ and est.n_iter_ == epochs
    assert np.all(est.w_[-2:] <= 0)


@pytest.mark.parametrize("solver", STOCHASTIC_SOLVERS)
def test_first_order_solvers_refuse_the_dataset_scope(solver, problem):
    X, Y = problem
    with pytest.raises(ValueError, match="needs the per-image loss scope"):
        FirstOrderSVM(solver=solver, scope="dataset").fit(X, Y)
    FirstOrderSVM(solver=solver).check_params()
    # StructuredSVM trains by cutting planes only, and says who trains the others
    with pytest.raises(ValueError, match=r"FirstOrderSVM \(segstruct\.learn\.estimators\."
                                         r"first_order_svm\) trains it"):
        StructuredSVM(solver=solver, scope="image").check_params()
    # the methods give the right learner for each solver
    assert type(estimator_for("bl1", solver=solver, scope="image")) is FirstOrderSVM
    assert type(estimator_for("bl1", solver="nslack", scope="image")) is StructuredSVM


def test_unknown_solver_is_refused():
    with pytest.raises(ValueError, match="solver must be one of 'nslack', 'oneslack', got "
                                         "'adam'"):
        StructuredSVM(solver="adam").check_params()
    with pytest.raises(ValueError, match="solver must be one of 'subgradient'"):
        FirstOrderSVM(solver="oneslack").check_params()


def test_resume_is_refused_and_no_checkpoint_is_written(problem, tmp_path):
    X, Y = problem
    ckpt, log = tmp_path / "m.ckpt.npz", tmp_path / "m.log.json"
    est = FirstOrderSVM(solver="bcfw", C=C, max_iter=20)
    est.fit(X, Y, callbacks=[Checkpoint(ckpt, resume=True), JSONLog(log), ProgressBar()])
    assert not ckpt.exists()                         # nothing it could resume from
    assert json.loads(log.read_text()) == json.loads(json.dumps(est.log_))
    ckpt.write_bytes(b"a checkpoint of some earlier run")
    with pytest.raises(CheckpointError, match="cannot resume"):
        est.fit(X, Y, callbacks=[Checkpoint(ckpt, resume=True)])
    # not resuming: the file is left alone, as the cutting-plane solvers leave
    # it to be overwritten
    est.fit(X, Y, callbacks=[Checkpoint(ckpt, resume=False)])


@pytest.mark.parametrize("solver", ["subgradient", "sgd", "bcfw"])
def test_callbacks_follow_every_epoch_and_an_interruption_keeps_the_log(
        solver, problem, tmp_path):
    from segstruct.learn.callbacks import Callback
    X, Y = problem
    seen = []

    class Recorder(Callback):
        def on_iteration(self, run, state):
            seen.append((state.iteration, len(state.log), state.converged))

    est = FirstOrderSVM(solver=solver, C=C, max_iter=6, tol=1e-9)
    est.fit(X, Y, callbacks=[Recorder(), ProgressBar()])
    n = len(est.log_)
    # one call per epoch, the log growing by one entry each, then the final state
    assert seen[:-1] == [(k, k, False) for k in range(1, n + 1)]
    assert seen[-1] == (n, n, est.converged_)

    class StopAtEpoch3(Callback):
        def on_iteration(self, run, state):
            if state.iteration == 3:
                raise KeyboardInterrupt

    log = tmp_path / "m.log.json"
    with pytest.raises(KeyboardInterrupt):
        FirstOrderSVM(solver=solver, C=C, max_iter=6).fit(
            X, Y, callbacks=[JSONLog(log), StopAtEpoch3()])
    # the epochs done before the interruption are on disk
    assert [e["epoch"] for e in json.loads(log.read_text())] == [1, 2, 3]


def test_the_first_order_learner_keeps_no_working_set(problem):
    X, Y = problem
    est = FirstOrderSVM(solver="bcfw", C=C).fit(X, Y)
    assert not hasattr(est, "working_set_") and est.resumable is False
    assert StructuredSVM().resumable is True


def test_the_training_figure_draws_first_order_logs(problem):
    X, Y = problem
    logs = {s: FirstOrderSVM(solver=s, C=C, max_iter=30).fit(X, Y).log_
            for s in ("bcfw", "sgd")}
    fig = training_figure(logs)
    ax_obj, ax_gap = fig.axes[:2]
    primal_bcfw, dual_bcfw, primal_sgd, dual_sgd = ax_obj.get_lines()
    assert len(primal_sgd.get_xdata()) == 30
    assert np.isfinite(np.asarray(dual_bcfw.get_ydata(), float)).any()
    assert not np.isfinite(np.asarray(dual_sgd.get_ydata(), float)).any()
    gap_bcfw = np.asarray(ax_gap.get_lines()[0].get_ydata(), float)
    assert np.isfinite(gap_bcfw).sum() == len(logs["bcfw"])
