"""The joint feature map Psi(x, y) of Eq. 15 over a superpixel graph.

    Psi(x, y) = [ sum_i (2 y_i - 1) phi_u(x_i) ;  sum_{(i,j) in E} [y_i != y_j] phi_p(x_i, x_j) ]
    score(y)  = w . Psi(x, y) = sum_i (2 y_i - 1) u_i + sum_E [y_i != y_j] p_ij,
    u = Phi_u w_u,  p = Phi_p w_p.

An input x is anything with ``unary`` (N, Du), ``edges`` (E, 2) and
``pairwise`` (E, Dp) arrays (a ``SuperpixelGraph``, or a ``Graph`` below).
The model knows nothing about how inference is done: the learner turns w
into potentials here and hands plain arrays to an inference oracle.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Graph:
    """Plain MRF input: features of nodes and edges.

    Attributes
    ----------
    unary : (N, Du) float64 node features phi_u.
    edges : (E, 2) int64 node pairs.
    pairwise : (E, Dp) float64 edge features phi_p (>= 0).
    """

    unary: np.ndarray
    edges: np.ndarray
    pairwise: np.ndarray

    @property
    def n_nodes(self) -> int:
        return int(self.unary.shape[0])


def disjoint_union(graphs) -> Graph:
    """One graph holding several as disconnected components.

    Psi of the union is the sum of the parts' Psi, and a labelling of the
    union is the parts' labellings concatenated; this is how the data-set
    loss scope (one labelling of all training superpixels) is built.

    Parameters
    ----------
    graphs : sequence of objects with ``unary``, ``edges``, ``pairwise``.

    Returns
    -------
    Graph
    """
    graphs = list(graphs)
    if not graphs:
        raise ValueError("cannot form the union of no graphs")
    sizes = np.array([g.unary.shape[0] for g in graphs])
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    edges = np.concatenate([np.asarray(g.edges, np.int64).reshape(-1, 2) + off
                            for g, off in zip(graphs, offsets)])
    dp = graphs[0].pairwise.shape[1] if np.ndim(graphs[0].pairwise) == 2 else 0
    pairwise = np.concatenate([np.asarray(g.pairwise, np.float64).reshape(
        np.shape(g.edges)[0], dp) for g in graphs])
    unary = np.concatenate([np.asarray(g.unary, np.float64) for g in graphs])
    return Graph(unary, edges, pairwise)


class MRFModel:
    """Joint feature map of Eq. 15 (unary + pairwise, or unary only).

    Parameters
    ----------
    pairwise : bool, default True
        Include the pairwise block. With False the model is the unary-only
        model of BL2 (Joachims 2005): Psi = sum_i (2 y_i - 1) phi_u(x_i).
    """

    def __init__(self, pairwise: bool = True):
        self.pairwise = pairwise

    def sizes(self, x) -> tuple[int, int]:
        """(Du, Dp) of an input; Dp is 0 for the unary-only model."""
        du = int(np.shape(x.unary)[1])
        dp = int(np.shape(x.pairwise)[1]) if self.pairwise else 0
        return du, dp

    def n_features(self, x) -> int:
        du, dp = self.sizes(x)
        return du + dp

    def upper_bounds(self, x) -> np.ndarray:
        """Upper bounds on w: +inf on the unary block, 0 on the pairwise block.

        With phi_p >= 0, w_p <= 0 makes every p_ij <= 0, so maximising the
        score plus any node-decomposable term is submodular (graph cut).
        """
        du, dp = self.sizes(x)
        return np.concatenate([np.full(du, np.inf), np.zeros(dp)])

    def _split(self, x, w):
        du, dp = self.sizes(x)
        w = np.asarray(w, np.float64)
        if w.shape != (du + dp,):
            raise ValueError(f"w must have shape ({du + dp},) for this model and input, "
                             f"got {w.shape}")
        return w[:du], w[du:]

    def potentials(self, x, w) -> tuple[np.ndarray, np.ndarray]:
        """Unary and pairwise potentials for weights w.

        Returns
        -------
        u : (N,) float64, ``Phi_u w_u``.
        p : (E,) float64, ``Phi_p w_p`` (zeros for the unary-only model).
        """
        w_u, w_p = self._split(x, w)
        u = np.asarray(x.unary, np.float64) @ w_u
        n_edges = np.shape(x.edges)[0]
        p = np.asarray(x.pairwise, np.float64) @ w_p if self.pairwise else np.zeros(n_edges)
        return u, p

    def joint_feature(self, x, y) -> np.ndarray:
        """Psi(x, y) of Eq. 15.

        Parameters
        ----------
        x : input with ``unary``, ``edges``, ``pairwise``.
        y : (N,) labelling in {0, 1}.

        Returns
        -------
        (Du + Dp,) float64.
        """
        y = np.asarray(y, np.float64)
        unary = np.asarray(x.unary, np.float64)
        if y.shape != (unary.shape[0],):
            raise ValueError(f"labelling has shape {y.shape}, expected ({unary.shape[0]},)")
        parts = [(2.0 * y - 1.0) @ unary]
        if self.pairwise:
            edges = np.asarray(x.edges, np.int64).reshape(-1, 2)
            cut = (y[edges[:, 0]] != y[edges[:, 1]]).astype(np.float64)
            parts.append(cut @ np.asarray(x.pairwise, np.float64).reshape(len(edges), -1))
        return np.concatenate(parts)

    def score(self, x, w, y) -> float:
        """w . Psi(x, y)."""
        return float(np.dot(w, self.joint_feature(x, y)))
