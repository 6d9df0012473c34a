"""The proposed method's loss-augmented oracle (paper Sec. 4), with its state.

:class:`ProposedOracle` is a callable ``oracle(u, edges, p, t, a, loss) ->
InferenceResult`` on plain arrays, like every oracle of this package. It
chooses an inference algorithm for a loss that is not linear in (FP, FN) (the
exact envelope inference, or the paper's triangle LPs solved as written or by
decomposition),
finishes with greedy flips, and keeps what repeated calls during training can
reuse: triangulations per (loss, Np, Nn) and warm-start labellings per graph.
"""
from __future__ import annotations

import hashlib
import warnings

import numpy as np

from ._mrf import exact_result
from .decomposition import decomposition_oracle
from .envelope import envelope_oracle
from .highs import SolverError
from .local_search import polish
from .losses import get_loss, totals
from .lp import lp_oracle
from .triangulation import N_TRIANGLES, Triangulation, triangulate

#: Inference algorithms of the proposed oracle (``--inference``).
INFERENCE_CHOICES = ("envelope", "decomposition", "lp")
#: The exact one: no triangles, no LP.
DEFAULT_INFERENCE = "envelope"


class ProposedOracle:
    """The proposed method's oracle: most violated constraint of a complex loss.

    Parameters
    ----------
    n_triangles : M, the number of triangles (paper: 40) of the triangle-LP
        algorithms.
    inference : "envelope" (the default: exact branch and bound over (FP, FN)
        with graph-cut planes, ``segstruct.inference.envelope``; no triangles,
        so M does not matter; it returns a labelling at least as good as the
        triangle LPs' and certifies it optimal on superpixel graphs),
        "decomposition" (the paper's triangle LPs by column generation with
        graph-cut pricing: the same LP optimum as "lp", faster on large
        graphs) or "lp" (HiGHS on the LP of Eq. 22-26 as written).
    rule : for ``inference="lp"``: "best" (best true objective over all
        candidates) or "paper" (rounding of the largest LP value).
    polish : bool, default True
        Finish with greedy single-node flips on the true objective (see
        ``segstruct.inference.local_search``): it never lowers the objective
        and finds optima no plane reaches, such as the single false positive
        that is best when an image has no foreground. Set False for the
        paper's method as published.

    Triangulations are cached per (loss, Np, Nn), so a training run builds
    one per distinct image total (per-image scope) or one in all (data-set
    scope).
    """

    def __init__(self, n_triangles: int = N_TRIANGLES, inference: str = DEFAULT_INFERENCE,
                 rule: str = "best",
                 polish: bool = True):
        if inference not in INFERENCE_CHOICES:
            raise ValueError(f"unknown inference {inference!r}; use one of {INFERENCE_CHOICES}")
        if n_triangles < 2:
            raise ValueError("n_triangles must be at least 2")
        self.n_triangles = n_triangles
        self.inference = inference
        self.rule = rule
        self.polish = polish
        # (loss, Np, Nn) -> its triangulation
        self._cache: dict[tuple[str, float, float], Triangulation] = {}
        # graph key (_seed_key) -> the last call's best labellings
        self._seeds: dict[str, list[np.ndarray]] = {}

    def triangulation(self, loss, n_pos, n_neg):
        key = (repr(loss), round(float(n_pos), 9), round(float(n_neg), 9))
        if key not in self._cache:
            self._cache[key] = triangulate(loss, n_pos, n_neg, n_triangles=self.n_triangles)
        return self._cache[key]

    def __call__(self, u, edges, p, t, a, loss):
        try:
            return self._solve(self.inference, u, edges, p, t, a, loss)
        except SolverError as err:
            if self.inference == "envelope":
                raise
            # The triangle LPs failed even after HiGHS's retries: the envelope
            # inference needs no LP and is exact, so the step is not lost.
            warnings.warn(f"{err}; this call used the envelope inference instead",
                          RuntimeWarning, stacklevel=2)
            return self._solve("envelope", u, edges, p, t, a, loss)

    def _solve(self, inference, u, edges, p, t, a, loss):
        if inference == "envelope":
            # polishes inside (when asked), so that its bound can use the result
            key = self._seed_key(u, edges, t)
            res = envelope_oracle(u, edges, p, t, a, loss, polish=self.polish,
                                  seed_labellings=self._seeds.get(key, ()))
            self._seeds[key] = res.info.pop("labellings")
            return res
        tri = self.triangulation(loss, *totals(t, a))
        if inference == "lp":
            res = lp_oracle(u, edges, p, t, a, loss, triangulation=tri, rule=self.rule)
            return self._polished(res, u, edges, p, t, a, loss,
                                  starts=res.info.pop("labellings"))
        # Cutting-plane training calls again with a slightly changed w: the
        # last call's labellings for the same graph start the columns.
        key = self._seed_key(u, edges, t)
        res = decomposition_oracle(u, edges, p, t, a, loss, triangulation=tri,
                                   seed_labellings=self._seeds.get(key, ()))
        self._seeds[key] = res.info.pop("labellings")
        return self._polished(res, u, edges, p, t, a, loss, starts=self._seeds[key])

    @staticmethod
    def _seed_key(u, edges, t) -> str:
        # A digest, not hash(): the key must survive a checkpoint and restart.
        # The edges are in it: images without the class and with as many
        # superpixels and edges shared one key by targets alone (367 camvid
        # training images had 312 keys for car), so each started from the
        # other's labellings, and the results depended on the order of the
        # calls.
        h = hashlib.blake2b(np.asarray(t, np.uint8).tobytes(), digest_size=12)
        h.update(np.ascontiguousarray(edges, np.int64).tobytes())
        return f"{len(u)}_{len(edges)}_{h.hexdigest()}"

    # A flip step scans every node, and a data-set scope graph has tens of
    # thousands of them: cap the steps.
    MAX_FLIPS = 200

    # Greedy flips from one start can stop at a local optimum that another
    # candidate's flips pass by; a few starts are cheap on superpixel graphs.
    # On large graphs (data-set scope, pixels) each pass costs milliseconds
    # and every start may flip up to MAX_FLIPS times: polish the best only.
    MAX_STARTS = 8
    MAX_NODES_FOR_STARTS = 2000

    def _polished(self, res, u, edges, p, t, a, loss, starts=()):
        """The best labelling greedy flips reach from the result and from ``starts``."""
        if not self.polish:
            return res
        loss = get_loss(loss)
        u64, p64 = np.asarray(u, np.float64), np.asarray(p, np.float64)
        e64 = np.asarray(edges, np.int64).reshape(-1, 2)
        t64 = np.asarray(t, np.float64)
        a64 = np.ones_like(t64) if a is None else np.asarray(a, np.float64)
        totals_ = totals(t64, a64)
        best, n_flips = res, 0
        if len(u64) > self.MAX_NODES_FOR_STARTS:
            starts = ()
        for start in [res.labels, *list(starts)[: self.MAX_STARTS]]:
            y, n = polish(u64, e64, p64, t64, a64, loss, start, max_steps=self.MAX_FLIPS)
            if n == 0:
                continue        # an unflipped start is a candidate already scored
            cand = exact_result(u64, e64, p64, y, t64, a64, loss, *totals_, **res.info)
            if cand.objective > best.objective + 1e-12 * max(1.0, abs(best.objective)):
                best, n_flips = cand, n
        if best is res:
            res.info["flips"] = 0
            return res
        # the oracle's bound holds for the optimum, so for any labelling
        best.bound = res.bound
        best.info["flips"] = n_flips
        return best

    def get_state(self) -> dict:
        """Warm-start labellings per graph, as named (k, N) uint8 arrays (checkpoints)."""
        return self._state(self._seeds)

    def state_of(self, problems) -> dict:
        """The part of ``get_state`` that calls on ``problems`` would read: a
        worker solving only those needs no more.

        Parameters
        ----------
        problems : iterable of (u, edges, p, t, a) tuples.
        """
        keys = {self._seed_key(u, edges, t) for u, edges, _, t, _ in problems}
        return self._state(keys)

    def _state(self, keys) -> dict:
        """The warm starts of ``keys`` as named (k, N) uint8 arrays."""
        return {f"seeds_{key}": np.asarray(self._seeds[key], np.uint8).reshape(
                    len(self._seeds[key]), -1)
                for key in keys if len(self._seeds.get(key, ()))}

    def set_state(self, state: dict) -> None:
        """Restore what ``get_state`` returned."""
        self._seeds = {name[len("seeds_"):]: list(arr) for name, arr in state.items()
                       if name.startswith("seeds_")}

    def __repr__(self):
        return (f"ProposedOracle(n_triangles={self.n_triangles}, inference={self.inference!r}, "
                f"rule={self.rule!r}, polish={self.polish})")
