"""A star-model object detector (Felzenszwalb et al.'s DPM, cut down): the model and its inference.

Each component is a root filter on HOG cells plus parts: filters at twice
the root's resolution, each at an anchor relative to the root, free to move
at a quadratic cost. A root placed at cell ``p`` of pyramid level ``l``
scores

    S(p) = R(p) + sum_i max_d [ P_i(2p + v_i + d) - c_i . (dx, dx^2, dy, dy^2) ] + b

with R and P_i the filters' dense responses (``hog.correlate``) at level l
and at level l - interval (twice the scale), v_i the anchors and c_i the
deformation weights. The max over displacements d is taken inside a window
of +-``max_displacement`` part cells, one axis at a time (the cost is
separable), instead of DPM's unbounded distance transform: the same answer
whenever the quadratic cost makes far moves lose, and plain numpy
(``transform.py``).

Training lives in ``training.py``; this module only scores.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from segstruct.features.topdown.boxes import non_maximum_suppression
from segstruct.features.topdown.hog import (HOG_DIM, Pyramid, correlate, feature_pyramid,
                                            pad_map, shared_maps)
# the settings have their own module; they stay importable from here
from segstruct.features.topdown.params import DetectorParams
from segstruct.features.topdown.transform import (bounded_distance_transform,
                                                  placed_cells, placed_distance_transform)

__all__ = ["DEFORMATION_DIM", "DetectorParams", "Component", "bounded_distance_transform",
           "LevelScores", "Detector", "ConfidenceMaps"]

DEFORMATION_DIM = 4   # (dx, dx^2, dy, dy^2)


@dataclass
class Component:
    """One component of the star model.

    Attributes
    ----------
    root : (h, w, 32) float32 root filter.
    parts : (P, s, s, 32) float32 part filters (P may be 0).
    anchors : (P, 2) int64 (row, col) of each part's top-left corner, in part
        cells (twice the root's resolution) from the root's top-left corner.
    deformation : (P, 4) float64 cost weights of (dx, dx^2, dy, dy^2).
    bias : float, added to every score (already multiplied by the bias
        feature).
    """

    root: np.ndarray
    parts: np.ndarray
    anchors: np.ndarray
    deformation: np.ndarray
    bias: float

    @property
    def n_parts(self) -> int:
        return int(self.parts.shape[0])


@dataclass
class LevelScores:
    """Scores of one component at one root level.

    Attributes
    ----------
    score : (Ho, Wo) float32 total score of a root at each cell (-inf where
        a part would fall off the part level).
    part_rows, part_cols : (P, Ho, Wo) int64 each part's chosen top-left cell
        in the part level (which is padded by ``2 * pad``).
    """

    score: np.ndarray
    part_rows: np.ndarray
    part_cols: np.ndarray


class Detector:
    """A trained multi-component star-model detector.

    Parameters
    ----------
    params : DetectorParams
    components : list of Component
    """

    def __init__(self, params: DetectorParams, components: list):
        self.params = params
        self.components = list(components)

    # -- pyramids -------------------------------------------------------------
    @property
    def pad(self) -> tuple:
        """Cells of padding on each side of every level: enough for a root
        to hang half off the image (objects cut by the border)."""
        h = max(c.root.shape[0] for c in self.components)
        w = max(c.root.shape[1] for c in self.components)
        return (h // 2 + 1, w // 2 + 1)

    def pyramid(self, image: np.ndarray, scales=None, memo=None) -> Pyramid:
        """The HOG pyramid the detector scores (levels padded by ``pad``);
        ``memo``: the image's HOG maps shared between calls
        (``feature_pyramid``), by default those of the process memo while
        it is shared (``hog.shared_maps``)."""
        p = self.params
        if memo is None and scales is None:
            memo = shared_maps(image)
        min_cells = min(min(c.root.shape[:2]) for c in self.components)
        return feature_pyramid(image, p.cell, p.interval, p.max_scale, min_cells,
                               self.pad, scales=scales, memo=memo)

    def root_levels(self, pyramid: Pyramid) -> list:
        """Indices of the levels roots are placed on (those with a part level)."""
        first = self.params.interval if self.params.n_parts else 0
        return list(range(first, len(pyramid.levels)))

    def part_level(self, pyramid: Pyramid, level: int) -> np.ndarray:
        """Level ``level - interval`` padded by another ``pad``, so that a
        root at cell p puts part i at cell ``2p + anchor_i`` exactly."""
        pr, pc = pyramid.pad
        return pad_map(pyramid.levels[level - pyramid.interval], pr, pc)

    # -- scoring --------------------------------------------------------------
    def score_level(self, pyramid: Pyramid, level: int, part_map=None) -> list:
        """``LevelScores`` of every component at one root level of a pyramid.

        Parameters
        ----------
        pyramid : Pyramid from ``self.pyramid``.
        level : int, a root level.
        part_map : the ``part_level`` array, optional (computed if needed).
        """
        if part_map is None and self.params.n_parts:
            part_map = self.part_level(pyramid, level)
        return self.score_maps(pyramid.levels[level], part_map)

    def score_maps(self, feats: np.ndarray, part_map) -> list:
        """``LevelScores`` of every component on a root-level HOG map and its
        part-level map (``part_level``; None when there are no parts)."""
        out = []
        for comp in self.components:
            score = correlate(feats, comp.root[None])[:, :, 0] + np.float32(comp.bias)
            ho, wo = score.shape
            rows = np.zeros((comp.n_parts, ho, wo), np.int64)
            cols = np.zeros((comp.n_parts, ho, wo), np.int64)
            if comp.n_parts and ho and wo:
                responses = correlate(part_map, comp.parts).transpose(2, 0, 1)
                # part i of a root at cell (r, q) sits at (2r, 2q) + anchor i,
                # clamped to the map (and scored -inf there); the transform is
                # taken only at those cells
                best, dy, dx = placed_distance_transform(
                    responses, comp.deformation, self.params.max_displacement,
                    comp.anchors, (ho, wo))
                qr, qc, inside = placed_cells(comp.anchors, (ho, wo), responses.shape[1:])
                placed = np.where(inside, best, -np.inf)
                for i in range(comp.n_parts):   # added in part order, as the scores always were
                    score = score + placed[i]
                rows = qr + dy
                cols = qc + dx
            out.append(LevelScores(score.astype(np.float32), rows, cols))
        return out

    def root_boxes(self, pyramid: Pyramid, level: int, component: int, rows, cols):
        """Image boxes (x0, y0, x1, y1) of roots at level cells (rows, cols).

        Returns
        -------
        (K, 4) float64 array, pixels; may extend past the image.
        """
        step = pyramid.step(level)
        h, w = self.components[component].root.shape[:2]
        pr, pc = pyramid.pad
        y0 = (np.asarray(rows) - pr) * step
        x0 = (np.asarray(cols) - pc) * step
        return np.stack([x0, y0, x0 + w * step, y0 + h * step], axis=-1).reshape(-1, 4)

    def part_boxes(self, pyramid: Pyramid, level: int, component: int, rows, cols):
        """Image boxes of parts at part-level cells (rows, cols) (any shape).

        Returns
        -------
        (..., 4) float64 array, pixels.
        """
        step = pyramid.step(level) / 2.0
        s = self.components[component].parts.shape[1]
        pr, pc = pyramid.pad
        y0 = (np.asarray(rows) - 2 * pr) * step
        x0 = (np.asarray(cols) - 2 * pc) * step
        return np.stack([x0, y0, x0 + s * step, y0 + s * step], axis=-1)

    # -- detection ------------------------------------------------------------
    def detect(self, image: np.ndarray, threshold: float = -1.0, return_parts: bool = False,
               clip: bool = True, pyramid: Pyramid | None = None):
        """Detections after non-maximum suppression.

        Parameters
        ----------
        image : (H, W, 3) uint8 RGB.
        threshold : float, keep roots scoring above this.
        return_parts : bool, also return each detection's part boxes.
        clip : bool, clip the boxes to the image (as evaluation wants them).
            Unclipped boxes keep the root filter's whole extent, which is
            what the average shapes must be cropped under: the features put
            the shape there, also where it hangs off the image. Suppression
            compares the clipped boxes either way.
        pyramid : ``self.pyramid(image)``, when the caller has it.

        Returns
        -------
        detections : (K, 6) float64 ``[x0, y0, x1, y1, score, component]``,
            boxes in pixels (clipped to the image with ``clip``), best score
            first, at most ``params.max_detections``.
        parts : (K, P, 4) float64 part boxes (not clipped), only with
            ``return_parts``.
        """
        if pyramid is None:
            pyramid = self.pyramid(image)
        box_list: list[np.ndarray] = []
        score_list: list[np.ndarray] = []
        comp_list: list[np.ndarray] = []
        parts: list[np.ndarray] = []
        n_parts = self.params.n_parts
        for level in self.root_levels(pyramid):
            for c, ls in enumerate(self.score_level(pyramid, level)):
                r, q = np.nonzero(ls.score > threshold)
                if r.size == 0:
                    continue
                box_list.append(self.root_boxes(pyramid, level, c, r, q))
                score_list.append(ls.score[r, q].astype(np.float64))
                comp_list.append(np.full(r.size, c, np.float64))
                if return_parts:
                    parts.append(self.part_boxes(pyramid, level, c, ls.part_rows[:, r, q].T,
                                                 ls.part_cols[:, r, q].T))
        h, w = image.shape[:2]
        if not box_list:
            empty = np.zeros((0, 6))
            return (empty, np.zeros((0, n_parts, 4))) if return_parts else empty
        boxes, scores = np.concatenate(box_list), np.concatenate(score_list)
        comps = np.concatenate(comp_list)
        # NMS is quadratic in the worst case: only the best few thousand compete
        cap = 20 * self.params.max_detections
        if scores.size > cap:
            top = np.argsort(-scores, kind="stable")[:cap]
            boxes, scores, comps = boxes[top], scores[top], comps[top]
            if return_parts:
                parts = [np.concatenate(parts)[top]]
        clipped = np.clip(boxes, 0, [w, h, w, h])
        keep = non_maximum_suppression(clipped, scores, self.params.nms_overlap)
        keep = keep[:self.params.max_detections]
        dets = np.column_stack([(clipped if clip else boxes)[keep], scores[keep], comps[keep]])
        if return_parts:
            return dets, np.concatenate(parts)[keep].reshape(len(keep), n_parts, 4)
        return dets

    def confidence_maps(self, image: np.ndarray, memo=None) -> "ConfidenceMaps":
        """Detection scores of every root and part position, per level.

        A root map holds the total score S(p) of a root at each cell. A
        part map holds, at each part-level cell, the best total score of a
        root that puts that part there (-inf where no root does): a part
        fires where a whole confident object puts it, which is what lets it
        vote for its share of the object's shape.

        ``memo``: the image's HOG maps shared between calls (``pyramid``).

        Returns
        -------
        ConfidenceMaps
        """
        pyramid = self.pyramid(image, memo=memo)
        levels = self.root_levels(pyramid)
        maps = ConfidenceMaps(image_shape=tuple(image.shape[:2]), pad=pyramid.pad,
                              steps=np.array([pyramid.step(lv) for lv in levels]),
                              root=[[] for _ in self.components],
                              parts=[[] for _ in self.components])
        for level in levels:
            part_map = self.part_level(pyramid, level) if self.params.n_parts else None
            for c, ls in enumerate(self.score_level(pyramid, level, part_map)):
                maps.root[c].append(ls.score)
                comp = self.components[c]
                shape = (0, 0)
                if comp.n_parts:
                    # a component has parts only when params.n_parts does: part_map is set
                    assert part_map is not None
                    shape = (part_map.shape[0] - comp.parts.shape[1] + 1,
                             part_map.shape[1] - comp.parts.shape[2] + 1)
                votes = np.full((comp.n_parts,) + shape, -np.inf, np.float32)
                valid = np.isfinite(ls.score)
                for i in range(comp.n_parts):
                    np.maximum.at(votes[i], (ls.part_rows[i][valid], ls.part_cols[i][valid]),
                                  ls.score[valid])
                maps.parts[c].append(votes)
        return maps

    # -- storage --------------------------------------------------------------
    def to_arrays(self) -> tuple[dict, dict]:
        """The detector as arrays and settings, for ``ArrayCache`` or npz.

        Returns
        -------
        arrays : dict of str -> numpy array (``c{k}_root``, ``c{k}_parts``,
            ``c{k}_anchors``, ``c{k}_deformation``, ``c{k}_bias``).
        settings : JSON-able dict (the parameters and a format version).
        """
        arrays = {}
        for k, comp in enumerate(self.components):
            arrays[f"c{k}_root"] = comp.root
            arrays[f"c{k}_parts"] = comp.parts
            arrays[f"c{k}_anchors"] = comp.anchors
            arrays[f"c{k}_deformation"] = comp.deformation
            arrays[f"c{k}_bias"] = np.array(comp.bias, np.float64)
        return arrays, {"format": 1, "params": self.params.to_dict(),
                        "n_components": len(self.components)}

    @classmethod
    def from_arrays(cls, arrays: dict, settings: dict) -> "Detector":
        """Inverse of ``to_arrays``."""
        if settings.get("format") != 1:
            raise ValueError(f"unknown detector format {settings.get('format')!r}")
        params = DetectorParams(**settings["params"])
        comps = []
        for k in range(int(settings["n_components"])):
            comps.append(Component(
                root=np.asarray(arrays[f"c{k}_root"], np.float32),
                parts=np.asarray(arrays[f"c{k}_parts"], np.float32).reshape(
                    -1, *np.asarray(arrays[f"c{k}_parts"]).shape[1:]),
                anchors=np.asarray(arrays[f"c{k}_anchors"], np.int64).reshape(-1, 2),
                deformation=np.asarray(arrays[f"c{k}_deformation"], np.float64).reshape(-1, 4),
                bias=float(arrays[f"c{k}_bias"])))
        return cls(params, comps)


@dataclass
class ConfidenceMaps:
    """Per-level score maps of a detector on one image (``Detector.confidence_maps``).

    Attributes
    ----------
    image_shape : (H, W)
    pad : (rows, cols) padding of the root levels, in cells.
    steps : (L,) image pixels per root cell at each root level (part cells
        are half as big).
    root : root[c][l] (Ho, Wo) float32 score of component c's root with its
        top-left corner at cell (r, q) of level l; its image position is
        ``((q - pad[1]) * steps[l], (r - pad[0]) * steps[l])``.
    parts : parts[c][l] (P, Hp, Wp) float32 score voted to each part position;
        the top-left corner of part cell (r, q) is at
        ``((q - 2 pad[1]) * steps[l] / 2, (r - 2 pad[0]) * steps[l] / 2)``.
    """

    image_shape: tuple
    pad: tuple
    steps: np.ndarray
    root: list
    parts: list

    def transform(self, level: int, part: bool) -> tuple:
        """(step, row offset, col offset): image pixel = (cell - offset) * step."""
        if part:
            return (self.steps[level] / 2.0, 2 * self.pad[0], 2 * self.pad[1])
        return (self.steps[level], self.pad[0], self.pad[1])


__all__ = ["DetectorParams", "Component", "Detector", "ConfidenceMaps", "LevelScores",
           "bounded_distance_transform", "HOG_DIM", "DEFORMATION_DIM"]
