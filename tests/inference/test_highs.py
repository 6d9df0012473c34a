"""HiGHS keeps one task scheduler per process, sized by the first run(); a
later model with another ``threads`` setting is refused (status "Not Set").
On a 2-core machine "automatic" threads means 1 and hides this, so these
tests size the scheduler on purpose, in a fresh process, before every HiGHS
user of segstruct runs: each must give the same answer as in a process where
nothing came first."""
import json
import subprocess
import sys
import textwrap

import pytest

# Runs every HiGHS-based solver and the learner on small fixed problems and
# prints their objectives as JSON. With an argument, a HiGHS model with that
# many threads runs first (as code outside segstruct might do).
SCRIPT = textwrap.dedent('''
    import json, sys
    import numpy as np
    import highspy

    if len(sys.argv) > 1:
        h = highspy.Highs()
        h.setOptionValue("output_flag", False)
        h.setOptionValue("threads", int(sys.argv[1]))
        h.addVar(0.0, 1.0)
        h.changeColCost(0, 1.0)
        h.run()
        assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal

    from segstruct.inference.decomposition import decomposition_oracle
    from segstruct.inference.envelope import envelope_oracle
    from segstruct.inference.lp import lp_oracle
    from segstruct.inference.milp import milp_oracle
    from segstruct.learn.methods import estimator_for
    from segstruct.learn.solvers.qp import WorkingSetQP
    from segstruct.feature_map import Graph

    rng = np.random.default_rng(3)
    n = 12
    edges = np.array([(i, i + 1) for i in range(n - 1)] + [(0, 5), (2, 9)], np.int64)
    p = -np.abs(rng.normal(size=len(edges)))
    u = rng.normal(size=n)
    t = (rng.random(n) < 0.4).astype(np.uint8)
    t[0] = 1
    a = np.ones(n)
    out = {}
    for name, oracle in [("lp", lp_oracle), ("decomposition", decomposition_oracle),
                         ("envelope", envelope_oracle), ("milp", milp_oracle)]:
        out[name] = oracle(u, edges, p, t, a, "iou").objective
    # no foreground: the envelope settles its stuck point by a restricted MILP
    # (weak edges and negative unaries: the optimum is one false positive)
    r0 = np.random.default_rng(35)
    p0 = -0.3 * np.abs(r0.normal(size=len(edges)))
    res = envelope_oracle(r0.normal(size=n) - 1.0, edges, p0, np.zeros(n, np.uint8), a, "iou")
    out["envelope_np0"] = [res.objective, res.info["milp"]]
    qp = WorkingSetQP(5, [1.0], nonpositive=[4])
    for k in range(6):
        qp.add(rng.normal(size=5), 1.0 + 0.1 * k, 0)
    out["qp_dual"] = qp.solve().dual
    out["qp_primal_route"] = qp._evaluate(qp._solve_primal(qp.G, qp.caps)).dual
    X, Y = [], []
    for _ in range(4):
        y = (rng.random(n) < 0.4).astype(np.uint8)
        y[0] = 1
        X.append(Graph(rng.normal(size=(n, 3)) + y[:, None], edges,
                       rng.uniform(0, 1, (len(edges), 2))))
        Y.append(y)
    for inference in ("envelope", "decomposition", "lp"):
        est = estimator_for("proposed", inference=inference, C=1.0, max_iter=15)
        out["train_" + inference] = est.fit(X, Y).primal_
    print(json.dumps(out))
''')


def solve_all(cwd, *threads_first):
    # run outside the repository: its ./segstruct must not shadow the install
    proc = subprocess.run([sys.executable, "-c", SCRIPT, *map(str, threads_first)],
                          capture_output=True, text=True, timeout=300, cwd=cwd)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_every_highs_user_survives_a_scheduler_sized_elsewhere(tmp_path):
    reference = solve_all(tmp_path)
    assert reference["envelope_np0"][1], "the restricted MILP was not exercised"
    for threads in (2, 4):
        got = solve_all(tmp_path, threads)
        assert got.keys() == reference.keys()
        for key, value in reference.items():
            assert got[key] == pytest.approx(value, rel=1e-9, abs=1e-12), (threads, key)


def test_new_models_share_one_thread_setting():
    import highspy

    from segstruct.inference.highs import THREADS, new_highs
    h = new_highs(presolve="off")
    def value(name):      # highspy returns (status, value)
        got = h.getOptionValue(name)
        return got[-1] if isinstance(got, tuple) else got
    assert value("threads") == THREADS
    assert value("presolve") == "off"
    assert isinstance(h, highspy.Highs)


def small_lp(h, feasible=True):
    """min x0 + 2 x1 s.t. x0 + x1 >= 1 (or <= -1: infeasible), 0 <= x <= 10."""
    import highspy
    import numpy as np
    h.addVar(0.0, 10.0)
    h.addVar(0.0, 10.0)
    h.changeColCost(0, 1.0)
    h.changeColCost(1, 2.0)
    lower, upper = (1.0, highspy.kHighsInf) if feasible else (-highspy.kHighsInf, -1.0)
    h.addRow(lower, upper, 2, np.array([0, 1], np.int32), np.array([1.0, 1.0]))
    return h


def test_run_retries_on_a_fresh_model_with_safer_settings():
    from segstruct.inference.highs import OPTIMAL, new_highs, run
    h = small_lp(new_highs(simplex_iteration_limit=0, presolve="off"))
    h.run()
    assert h.getModelStatus() != OPTIMAL            # the limit stops it
    solved = run(small_lp(new_highs(simplex_iteration_limit=0, presolve="off")), "a test LP")
    assert solved.getModelStatus() == OPTIMAL
    assert solved.getInfo().objective_function_value == pytest.approx(1.0)


