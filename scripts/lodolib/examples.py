"""A class's examples (graphs and pixel counts): from its data set, or from the
compact arrays that ``lodo.py export`` writes for a machine without the images."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from segstruct.datasets import VOCDataset
from segstruct.features.config import FeatureConfig
from segstruct.features.extraction import FeatureExtractor
from segstruct.features.topdown.detector import DetectorParams
from segstruct.features.topdown.training import TooFewObjects

from lodolib.settings import feature_config, plan


# The grid's fits need only the graphs and their counts: ``export`` writes them
# (from the cache) as compact arrays that travel to a machine without the
# images, where ``run --data FOLDER`` reads them instead of the data sets.

def _examples(root: Path, td: str, norm: str, class_name: str, split: str, n_jobs: int = 1,
              features: str = "as-given"):
    """(graphs, pixel counts) of a split: from the exported arrays when
    ``root`` is such a folder (``export``), else from the data set."""
    if (root / "EXPORTED").exists():
        return _exported(root, td, norm, class_name, split)
    extractor = FeatureExtractor(VOCDataset(root), feature_config(td, norm, features),
                                 n_jobs=n_jobs, progress=False)
    ex = extractor.examples(split, class_name)
    return [e.graph for e in ex], [e.pixel_counts for e in ex]


def _export_graphs(graphs, path: Path) -> None:
    from scipy import sparse
    n_words = FeatureConfig().n_words
    unary = np.concatenate([g.unary for g in graphs])
    words = sparse.csr_matrix(unary[:, :n_words])          # exact: float64
    np.savez_compressed(
        path, nodes=np.array([g.unary.shape[0] for g in graphs]),
        n_edges=np.array([len(g.edges) for g in graphs]),
        words_data=words.data, words_indices=words.indices.astype(np.int32),
        words_indptr=words.indptr.astype(np.int64), dense=unary[:, n_words:],
        edges=np.concatenate([g.edges for g in graphs]),
        pairwise=np.concatenate([g.pairwise for g in graphs]))


def export(args) -> None:
    """The graphs (bottom-up, words L1) of each data set's splits as
    TO/<data set>/<split>.npz, and each planned class's pixel counts and
    top-down blocks as TO/<data set>/<class>.<split>.npz."""
    to = Path(args.to)
    classes = plan(Path(args.data), args.datasets, args.min_images)
    width = DetectorParams().n_filters
    for name, names in classes.items():
        root = Path(args.data) / name
        (to / name).mkdir(parents=True, exist_ok=True)
        (to / name / "EXPORTED").write_text("arrays of scripts/lodo.py export\n")
        for split in ("train", "val"):
            for k, c in enumerate(names):
                X, Y = _examples(root, "off", "l1", c, split)
                if k == 0:
                    _export_graphs(X, to / name / f"{split}.npz")
                blocks = {}
                for td in args.top_down:
                    if td == "off":
                        continue
                    try:
                        Xt, _ = _examples(root, td, "l1", c, split)
                    except TooFewObjects:
                        continue
                    blocks[f"block_{td}"] = np.concatenate([g.unary[:, -width:] for g in Xt])
                np.savez_compressed(to / name / f"{c}.{split}.npz",
                                    counts=np.concatenate(Y), **blocks)
        print(f"exported {name}: {', '.join(names)}", flush=True)


def _exported(root: Path, td: str, norm: str, class_name: str, split: str):
    """``_examples`` from the arrays of ``export``."""
    from scipy import sparse

    from segstruct.features.descriptors import normalise_words
    from segstruct.feature_map import Graph
    with np.load(root / f"{split}.npz") as f:
        a = {k: f[k] for k in f.files}
    with np.load(root / f"{class_name}.{split}.npz") as f:
        a.update({k: f[k] for k in f.files})
    if td != "off" and f"block_{td}" not in a:
        raise TooFewObjects(f"{root.name}/{class_name}: no {td} block was exported")
    n_words = FeatureConfig().n_words
    words = sparse.csr_matrix((a["words_data"], a["words_indices"], a["words_indptr"]),
                              shape=(a["dense"].shape[0], n_words)).toarray()
    unary = np.hstack([words, a["dense"]] + ([a[f"block_{td}"]] if td != "off" else []))
    unary = normalise_words(unary, feature_config(td, norm))
    X, Y, start, e0 = [], [], 0, 0
    for n, e in zip(a["nodes"], a["n_edges"]):
        X.append(Graph(unary[start:start + n], a["edges"][e0:e0 + e], a["pairwise"][e0:e0 + e]))
        Y.append(a["counts"][start:start + n])
        start, e0 = start + n, e0 + e
    return X, Y
