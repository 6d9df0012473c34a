"""A grid of C that looks past its own edge.

When the best pooled held-out IoU of the cross-validation lies at an end of
the grid and rises towards it, a C beyond that end may be better. Rather
than warn and leave it to the user, :func:`cross_validate_many
<segstruct.learn.selection.cross_validation.cross_validate_many>` (given
``extend`` K > 0) fits the next C beyond that end on every fold,
warm-started from the fold's last fit (cutting planes do not depend on C),
and goes on one step at a time until the curve turns (the best C is no
longer an end rising towards it), K steps were taken that way, or the next
C would leave :data:`C_LIMITS`.

The step is the grid's own (:func:`step_beyond`). The curve records how
far it went (``curve["extended"]``, :func:`new_extension`), and its
``grid`` and per-C lists hold the extra C in increasing order
(:func:`insert_C`). Numbers in, numbers out.
"""
from __future__ import annotations

import math
from typing import Sequence

__all__ = ["DEFAULT_C_EXTEND", "C_LIMITS", "check_extend", "rising_edge", "step_beyond",
           "new_extension", "next_extension_C", "insert_C", "extension_text", "asked_grid"]

#: Default bound of the extension: at most this many steps of the grid's own
#: step past each end (``--C-extend``; 0 switches extension off). At least
#: the most steps any curve needed on the shared data sets measured so far,
#: leaving one data set out (docs/training.md, "The bound of the grid's
#: extension", which says which data sets are still to measure); the curves
#: of the generated data set of ``segstruct compare`` rise further.
DEFAULT_C_EXTEND = 3
#: Never extend below or above these C (superpixel units): far outside any C
#: the shared data sets preferred, where the fits degenerate (w = 0 below,
#: unbounded iteration counts above).
C_LIMITS = (1e-5, 1e4)
#: The per-C lists of a curve, in the order of its ``grid``.
PER_C_KEYS = ("pooled_iou_percent", "pooled_counts", "fold_iou_percent", "fold_counts",
              "n_iter", "converged", "fit_seconds")


def check_extend(extend) -> int:
    """``extend`` as an int >= 0 (the steps allowed past each end), else a
    ValueError that says what to give."""
    if isinstance(extend, bool) or int(extend) != extend or extend < 0:
        raise ValueError(f"the bound of the grid's extension (--C-extend) must be a whole "
                         f"number of steps >= 0 (0: no extension), got {extend!r}")
    return int(extend)


def _best(grid: Sequence[float], scores: Sequence[float]) -> float:
    """The C of the highest score, ties to the smaller C (as ``choose_C``)."""
    return min(zip(grid, scores), key=lambda p: (-p[1], p[0]))[0]


def rising_edge(curve: dict) -> str | None:
    """Which end of the grid the chosen C sits at with held-out IoU still
    rising towards it: "below" (the smallest C), "above" (the largest), or
    None (inside, or tied with its inner neighbour).

    Parameters
    ----------
    curve : dict with ``grid`` (m >= 2 values of C, any order) and
        ``pooled_iou_percent`` (m values, None or NaN worse than any); its
        ``chosen_C`` where set, else the best C (ties to the smaller).

    Returns
    -------
    str or None
    """
    scores = [-math.inf if v is None or math.isnan(v) else float(v)
              for v in curve["pooled_iou_percent"]]
    pairs = sorted(zip((float(c) for c in curve["grid"]), scores))
    grid, scores = [c for c, _ in pairs], [v for _, v in pairs]
    chosen = float(curve["chosen_C"]) if "chosen_C" in curve else _best(grid, scores)
    if chosen == grid[0] and scores[0] > scores[1]:
        return "below"
    if chosen == grid[-1] and scores[-1] > scores[-2]:
        return "above"
    return None


def _round(c: float) -> float:
    """``c`` to 12 significant digits: 0.3 * 10 / 3 is 1, not 1.0000000000000002."""
    return float(f"{c:.12g}")


def _one_three(c: float) -> int | None:
    """1 or 3 where ``c`` is 1 or 3 times a power of ten, else None."""
    for mantissa in (1, 3):
        e = math.log10(c / mantissa)
        if abs(e - round(e)) < 1e-9:
            return mantissa
    return None


