"""Histogram-of-gradient feature maps and pyramids (Felzenszwalb et al.'s variant).

A HOG map has one 32-d vector per ``cell x cell`` pixel block: 18
contrast-sensitive orientations, 9 contrast-insensitive ones and 4 texture
energies, each normalised by the gradient energy of the four 2x2-cell blocks
around the cell and truncated at 0.2 (the 31-d "FHOG" of Felzenszwalb,
Girshick, McAllester & Ramanan, PAMI 2010), plus a 32nd "truncation" feature
that is 0 inside the image and 1 in the padding, so a filter can learn what
an object cut by the image border looks like.

Differences from the reference C code, for speed in numpy: each pixel votes
for its own cell only (no bilinear spread to the four nearest cells), and
orientation votes are split linearly between the two nearest bins.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

import cv2
import numpy as np
from numpy.lib.stride_tricks import as_strided

from segstruct.io.process_memo import MEMO

N_SENSITIVE = 18           # orientations over 360 degrees
N_INSENSITIVE = 9          # over 180 degrees
HOG_DIM = N_SENSITIVE + N_INSENSITIVE + 4 + 1
TRUNCATION = HOG_DIM - 1   # index of the padding indicator
_CLIP = 0.2                # Dalal & Triggs' clipping of normalised votes
_EPS = 1e-4


def hog_map(image: np.ndarray, cell: int = 8) -> np.ndarray:
    """HOG feature map of an image.

    Parameters
    ----------
    image : (H, W, 3) or (H, W) array
        uint8 (0..255) or float (0..1) intensities.
    cell : int
        Cell side in pixels.

    Returns
    -------
    features : (H // cell, W // cell, 32) float32 array
        Cell (r, c) covers pixels ``[r*cell, (r+1)*cell) x [c*cell, (c+1)*cell)``;
        pixels past the last whole cell are dropped. Channels: 18 signed
        orientations (bin k centred on angle ``k * 20`` degrees, measured
        from the +x axis towards +y, i.e. image rows downwards), 9 unsigned
        ones, 4 texture energies, and the truncation feature (0 here).
        An image smaller than one cell gives a map with a zero dimension.
    """
    img = np.asarray(image)
    img = img.astype(np.float32) / 255.0 if img.dtype == np.uint8 else img.astype(np.float32)
    if img.ndim == 2:
        img = img[:, :, None]
    h, w = img.shape[:2]
    rows, cols = h // cell, w // cell
    if rows == 0 or cols == 0:
        return np.zeros((rows, cols, HOG_DIM), np.float32)
    # Central differences [-1, 0, 1] (replicated border), per channel; the
    # channel with the largest gradient wins, as in Dalal & Triggs (colour
    # edges count). Elementwise selects: argmax over a channel axis is
    # several times slower.
    crop = img[:rows * cell, :cols * cell]
    dx = cv2.Sobel(crop, cv2.CV_32F, 1, 0, ksize=1, borderType=cv2.BORDER_REPLICATE)
    dy = cv2.Sobel(crop, cv2.CV_32F, 0, 1, ksize=1, borderType=cv2.BORDER_REPLICATE)
    if dx.ndim == 3:
        gx, gy = dx[:, :, 0], dy[:, :, 0]
        best = gx * gx + gy * gy
        for ch in range(1, dx.shape[2]):
            cx, cy = dx[:, :, ch], dy[:, :, ch]
            m2 = cx * cx + cy * cy
            wins = m2 > best
            gx, gy = np.where(wins, cx, gx), np.where(wins, cy, gy)
            best = np.maximum(best, m2)
        dx, dy = gx, gy
    mag, angle = cv2.cartToPolar(np.ascontiguousarray(dx), np.ascontiguousarray(dy))
    # Hard assignment to the nearest of 18 bins, as the reference code does
    # (one histogram pass instead of two).
    bins = np.rint(angle * np.float32(N_SENSITIVE / (2 * np.pi))).astype(np.int32)
    bins[bins >= N_SENSITIVE] -= N_SENSITIVE
    cell_of = ((np.arange(rows * cell, dtype=np.int32) // cell)[:, None] * cols
               + (np.arange(cols * cell, dtype=np.int32) // cell)[None, :])
    hist = np.bincount((cell_of * N_SENSITIVE + bins).ravel(), mag.ravel(),
                       minlength=rows * cols * N_SENSITIVE).reshape(rows, cols, N_SENSITIVE)
    return _normalise(hist).astype(np.float32)


def _normalise(hist: np.ndarray) -> np.ndarray:
    """FHOG block normalisation of (rows, cols, 18) cell histograms."""
    rows, cols = hist.shape[:2]
    unsigned = hist[:, :, :N_INSENSITIVE] + hist[:, :, N_INSENSITIVE:]
    energy = np.sum(unsigned * unsigned, axis=2)
    # Energy of the 2x2 block whose top-left cell is (r, c); the map is
    # edge-padded so that border cells have four blocks too.
    e = np.pad(energy, 1, mode="edge")
    block = e[:-1, :-1] + e[1:, :-1] + e[:-1, 1:] + e[1:, 1:]     # (rows+1, cols+1)
    # the four blocks containing cell (r, c) start at (r-1..r, c-1..c) + 1 pad
    norms = [1.0 / np.sqrt(block[a:a + rows, b:b + cols] + _EPS)
             for a in (0, 1) for b in (0, 1)]
    out = np.zeros((rows, cols, HOG_DIM), np.float64)
    for k, norm in enumerate(norms):
        sens = np.minimum(hist * norm[:, :, None], _CLIP)
        insens = np.minimum(unsigned * norm[:, :, None], _CLIP)
        out[:, :, :N_SENSITIVE] += 0.5 * sens
        out[:, :, N_SENSITIVE:N_SENSITIVE + N_INSENSITIVE] += 0.5 * insens
        # texture: total clipped energy under each normalisation
        out[:, :, N_SENSITIVE + N_INSENSITIVE + k] = 0.2357 * sens.sum(axis=2)
    return out


def pad_map(features: np.ndarray, pad_rows: int, pad_cols: int) -> np.ndarray:
    """Pad a HOG map with cells that are zero but for the truncation feature.

    Parameters
    ----------
    features : (R, C, 32) array
    pad_rows, pad_cols : int >= 0, cells added on each side.

    Returns
    -------
    (R + 2 pad_rows, C + 2 pad_cols, 32) array of the same dtype.
    """
    rows, cols = features.shape[:2]
    out = np.zeros((rows + 2 * pad_rows, cols + 2 * pad_cols) + features.shape[2:],
                   features.dtype)
    out[:, :, TRUNCATION] = 1.0
    out[pad_rows:pad_rows + rows, pad_cols:pad_cols + cols] = features
    return out


@dataclass
class Pyramid:
    """HOG maps of an image at a geometric series of scales.

    Attributes
    ----------
    levels : list of (R_l, C_l, 32) float32 arrays, padded by ``pad`` cells.
    scales : (L,) float64, image magnification of each level (largest first).
    cell : int, cell side in pixels at the level's scale.
    pad : (2,) int, cells of padding (rows, cols) on each side of every level.
    image_shape : (H, W) of the image.
    interval : int, levels per octave (level l + interval has half the scale).

    Cell (r, c) of level l covers image pixels from
    ``((r - pad[0]) * cell / scales[l], (c - pad[1]) * cell / scales[l])``.
    """

    levels: list
    scales: np.ndarray
    cell: int
    pad: tuple
    image_shape: tuple
    interval: int

    def step(self, level: int) -> float:
        """Image pixels per cell at ``level``."""
        return self.cell / float(self.scales[level])


def pyramid_scales(image_shape, cell: int, interval: int, max_scale: float,
                   min_cells: int) -> np.ndarray:
    """Scales ``max_scale * 2**(-i / interval)`` down to where the image is
    ``min_cells`` cells on its shorter side.

    Returns
    -------
    (L,) float64 array, largest first; at least one scale.
    """
    short = min(image_shape[:2])
    n = int(np.floor(interval * np.log2(max_scale * short / (cell * max(min_cells, 1)))) + 1)
    return max_scale * 2.0 ** (-np.arange(max(n, 1)) / interval)


def feature_pyramid(image: np.ndarray, cell: int = 8, interval: int = 5,
                    max_scale: float = 1.0, min_cells: int = 3,
                    pad=(0, 0), scales=None, memo: "dict | SharedMaps | None" = None) -> Pyramid:
    """HOG maps of an image resized to each scale of ``pyramid_scales``.

    Parameters
    ----------
    image : (H, W, 3) uint8 array.
    cell : int, cell side in pixels.
    interval : int, levels per octave.
    max_scale : float, magnification of the first (finest) level. A level
        above scale 1 is computed with half cells on the image at half that
        scale, so 2 does not upsample the image.
    min_cells : int, the coarsest level is at least this many cells on its
        shorter side (a filter of that size still fits).
    pad : (rows, cols) cells of padding on each side (see ``pad_map``).
    scales : sequence of floats, optional
        Compute these scales instead of the series (the detector's training
        looks at an object only at the few scales that fit it).
    memo : dict or SharedMaps, optional
        HOG maps of this same image made by earlier calls, by resized size
        and cell; read, and filled with the maps this call makes. A map
        depends on the image, its resized size and the cell only, so
        detectors with other filters (and so other pads and levels) share
        it: the cross-fitted detectors that all score one image.

    Returns
    -------
    Pyramid
    """
    image = np.asarray(image)
    h, w = image.shape[:2]
    if scales is None:
        scales = pyramid_scales((h, w), cell, interval, max_scale, min_cells)
    levels = []
    for s in scales:
        # Above scale 1, halve both the magnification and the cell (DPM's
        # trick): nearly the same cells as upsampling, at a quarter of the
        # pixels.
        c, s_img = (cell // 2, s / 2) if s > 1 and cell % 2 == 0 else (cell, s)
        size = (max(1, int(round(w * s_img))), max(1, int(round(h * s_img))))
        # area averaging when shrinking avoids aliasing; linear when growing
        interp = cv2.INTER_AREA if s_img < 1 else cv2.INTER_LINEAR
        key = (size, c, interp)
        features = None if memo is None else memo.get(key)
        if features is None:
            resized = image if size == (w, h) else cv2.resize(image, size, interpolation=interp)
            features = hog_map(resized, c)
            if memo is not None:
                memo[key] = features
        levels.append(pad_map(features, int(pad[0]), int(pad[1])))
    return Pyramid(levels, np.asarray(scales, np.float64), cell,
                   (int(pad[0]), int(pad[1])), (h, w), interval)


class SharedMaps:
    """A ``memo`` for :func:`feature_pyramid`: the HOG maps of one image,
    made by this object's calls or kept in the process memo by earlier
    tasks (:mod:`segstruct.io.process_memo`, while it is shared).

    The image is known by a digest of its pixels, so the maps of the same
    image read again (a detector's training reads each image from disk
    every round) are found. Maps the process memo has no room for are
    still kept here, for the life of this object.

    Parameters
    ----------
    image : (H, W, 3) uint8 array.
    """

    def __init__(self, image: np.ndarray):
        image = np.ascontiguousarray(image)
        self._key = ("hog", hashlib.blake2b(image.data, digest_size=16).digest(),
                     image.shape, image.dtype.str)
        self._own: dict = {}

    def get(self, key):
        found = self._own.get(key)
        return MEMO.get(self._key + key) if found is None else found

    def __setitem__(self, key, maps: np.ndarray) -> None:
        self._own[key] = maps
        MEMO.put(self._key + key, maps)


def shared_maps(image: np.ndarray) -> SharedMaps | None:
    """A :class:`SharedMaps` of ``image`` while the process memo is shared
    (:func:`segstruct.io.process_memo.sharing`), else None."""
    return SharedMaps(image) if MEMO.active else None


def correlate(features: np.ndarray, filters: np.ndarray) -> np.ndarray:
    """Dense cross-correlation of same-sized filters with a feature map ("valid").

    ``out[y, x, f] = sum_{i, j, k} features[y + i, x + j, k] * filters[f, i, j, k]``.

    One matrix product gives every cell's dot product with every filter
    cell, ``Z[y, x, i, j, f]``; shifted sums of its ``h * w`` slices then add
    them up. That is the flop count of the direct method in a single BLAS
    call, which beats per-channel 2-D filtering (32 channels x filters calls)
    and FFTs (a transform per filter per level) at these sizes.

    Parameters
    ----------
    features : (R, C, D) array.
    filters : (F, h, w, D) array.

    Returns
    -------
    (R - h + 1, C - w + 1, F) float32 array (a zero dimension when a filter
    does not fit).
    """
    features = np.asarray(features, np.float32)
    filters = np.asarray(filters, np.float32)
    n, fh, fw, d = filters.shape
    rows, cols = features.shape[0] - fh + 1, features.shape[1] - fw + 1
    if rows <= 0 or cols <= 0 or n == 0:
        return np.zeros((max(rows, 0), max(cols, 0), n), np.float32)
    # (R*C, D) @ (D, h*w*F)
    kernel = np.ascontiguousarray(filters.transpose(3, 1, 2, 0).reshape(d, fh * fw * n))
    z = (features.reshape(-1, d) @ kernel).reshape(features.shape[0], features.shape[1],
                                                   fh, fw, n)
    if cols < 2:
        return tap_sums(z, rows, cols)
    # The shifted slices as one view, v[y, x, i, j] = z[y + i, x + j, i, j], summed
    # in one call instead of h * w: a third to a half less time for a root
    # filter (50 taps), the same sums. numpy adds a non-innermost reduced axis
    # element by element in index order, and with two or more columns the
    # x axis (the smallest stride) stays innermost, so each output adds its
    # taps in the order of tap_sums; with one column the taps would become
    # the inner loop, summed pairwise (test_hog checks both paths bit for bit).
    s_r, s_c, s_i, s_j, s_f = z.strides
    taps = as_strided(z, (rows, cols, fh, fw, n), (s_r, s_c, s_r + s_i, s_c + s_j, s_f),
                      writeable=False)
    return taps.sum(axis=(2, 3), dtype=np.float32)


def tap_sums(z: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """``out[y, x, f] = sum_{i, j} z[y + i, x + j, i, j, f]``, the taps added
    one at a time in (i, j) order from 0: the reference summation of
    :func:`correlate`.

    Parameters
    ----------
    z : (R, C, h, w, F) float32, every cell's dot product with every filter cell.
    rows, cols : ``R - h + 1``, ``C - w + 1``.

    Returns
    -------
    (rows, cols, F) float32
    """
    fh, fw, n = z.shape[2:]
    out = np.zeros((rows, cols, n), np.float32)
    for i in range(fh):
        for j in range(fw):
            out += z[i:i + rows, j:j + cols, i, j]
    return out
