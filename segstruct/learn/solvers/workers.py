"""Loss-augmented inference on many MRF problems at once, on worker processes.

A cutting-plane iteration calls the oracle on every training example at the
same weights: the calls are independent, so :class:`InferencePool` deals
them out to ``n_jobs`` worker processes. Two things make that fast and
exact:

- the workers persist for a whole fit (one joblib ``Parallel`` context, loky
  backend): no call starts a process, and a task carries only the oracle and
  the problems' plain arrays (potentials, not features);
- the problems are split into contiguous blocks of about equal size,
  ``BLOCKS_PER_WORKER`` per worker, which the workers take as they free up
  (an image's inference time varies widely). An oracle with state (a
  ``ProposedOracle``'s warm-start labellings per graph, which change what it
  returns) goes to a block with the state of that block's problems
  (``state_of``; the whole state otherwise); each block hands back the
  entries it changed, and the pool merges them. A problem's state is its
  own, so the oracle's state, and every result, are those of calling it on
  the problems one after another in this process, whichever worker takes
  which block.

On several cores the proposed method at the image scope trains faster
this way (``scripts/parallel_inference.py`` times it). Sending each block
the whole state (up to megabytes) instead of its own part lost most of that
gain in development (docs/scaling.md).

At the data-set scope the single example is the disjoint union of the
images. For a loss linear in (FP, FN) the most violated labelling of the
union is the images' most violated labellings side by side (score and loss
are sums over the images), so :func:`split_union` cuts the union into one
smaller union of whole images per worker. For IoU or F-beta the loss couples
the images and the union stays one problem.
"""
from __future__ import annotations

import copy
import os
from typing import Any, Callable, Sequence

import numpy as np
from joblib import Parallel, delayed, effective_n_jobs

from segstruct.io.stopping import watch_parent

# (u, edges, p, t, a): one MRF problem without its loss
Problem = tuple


def _solve_block(oracle, problems: Sequence[Problem], loss, parent: int):
    """Worker side: the oracle on each problem in order, and its changed state.
    The worker exits if ``parent`` (the pool's process) ends, even killed."""
    watch_parent(parent)
    before = oracle.get_state() if hasattr(oracle, "get_state") else {}
    results = [oracle(*problem, loss) for problem in problems]
    after = oracle.get_state() if hasattr(oracle, "get_state") else {}
    changed = {k: v for k, v in after.items()
               if k not in before or not _same(before[k], v)}
    return results, changed


def _same(x, y) -> bool:
    return np.shape(x) == np.shape(y) and np.array_equal(x, y)


def blocks(sizes: Sequence[int] | np.ndarray, n_blocks: int) -> list[range]:
    """Contiguous index ranges, at most ``n_blocks``, of about equal total size.

    Parameters
    ----------
    sizes : per-problem work estimates (node counts), length n >= 0.
    n_blocks : int >= 1.

    Returns
    -------
    list of non-empty ranges covering 0 .. n-1 in order.
    """
    n = len(sizes)
    if n == 0:
        return []
    cum = np.cumsum(np.asarray(sizes, np.float64))
    # block b ends where the running total passes (b + 1) / n_blocks of it
    cuts = np.searchsorted(cum, cum[-1] * np.arange(1, n_blocks) / n_blocks, side="left") + 1
    bounds = sorted({0, n, *(int(min(max(c, 0), n)) for c in cuts)})
    return [range(a, b) for a, b in zip(bounds[:-1], bounds[1:]) if b > a]