def test_run_names_the_model_and_every_status_when_all_retries_fail():
    from segstruct.inference.highs import INFEASIBLE, SolverError, new_highs, run
    with pytest.raises(SolverError, match=r"could not solve a test LP: status Infeasible"):
        run(small_lp(new_highs(), feasible=False), "a test LP")
    # an accepted status is an answer
    h = run(small_lp(new_highs(), feasible=False), "a test LP", accept=(INFEASIBLE,))
    assert h.getModelStatus() == INFEASIBLE


def test_triangle_oracle_falls_back_to_the_envelope_when_its_lps_fail(monkeypatch):
    import numpy as np

    import segstruct.inference.proposed as proposed
    from segstruct.inference.envelope import envelope_oracle
    from segstruct.inference.highs import SolverError

    def failing(*args, **kwargs):
        raise SolverError("HiGHS could not solve a master LP: status Unknown")
    monkeypatch.setattr(proposed, "decomposition_oracle", failing)
    rng = np.random.default_rng(0)
    n = 10
    edges = np.array([(i, i + 1) for i in range(n - 1)], np.int64)
    u, p = rng.normal(size=n), -np.abs(rng.normal(size=n - 1))
    t = (rng.random(n) < 0.5).astype(np.uint8)
    with pytest.warns(RuntimeWarning, match="master LP.*envelope inference instead"):
        res = proposed.ProposedOracle(inference="decomposition")(u, edges, p, t, None, "iou")
    assert res.objective == pytest.approx(envelope_oracle(u, edges, p, t, None, "iou").objective)


class FlakyOracle:
    """The exact graph cut, failing like HiGHS on one given call."""

    def __init__(self, fail_on):
        self.fail_on, self.calls = fail_on, 0

    def __call__(self, u, edges, p, t, a, loss):
        from segstruct.inference import loss_augmented
        from segstruct.inference.highs import SolverError
        self.calls += 1
        if self.calls == self.fail_on:
            raise SolverError("HiGHS could not solve a test LP: status Unknown")
        return loss_augmented(u, edges, p, t, a, loss)

    def __repr__(self):
        return "FlakyOracle()"


def test_a_solver_failure_names_the_iteration_and_loses_nothing(tmp_path):
    import numpy as np

    from segstruct.learn.callbacks import Checkpoint
    from segstruct.learn.estimators.structured_svm import StructuredSVM, TrainingError
    from segstruct.feature_map import Graph
    rng = np.random.default_rng(5)
    X, Y = [], []
    for _ in range(3):
        y = (rng.random(8) < 0.5).astype(np.uint8)
        edges = np.array([(i, i + 1) for i in range(7)], np.int64)
        X.append(Graph(rng.normal(size=(8, 3)) + y[:, None], edges, rng.random((7, 2))))
        Y.append(y)
    ckpt = tmp_path / "m.ckpt.npz"
    params = dict(loss="hamming", C=10.0, scope="image")
    reference = StructuredSVM(oracle=FlakyOracle(fail_on=0), **params).fit(
        X, Y, callbacks=[Checkpoint(ckpt)])
    assert reference.n_iter_ > 3
    # image scope, 3 images: call 8 is the 2nd image of iteration 3
    with pytest.raises(TrainingError, match=rf"iteration 3: HiGHS.*after iteration 2 is "
                                            rf"saved in {ckpt}.*--resume"):
        StructuredSVM(oracle=FlakyOracle(fail_on=8), **params).fit(
            X, Y, callbacks=[Checkpoint(ckpt)])
    resumed = StructuredSVM(oracle=FlakyOracle(fail_on=0), **params).fit(
        X, Y, callbacks=[Checkpoint(ckpt, resume=True)])
    np.testing.assert_allclose(resumed.w_, reference.w_, rtol=1e-9, atol=1e-12)
    assert resumed.n_iter_ == reference.n_iter_


def test_the_qp_is_solved_without_highs_when_every_highs_route_fails(monkeypatch):
    import numpy as np

    from segstruct.learn.solvers.qp import WorkingSetQP
    rng = np.random.default_rng(2)

    def working_set():
        qp = WorkingSetQP(6, [0.7], nonpositive=[4, 5])
        for k in range(9):
            qp.add(rng.normal(size=6), 1.0 + 0.1 * k, 0)
        return qp
    expected = working_set().solve()
    rng = np.random.default_rng(2)
    qp = working_set()
    monkeypatch.setattr(qp, "_run_dual", lambda model, regularization, warm=None: None)
    monkeypatch.setattr(qp, "_solve_primal", lambda G, caps: None)
    got = qp.solve()
    assert qp.last_route == "active-set"
    assert got.primal == pytest.approx(expected.primal, rel=1e-9)
    assert got.primal - got.dual <= 1e-9 * max(1.0, got.primal)


def test_quiet_runs_print_no_highs_banner(tmp_path):
    """HiGHS prints its banner when a process makes its first instance, before
    output_flag can be set; segstruct's instances must not print it, and what
    the program prints before and after must still arrive."""
    code = textwrap.dedent('''
        print("before", flush=True)
        from segstruct.inference.highs import new_highs
        new_highs(); new_highs()
        print("after")
    ''')
    # cwd: outside the source tree, so that the installed package is imported
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=tmp_path)
    # highspy 1.16's plain first instance prints "Running HiGHS 1.16.0 ...
    # Copyright ..." here
    assert out.stdout == "before\nafter\n"
