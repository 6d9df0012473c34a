"""Images without masks: the input of ``segstruct predict``.

:class:`ImageFiles` names each image by its file name without the suffix
and reads it as :class:`~.voc.VOCDataset` does, so the feature extractor
handles it like a data set's split (``image_path``, ``image_size``,
``read_image``). Unlike a training set's, an image in another colour mode
(grey, palette, RGBA, CMYK, 16-bit) is converted to RGB rather than
refused: a user applying a model should get a segmentation of any readable
image. An alpha channel is dropped (the stored colours are segmented, not
a blend with some background); 16-bit colour PNGs keep each channel's top
8 bits. An EXIF orientation (phone photos) is applied, so that the image,
and the mask made of it, are the way viewers show the file.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterable

import numpy as np
from PIL import ImageOps

from .voc import IMAGE_SUFFIXES, DatasetError, orientation, oriented_size, open_image

__all__ = ["IMAGE_SUFFIXES", "ImageFiles"]


class ImageFiles:
    """A list of image files, each named by its stem.

    Parameters
    ----------
    items : iterable of str or Path
        Image files, or folders whose image files (by suffix, in name order)
        are taken; the subfolders of a folder that hold image files are
        listed in ``skipped_folders``, for the caller to say so.
    recursive : bool, default False
        Also take the image files of every subfolder of a folder (each still
        named by its stem, so two with one name are refused).

    Raises
    ------
    DatasetError
        A path that does not exist, a folder without images, no image at
        all, or two images with the same name (``a.jpg`` and ``a.png``).
    """

    def __init__(self, items: Iterable, recursive: bool = False):
        paths = []
        self.skipped_folders: list[Path] = []
        for item in items:
            item = Path(item).expanduser()
            if item.is_dir():
                found = sorted(p for p in (item.rglob("*") if recursive else item.iterdir())
                               if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES)
                nested = [] if recursive else sorted(
                    d for d in item.iterdir() if d.is_dir() and any(
                        p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES for p in d.rglob("*")))
                self.skipped_folders += nested
                if not found:
                    raise DatasetError(f"folder {item} holds no image file "
                                       f"({', '.join(IMAGE_SUFFIXES)})"
                                       + ("; its subfolders do (give them, or --recursive)"
                                          if nested else ""))
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
        """The image as (H, W, 3) uint8 RGB, converted from any other mode and
        turned as its EXIF orientation says.

        Raises
        ------
        DatasetError
            A file that is not a readable image, or truncated.
        """
        path = self.image_path(id)
        with open_image(path, "image") as stored:
            try:
                im = ImageOps.exif_transpose(stored) if orientation(stored) != 1 else stored
                if im.mode in WIDE_MODES:
                    return _wide_to_rgb(np.asarray(im), im.mode)
                return np.array(im.convert("RGB") if im.mode != "RGB" else im, dtype=np.uint8)
            except (OSError, ValueError) as err:
                raise DatasetError(f"cannot convert image {path} ({stored.mode}) to RGB: "
                                   f"{err}") from err

    def image_size(self, id: str) -> tuple[int, int]:
        """The (height, width) of image ``id`` as viewers show it (its EXIF
        orientation applied), from its header alone.

        Raises
        ------
        DatasetError
            A file that is not a readable image.
        """
        path = self.image_path(id)
        with open_image(path, "image", decode=False) as im:
            return oriented_size(im)

    def check(self, decode: bool = False) -> dict[str, tuple[int, int]]:
        """Every image's (height, width), from its header (and, with
        ``decode``, its whole data): a file that is not an image fails here
        (DatasetError), before any work."""
        sizes, failed = self.check_each(decode)
        if failed:
            raise DatasetError(next(iter(failed.values())))
        return sizes

    def check_each(self, decode: bool = False) -> tuple[dict[str, tuple[int, int]],
                                                        dict[str, str]]:
        """As :meth:`check`, but every image is checked: ((height, width) of
        each readable image, the error message of each other), by id."""
        sizes, failed = {}, {}
        for id_, path in self._paths.items():
            try:
                with open_image(path, "image", decode=decode) as im:
                    sizes[id_] = oriented_size(im)
            except DatasetError as err:
                failed[id_] = str(err)
        return sizes, failed

    def without(self, ids: Iterable[str]) -> "ImageFiles":
        """These images less ``ids`` (a batch goes on without its bad files)."""
        drop = set(ids)
        out = ImageFiles.__new__(ImageFiles)
        out.skipped_folders = list(self.skipped_folders)
        out._paths = {i: p for i, p in self._paths.items() if i not in drop}
        return out


#: Pillow's single-channel modes of more than 8 bits: 16-bit integers, 32-bit
#: integers and floats. ``convert("RGB")`` clips them at 255 (a 16-bit photo
#: turns white), so they are scaled down instead.
WIDE_MODES = ("I;16", "I;16L", "I;16B", "I;16N", "I", "F")


def _wide_to_rgb(pixels: np.ndarray, mode: str) -> np.ndarray:
    """A wide single-channel image as (H, W, 3) uint8 grey.

    Integer images are scaled from their type's range: 16-bit ones from
    0..65535, 32-bit ones (Pillow reads 16-bit PNGs so too) from 0..65535
    when their values fit, else from 0 to their maximum; float images from
    0..1 when their values fit, else from 0 to their maximum. Negative
    values become 0.
    """
    values = np.nan_to_num(np.asarray(pixels, np.float64), nan=0.0, posinf=0.0, neginf=0.0)
    values = np.clip(values, 0.0, None)
    top = float(values.max()) if values.size else 0.0
    if mode == "F":
        scale = 1.0 if top <= 1.0 else top
    else:
        scale = 65535.0 if top <= 65535.0 else top
    grey = np.rint(values / (scale or 1.0) * 255.0).astype(np.uint8)
    return np.repeat(grey[..., None], 3, axis=2)
