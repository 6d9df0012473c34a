"""What a training run shows and keeps: callbacks of ``StructuredSVM.fit``.

The cutting-plane loop of :class:`segstruct.learn.estimators.structured_svm.StructuredSVM` reads and
writes no file and prints nothing. ``fit(X, Y, callbacks=[...])`` hangs the
I/O on it:

* :class:`Checkpoint` saves the whole training state after every iteration
  and, with ``resume=True``, continues from it;
* :class:`JSONLog` writes the per-iteration log as JSON;
* :class:`ProgressBar` shows a tqdm bar over the iterations.

:func:`training_callbacks` builds the set the command line uses. A callback
of one's own subclasses :class:`Callback` and overrides the hooks it needs.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from segstruct.io.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from segstruct.io.files import write_json
from segstruct.io.progress import progress_bar
from segstruct.io.text import fmt

if TYPE_CHECKING:
    from segstruct.learn._problem import FitRun

__all__ = ["Callback", "Checkpoint", "JSONLog", "ProgressBar", "TrainingState",
           "training_callbacks"]


@dataclass
class TrainingState:
    """The state of the cutting-plane loop after ``iteration`` iterations.

    With the QP's working set and the oracle's warm-start state (both in the
    :class:`~segstruct.learn._problem.FitRun`), it is everything a run needs to
    continue exactly where it stopped.

    Attributes
    ----------
    iteration : iterations finished (0 before the first).
    w : (D,) the working-set QP's last solution (where the next cut is made).
    xi : the QP's slacks (one for 1-slack, n for n-slack).
    dual : the QP's last value, a lower bound of the optimum.
    best_w, best_g, best_l, best_primal : the best point evaluated: its
        weights, its cut (mean constraint vector and mean loss) and its
        objective.
    log : list of dict, one entry per iteration.
    converged : whether the stopping rule was met.
    seconds : training time so far, earlier processes of a resumed run
        included.
    qp_solved : whether ``w`` solves the working set's QP to its tolerance.
    """

    iteration: int
    w: np.ndarray
    xi: np.ndarray
    dual: float
    best_w: np.ndarray
    best_g: np.ndarray
    best_l: float
    best_primal: float
    log: list = field(default_factory=list)
    converged: bool = False
    seconds: float = 0.0
    qp_solved: bool = True

    @classmethod
    def start(cls, dim: int, n_slacks: int) -> "TrainingState":
        """Before the first iteration: w = 0, which solves the empty QP."""
        return cls(iteration=0, w=np.zeros(dim), xi=np.zeros(n_slacks), dual=0.0,
                   best_w=np.zeros(dim), best_g=np.zeros(dim), best_l=0.0,
                   best_primal=np.inf)


class Callback:
    """Hooks of a ``StructuredSVM.fit``; each does nothing unless overridden.

    ``fit`` calls every callback's :meth:`restore`, then :meth:`on_fit_start`,
    :meth:`on_iteration` after each iteration and :meth:`on_fit_end` (also
    when training fails), in the order the callbacks were given. ``run`` is
    the :class:`~segstruct.learn._problem.FitRun`: the estimator, the working-set
    QP, the oracle in use and the data's fingerprint.

    Parameters
    ----------
    None: a subclass takes its own (a path, a flag).
    """

    def restore(self, run: "FitRun") -> TrainingState | None:
        """A state to continue from instead of the start, or None."""
        return None

    def on_fit_start(self, run: "FitRun", state: TrainingState) -> None:
        """Before the first iteration of this fit (``state`` may be restored)."""

    def on_iteration(self, run: "FitRun", state: TrainingState) -> None:
        """After iteration ``state.iteration``; its entry is ``state.log[-1]``."""

    def on_fit_end(self, run: "FitRun", state: TrainingState) -> None:
        """After the last iteration, or when training failed."""


class Checkpoint(Callback):
    """Save the whole training state to ``path`` (atomically) after every iteration.

    The checkpoint holds the weights, the working set, the log and the
    oracle's warm-start state (for an oracle with ``get_state`` /
    ``set_state``), and a fingerprint of the training data and settings.

    Parameters
    ----------
    path : path of the ``.npz`` checkpoint.
    resume : bool, default False
        Continue from ``path`` when it exists (a finished run is restored
        without iterating); the checkpoint must come from the same data and
        settings (``max_iter`` may be raised). With False, training starts
        afresh and overwrites it.
    inputs : dict, optional
        JSON-able settings that made the training data (e.g. the feature
        settings), saved with the checkpoint, so that a refused resume can
        name those that changed (the fingerprint covers the data itself).

    Raises
    ------
    CheckpointError
        From ``fit``: the checkpoint is damaged, or was made with other data
        or settings.
    ValueError
        From ``fit``: the oracle has no name that is stable across processes,
        so a checkpoint could not recognise it after a restart.
    """

    def __init__(self, path, resume: bool = False, inputs: dict | None = None):
        self.path = Path(path)
        self.resume = resume
        self.inputs = inputs
        self._fingerprint = None

    def restore(self, run):
        # computed even when not resuming: the saves need it, and an oracle
        # without a stable name is refused before the first iteration
        self._fingerprint = run.fingerprint()
        if not (self.resume and self.path.exists()):
            return None
        arrays, meta = load_checkpoint(self.path)
        if meta.get("fingerprint") != self._fingerprint:
            changes = _changed_settings(meta.get("settings"), run, meta.get("inputs"),
                                        self.inputs)
            raise CheckpointError(f"checkpoint {self.path} was made with "
                                  f"{_what_differs(changes)}; delete it (or give another "
                                  "path) to start again", changes or ())
        run.qp.set_state({k[3:]: v for k, v in arrays.items() if k.startswith("qp_")})
        if hasattr(run.oracle, "set_state"):
            run.oracle.set_state({k[7:]: v for k, v in arrays.items()
                                  if k.startswith("oracle_")})
        if "best_g" not in arrays:
            raise CheckpointError(
                f"checkpoint {self.path} was written by an older segstruct "
                "that kept no cut at its best point; delete it to train again")
        return TrainingState(
            iteration=meta["iteration"], w=arrays["w"], xi=arrays["xi"], dual=meta["dual"],
            best_w=arrays["best_w"], best_g=arrays["best_g"], best_l=meta["best_l"],
            best_primal=meta["best_primal"], log=meta["log"], converged=meta["converged"],
            seconds=meta["elapsed"], qp_solved=meta["qp_solved"])

    def on_iteration(self, run, state):
        arrays = {"w": state.w, "xi": state.xi, "best_w": state.best_w,
                  "best_g": state.best_g}
        arrays.update({f"qp_{k}": v for k, v in run.qp.get_state().items()})
        if hasattr(run.oracle, "get_state"):
            arrays.update({f"oracle_{k}": v for k, v in run.oracle.get_state().items()})
        # the key names of the format's first version, which older runs resume from
        meta = {"fingerprint": self._fingerprint, "settings": _settings(run),
                "inputs": self.inputs,
                "iteration": state.iteration,
                "dual": state.dual, "best_primal": float(state.best_primal),
                "best_l": float(state.best_l), "log": state.log,
                "converged": state.converged, "elapsed": state.seconds,
                "qp_solved": state.qp_solved}
        save_checkpoint(self.path, arrays, meta)


def _settings(run) -> dict | None:
    """The run's checkpoint settings, JSON-able (values as text where not)."""
    if run.settings is None:
        return None
    return json.loads(json.dumps(run.settings(), default=repr))


