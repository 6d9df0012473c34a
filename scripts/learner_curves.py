"""Learning curves of the structural-SVM learners on one problem.

Objective and val IoU against training time, one curve per learner.

Every learner minimises the same per-image (n-slack) objective

    F(w) = 1/2 ||w||^2 + C mean_i H_i(w),   w_p <= 0,

with the same loss, C and loss-augmented oracle (those of ``--method``):
cutting planes (``StructuredSVM`` n-slack and 1-slack), projected
subgradient descent, SGD with weighted averaging and block-coordinate
Frank-Wolfe (``segstruct.learn.solvers.first_order``). Each runs until it stops by
itself (converged, or its epoch cap) or until ``--budget-seconds`` of
training time, the same budget for all. At roughly log-spaced times the
script records the weights the learner would return if stopped there, their
exact F on the training set and their VOC IoU on the val split; the time
spent recording is kept off the learner's clock.

    OMP_NUM_THREADS=1 python scripts/learner_curves.py --out out/learners

writes ``curves.png`` (F - F_lower and val IoU against seconds), ``curves.json``
(every point, the settings, code version and machine) and ``table.md``.
Seconds compare learners within one run only.
"""
from __future__ import annotations

import argparse
import copy
import sys
import time
from pathlib import Path

import numpy as np

# the parts, in scripts/curveslib/
sys.path.insert(0, str(Path(__file__).resolve().parent))

from curveslib.learners import CUTTING_PLANES, LABELS, LEARNERS, TARGETS  # noqa: E402
from curveslib.report import caption, figure, summarise, table  # noqa: E402

#: Re-exported from curveslib for the tests and other callers.
__all__ = ["CUTTING_PLANES", "LABELS", "LEARNERS", "TARGETS", "caption", "figure", "main",
           "learner_curves", "summarise", "table"]

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "weizmann_horse_voc"
#: C 0.5 (the library's default, meant for the data-set scope) predicts no
#: foreground on the horses at the per-image scope; 50 is what the per-image
#: runs of docs/results.md use (val IoU 48 % for bl1 on the horses).
DEFAULT_C = 50.0
#: Measured on weizmann_horse_voc horse, bl1, C 50: both cutting-plane
#: learners converge in under 5 s, and after 10 s BCFW was within 0.4 % of
#: the optimum, SGD 5 % and subgradient descent 170 %; 180 s is over 35 times
#: what the cutting planes need and keeps the default run near 12 minutes.
DEFAULT_BUDGET = 180.0
#: An epoch cap far beyond what the budget allows: the budget is what stops them.
DEFAULT_MAX_EPOCHS = 100_000
DEFAULT_POINTS = 40


class OutOfBudget(Exception):
    """Raised from a learner's callback to stop it when its time is spent."""


class CountingOracle:
    """An oracle that counts its calls.

    The learners deep-copy their oracle (its warm-start state belongs to the
    run), so a copy shares the counter and copies only the wrapped oracle.
    """

    def __init__(self, inner, counter=None):
        self.inner = inner
        self.counter = counter if counter is not None else [0]

    def __call__(self, *args, **kwargs):
        self.counter[0] += 1
        return self.inner(*args, **kwargs)

    def __deepcopy__(self, memo):
        return CountingOracle(copy.deepcopy(self.inner, memo), self.counter)

    def __repr__(self):
        return f"CountingOracle({self.inner!r})"

    @property
    def calls(self) -> int:
        """Calls so far, by this object and its copies."""
        return self.counter[0]


class WeightedAverage:
    """The weighted average of the SGD iterates that ``stochastic_subgradient``
    returns, rebuilt from its callback (which sees the iterate, not the average).

    Step t takes its subgradient at w_t (w_1 = 0) and the average
    gives w_t the weight 2 / (t + 1) (weights proportional to t); the callback
    of step t receives w_{t+1}, so the average lags one iterate behind.
    """

    def __init__(self, dim: int):
        self.previous = np.zeros(dim)
        self.mean = np.zeros(dim)

    def update(self, t: int, w: np.ndarray) -> np.ndarray:
        """Take in step ``t``'s callback; returns the average after step t."""
        self.mean += 2.0 / (t + 1) * (self.previous - self.mean)
        self.previous = np.array(w, np.float64)
        return self.mean


