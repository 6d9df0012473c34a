"""Building a triangulation: :func:`triangulate` and its cache.

Two modes. With ``n_triangles`` (M, the paper's mesh size), four meshes are
refined worst-first to exactly M triangles, one for each starting diagonal
and split rule (``_VARIANTS``); the mesh with the smallest construction
errors has its cut points moved (:func:`~.improve.move_splits`) and is
returned. For IoU the diagonal from (Nn, 0) to (0, Np) usually wins.
With ``max_error``, both diagonals are refined until the lattice error, as
:mod:`.error` reports it, is at most the target, and the mesh with fewer
triangles is kept.

Either way the errors stored in the result are the lattice errors of
:func:`~.error.lattice_errors`: exact on lattices of at most
:data:`~.error.EXACT_LATTICE_LIMIT` points, sampled beyond.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..losses import CallableLoss, Loss, get_loss
from .error import is_exact_lattice, lattice_errors
from .improve import move_splits
from .mesh import Triangulation
from .split_tree import SplitTree, loss_table

__all__ = ["N_TRIANGLES", "CACHE", "triangulate"]

#: M, the number of triangles of the paper's mesh (Sec. 4.1): the default
#: wherever a triangulation is built.
N_TRIANGLES = 40

# Starting diagonal (0: (0, 0)-(Nn, Np), 1: (Nn, 0)-(0, Np)) and split rule of
# the meshes built in n_triangles mode; the best one is improved and returned.
_VARIANTS = ((0, "max"), (1, "max"), (0, "sum"), (1, "sum"))


def _check_total(value, what: str) -> float:
    """``value`` as a float, or ValueError unless it is a finite number >= 0."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be a number, got {value!r}") from None
    if isinstance(value, (bool, np.bool_)) or not math.isfinite(number) or number < 0:
        raise ValueError(f"{what} must be a finite number >= 0, got {value!r}")
    return number


def triangulate(loss, n_pos: float, n_neg: float, n_triangles: int | None = None,
                max_error: float | None = None, seed: int = 0,
                improve: bool = True) -> Triangulation:
    """Piecewise-linear approximation of ``loss`` over ``[0, Nn] x [0, Np]``.

    Worst-first adaptive refinement, then moving the cut points (see
    :mod:`.split_tree`). With ``n_triangles``, four meshes are refined (two starting
    diagonals x two split rules) and the one with the smallest construction
    errors is improved and returned; with ``max_error``, both diagonals are
    refined until the target is met and the mesh with fewer triangles is
    kept.

    The maximum error falls as M grows (e.g. M = 4, 15, 40, 100), but is not
    guaranteed to be monotone between nearby M: each M is optimised on its
    own.

    Results for named losses are cached (the LP oracle asks again and again
    for the same Np, Nn); each call returns its own copy.

    Parameters
    ----------
    loss : str, Loss or callable
        Anything :func:`segstruct.inference.losses.get_loss` accepts.
    n_pos, n_neg : float
        Np and Nn, finite and >= 0 (may be non-integers in area mode; the
        lattice of interest is then ``{0..floor(Nn)} x {0..floor(Np)}``).
        Np = 0 or Nn = 0 is allowed (package docstring, "Degenerate domains").
    n_triangles : int, optional
        M >= 2: return exactly M triangles (the paper uses 40, and 15 in its
        Fig. 1).
    max_error : float, optional
        > 0: refine until the lattice error, as reported in
        :attr:`Triangulation.max_error` (exact, or the sampled estimate on
        huge lattices), is at most this. Exactly one of ``n_triangles`` and
        ``max_error`` must be given.
    seed : int, default 0
        Seed of the sampled error estimate on huge lattices.
    improve : bool, default True
        In ``n_triangles`` mode, run the improvement pass (moving the cut
        points) after the refinement. (Not in ``max_error`` mode: it lowers
        the error further but does not save triangles, and costs several
        times the refinement there.)

    Returns
    -------
    Triangulation
        With ``max_error``, ``mean_error`` and ``error_exact`` filled in (see
        :func:`~.error.approximation_error`).

    Raises
    ------
    ValueError
        Bad arguments.
    RuntimeError
        ``max_error`` not reached with :data:`~.split_tree.MAX_TRIANGLES` triangles.
    """
    loss = get_loss(loss)
    n_pos = _check_total(n_pos, "n_pos")
    n_neg = _check_total(n_neg, "n_neg")
    if (n_triangles is None) == (max_error is None):
        raise ValueError("give exactly one of n_triangles and max_error")
    target = None
    if n_triangles is not None:
        if isinstance(n_triangles, (bool, np.bool_)) or not isinstance(n_triangles,
                                                                       (int, np.integer)):
            raise ValueError(f"n_triangles must be an integer >= 2, got {n_triangles!r}")
        n_triangles = int(n_triangles)
        if n_triangles < 2:
            raise ValueError(f"n_triangles must be >= 2, got {n_triangles}")
    else:
        assert max_error is not None    # exactly one of the two is given (checked above)
        try:
            target = float(max_error)
        except (TypeError, ValueError):
            raise ValueError(f"max_error must be a number > 0, got {max_error!r}") from None
        if isinstance(max_error, (bool, np.bool_)) or not math.isfinite(target) or target <= 0:
            raise ValueError(f"max_error must be a finite number > 0, got {max_error!r}")
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise ValueError(f"seed must be an integer, got {seed!r}")

    key = None
    if not isinstance(loss, CallableLoss):     # a user function may not be pure
        key = (loss, n_pos, n_neg, n_triangles, target, int(seed), bool(improve))
        hit = CACHE.get(key)
        if hit is not None:
            return _copy(hit)
    tri = _build(loss, n_pos, n_neg, n_triangles, target, int(seed), bool(improve))
    if key is not None:
        if len(CACHE) >= _CACHE_SIZE:
            CACHE.pop(next(iter(CACHE)))
        CACHE[key] = _copy(tri)
    return tri


