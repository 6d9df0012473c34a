"""Superpixels and their adjacency graph.

An image is over-segmented (SLIC by default; Felzenszwalb, the paper's choice,
as an option), and the segments become the nodes of an MRF. Everything here
is plain numpy in, numpy out.

SLIC is the default because it was chosen on held-out data (each shared data
set's other three chose it, and it scored better on the held-out set) and
because its superpixels barely move when an image is enlarged or gets an
imperceptible change (Felzenszwalb's move far more), which is what makes a
mask stable across photo sizes (docs/history/studies-2026-12.md).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
from skimage.segmentation import felzenszwalb, slic

from segstruct.features._checks import check_number

SUPERPIXEL_METHODS = ("felzenszwalb", "slic")


#: The Gaussian pre-smoothing that smooths nothing (pixels): its kernel is one
#: pixel wide. SLIC's default, so that it cuts as it did before it took a sigma.
_NO_SMOOTHING = 0.01

#: Per method, the fields it does not use and the value they are held at.
_UNUSED = {"felzenszwalb": {"n_segments": 50, "compactness": 10.0},
           "slic": {"scale": 200.0, "min_size": 1330}}


@dataclass(frozen=True)
class SuperpixelParams:
    """How to over-segment an image.

    Parameters
    ----------
    method : {"slic", "felzenszwalb"}
    sigma : Gaussian pre-smoothing of the image (pixels), used by both
        methods. The default, 0.01 (the paper's for Felzenszwalb), smooths
        nothing. For SLIC, smoothing makes the superpixels steadier, not
        the masks: at sigma 2 and 3 a horse image's superpixels move a little
        less under enlargement, a bl1 model's masks barely change, and held
        out sigma 2 (with Lanczos up-sampling) scored lower on the horses
        (docs/history/studies-2026-12.md).
    scale, min_size : Felzenszwalb's k and minimum component area (pixels),
        used only by ``method="felzenszwalb"``. The defaults are the paper's
        (k = 200, min area 1330: about 50 superpixels on a 300x500 image).
    n_segments, compactness : SLIC's target number of segments and
        colour/space trade-off, used only by ``method="slic"``. 80 segments
        give 55-80 superpixels after connectivity is enforced (the paper's
        ~50); compactness 20 is the least compact setting whose superpixels
        stay put when the image is enlarged (a less compact one moves
        clearly more; a more compact one moves less, and a horse model's
        masks of an image and its enlarged copies then agree a little more,
        but it is not shown to score as well on held-out data:
        docs/history/studies-2026-12.md).

    The fields a method does not use are held at fixed values (whatever is
    given), so that two settings are equal exactly when they cut images
    alike.
    """

    method: str = "slic"
    scale: float = 200.0
    sigma: float = 0.01
    min_size: int = 1330
    n_segments: int = 80
    compactness: float = 20.0

    def __post_init__(self):
        if self.method not in SUPERPIXEL_METHODS:
            raise ValueError(
                f"unknown superpixel method {self.method!r}; "
                f"choose one of {', '.join(SUPERPIXEL_METHODS)}")
        for name, low, integer, inclusive in (
                ("scale", 0, False, False), ("sigma", 0, False, True),
                ("min_size", 1, True, True), ("n_segments", 1, True, True),
                ("compactness", 0, False, False)):
            check_number("SuperpixelParams", name, getattr(self, name), low,
                         integer=integer, inclusive=inclusive)
        # The other method's fields are then set to fixed values: two settings
        # that cut images alike are equal, and so are their cache keys and the
        # features a model records (a Felzenszwalb setting made before SLIC
        # became the default held SLIC's fields at these values).
        for name, value in _UNUSED[self.method].items():
            object.__setattr__(self, name, value)

    def to_dict(self) -> dict:
        return asdict(self)

    def describe(self) -> str:
        """The setting in words, for tables: e.g. "SLIC, 80 segments,
        compactness 20"."""
        if self.method == "slic":
            smoothing = f", sigma {self.sigma:g}" if self.sigma != _NO_SMOOTHING else ""
            return (f"SLIC, {self.n_segments} segments, compactness {self.compactness:g}"
                    + smoothing)
        return (f"Felzenszwalb, k {self.scale:g}, sigma {self.sigma:g}, minimum area "
                f"{self.min_size} px")


def segment(image: np.ndarray, params: SuperpixelParams | None = None) -> np.ndarray:
    """Over-segment an RGB image into superpixels.

    Parameters
    ----------
    image : (H, W, 3) uint8 array, RGB.
    params : SuperpixelParams, optional (SLIC, 80 segments, compactness 20).

    Returns
    -------
    segments : (H, W) int32 array
        Superpixel index of every pixel, contiguous 0 .. N-1, numbered in
        raster order of each segment's first pixel (so the numbering does not
        depend on the segmentation library's internal order).
    """
    params = params or SuperpixelParams()
    image = np.asarray(image)
    if image.ndim != 3 or image.shape[2] != 3 or image.dtype != np.uint8:
        raise ValueError(
            f"expected an (H, W, 3) uint8 RGB image, got shape {image.shape} "
            f"and dtype {image.dtype}")
    if params.method == "felzenszwalb":
        # scikit-image divides scale by 255 internally, so k keeps the
        # meaning it has for 0..255 images in Felzenszwalb & Huttenlocher.
        raw = felzenszwalb(image, scale=params.scale, sigma=params.sigma,
                           min_size=params.min_size)
    else:
        raw = slic(image, n_segments=params.n_segments,
                   compactness=params.compactness, sigma=params.sigma, start_label=0,
                   enforce_connectivity=True)
    return relabel_raster_order(raw)


def relabel_raster_order(raw: np.ndarray) -> np.ndarray:
    """Renumber a label image to 0 .. N-1 in raster order of first pixels.

    Parameters
    ----------
    raw : (H, W) integer array.

    Returns
    -------
    (H, W) int32 array with the same partition.
    """
    flat = np.asarray(raw).ravel()
    _, first, inverse = np.unique(flat, return_index=True, return_inverse=True)
    rank = np.empty(first.size, dtype=np.int32)
    rank[np.argsort(first, kind="stable")] = np.arange(first.size, dtype=np.int32)
    return rank[inverse].reshape(np.shape(raw))


def adjacency(segments: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Adjacency graph of a label image with shared boundary lengths.

    Two superpixels are adjacent when some pair of 4-connected pixels
    straddles them; the boundary length is the number of such pixel pairs
    (in pixel units).

    Parameters
    ----------
    segments : (H, W) integer array, values 0 .. N-1.

    Returns
    -------
    edges : (E, 2) int64 array
        Each adjacent pair once, ``edges[:, 0] < edges[:, 1]``, sorted
        lexicographically.
    boundary : (E,) float64 array
        Shared boundary length of each edge (pixels), always > 0.
    """
    segments = np.asarray(segments)
    if segments.ndim != 2:
        raise ValueError(f"segments must be 2-D, got shape {segments.shape}")
    pairs = [
        (segments[:, :-1].ravel(), segments[:, 1:].ravel()),   # horizontal
        (segments[:-1, :].ravel(), segments[1:, :].ravel()),   # vertical
    ]
    a = np.concatenate([p[0] for p in pairs]).astype(np.int64)
    b = np.concatenate([p[1] for p in pairs]).astype(np.int64)
    differ = a != b
    lo = np.minimum(a[differ], b[differ])
    hi = np.maximum(a[differ], b[differ])
    if lo.size == 0:
        return np.zeros((0, 2), np.int64), np.zeros(0, np.float64)
    n = int(segments.max()) + 1
    # One integer code per unordered pair lets np.unique count lengths.
    codes, length = np.unique(lo * n + hi, return_counts=True)
    edges = np.stack([codes // n, codes % n], axis=1)
    return edges, length.astype(np.float64)


def pixel_counts(segments: np.ndarray, target: np.ndarray, void: np.ndarray | None,
                 n_superpixels: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Non-void foreground and background pixel counts per superpixel.

    These two counts are all the pixel-level scoring needs: painting a
    superpixel labelling ``y`` back to pixels gives
    ``TP = fg @ y``, ``FP = bg @ y``, ``FN = fg @ (1 - y)``.

    Parameters
    ----------
    segments : (H, W) integer array, values 0 .. N-1.
    target : (H, W) bool array, pixel belongs to the class.
    void : (H, W) bool array or None, pixel is ignored (VOC label 255).
    n_superpixels : int, optional; defaults to ``segments.max() + 1``.

    Returns
    -------
    fg, bg : (N,) int64 arrays.
    """
    segments = np.asarray(segments)
    target = np.asarray(target, dtype=bool)
    if target.shape != segments.shape:
        raise ValueError(f"target shape {target.shape} != segments shape {segments.shape}")
    valid = np.ones_like(target) if void is None else ~np.asarray(void, dtype=bool)
    if valid.shape != segments.shape:
        raise ValueError(f"void shape {valid.shape} != segments shape {segments.shape}")
    n = int(segments.max()) + 1 if n_superpixels is None else int(n_superpixels)
    flat = segments.ravel()
    fg = np.bincount(flat[(target & valid).ravel()], minlength=n)
    bg = np.bincount(flat[(~target & valid).ravel()], minlength=n)
    return fg.astype(np.int64), bg.astype(np.int64)


def majority_targets(fg: np.ndarray, bg: np.ndarray) -> np.ndarray:
    """Superpixel target = majority label of its non-void pixels.

    A tie (including a void-only superpixel, 0 = 0) goes to background, the
    label that costs nothing when such a superpixel carries weight 0.

    Parameters
    ----------
    fg, bg : (N,) integer arrays of non-void foreground / background pixels.

    Returns
    -------
    (N,) uint8 array in {0, 1}.
    """
    return (np.asarray(fg) > np.asarray(bg)).astype(np.uint8)


def paint(segments: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Paint per-superpixel values (a labelling) back to pixels.

    Parameters
    ----------
    segments : (H, W) integer array, values 0 .. N-1.
    y : (N,) array of per-superpixel values.

    Returns
    -------
    (H, W) array, ``y[segments]``, with y's dtype.
    """
    y = np.asarray(y)
    segments = np.asarray(segments)
    if segments.size and segments.max() >= y.shape[0]:
        raise ValueError(
            f"segments reference superpixel {segments.max()} but y has {y.shape[0]} entries")
    return y[segments]


def superpixel_means(values: np.ndarray, segments: np.ndarray, n: int) -> np.ndarray:
    """Mean of per-pixel vectors over each superpixel.

    Parameters
    ----------
    values : (H, W, C) array.
    segments : (H, W) int superpixel map.

    Returns
    -------
    (N, C) float64.
    """
    flat = segments.ravel()
    count = np.maximum(np.bincount(flat, minlength=n), 1).astype(np.float64)
    chans = values.reshape(-1, values.shape[-1])
    return np.stack([np.bincount(flat, weights=chans[:, c], minlength=n) / count
                     for c in range(chans.shape[1])], axis=1)