class Recorder:
    """The points of one learner's curve, with the recording time kept off its clock.

    Parameters
    ----------
    problem : ImageScopeProblem, to evaluate F exactly (its oracle's calls are
        not the learner's).
    val_iou : ``val_iou(w) -> float`` in [0, 1].
    budget : training seconds after which the learner is stopped.
    schedule : increasing training times (s) at which to record a point.
    oracle : the learner's CountingOracle.
    """

    def __init__(self, problem, val_iou, budget: float, schedule, oracle: CountingOracle):
        self.problem, self.val_iou, self.budget = problem, val_iou, budget
        self.schedule, self.next = np.asarray(schedule, float), 0
        self.oracle = oracle
        self.points: list[dict] = []
        self.eval_seconds = 0.0
        self.start = time.perf_counter()

    def clock(self) -> float:
        """Training seconds since ``start``: the wall clock less the recording."""
        return time.perf_counter() - self.start - self.eval_seconds

    def due(self, seconds: float) -> bool:
        """Whether a point is due at ``seconds`` of training (or the budget is spent)."""
        return seconds >= self.budget or (self.next < self.schedule.size
                                          and seconds >= self.schedule[self.next])

    def record(self, seconds: float, iteration: int, w: np.ndarray, primal: float | None = None,
               **extra) -> dict:
        """Add a point at ``seconds`` of training; F(w) is evaluated when not given."""
        t0 = time.perf_counter()
        if primal is None:
            primal = self.problem.primal(w)
        point = {"seconds": float(seconds), "iteration": int(iteration),
                 "oracle_calls": self.oracle.calls, "primal": float(primal),
                 "val_iou": float(self.val_iou(w)), **extra}
        self.points.append(point)
        while self.next < self.schedule.size and self.schedule[self.next] <= seconds:
            self.next += 1
        self.eval_seconds += time.perf_counter() - t0
        return point

    def stop_if_spent(self, seconds: float) -> None:
        """Raise OutOfBudget once the budget is spent."""
        if seconds >= self.budget:
            raise OutOfBudget


def record_schedule(budget: float, n_points: int, first: float = 0.01) -> np.ndarray:
    """Log-spaced recording times from ``first`` to ``budget`` seconds."""
    first = min(first, budget)
    return np.geomspace(first, budget, max(int(n_points), 2))


# ----------------------------------------------------------------------
# the learners, each returning its curve
def _cutting_planes_recorder_callback(recorder: Recorder):
    """A fit callback that records every cutting-plane iteration."""
    from segstruct.learn.callbacks import Callback

    class Record(Callback):
        def on_iteration(self, run, state):
            # state.seconds was read before this iteration's callbacks, so the
            # earlier points' recording time is all it holds of recording
            seconds = state.seconds - recorder.eval_seconds
            # the loop evaluated F at best_w itself: no extra oracle calls
            recorder.record(seconds, state.iteration, state.best_w, state.best_primal,
                            lower_bound=float(state.dual))
            self.state = state
            recorder.stop_if_spent(seconds)
    return Record()


def run_cutting_planes(estimator, solver: str, X, Y, recorder: Recorder) -> dict:
    """Fit a copy of ``estimator`` with ``solver`` and the recorder's oracle;
    every iteration is a point."""
    params = {**estimator.get_params(deep=False), "solver": solver, "scope": "image",
              "oracle": recorder.oracle}
    est = type(estimator)(**params)
    callback = _cutting_planes_recorder_callback(recorder)
    recorder.start = time.perf_counter()
    try:
        est.fit(X, Y, callbacks=[callback])
        stopped = "converged" if est.converged_ else "max_iter"
    except OutOfBudget:
        stopped = "budget"
    state = callback.state
    return {"stopped": stopped, "converged": bool(state.converged),
            "lower_bound": float(max(p["lower_bound"] for p in recorder.points)),
            "final_gap": float(state.best_primal - state.dual)}


