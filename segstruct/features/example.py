"""A superpixel graph with one class's pixel counts: what the learners
train on (:meth:`segstruct.features.extraction.FeatureExtractor.examples`
makes them, with ``packed_masks`` and ``paired_examples``)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from segstruct.datasets.voc import VOID_LABEL, DatasetError, class_index
from segstruct.features.per_image import SuperpixelGraph
from segstruct.features.superpixels import majority_targets, pixel_counts

__all__ = ["Example", "packed_masks", "paired_examples"]


@dataclass
class Example:
    """A superpixel graph with the targets of one class.

    Attributes
    ----------
    graph : SuperpixelGraph
    fg, bg : (N,) int64 non-void foreground / background pixels per superpixel.
    """

    graph: SuperpixelGraph
    fg: np.ndarray
    bg: np.ndarray

    @property
    def targets(self) -> np.ndarray:
        """(N,) uint8 majority label of each superpixel's non-void pixels."""
        return majority_targets(self.fg, self.bg)

    @property
    def areas(self) -> np.ndarray:
        """(N,) int64 non-void pixels per superpixel (area-mode node weights)."""
        return self.fg + self.bg

    @property
    def pixel_counts(self) -> np.ndarray:
        """(N, 2) int64 [fg, bg] pixel counts: the label spec learners take."""
        return np.stack([self.fg, self.bg], axis=1)

    @property
    def void_only(self) -> np.ndarray:
        """(N,) bool, superpixel has no non-void pixel (weight 0)."""
        return self.areas == 0

    def node_weights(self, mode: str = "count") -> np.ndarray:
        """Node weights a_i: 1 per non-void superpixel ("count") or its area ("area")."""
        if mode == "count":
            return (~self.void_only).astype(np.float64)
        if mode == "area":
            return self.areas.astype(np.float64)
        raise ValueError(f"unknown node weight mode {mode!r}; use 'count' or 'area'")


def packed_masks(dataset, ids, class_name: str) -> dict:
    """Every image's mask of one class, read and checked (with its image's
    header) before any superpixel is made, so that a bad file stops a run
    at once.

    Returns
    -------
    dict id -> ((H, W), packed class bits, packed void bits): two bits a
    pixel instead of a byte, so a split's masks stay small.
    """
    cls = class_index(class_name)
    masks = {}
    for image_id in ids:
        raw = dataset.read_mask(image_id)
        dataset.check_sizes(image_id, dataset.image_size(image_id), raw.shape)
        masks[image_id] = (raw.shape, np.packbits(raw == cls), np.packbits(raw == VOID_LABEL))
    return masks


def paired_examples(dataset, graphs, masks: dict) -> list[Example]:
    """Each graph with its image's pixel counts from ``packed_masks``."""
    out = []
    for graph in graphs:
        shape, target, void = masks[graph.image_id]
        if shape != graph.shape:
            # only a cache entry of another image can get here
            raise DatasetError(
                f"mask {dataset.mask_path(graph.image_id)} is {shape[0]}x{shape[1]} "
                f"but the superpixels of image {dataset.image_path(graph.image_id)} "
                f"are {graph.shape[0]}x{graph.shape[1]}")
        size = shape[0] * shape[1]
        fg, bg = pixel_counts(
            graph.segments, np.unpackbits(target, count=size).reshape(shape).astype(bool),
            np.unpackbits(void, count=size).reshape(shape).astype(bool), graph.n_nodes)
        out.append(Example(graph, fg, bg))
    return out
