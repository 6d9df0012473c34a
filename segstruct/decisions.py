"""Decisions for a loss from a fitted model's marginals, and the temperature
that gives an SSVM marginals.

A decision turns the marginals ``q_i = p(y_i = 1 | x)`` of
:meth:`~segstruct.learn.estimators.base.BaseSSVM.marginals` into a labelling:

``map``
    the model's own ``predict``, one graph cut: optimal for 0/1 utility.
``marginal``
    ``q_i > 1/2``: optimal for the Hamming loss.
``expected-iou`` / ``expected-fbeta``
    the labelling that maximises IoU (F-beta) of the expected counts,
    exactly, over every labelling (``segstruct.inference.decisions``). At
    the ``"dataset"`` scope one decision is made for all the images
    together, the way the VOC measure sums counts over a data set; at the
    ``"image"`` scope, each image on its own, where ``samples`` estimates
    the expected measure itself from Gibbs samples instead.

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

from segstruct.inference.decisions import (marginal_decision, sampled_decision,
                                           threshold_decision)
from segstruct.inference.marginals import gibbs_samples, loopy_bp
from segstruct.learn.estimators.structured_svm import label_counts
from segstruct.learn.selection import image_strata, make_folds
from segstruct.feature_map import MRFModel

__all__ = ["DECISIONS", "DECISION_SCOPES", "decide", "fit_temperature", "node_areas",
           "TEMPERATURE_GRID"]

#: The decisions ``predict --decision`` and ``compare --decisions`` take.
DECISIONS = ("map", "marginal", "expected-iou", "expected-fbeta")
#: Over what an expected measure is taken.
DECISION_SCOPES = ("image", "dataset")
#: The temperatures :func:`fit_temperature` tries first: 10^-6 .. 10^4, 4 a decade.
TEMPERATURE_GRID = tuple(float(t) for t in np.logspace(-6, 4, 41))


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
           beta: float = 1.0, samples: int = 0, seed: int = 0) -> list[np.ndarray]:
    """Labellings of ``X`` by a decision (module docstring).

    Parameters
    ----------
    estimator : a fitted learner (``BaseSSVM``); decisions other than "map"
        need its ``temperature_`` (a CRF's is 1).
    X : sequence of graphs.
    decision : one of :data:`DECISIONS`.
    scope : {"dataset", "image"}, of the expected measures.
    beta : float > 0, of "expected-fbeta".
    samples : int >= 0, "image" scope only
        With S > 0, each image's expected measure is estimated from S Gibbs
        samples of its p(y | x) (``inference.decisions.sampled_decision``:
        the threshold labellings and the samples are the candidates) instead
        of taken of the expected counts.
    seed : int, of the samples.

    Returns
    -------
    list of (N_k,) uint8 labellings.
    """
    if decision not in DECISIONS:
        raise ValueError(f"unknown decision {decision!r}; use one of {DECISIONS}")
    if scope not in DECISION_SCOPES:
        raise ValueError(f"unknown decision scope {scope!r}; use one of {DECISION_SCOPES}")
    if samples and scope != "image":
        raise ValueError("samples apply to the image scope: over a data set the measure of "
                         "the expected counts is the expected measure, and its threshold "
                         "decision is exact")
    if samples < 0:
        raise ValueError(f"samples must be >= 0, got {samples}")
    if samples and not decision.startswith("expected"):
        raise ValueError(f"samples estimate an expected measure: decision {decision!r} "
                         "uses none")
    X = list(X)
    if decision == "map":
        return estimator.predict(X)
    qs = estimator.marginals(X)
    if decision == "marginal":
        return [marginal_decision(q) for q in qs]
    measure = "iou" if decision == "expected-iou" else "fbeta"
    areas = [node_areas(x) for x in X]
    if scope == "image" and samples:
        return [sampled_decision(q, _samples(estimator, x, samples, seed), a, measure, beta)
                for x, q, a in zip(X, qs, areas)]
    if scope == "image":
        return [threshold_decision(q, a, measure, beta) for q, a in zip(qs, areas)]
    y = threshold_decision(np.concatenate(qs), np.concatenate(areas), measure, beta)
    return np.split(y, np.cumsum([q.size for q in qs])[:-1])


def _samples(estimator, x, n: int, seed: int) -> np.ndarray:
    """(n, N) Gibbs samples of the model's p(y | x) at its temperature."""
    u, p = MRFModel(pairwise=estimator.pairwise).potentials(x, estimator.w_)
    T = estimator.temperature_
    return gibbs_samples(u / T, x.edges, p / T, n, seed=seed)


def _log_likelihood(q: np.ndarray, fg: np.ndarray, bg: np.ndarray) -> float:
    """Pixel log-likelihood of (fg, bg) counts under node marginals q."""
    q = np.clip(q, 1e-12, 1 - 1e-12)
    return float(fg @ np.log(q) + bg @ np.log1p(-q))


def _held_out_potentials(make_estimator, X, Y, folds, seed) -> list:
    """(u, edges, p, fg, bg) of every image, from the model of the folds without it."""
    assignment = make_folds(image_strata(Y), folds, seed)
    out = []
    for k in range(folds):
        train = np.flatnonzero(assignment != k)
        est = make_estimator().fit([X[i] for i in train], [Y[i] for i in train])
        model = MRFModel(pairwise=est.pairwise)
        for i in np.flatnonzero(assignment == k):
            u, p = model.potentials(X[i], est.w_)
            fg, bg = (c.astype(np.float64) for c in label_counts(Y[i]))
            out.append((u, X[i].edges, p, fg, bg))
    return out


def fit_temperature(make_estimator: Callable, X: Sequence, Y: Sequence, folds: int = 3,
                    seed: int = 0) -> tuple[float, dict]:
    """The temperature of an SSVM's marginals, by held-out likelihood.

    Each training image is scored by the model trained on the other folds;
    T maximises the pooled pixel log-likelihood of those held-out images'
    labels under the marginals of ``exp(score / T)``. The search tries
    :data:`TEMPERATURE_GRID` (10^-6 .. 10^4, 4 a decade: an SSVM trained
    for IoU has scores of the size of one superpixel's share of the loss,
    far below 1), then 16 a decade around the best.

    Parameters
    ----------
    make_estimator : callable() -> an unfitted learner (the method's, at its C).
    X, Y : training graphs and label specs (targets or (N, 2) pixel counts).
    folds : int >= 2, seed : int
        The folds of :func:`segstruct.learn.selection.make_folds`.

    Returns
    -------
    T : float
    info : dict with ``temperatures`` (every T tried, increasing),
        ``log_likelihood`` (per held-out pixel, for each), ``at_edge`` (the
        best is an end of the grid: the model's scores say little),
        ``folds``, ``seconds``.
    """
    start = time.perf_counter()
    held = _held_out_potentials(make_estimator, list(X), list(Y), folds, seed)
    pixels = max(sum(float(fg.sum() + bg.sum()) for *_, fg, bg in held), 1.0)
    tried: dict[float, float] = {}

    def value(T: float) -> float:
        if T not in tried:
            tried[T] = sum(_log_likelihood(loopy_bp(u / T, e, p / T).node, fg, bg)
                           for u, e, p, fg, bg in held) / pixels
        return tried[T]

    coarse = np.asarray(TEMPERATURE_GRID)
    b = int(np.argmax([value(T) for T in coarse]))
    low, high = coarse[max(b - 1, 0)], coarse[min(b + 1, coarse.size - 1)]
    for T in np.exp(np.linspace(np.log(low), np.log(high), 9)):
        value(float(T))
    temperatures = sorted(tried)
    best = max(temperatures, key=lambda T: (tried[T], -T))
    return float(best), {"temperatures": temperatures,
                         "log_likelihood": [tried[T] for T in temperatures],
                         "at_edge": b in (0, coarse.size - 1), "folds": folds,
                         "seconds": time.perf_counter() - start}
