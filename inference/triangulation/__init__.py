"""Piecewise-linear approximation of a loss over the (FP, FN) rectangle.

The proposed loss-augmented inference (paper Sec. 4.1, Eq. 13) replaces a
non-decomposable loss ``Delta(FP, FN)`` by planes
``alpha_k FP + beta_k FN + gamma_k`` on M triangles that partition the
rectangle ``[0, Nn] x [0, Np]``; one LP per triangle then finds the most
violated labelling whose (FP, FN) lies in that triangle (Eq. 22-26).

The paper triangulated the surface finely and simplified the mesh to M = 40
triangles with a mesh-decimation program. :func:`triangulate` reaches the same
goal adaptively, spending triangles where the surface curves: worst-first
refinement, then moving the cut points. Every plane passes through the TRUE
loss at its triangle's three corners. For IoU the splits gather where
``Np + FP`` is small, where the surface curves most.

The error that matters is the one on the integer lattice
``{0..floor(Nn)} x {0..floor(Np)}``, the (FP, FN) pairs a labelling with
integer weights can reach. It is computed exactly when the lattice has at
most :data:`EXACT_LATTICE_LIMIT` points, and estimated by sampling otherwise
(see :func:`approximation_error`).

Degenerate domains: when ``Np = 0`` (or ``Nn = 0``) the rectangle collapses
to a segment. The triangles then cover ``[0, max(Nn, 1)] x [0, max(Np, 1)]``
(the missing side is padded to one lattice unit) and the loss is evaluated at
the point clipped back into ``[0, Nn] x [0, Np]``, so it is never called out
of its domain; :meth:`Triangulation.locate` still answers -1 outside the real
rectangle, and the lattice (one row or column) is covered as usual.

Modules, one job each:

- :mod:`.geometry`: half-planes, the closed-triangle test, areas, plane
  fitting, lattice points in a triangle;
- :mod:`.mesh`: :class:`Triangulation`, the result and its queries;
- :mod:`.error`: the error on the lattice, exact or sampled;
- :mod:`.split_tree`: the construction's tree of splits, refined
  worst-first;
- :mod:`.improve`: the improvement pass, moving the tree's cut points;
- :mod:`.build`: :func:`triangulate`, which runs the construction, and its
  cache.
"""
from .build import N_TRIANGLES, triangulate
from .error import EXACT_LATTICE_LIMIT, approximation_error
from .geometry import REL_TOL
from .mesh import Triangulation
from .split_tree import MAX_TRIANGLES

__all__ = [
    "N_TRIANGLES",
    "Triangulation",
    "triangulate",
    "approximation_error",
    "EXACT_LATTICE_LIMIT",
    "REL_TOL",
    "MAX_TRIANGLES",
]
