"""A superpixel graph with one class's pixel counts: what the learners
train on (:meth:`segstruct.features.extraction.FeatureExtractor.examples`
makes them)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from segstruct.features.per_image import SuperpixelGraph
from segstruct.features.superpixels import majority_targets

__all__ = ["Example"]


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
