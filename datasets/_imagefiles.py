"""Opening image files: every failure a DatasetError naming the file, and
the EXIF orientation that viewers apply."""
from __future__ import annotations

import os
from pathlib import Path

from PIL import Image


# Pillow raises several unrelated types for unreadable or broken files.
PIL_ERRORS = (OSError, SyntaxError, ValueError, EOFError, Image.DecompressionBombError)


class DatasetError(ValueError):
    """A data set file or argument is missing, malformed or inconsistent.

    The message names the offending file (or value) and what is wrong.
    """

def orientation(im: Image.Image) -> int:
    """The EXIF orientation tag (1 to 8; 1, as stored, when absent or bad)."""
    try:
        value = im.getexif().get(0x0112, 1)
    except Exception:          # a malformed EXIF block: show the image as stored
        return 1
    return value if isinstance(value, int) and 1 <= value <= 8 else 1


def oriented_size(im: Image.Image) -> tuple[int, int]:
    """(height, width) of an image as viewers show it."""
    swap = orientation(im) in (5, 6, 7, 8)     # the turns by a quarter
    return (im.width, im.height) if swap else (im.height, im.width)


def exif_orientation(path: str | os.PathLike) -> int:
    """The EXIF orientation tag of an image file, from its header (1 to 8; 1,
    as stored, when absent, bad or the file is not an image)."""
    try:
        with Image.open(path) as im:
            return orientation(im)
    except PIL_ERRORS:
        return 1


def check_rgb(path: Path, mode: str) -> None:
    if mode != "RGB":
        raise DatasetError(
            f"image {path} has mode {mode!r}; expected an 'RGB' colour image: convert "
            "the training and val images to RGB (Pillow's Image.convert('RGB')); "
            "segstruct predict takes any mode"
        )


def open_image(path: Path, what: str = "file", decode: bool = True) -> Image.Image:
    """Open (and by default fully decode) an image file, turning every
    failure into DatasetError.

    Decoding here (``load()``) makes truncated or corrupt files fail at read
    time, naming the file, rather than later inside some array operation.
    ``what`` ("image", "mask") starts the message of a missing file. The
    caller must close the returned image (use it in a ``with`` block).
    """
    if not path.is_file():
        raise DatasetError(f"{what} {path} not found")
    try:
        im = Image.open(path)
    except PIL_ERRORS as err:
        raise DatasetError(f"cannot read {path}: not a readable image ({err})") from err
    if decode:
        try:
            im.load()
        except PIL_ERRORS as err:
            im.close()
            raise DatasetError(f"cannot decode {path}: truncated or corrupt ({err})") from err
    return im
