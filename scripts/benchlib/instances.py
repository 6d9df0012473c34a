"""Loss-augmented inference problems on plain arrays, and where they come from:
seeded random graphs, a data set's sampled images, the union of a training
split, and pixel grids of full images."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

PIXEL_LAMBDA = 0.1        # pixel grids: lambda = PIXEL_LAMBDA * median |u_pixel|


@dataclass
class Instance:
    """One loss-augmented inference problem on plain arrays.

    Attributes
    ----------
    name : str, e.g. ``"camvid_voc:car/0001TP_008550"``.
    u : (N,) float64 unary potentials.
    edges : (E, 2) int64 adjacent pairs.
    p : (E,) float64 pairwise potentials (<= 0).
    t : (N,) uint8 targets; a : (N,) float64 node weights (0 or 1, count mode).
    """

    name: str
    u: np.ndarray
    edges: np.ndarray
    p: np.ndarray
    t: np.ndarray
    a: np.ndarray


def random_instances(n: int = 100, n_nodes: int = 50, degree: int = 4, seed: int = 0,
                     p_one: float = 0.3, background_every: int = 10,
                     p_scale: float = 1.0) -> list[Instance]:
    """Seeded random loss-augmented inference problems.

    Each graph pairs ``degree`` stubs per node at random (configuration model)
    and drops self-loops and repeated pairs, so degrees are about ``degree``.
    Unaries u ~ N(0, 1), pairwise p ~ -Uniform(0, p_scale) (so p <= 0),
    targets 1 with probability ``p_one``, except every ``background_every``-th
    instance (k % background_every == background_every - 1), whose targets are
    all 0 (no foreground: IoU is a step there); count weights (a = 1).
    """
    rng = np.random.default_rng(seed)
    out = []
    for k in range(n):
        stubs = np.repeat(np.arange(n_nodes, dtype=np.int64), degree)
        rng.shuffle(stubs)
        pairs = np.sort(stubs[: stubs.size // 2 * 2].reshape(-1, 2), axis=1)
        pairs = pairs[pairs[:, 0] != pairs[:, 1]]
        edges = np.unique(pairs, axis=0).reshape(-1, 2)
        u = rng.normal(0.0, 1.0, n_nodes)
        p = -rng.uniform(0.0, p_scale, len(edges))
        background = background_every > 0 and k % background_every == background_every - 1
        t = np.zeros(n_nodes, np.uint8) if background else (
            rng.random(n_nodes) < p_one).astype(np.uint8)
        out.append(Instance(f"random{n_nodes}/{k}{'-bg' if background else ''}", u, edges,
                            p, t, np.ones(n_nodes)))
    return out


def sample_instances(source, split: str, n_images, seed) -> list[Instance]:
    """Potentials of the source's model (a ``sources.Source``) on a seeded
    sample of a split's images (None: every image)."""
    ids = source.dataset.ids(split)
    if n_images is not None and n_images < len(ids):
        rng = np.random.default_rng(seed)
        ids = [ids[k] for k in sorted(rng.choice(len(ids), n_images, replace=False))]
    instances = []
    for ex in source.extractor.examples(split, source.class_name, ids=ids):
        u, p = source.potentials(ex.graph)
        instances.append(Instance(f"{source.name}:{source.class_name}/{ex.graph.image_id}", u,
                                  np.asarray(ex.graph.edges, np.int64), p,
                                  ex.targets.astype(np.uint8), ex.node_weights("count")))
    return instances


def union_instance(examples, source) -> Instance:
    """All examples' graphs as one disjoint union with the source's potentials."""
    from segstruct.feature_map import disjoint_union
    graph = disjoint_union([e.graph for e in examples])
    u, p = source.potentials(graph)
    t = np.concatenate([e.targets for e in examples]).astype(np.uint8)
    a = np.concatenate([e.node_weights("count") for e in examples])
    return Instance(f"{source.name}:{source.class_name}/train-union", u, graph.edges, p, t, a)