def run_first_order(solver: str, settings: dict, X, Y, recorder: Recorder, *,
                    max_epochs: int, tol: float) -> dict:
    """Run a learner of ``segstruct.learn.solvers.first_order`` with the recorder as its callback."""
    from segstruct.learn.solvers import first_order as stochastic
    dim = recorder.problem.dim
    average = WeightedAverage(dim)
    best = {"primal": np.inf}

    def report(k: int, w: np.ndarray) -> None:
        seconds = recorder.clock()
        if solver == "sgd":
            w = average.update(k, w)          # every step, recorded or not
        if not recorder.due(seconds):
            return
        point = recorder.record(seconds, k, w.copy())
        if solver == "subgradient":
            # the learner returns its best iterate: show the best one recorded
            if point["primal"] < best["primal"]:
                best.update(primal=point["primal"], val_iou=point["val_iou"])
            point["iterate_primal"] = point["primal"]
            point["primal"], point["val_iou"] = best["primal"], best["val_iou"]
        recorder.stop_if_spent(seconds)

    recorder.start = time.perf_counter()
    try:
        if solver == "subgradient":
            result = stochastic.subgradient_descent(X, Y, max_epochs=max_epochs,
                                                    callback=report, **settings)
        elif solver == "sgd":
            # its own evaluation of F is for reporting: once, at the end
            result = stochastic.stochastic_subgradient(
                X, Y, max_epochs=max_epochs, eval_every=max_epochs, callback=report,
                **settings)
        elif solver == "bcfw":
            # evaluated every epoch: the duality gap is its stopping test
            result = stochastic.bcfw(X, Y, max_epochs=max_epochs, tol=tol, callback=report,
                                     **settings)
        else:
            raise ValueError(f"unknown first-order solver {solver!r}")
    except OutOfBudget:
        return {"stopped": "budget", "converged": False, "lower_bound": None,
                "final_gap": None}
    seconds = recorder.clock()
    # what the learner returns, with F as it evaluated it
    recorder.record(seconds, result.n_iter, result.w, result.primal,
                    **({"lower_bound": float(result.dual)} if result.dual is not None else {}))
    return {"stopped": "converged" if result.converged else "max_epochs",
            "converged": bool(result.converged),
            "lower_bound": None if result.dual is None else float(result.dual),
            "final_gap": None if result.gap is None else float(result.gap)}


# ----------------------------------------------------------------------
def learner_curves(estimator, X, Y, X_val, Y_val, *, budget_seconds: float = DEFAULT_BUDGET,
                   learners=LEARNERS, n_points: int = DEFAULT_POINTS,
                   max_epochs: int = DEFAULT_MAX_EPOCHS, log=None) -> dict:
    """Run every learner on the per-image problem of ``estimator`` and record its curve.

    Parameters
    ----------
    estimator : StructuredSVM whose loss, kappa, C, node weights, pairwise
        flag, oracle and tol define the problem (its solver and scope are
        replaced).
    X, Y : training graphs and labels; X_val, Y_val : validation ones.
    budget_seconds : training seconds each learner gets at most.
    learners : names from ``LEARNERS``.
    n_points : recording times per learner (log-spaced; cutting planes record
        every iteration).
    max_epochs : epoch cap of the first-order learners.
    log : ``log(message)`` for progress, optional.

    Returns
    -------
    dict with ``learners`` (name -> points and how it stopped), ``F_star``
    (best F recorded), ``F_lower`` (best certified lower bound, or None) and
    ``lower_bound_from``.
    """
    from threadpoolctl import threadpool_limits

    from segstruct.learn.estimators.structured_svm import StructuredSVM
    from segstruct.learn.solvers.first_order import ImageScopeProblem

    unknown = [name for name in learners if name not in LEARNERS]
    if unknown:
        raise ValueError(f"unknown learners {unknown}; use some of {LEARNERS}")
    # the objective's own C (the estimator's in superpixel units, mapped)
    settings = {"C": estimator.objective_C(X, Y), "loss": estimator.loss,
                "kappa": estimator.kappa,
                "node_weights": estimator.node_weights, "pairwise": estimator.pairwise}
    # the problem F is evaluated on: the learners' own loss, C and oracle
    reference = ImageScopeProblem.from_data(X, Y, oracle=estimator.oracle, **settings)

    def val_iou(w):
        return StructuredSVM.from_weights(w, reference.loss,
                                          pairwise=estimator.pairwise).score(X_val, Y_val)

    schedule = record_schedule(budget_seconds, n_points)
    out = {}
    with threadpool_limits(limits=1, user_api="blas"):
        for name in learners:
            oracle = CountingOracle(copy.deepcopy(estimator.oracle or _graph_cut()))
            recorder = Recorder(reference, val_iou, budget_seconds, schedule, oracle)
            wall = time.perf_counter()
            if name in CUTTING_PLANES:
                summary = run_cutting_planes(estimator, name, X, Y, recorder)
            else:
                summary = run_first_order(name, {**settings, "oracle": oracle}, X, Y, recorder,
                                          max_epochs=max_epochs, tol=float(estimator.tol))
            summary.update(points=recorder.points, oracle_calls=oracle.calls,
                           training_seconds=recorder.points[-1]["seconds"],
                           recording_seconds=recorder.eval_seconds,
                           wall_seconds=time.perf_counter() - wall)
            out[name] = summary
            if log is not None:
                last = recorder.points[-1]
                log(f"{name}: {summary['stopped']} after {last['seconds']:.1f} s, "
                    f"F {last['primal']:.6g}, val IoU {100 * last['val_iou']:.2f} %")
    return {"loss": repr(reference.loss), **summarise(out)}


