"""Loss-augmented inference oracles as the learner sees them.

Every oracle is a callable ``oracle(u, edges, p, t, a, loss) ->
InferenceResult`` on plain arrays; this module names them and adds the state
some need (a triangulation cache), so methods can be chosen by name from the
command line.
"""
from __future__ import annotations

import hashlib

import numpy as np

from segstruct.inference import loss_augmented
from segstruct.inference.bl2 import bl2
from segstruct.inference.decomposition import decomposition_oracle
from segstruct.inference.lp import lp_oracle
from segstruct.inference.milp import milp_oracle

from .losses import totals
from .triangulation import triangulate

LP_SOLVERS = ("decomposition", "lp")


class TriangleOracle:
    """The proposed method's oracle: one LP per loss-surface triangle.

    Parameters
    ----------
    n_triangles : M, the number of triangles (paper: 40).
    solver : "decomposition" (column generation with graph-cut pricing, the
        default: the same LP optimum, far faster) or "lp" (HiGHS on the LP of
        Eq. 22-26 as written).
    rule : for ``solver="lp"``: "best" (best true objective over all
        candidates) or "paper" (rounding of the largest LP value).

    Triangulations are cached per (loss, Np, Nn), so a training run builds
    one per distinct image total (per-image scope) or one in all (data-set
    scope).
    """

    def __init__(self, n_triangles: int = 40, solver: str = "decomposition", rule: str = "best"):
        if solver not in LP_SOLVERS:
            raise ValueError(f"unknown LP solver {solver!r}; use one of {LP_SOLVERS}")
        if n_triangles < 2:
            raise ValueError("n_triangles must be at least 2")
        self.n_triangles = n_triangles
        self.solver = solver
        self.rule = rule
        self._cache = {}
        self._seeds = {}

    def triangulation(self, loss, n_pos, n_neg):
        key = (repr(loss), round(float(n_pos), 9), round(float(n_neg), 9))
        if key not in self._cache:
            self._cache[key] = triangulate(loss, n_pos, n_neg, n_triangles=self.n_triangles)
        return self._cache[key]

    def __call__(self, u, edges, p, t, a, loss):
        tri = self.triangulation(loss, *totals(t, a))
        if self.solver == "lp":
            return lp_oracle(u, edges, p, t, a, loss, triangulation=tri, rule=self.rule)
        # Cutting-plane training calls again with a slightly changed w: the
        # last call's labellings for the same graph start the columns.
        # (a digest, not hash(): the key must survive a checkpoint and restart)
        digest = hashlib.blake2b(np.asarray(t, np.uint8).tobytes(), digest_size=12).hexdigest()
        key = f"{len(u)}_{len(edges)}_{digest}"
        res = decomposition_oracle(u, edges, p, t, a, loss, triangulation=tri,
                                   seed_labellings=self._seeds.get(key, ()))
        self._seeds[key] = res.info.pop("labellings")
        return res

    def get_state(self) -> dict:
        """Warm-start labellings per graph, as named (k, N) uint8 arrays (checkpoints)."""
        return {f"seeds_{key}": np.asarray(labels, np.uint8).reshape(len(labels), -1)
                for key, labels in self._seeds.items() if len(labels)}

    def set_state(self, state: dict) -> None:
        """Restore what ``get_state`` returned."""
        self._seeds = {name[len("seeds_"):]: list(arr) for name, arr in state.items()
                       if name.startswith("seeds_")}

    def __repr__(self):
        return (f"TriangleOracle(n_triangles={self.n_triangles}, solver={self.solver!r}, "
                f"rule={self.rule!r})")


def make_oracle(name: str, n_triangles: int = 40, lp_solver: str = "decomposition"):
    """The oracle of a method: graphcut, bl2, proposed (triangles) or exact (MILP)."""
    if name == "graphcut":
        return loss_augmented
    if name == "bl2":
        return bl2
    if name == "proposed":
        return TriangleOracle(n_triangles, lp_solver)
    if name == "exact":
        return milp_oracle
    raise ValueError(f"unknown oracle {name!r}")