def pixel_grid(sp_labels, u_sp, lab, target, void, lambda_factor: float = PIXEL_LAMBDA,
               name: str = "pixels") -> tuple[Instance, dict]:
    """A 4-connected pixel-level problem built from a superpixel model.

    Unary of pixel i: u_i = u_sp[s(i)] / |s(i)| (its superpixel's BL1 unary
    spread over the superpixel's pixels, so the grid's score of a labelling
    painted from superpixels equals the superpixel score). Pairwise of each
    4-neighbour pair: p_ij = -lambda exp(-||Lab_i - Lab_j||^2 / (2 sigma^2))
    with lambda = ``lambda_factor`` * median |u| and sigma^2 = the mean of
    ||Lab_i - Lab_j||^2 over the grid's pairs. Targets: the class's pixels;
    weights 1, 0 on void pixels (count mode).

    Parameters
    ----------
    sp_labels : (H, W) int superpixel map, values 0 .. N-1.
    u_sp : (N,) superpixel unaries.
    lab : (H, W, 3) CIE Lab image.
    target, void : (H, W) bool.

    Returns
    -------
    Instance with H*W nodes and H(W-1) + W(H-1) edges (row-major pixel
    index), and {"lambda", "sigma2", ...} as used.
    """
    sp_labels = np.asarray(sp_labels)
    h, w = sp_labels.shape
    counts = np.maximum(np.bincount(sp_labels.ravel(), minlength=len(u_sp)), 1)
    u = (np.asarray(u_sp, np.float64) / counts)[sp_labels].ravel()
    idx = np.arange(h * w, dtype=np.int64).reshape(h, w)
    edges = np.concatenate([np.stack([idx[:, :-1].ravel(), idx[:, 1:].ravel()], 1),
                            np.stack([idx[:-1, :].ravel(), idx[1:, :].ravel()], 1)])
    colours = np.asarray(lab, np.float64).reshape(h * w, -1)
    d2 = ((colours[edges[:, 0]] - colours[edges[:, 1]]) ** 2).sum(1)
    sigma2 = float(d2.mean()) if d2.size else 1.0
    sigma2 = sigma2 if sigma2 > 0 else 1.0
    lam = lambda_factor * float(np.median(np.abs(u))) if u.size else 0.0
    p = -lam * np.exp(-d2 / (2.0 * sigma2))
    t = np.asarray(target, bool).ravel().astype(np.uint8)
    a = (~np.asarray(void, bool)).ravel().astype(np.float64)
    params = {"height": h, "width": w, "lambda": lam, "lambda_factor": lambda_factor,
              "sigma2": sigma2, "unary": "superpixel BL1 unary / superpixel pixel count",
              "pairwise": "-lambda exp(-||dLab||^2 / (2 sigma2)), sigma2 = mean ||dLab||^2"}
    return Instance(name, u, edges, p, t, a), params


def pixel_instances(source, split: str, n_images: int, seed: int):
    """Pixel grids of the first ``n_images`` images (seeded order) that hold the class."""
    from segstruct.datasets.voc import VOID_LABEL, class_index
    from segstruct.features.descriptors import rgb_to_lab

    cls = class_index(source.class_name)
    ids = source.dataset.ids(split)
    order = np.random.default_rng(seed).permutation(len(ids))
    out = []
    for k in order:
        if len(out) >= n_images:
            break
        image_id = ids[k]
        mask = source.dataset.read_mask(image_id)
        if not np.any(mask == cls):
            continue              # no foreground: a degenerate IoU problem
        ex, = source.extractor.examples(split, source.class_name, ids=[image_id])
        u_sp, _ = source.potentials(ex.graph)
        lab = rgb_to_lab(source.dataset.read_image(image_id))
        inst, params = pixel_grid(ex.graph.segments, u_sp, lab, mask == cls,
                                  mask == VOID_LABEL,
                                  name=f"{source.name}:{source.class_name}/{image_id}/pixels")
        out.append((inst, params))
    return out
