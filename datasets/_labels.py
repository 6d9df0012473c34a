"""The VOC classes: their names, label values and colours, and reading a
colour-coded mask's labels."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ._imagefiles import DatasetError


VOC_CLASSES: tuple[str, ...] = (
    "background", "aeroplane", "bicycle", "bird", "boat", "bottle", "bus",
    "car", "cat", "chair", "cow", "diningtable", "dog", "horse", "motorbike",
    "person", "pottedplant", "sheep", "sofa", "train", "tvmonitor",
)
VOID_LABEL = 255

# Every label value a valid mask may hold (lookup table indexed by value).
VALID_LABEL = np.zeros(256, dtype=bool)
VALID_LABEL[: len(VOC_CLASSES)] = True
VALID_LABEL[VOID_LABEL] = True

def class_index(name: str) -> int:
    """Return the VOC label value of a class name.

    Parameters
    ----------
    name : str
        One of :data:`VOC_CLASSES` (exact match, case-insensitive).

    Returns
    -------
    int
        Index in 0..20, the pixel value of that class in the masks.

    Raises
    ------
    DatasetError
        If the name is not a VOC class; the message lists the valid names.
    """
    if isinstance(name, str):
        key = name.lower()
        if key in VOC_CLASSES:
            return VOC_CLASSES.index(key)
    raise DatasetError(
        f"unknown class name {name!r}; expected one of: {', '.join(VOC_CLASSES)}"
    )


def voc_class_name(name: str) -> str:
    """A class name in VOC's spelling ("Horse" -> "horse").

    Raises
    ------
    DatasetError
        If the name is not a VOC class (as :func:`class_index`).
    """
    return VOC_CLASSES[class_index(name)]


def voc_colormap() -> np.ndarray:
    """Return the standard PASCAL VOC colour map.

    Returns
    -------
    ndarray, shape (256, 3), dtype uint8
        RGB colour of each label value (0 black, 15 person pink, 255 cream...),
        as used by the VOC development kit for palette masks.
    """
    # Bit interleaving of the devkit's labelcolormap.m: bit k of the label goes
    # to bit 7 - k // 3 of channel k % 3.
    labels = np.arange(256)
    cmap = np.zeros((256, 3), dtype=np.uint8)
    for shift in range(8):
        for channel in range(3):
            bit = (labels >> (3 * shift + channel)) & 1
            cmap[:, channel] |= (bit << (7 - shift)).astype(np.uint8)
    return cmap

def void_message(mask_path: Path) -> str:
    """Problem message of a mask that is void (255) everywhere.

    Such an image is no error (its superpixels all get weight 0, and the
    losses and scores ignore it), but it contributes nothing, which usually
    means a broken mask, so :meth:`VOCDataset.check` and ``inspect`` report it.
    """
    return (f"mask {mask_path} is void ({VOID_LABEL}) everywhere: its image has no "
            "pixel to learn from or to score")


def labels_of_voc_colours(path: Path, rgb: np.ndarray) -> np.ndarray:
    """The labels of a colour-coded mask whose colours are all VOC's
    (:func:`voc_colormap` of 0..20 and 255), else DatasetError naming some
    of the others."""
    valid = np.flatnonzero(VALID_LABEL)
    colours = voc_colormap()[valid].astype(np.int64)
    packed_table = (colours[:, 0] << 16) | (colours[:, 1] << 8) | colours[:, 2]
    order = np.argsort(packed_table)
    table, labels_of = packed_table[order], valid[order].astype(np.uint8)
    rgb = rgb.astype(np.int64)
    packed = (rgb[..., 0] << 16) | (rgb[..., 1] << 8) | rgb[..., 2]
    at = np.minimum(np.searchsorted(table, packed), table.size - 1)
    known = table[at] == packed
    if not known.all():
        others = np.unique(packed[~known])
        shown = ", ".join(f"({v >> 16}, {(v >> 8) & 255}, {v & 255})" for v in others[:3])
        raise DatasetError(
            f"mask {path} is a colour image whose colours are not all VOC's ({shown}"
            f"{', ...' if others.size > 3 else ''}); expected an index mask (mode 'P' or "
            "'L') whose pixel values are class indices, or VOC's colours in RGB")
    return labels_of[at]