def _changed_settings(saved: dict | None, run, saved_inputs: dict | None = None,
                      inputs: dict | None = None) -> list[tuple[str, object, object]] | None:
    """What a checkpoint was made with that the resuming fit does not have,
    as (name, old, new): the estimator's settings, then (where both sides
    recorded them) the settings of the training data, by dotted name
    (``features.n_words``). None where the checkpoint recorded no settings."""
    now = _settings(run)
    if saved is None or now is None:
        return None
    changed = _changes(saved, now)
    if saved_inputs is not None and inputs is not None:
        changed += _changes(_flat(saved_inputs), _flat(json.loads(json.dumps(inputs))))
    return changed


def _what_differs(changed) -> str:
    """:func:`_changed_settings` in words."""
    if changed is None:
        return ("other training data or settings (a run started before the top-down "
                "block was on by default goes on with --no-top-down)")
    if changed:
        return "other settings: " + ", ".join(f"{k} {old!r} (now {new!r})"
                                              for k, old, new in changed)
    return "other training data (images, features or labels) at the same settings"


def _changes(saved: dict, now: dict) -> list[tuple[str, object, object]]:
    """``(name, old, new)`` for each key whose value differs."""
    return [(k, saved.get(k), now.get(k)) for k in sorted(set(saved) | set(now))
            if saved.get(k) != now.get(k)]