#: The triangulations built for named losses, (loss, Np, Nn, M, target,
#: seed, improve) -> Triangulation, oldest first; clear it to time a cold build.
CACHE: dict = {}
_CACHE_SIZE = 256


def _copy(tri: Triangulation) -> Triangulation:
    # Arrays of its own: a caller changing its result must not change the cache.
    return Triangulation(tri.n_pos, tri.n_neg, tri.vertices.copy(), tri.triangles.copy(),
                         tri.planes.copy(), tri.loss_name, tri.max_error, tri.mean_error,
                         tri.error_exact)


def _build(loss: Loss, n_pos: float, n_neg: float, n_triangles: int | None,
           target: float | None, seed: int, improve: bool) -> Triangulation:
    """:func:`triangulate` on checked arguments (``target``: the max_error), uncached."""
    exact = is_exact_lattice(n_pos, n_neg)

    def report(tri):
        return lattice_errors(tri, loss, exact, seed=seed)

    table = loss_table(loss, n_pos, n_neg)
    if target is None:
        assert n_triangles is not None  # triangulate gives exactly one of the two
        best: tuple[Any, SplitTree] | None = None
        # Rank the meshes by their construction errors (all lattice points of
        # each closed triangle, or sample points on big triangles), then
        # report the error of the winner once.
        for diagonal, rule in _VARIANTS:
            b = SplitTree(loss, n_pos, n_neg, diagonal, rule, table)
            b.refine(n_triangles, None)
            # Splits stop early only when every triangle is too small to
            # split, far beyond any sensible M; keep M exact anyway.
            while len(b.leaves) < n_triangles:
                if not b.split(max(range(len(b.leaves)), key=b.area)):
                    raise RuntimeError(f"cannot split the rectangle into {n_triangles} triangles")
            rank = b.quality()
            if best is None or rank < best[0]:
                best = (rank, b)
        assert best is not None         # _VARIANTS is not empty
        if improve:
            move_splits(best[1])
        tri = best[1].result()
        mx, mean, _, _ = report(tri)
    else:
        best_mesh: tuple[tuple[int, float, float], tuple[Triangulation, float, float]] | None
        best_mesh = None
        for diagonal in (0, 1):
            b = SplitTree(loss, n_pos, n_neg, diagonal, "max", table)
            b.refine(None, target)
            while True:
                tri = b.result()
                mx, mean, per_tri, worst_pt = report(tri)
                if mx <= target:
                    break
                # The report found worse points than the construction saw
                # (sampled big triangles): raise those errors and go on.
                before = len(b.leaves)
                if b.raise_errors(per_tri, worst_pt, target):
                    b.refine(None, target)
                if len(b.leaves) == before:
                    raise RuntimeError(f"max_error={target} cannot be reached: the triangles "
                                       "over the worst lattice points are too small to split")
            rank = (len(tri), mx, mean)
            if best_mesh is None or rank < best_mesh[0]:
                best_mesh = (rank, (tri, mx, mean))
        assert best_mesh is not None    # the loop above ran
        tri, mx, mean = best_mesh[1]
    tri.max_error, tri.mean_error, tri.error_exact = float(mx), float(mean), exact
    return tri
