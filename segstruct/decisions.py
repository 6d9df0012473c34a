"""Decisions for a loss from a fitted model's marginals, and the temperature
that gives an SSVM marginals.

A decision turns the marginals ``q_i = p(y_i = 1 | x)`` of
:meth:`~segstruct.learn.base.BaseSSVM.marginals` into a labelling:

``map``
    the model's own ``predict``, one graph cut: optimal for 0/1 utility.
``marginal``
    ``q_i > 1/2``: optimal for the Hamming loss.
``expected-iou`` / ``expected-fbeta``
    the labelling that maximises IoU (F-beta) of the expected counts,
    exactly, over every labelling (``segstruct.inference.decisions``). At
    the ``"dataset"`` scope one decision is made for all the images
    together, the way the VOC measure sums counts over a data set; at the
    ``"image"`` scope, each image on its own.

Nodes are weighed by their pixels (``SuperpixelGraph.segments``), as the
measure counts pixels; graphs without a superpixel map count each node once.

A CRF's scores are log-probabilities (temperature 1). An SSVM's are margins;
:func:`fit_temperature` reads them as ``p(y | x) ∝ exp(score(y) / T)`` with
the T that maximises the pixel log-likelihood of held-out images: each
image's marginals come from a model trained on the other folds of the
training split, never from the model that saw it. This is an approximation
(a one-parameter calibration of a model trained for another purpose), and
is documented as one wherever it is used.
"""
from __future__ import annotations

import time
from typing import Callable, Sequence

import numpy as np

from segstruct.inference.decisions import marginal_decision, threshold_decision
from segstruct.inference.marginals import loopy_bp
from segstruct.learn._problem import label_counts
from segstruct.learn.selection import image_strata, make_folds
from segstruct.model import MRFModel

__all__ = ["DECISIONS", "DECISION_SCOPES", "decide", "fit_temperature", "node_areas",
           "TEMPERATURE_GRID"]

#: The decisions ``predict --decision`` and ``compare --decisions`` take.
DECISIONS = ("map", "marginal", "expected-iou", "expected-fbeta")
#: Over what an expected measure is taken.
DECISION_SCOPES = ("image", "dataset")
#: The temperatures :func:`fit_temperature` tries: 10^-2 .. 10^2, 8 a decade.
TEMPERATURE_GRID = tuple(float(t) for t in np.logspace(-2, 2, 33))


def node_areas(graph) -> np.ndarray:
    """Pixels per superpixel (the weights of a decision), or 1 per node for a
    graph without a superpixel map.

    Returns
    -------
    (N,) float64
    """
    n = np.shape(graph.unary)[0]
    segments = getattr(graph, "segments", None)
    if segments is None:
        return np.ones(n)
    return np.bincount(np.asarray(segments).ravel(), minlength=n)[:n].astype(np.float64)


def decide(estimator, X: Sequence, decision: str, scope: str = "dataset",
           beta: float = 1.0) -> list[np.ndarray]:
    """Labellings of ``X`` by a decision (module docstring).

    Parameters
    ----------
    estimator : a fitted learner (``BaseSSVM``); decisions other than "map"
        need its ``temperature_`` (a CRF's is 1).
    X : sequence of graphs.
    decision : one of :data:`DECISIONS`.
    scope : {"dataset", "image"}, of the expected measures.
    beta : float > 0, of "expected-fbeta".

    Returns
    -------
    list of (N_k,) uint8 labellings.
    """
    if decision not in DECISIONS:
        raise ValueError(f"unknown decision {decision!r}; use one of {DECISIONS}")
    if scope not in DECISION_SCOPES:
        raise ValueError(f"unknown decision scope {scope!r}; use one of {DECISION_SCOPES}")
    X = list(X)
    if decision == "map":
        return estimator.predict(X)
    qs = estimator.marginals(X)
    if decision == "marginal":
        return [marginal_decision(q) for q in qs]
    measure = "iou" if decision == "expected-iou" else "fbeta"
    areas = [node_areas(x) for x in X]
    if scope == "image":
        return [threshold_decision(q, a, measure, beta) for q, a in zip(qs, areas)]
    y = threshold_decision(np.concatenate(qs), np.concatenate(areas), measure, beta)
    return np.split(y, np.cumsum([q.size for q in qs])[:-1])


def _log_likelihood(q: np.ndarray, fg: np.ndarray, bg: np.ndarray) -> float:
    """Pixel log-likelihood of (fg, bg) counts under node marginals q."""
    q = np.clip(q, 1e-12, 1 - 1e-12)
    return float(fg @ np.log(q) + bg @ np.log1p(-q))


def fit_temperature(make_estimator: Callable, X: Sequence, Y: Sequence, folds: int = 3,
                    seed: int = 0, grid=TEMPERATURE_GRID) -> tuple[float, dict]:
    """The temperature of an SSVM's marginals, by held-out likelihood.

    Parameters
    ----------
    make_estimator : callable() -> an unfitted learner (the method's, at its C).
    X, Y : training graphs and label specs (targets or (N, 2) pixel counts).
    folds : int >= 2, seed : int
        The folds of :func:`segstruct.learn.selection.make_folds`.
    grid : increasing temperatures to try.

    Returns
    -------
    T : float, the grid's temperature of largest pooled held-out pixel
        log-likelihood (ties to the smaller T).
    info : dict with ``grid``, ``log_likelihood`` per T (per held-out pixel),
        ``folds``, ``seconds``.
    """
    start = time.perf_counter()
    X, Y = list(X), list(Y)
    grid = np.asarray(grid, np.float64)
    if grid.ndim != 1 or grid.size < 1 or np.any(grid <= 0) or np.any(np.diff(grid) <= 0):
        raise ValueError("the temperature grid must be increasing positive numbers")
    assignment = make_folds(image_strata(Y), folds, seed)
    total = np.zeros(grid.size)
    pixels = 0.0
    for k in range(folds):
        held = np.flatnonzero(assignment == k)
        train = np.flatnonzero(assignment != k)
        est = make_estimator().fit([X[i] for i in train], [Y[i] for i in train])
        model = MRFModel(pairwise=est.pairwise)
        for i in held:
            u, p = model.potentials(X[i], est.w_)
            fg, bg = (c.astype(np.float64) for c in label_counts(Y[i]))
            pixels += float(fg.sum() + bg.sum())
            for g, T in enumerate(grid):
                total[g] += _log_likelihood(loopy_bp(u / T, X[i].edges, p / T).node, fg, bg)
    per_pixel = total / max(pixels, 1.0)
    best = int(np.argmax(per_pixel))
    return float(grid[best]), {"grid": grid.tolist(), "log_likelihood": per_pixel.tolist(),
                               "folds": folds, "seconds": time.perf_counter() - start}
