"""Decisions for a loss from marginals (decision theory, the lectures' side).

Given p(t_i = 1) = q_i for every node (a superpixel, or every superpixel of
an evaluation set) and node weights a_i (pixels, or 1), the expected counts
of a labelling y are linear in y whatever the correlations between nodes:

    E[TP] = sum_i a_i q_i y_i,   E[FP] = sum_i a_i (1 - q_i) y_i,
    E[FN] = sum_i a_i q_i (1 - y_i).

The decisions here maximise the measure *of the expected counts*,
``E[TP] / (E[TP] + E[FP] + E[FN])`` for IoU and
``(1 + b^2) E[TP] / ((1 + b^2) E[TP] + b^2 E[FN] + E[FP])`` for F-beta. Over
a whole evaluation set (the data-set scope, the way VOC scores: counts
summed over every image) that is the expected measure up to the fluctuation
of a ratio of sums of many terms; per image it is an approximation
(Nowozin, CVPR 2014, makes the same step).

Both are ratios A(y) / B(y) of functions linear in y, with B > 0. For a
ratio's optimum value lambda, y maximises A - lambda B (Dinkelbach), whose
coefficient of y_i is ``a_i ((1 + lambda) q_i - lambda)`` for IoU and
``a_i ((1 + b^2) q_i - lambda)`` for F-beta: positive exactly when q_i lies
above a threshold. So the best labelling is among the N + 1 labellings
"the k nodes of largest q": :func:`threshold_decision` scores them all
after one sort, which is exact (checked against every labelling in the
tests), in O(N log N).

:func:`marginal_decision` is the per-node rule ``q_i > 1/2``, which
minimises the expected Hamming loss.

:func:`sampled_decision` estimates the expected measure itself, E[IoU]
rather than IoU of E[counts] (they differ on one image, where the ratio's
fluctuation matters), from samples of p(y): the candidates are the N + 1
threshold labellings and the samples, and the one of largest mean measure
against the samples is returned (Nowozin 2014's candidate set, with the
samples added). Exact as the samples grow only among those candidates.

Only numpy is used.
"""
from __future__ import annotations

import numpy as np

__all__ = ["DECISION_MEASURES", "expected_counts", "expected_measure",
           "marginal_decision", "sampled_decision", "threshold_decision"]

#: The measures a threshold decision maximises.
DECISION_MEASURES = ("iou", "fbeta")


def _check(q, a) -> tuple[np.ndarray, np.ndarray]:
    q = np.asarray(q, np.float64)
    if q.ndim != 1 or not np.all(np.isfinite(q)) or np.any((q < 0) | (q > 1)):
        raise ValueError("marginals q must be a 1-D array of probabilities in [0, 1]")
    a = np.ones_like(q) if a is None else np.asarray(a, np.float64)
    if a.shape != q.shape or not np.all(np.isfinite(a)) or np.any(a < 0):
        raise ValueError(f"node weights a must be {q.size} finite values >= 0")
    return q, a


def expected_counts(y, q, a=None) -> tuple[float, float, float]:
    """(E[TP], E[FP], E[FN]) of labelling ``y`` under marginals ``q``.

    Parameters
    ----------
    y : array_like of {0, 1}, shape (N,)
    q : array_like of float in [0, 1], shape (N,)
    a : array_like of float >= 0, shape (N,), optional (default 1)
    """
    q, a = _check(q, a)
    y = np.asarray(y, np.float64)
    if y.shape != q.shape:
        raise ValueError(f"labelling y has shape {y.shape}, marginals {q.shape}")
    return (float(a @ (q * y)), float(a @ ((1 - q) * y)), float(a @ (q * (1 - y))))


def _measure(tp, fp, fn, measure: str, beta: float):
    if measure == "iou":
        num, den = tp, tp + fp + fn
    else:
        b2 = beta * beta
        num, den = (1 + b2) * tp, (1 + b2) * tp + b2 * fn + fp
    with np.errstate(invalid="ignore", divide="ignore"):
        # nothing expected and nothing labelled: a perfect score, as the losses say
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), 1.0)