def step_beyond(grid: Sequence[float], direction: str) -> float:
    """The next C past an end of ``grid``, by the grid's own step.

    A grid whose two end values are neighbours in the series 1, 3, 10, 30,
    ... (the default grid 0.01 0.03 0.1 0.3 1 3, a factor of about sqrt(10)
    a step) goes on along that series (3 -> 10 -> 30, 0.01 -> 0.003 ->
    0.001); any other grid by the ratio of its two end values (last /
    second-last above, second / first below).

    Parameters
    ----------
    grid : sequence of m >= 2 positive C, any order.
    direction : {"below", "above"}

    Returns
    -------
    float
    """
    values = sorted(float(c) for c in grid)
    a, b = (values[0], values[1]) if direction == "below" else (values[-2], values[-1])
    ma, mb = _one_three(a), _one_three(b)
    ratio = b / a
    if ma is not None and mb is not None and ma != mb and (
            math.isclose(ratio, 3.0) or math.isclose(ratio, 10 / 3)):
        if direction == "above":     # 1 -> 3, 3 -> 10
            return _round(b * (3.0 if mb == 1 else 10 / 3))
        return _round(a / (10 / 3 if ma == 1 else 3.0))    # 1 -> 0.3, 3 -> 1
    return _round(b * ratio) if direction == "above" else _round(a / ratio)


def new_extension(grid: Sequence[float], bound: int) -> dict:
    """The record of an extension not yet begun: ``{"below": 0, "above":
    0, "bound": bound, "bound_reached": False, "grid_asked": grid}``
    (``below`` / ``above``: the C added past each end; ``bound_reached``:
    the curve still rose at an end when the bound or :data:`C_LIMITS`
    stopped it; ``grid_asked``: the grid before any was added)."""
    return {"below": 0, "above": 0, "bound": int(bound), "bound_reached": False,
            "grid_asked": [float(c) for c in grid]}


def next_extension_C(curve: dict) -> tuple[str, float] | None:
    """The next C to fit past an end of ``curve``'s grid, or None.

    None when the curve has turned (:func:`rising_edge` is None), or when it
    still rises at an end but ``curve["extended"]["bound"]`` steps were
    already taken that way or the next C leaves :data:`C_LIMITS`; then
    ``curve["extended"]["bound_reached"]`` is set True.

    Parameters
    ----------
    curve : dict with ``grid``, ``pooled_iou_percent`` and ``extended``
        (:func:`new_extension`).

    Returns
    -------
    (direction, C) : ("below" or "above", float), or None.
    """
    direction = rising_edge(curve)
    if direction is None:
        return None
    ext = curve["extended"]
    C = step_beyond(curve["grid"], direction)
    if ext[direction] >= ext["bound"] or not C_LIMITS[0] <= C <= C_LIMITS[1]:
        ext["bound_reached"] = True
        return None
    return direction, C


def insert_C(curve: dict, C: float, row: dict, direction: str) -> dict:
    """``curve`` with ``C`` put into its grid, in increasing order, and
    ``row`` (one value per key of :data:`PER_C_KEYS`) at the same place of
    each per-C list; ``curve["extended"][direction]`` counts it. Changed in
    place and returned."""
    grid = [float(c) for c in curve["grid"]]
    at = sum(c < C for c in grid)
    curve["grid"] = grid[:at] + [float(C)] + grid[at:]
    for key in PER_C_KEYS:
        curve[key] = list(curve[key][:at]) + [row[key]] + list(curve[key][at:])
    curve["extended"][direction] += 1
    return curve


def asked_grid(curve: dict) -> list[float]:
    """The grid of C the curve was asked for (before any extension)."""
    ext = curve.get("extended")
    return [float(c) for c in (ext["grid_asked"] if ext else curve.get("grid", []))]


def extension_text(curve: dict) -> str | None:
    """How far the grid was extended, e.g. "the grid was extended 2 steps
    below its smallest C 0.01 (to 0.001; bound 3 steps a side)"; None when it
    was not (or no extension was allowed)."""
    ext = curve.get("extended")
    if not ext or not (ext["below"] or ext["above"]):
        return None
    asked = ext["grid_asked"]
    grid = sorted(float(c) for c in curve["grid"])
    parts = []
    if ext["below"]:
        parts.append(f"{_steps(ext['below'])} below its smallest C {min(asked):g} "
                     f"(to {grid[0]:g})")
    if ext["above"]:
        parts.append(f"{_steps(ext['above'])} above its largest C {max(asked):g} "
                     f"(to {grid[-1]:g})")
    return (f"the grid was extended {' and '.join(parts)}; bound {_steps(ext['bound'])} a side"
            + (", reached" if ext["bound_reached"] else ""))


def _steps(n: int) -> str:
    return f"{n} step{'' if n == 1 else 's'}"