def _flat(settings: dict, prefix: str = "") -> dict:
    """Nested settings as one level of dotted names."""
    out: dict = {}
    for key, value in settings.items():
        if isinstance(value, dict):
            out.update(_flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


class JSONLog(Callback):
    """Write the training log (``StructuredSVM.log_``) as JSON to ``path``
    after every iteration, atomically.

    Parameters
    ----------
    path : str or Path, the JSON file (a list of one dict per iteration)."""

    def __init__(self, path):
        self.path = Path(path)

    def _write(self, log):
        write_json(self.path, log, indent=1)

    def on_fit_start(self, run, state):
        if state.log:
            # a resumed run: the process may have died between the checkpoint
            # and the log
            self._write(state.log)

    def on_iteration(self, run, state):
        self._write(state.log)


class ProgressBar(Callback):
    """Progress over the iterations (epochs for the first-order solvers),
    with the gap and, for cutting planes, the working-set size: a tqdm bar
    on a terminal, a line every ``LOG_INTERVAL`` seconds in a log
    (:mod:`segstruct.io.progress`).

    Parameters
    ----------
    None."""

    def __init__(self):
        self._bar = None

    def on_fit_start(self, run, state):
        max_iter = run.estimator.max_iter
        solver = getattr(run.estimator, "solver", None)
        desc = ("cutting planes" if solver in ("oneslack", "nslack") else
                f"{solver} epochs" if solver in ("subgradient", "sgd", "bcfw", "perceptron") else
                str(solver))
        # max_iter bounds the iterations, it does not predict them: no ETA
        self._bar = progress_bar(max_iter, desc, initial=min(state.iteration, max_iter),
                                 unit="iteration", eta=False)

    def on_iteration(self, run, state):
        # to the state's iteration: a first-order fit reports its last epoch twice
        self._bar.update(max(0, min(state.iteration, self._bar.total) - self._bar.n))
        gap = state.log[-1].get("gap") if state.log else None   # SGD has none
        postfix = {"gap": fmt(gap, ".3g")}
        if run.qp is not None and run.qp.n_constraints:
            postfix["cons"] = run.qp.n_constraints
        self._bar.set_postfix(**postfix)

    def on_fit_end(self, run, state):
        if self._bar is not None:
            self._bar.close()
            self._bar = None


def without_checkpoints(callbacks, learner: str, remedy: str) -> list:
    """``callbacks`` less any :class:`Checkpoint`, for a learner that keeps no
    resumable state (its checkpoints would write nothing).

    Parameters
    ----------
    callbacks : sequence of Callback.
    learner : str, the learner's name, for the message.
    remedy : str, what the message tells the user to do.

    Returns
    -------
    list of Callback, in the given order.

    Raises
    ------
    CheckpointError
        A checkpoint asks to resume from a file that exists: training afresh
        would silently drop it. The message names ``learner`` and ends with
        ``remedy``.
    """
    for callback in callbacks:
        if isinstance(callback, Checkpoint) and callback.resume and callback.path.exists():
            raise CheckpointError(f"{learner} cannot resume from the checkpoint "
                                  f"{callback.path}: it keeps no resumable state; {remedy}")
    return [c for c in callbacks if not isinstance(c, Checkpoint)]


def training_callbacks(*, progress: bool = False, log_path=None, checkpoint_path=None,
                       resume: bool = False, inputs: dict | None = None) -> list[Callback]:
    """The callbacks of a training command: checkpoint, log, progress bar.

    Parameters
    ----------
    progress : show a progress bar.
    log_path : write the log as JSON here (None: no log file).
    checkpoint_path : keep a checkpoint here (None: none).
    resume : continue from ``checkpoint_path`` when it exists.
    inputs : the settings that made the training data, for the checkpoint
        (:class:`Checkpoint`).

    Returns
    -------
    list of Callback, in the order ``fit`` should call them: the checkpoint
    before the log, so a log never runs ahead of the state it describes.
    """
    callbacks: list[Callback] = []
    if checkpoint_path is not None:
        callbacks.append(Checkpoint(checkpoint_path, resume=resume, inputs=inputs))
    elif resume:
        raise ValueError("resume=True needs a checkpoint_path to resume from")
    if log_path is not None:
        callbacks.append(JSONLog(log_path))
    if progress:
        callbacks.append(ProgressBar())
    return callbacks
