"""Images without masks: the input of ``segstruct predict``.

:class:`ImageFiles` names each image by its file name without the suffix
and reads it as :class:`~.voc.VOCDataset` does, so the feature extractor
handles it like a data set's split (``image_path``, ``read_image``). Unlike
a training set's, an image in another colour mode (grey, palette, RGBA,
CMYK) is converted to RGB rather than refused: a user applying a model
should get a segmentation of any readable image.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterable

import numpy as np

from .voc import DatasetError, open_image

__all__ = ["IMAGE_SUFFIXES", "ImageFiles"]

#: File suffixes taken from a folder (case-insensitive).
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".tif", ".tiff", ".webp")


class ImageFiles:
    """A list of image files, each named by its stem.

    Parameters
    ----------
    items : iterable of str or Path
        Image files, or folders whose image files (by suffix, not recursive,
        in name order) are taken.

    Raises
    ------
    DatasetError
        A path that does not exist, a folder without images, no image at
        all, or two images with the same name (``a.jpg`` and ``a.png``).
    """

    def __init__(self, items: Iterable):
        paths = []
        for item in items:
            item = Path(item).expanduser()
            if item.is_dir():
                found = sorted(p for p in item.iterdir()
                               if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES)
                if not found:
                    raise DatasetError(f"folder {item} holds no image file "
                                       f"({', '.join(IMAGE_SUFFIXES)})")
                paths.extend(found)
            elif item.is_file():
                paths.append(item)
            else:
                raise DatasetError(f"image {item} not found")
        if not paths:
            raise DatasetError("no image given")
        self._paths: dict[str, Path] = {}
        for path in paths:
            path = path.resolve()
            if path.stem in self._paths:
                if self._paths[path.stem] == path:
                    continue                       # the same file listed twice
                raise DatasetError(f"images {self._paths[path.stem]} and {path} have the same "
                                   "name: their outputs would overwrite each other")
            self._paths[path.stem] = path

    def __repr__(self) -> str:
        return f"ImageFiles({len(self._paths)} images)"

    @property
    def name(self) -> str:
        """The folder of the first image (for reports)."""
        return next(iter(self._paths.values())).parent.name

    def ids(self, split: str | None = None) -> list[str]:
        """Every image's name, in the order given (``split`` is ignored)."""
        return list(self._paths)

    def image_path(self, id: str) -> Path:
        """The file of image ``id``."""
        try:
            return self._paths[id]
        except KeyError:
            raise DatasetError(f"no image named {id!r}") from None

    def read_image(self, id: str) -> np.ndarray:
        """The image as (H, W, 3) uint8 RGB, converted from any other mode.

        Raises
        ------
        DatasetError
            A file that is not a readable image, or truncated.
        """
        path = self.image_path(id)
        with open_image(path, "image") as im:
            try:
                rgb = im.convert("RGB") if im.mode != "RGB" else im
            except (OSError, ValueError) as err:
                raise DatasetError(f"cannot convert image {path} ({im.mode}) to RGB: "
                                   f"{err}") from err
            return np.array(rgb, dtype=np.uint8)

    def check(self) -> dict[str, tuple[int, int]]:
        """Every image's (height, width), from its header: a file that is
        not an image fails here (DatasetError), before any work."""
        sizes = {}
        for id_, path in self._paths.items():
            with open_image(path, "image", decode=False) as im:
                sizes[id_] = (im.height, im.width)
        return sizes