def expected_measure(y, q, a=None, measure: str = "iou", beta: float = 1.0) -> float:
    """The measure of the expected counts of ``y`` (module docstring), in [0, 1]."""
    _check_measure(measure, beta)
    return float(_measure(*expected_counts(y, q, a), measure, beta))


def _check_measure(measure: str, beta: float) -> None:
    if measure not in DECISION_MEASURES:
        raise ValueError(f"unknown measure {measure!r}; use one of {DECISION_MEASURES}")
    if not (np.isfinite(beta) and beta > 0):
        raise ValueError(f"beta must be a positive number, got {beta}")


def marginal_decision(q) -> np.ndarray:
    """``q_i > 1/2`` as uint8: the labelling of least expected Hamming loss."""
    q, _ = _check(q, None)
    return (q > 0.5).astype(np.uint8)


def threshold_decision(q, a=None, measure: str = "iou", beta: float = 1.0) -> np.ndarray:
    """The labelling that maximises the measure of the expected counts.

    Parameters
    ----------
    q : array_like of float in [0, 1], shape (N,)
        p(t_i = 1).
    a : array_like of float >= 0, shape (N,), optional
        Node weights (pixels per superpixel); default 1.
    measure : {"iou", "fbeta"}
    beta : float > 0, of "fbeta".

    Returns
    -------
    ndarray of uint8, shape (N,): the k nodes of largest q labelled 1, for
    the k in 0..N that scores best (exact over all 2^N labellings, module
    docstring); ties to the smaller k.
    """
    q, a = _check(q, a)
    _check_measure(measure, beta)
    order = np.argsort(-q, kind="stable")
    tp = np.concatenate([[0.0], np.cumsum(a[order] * q[order])])
    fp = np.concatenate([[0.0], np.cumsum(a[order] * (1 - q[order]))])
    fn = float(a @ q) - tp
    values = _measure(tp, fp, fn, measure, beta)
    k = int(np.argmax(values))
    y = np.zeros(q.size, np.uint8)
    y[order[:k]] = 1
    return y


def _measures(candidates: np.ndarray, samples: np.ndarray, a: np.ndarray, measure: str,
              beta: float) -> np.ndarray:
    """(C,) mean measure of each candidate labelling against the samples (truths)."""
    c = candidates.astype(np.float64) * a
    tp = c @ samples.T                                   # (C, S)
    fp = c.sum(axis=1, keepdims=True) - tp
    fn = (samples.astype(np.float64) @ a)[None, :] - tp
    return _measure(tp, fp, fn, measure, beta).mean(axis=1)


def sampled_decision(q, samples, a=None, measure: str = "iou",
                     beta: float = 1.0) -> np.ndarray:
    """The candidate labelling of largest mean measure against samples of p(y).

    Parameters
    ----------
    q : array_like of float in [0, 1], shape (N,), the marginals (for the
        threshold candidates).
    samples : array_like of {0, 1}, shape (S, N), draws from p(y) (e.g.
        ``segstruct.inference.marginals.gibbs_samples``), read as truths.
    a : array_like of float >= 0, shape (N,), optional; node weights.
    measure : {"iou", "fbeta"}, beta : float > 0.

    Returns
    -------
    ndarray of uint8, shape (N,); ties go to the threshold candidates
    (fewest nodes first), then to the samples in order.
    """
    q, a = _check(q, a)
    _check_measure(measure, beta)
    samples = np.asarray(samples)
    if samples.ndim != 2 or samples.shape[1] != q.size or not np.all(
            (samples == 0) | (samples == 1)):
        raise ValueError(f"samples must be an (S, {q.size}) array of 0 and 1")
    # row k: the k nodes of largest marginal (ties in node order), k = 0 .. N
    rank = np.empty(q.size, np.int64)
    rank[np.argsort(-q, kind="stable")] = np.arange(q.size)
    thresholds = (rank[None, :] < np.arange(q.size + 1)[:, None]).astype(np.uint8)
    candidates = np.concatenate([thresholds, samples.astype(np.uint8)])
    return candidates[int(np.argmax(_measures(candidates, samples, a, measure, beta)))]