def _graph_cut():
    from segstruct.inference import loss_augmented
    return loss_augmented


# ----------------------------------------------------------------------
def load_examples(data: Path, class_name: str, cache_dir=None):
    """Bottom-up features (the library's FeatureConfig default) of train and val."""
    from segstruct.datasets.voc import VOCDataset
    from segstruct.features.cache import ArrayCache
    from segstruct.features.extraction import FeatureExtractor

    dataset = VOCDataset(data)
    extractor = FeatureExtractor(dataset, cache=ArrayCache(cache_dir), n_jobs=1, progress=False)
    train = extractor.examples("train", class_name)
    val = extractor.examples("val", class_name)
    return (dataset.name, [e.graph for e in train], [e.pixel_counts for e in train],
            [e.graph for e in val], [e.pixel_counts for e in val])


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="VOC-layout data root")
    ap.add_argument("--class", dest="class_name", default="horse", help="object class")
    ap.add_argument("--method", default="bl1", choices=("bl1", "hamming", "proposed"),
                    help="training method (fixes the loss, model and oracle)")
    ap.add_argument("--C", type=float, default=DEFAULT_C, help="C of the per-image objective")
    ap.add_argument("--tol", type=float, default=1e-3,
                    help="stopping tolerance of the cutting planes and BCFW (loss units)")
    ap.add_argument("--budget-seconds", type=float, default=DEFAULT_BUDGET,
                    help="training seconds per learner at most")
    ap.add_argument("--learners", nargs="+", default=list(LEARNERS), choices=LEARNERS,
                    help="learners to run")
    ap.add_argument("--points", type=int, default=DEFAULT_POINTS,
                    help="log-spaced recording times per learner")
    ap.add_argument("--max-epochs", type=int, default=DEFAULT_MAX_EPOCHS,
                    help="epoch cap of the first-order learners")
    ap.add_argument("--cache", type=Path, default=None,
                    help="feature cache folder (None: the library's, ~/.cache/segstruct)")
    ap.add_argument("--out", type=Path, default=Path("out/learners"),
                    help="output folder")
    return ap


def main(argv=None) -> int:
    from segstruct.io.files import write_json, write_text
    from segstruct.io.provenance import code_version, machine
    from segstruct.learn.methods import TrainingSettings

    args = build_parser().parse_args(argv)
    start = time.perf_counter()
    name, X, Y, X_val, Y_val = load_examples(args.data, args.class_name, args.cache)
    estimator = TrainingSettings(scope="image", C=args.C, tol=args.tol).estimator(args.method)
    # the cutting planes stop at convergence or at the budget, not at an iteration cap
    estimator.set_params(max_iter=10**6)
    results = learner_curves(estimator, X, Y, X_val, Y_val, budget_seconds=args.budget_seconds,
                             learners=args.learners, n_points=args.points,
                             max_epochs=args.max_epochs,
                             log=lambda m: print(m, file=sys.stderr, flush=True))
    doc = {"code_version": code_version(), "machine": machine(),
           "settings": {"data": str(args.data), "dataset": name, "class": args.class_name,
                        "method": args.method, "loss": results["loss"], "scope": "image",
                        "C": args.C, "tol": args.tol, "node_weights": estimator.node_weights,
                        "pairwise": estimator.pairwise, "features": "bottom-up (FeatureConfig())",
                        "budget_seconds": args.budget_seconds, "points": args.points,
                        "max_epochs": args.max_epochs, "learners": list(args.learners),
                        "sampling_seed": 0, "blas_threads": 1,
                        "n_train": len(X), "n_val": len(X_val)},
           "results": results,
           "run_seconds": time.perf_counter() - start}
    args.out.mkdir(parents=True, exist_ok=True)
    write_json(args.out / "curves.json", doc, indent=1)
    figure(doc, args.out / "curves.png")
    write_text(args.out / "table.md", table(doc))
    print(table(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