class InferencePool:
    """An oracle called on a list of problems, serially or on worker processes.

    Parameters
    ----------
    oracle : callable ``oracle(u, edges, p, t, a, loss) -> InferenceResult``,
        picklable; with ``get_state`` / ``set_state`` (dicts of arrays) if it
        keeps state between calls, and optionally ``state_of(problems)``, the
        part of that state calls on ``problems`` read.
    n_jobs : int, worker processes (joblib convention, -1 = every core); 1
        calls the oracle in this process.

    Use as a context manager: the workers live from ``__enter__`` to
    ``__exit__``. Outside one, calls run serially.
    """

    BLOCKS_PER_WORKER = 4

    def __init__(self, oracle: Callable, n_jobs: int = 1):
        # get_state, set_state and state_of are optional (hasattr tells)
        self.oracle: Any = oracle
        self.n_jobs = n_jobs
        self._parallel: Parallel | None = None
        self.n_workers = 1

    def __enter__(self) -> "InferencePool":
        self.n_workers = effective_n_jobs(self.n_jobs)
        if self.n_workers > 1:
            self._parallel = Parallel(n_jobs=self.n_workers, backend="loky")
            self._parallel.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        if self._parallel is not None:
            self._parallel.__exit__(*exc)
            self._parallel = None
        self.n_workers = 1

    def _oracle_for(self, problems: Sequence[Problem]):
        """The oracle to send with a block: with ``state_of``, a copy that
        holds only the block's state (the whole of it can be megabytes, sent
        with every block of every call)."""
        if not hasattr(self.oracle, "state_of"):
            return self.oracle
        light = copy.copy(self.oracle)
        light.set_state(self.oracle.state_of(problems))
        return light

    def __call__(self, problems: Sequence[Problem], loss) -> list:
        """The oracle's result on each problem, in order.

        Parameters
        ----------
        problems : sequence of (u, edges, p, t, a) tuples (see
            ``segstruct.inference``).
        loss : the loss, passed to every call.

        Returns
        -------
        list of InferenceResult, one per problem.
        """
        problems = list(problems)
        if self._parallel is None or len(problems) < 2:
            return [self.oracle(*problem, loss) for problem in problems]
        ranges = blocks([len(problem[0]) for problem in problems],
                        self.BLOCKS_PER_WORKER * self.n_workers)
        here = os.getpid()
        outs = self._parallel(delayed(_solve_block)(self._oracle_for(problems[r.start:r.stop]),
                                                    problems[r.start:r.stop], loss, here)
                              for r in ranges)
        results = [res for block_results, _ in outs for res in block_results]
        changed = {}
        for _, block_changed in outs:
            changed.update(block_changed)
        if changed:
            self.oracle.set_state({**self.oracle.get_state(), **changed})
        return results


def split_union(u, edges, p, t, a, node_sizes: Sequence[int] | np.ndarray,
                edge_sizes: Sequence[int] | np.ndarray,
                n_blocks: int) -> list[Problem]:
    """A disjoint union cut into at most ``n_blocks`` smaller unions of whole images.

    Parameters
    ----------
    u : (N,) unary potentials of the union; edges : (E, 2) int, the
        images' edges, each image's shifted by its first node's index
        (``segstruct.feature_map.disjoint_union``); p : (E,) pairwise potentials;
        t : (N,) targets; a : (N,) node weights or None.
    node_sizes, edge_sizes : per image, its node and edge counts, in the
        union's order (they sum to N and E).
    n_blocks : int >= 1; the blocks are contiguous runs of images of about
        equal node counts (:func:`blocks`).

    Returns
    -------
    list of (u_k, edges_k, p_k, t_k, a_k): the blocks in order, each one's
    edges numbered from its first node. Their labellings side by side are a
    labelling of the union.
    """
    node_sizes, edge_sizes = np.asarray(node_sizes), np.asarray(edge_sizes)
    if node_sizes.sum() != len(u) or edge_sizes.sum() != len(edges):
        raise ValueError(f"the parts have {node_sizes.sum()} nodes and {edge_sizes.sum()} "
                         f"edges; the union has {len(u)} and {len(edges)}")
    node_start = np.concatenate([[0], np.cumsum(node_sizes)])
    edge_start = np.concatenate([[0], np.cumsum(edge_sizes)])
    out = []
    for r in blocks(node_sizes, n_blocks):
        n0, n1 = node_start[r.start], node_start[r.stop]
        e0, e1 = edge_start[r.start], edge_start[r.stop]
        out.append((u[n0:n1], np.asarray(edges[e0:e1]) - n0, p[e0:e1], t[n0:n1],
                    None if a is None else a[n0:n1]))
    return out
