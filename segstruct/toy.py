"""Small generated MRF problems, for the docstrings' examples and quick trials.

They need no image: each is a chain of superpixels whose first unary
feature is the truth plus noise, so a learner that works scores well on
them in a second.
"""
from __future__ import annotations

import numpy as np

from segstruct.feature_map import Graph

__all__ = ["chain_problem"]


def chain_problem(n_graphs: int = 6, n_nodes: int = 8, noise: float = 0.3, seed: int = 0,
                  pixels: int = 100) -> tuple[list[Graph], list[np.ndarray]]:
    """Chain graphs with a noisy foreground feature, and their labels.

    Parameters
    ----------
    n_graphs : int >= 1, the number of graphs (images).
    n_nodes : int >= 2, superpixels per graph, linked in a chain.
    noise : float >= 0, standard deviation of the Gaussian noise added to
        the 0 / 1 foreground feature.
    seed : int, of the random draws.
    pixels : int >= 1, the pixels of every superpixel.

    Returns
    -------
    X : list of :class:`segstruct.feature_map.Graph`: unary (n_nodes, 2) float64
        [truth + noise, 1]; edges (n_nodes - 1, 2) int64; pairwise
        (n_nodes - 1, 1) float64 ones.
    Y : list of (n_nodes, 2) int64 [foreground, background] pixel counts.
        Each graph has at least one foreground and one background node.

    Examples
    --------
    >>> X, Y = chain_problem(n_graphs=2, n_nodes=4)
    >>> X[0].unary.shape, X[0].edges.tolist(), Y[0].sum(axis=1).tolist()
    ((4, 2), [[0, 1], [1, 2], [2, 3]], [100, 100, 100, 100])
    """
    if n_graphs < 1 or n_nodes < 2 or noise < 0 or pixels < 1:
        raise ValueError("chain_problem needs n_graphs >= 1, n_nodes >= 2, noise >= 0 and "
                         f"pixels >= 1; got {n_graphs}, {n_nodes}, {noise}, {pixels}")
    rng = np.random.default_rng(seed)
    edges = np.column_stack([np.arange(n_nodes - 1), np.arange(1, n_nodes)]).astype(np.int64)
    X, Y = [], []
    for _ in range(n_graphs):
        fg = rng.random(n_nodes) < 0.4
        fg[rng.integers(n_nodes)] = True               # both labels in every graph
        if fg.all():
            fg[rng.integers(n_nodes)] = False
        unary = np.column_stack([fg + rng.normal(0.0, noise, n_nodes), np.ones(n_nodes)])
        X.append(Graph(unary=unary, edges=edges.copy(), pairwise=np.ones((n_nodes - 1, 1))))
        Y.append(np.column_stack([fg * pixels, ~fg * pixels]).astype(np.int64))
    return X, Y
