"""Reader for data sets in the PASCAL VOC segmentation layout.

Layout::

    ROOT/JPEGImages/<id>.jpg                 RGB image (or the one <id>.jpeg,
                                             .png, .bmp, .tif, .tiff or .webp,
                                             any case, where <id>.jpg is absent)
    ROOT/SegmentationClass/<id>.png          index mask ('P' or 'L'): class index
                                             0..20 per pixel, 255 = void
    ROOT/ImageSets/Segmentation/<split>.txt  one id per line

The task is class-specific (docs/design.md, "The task"): for one class ``c`` a
pixel is foreground when its label equals ``c``; void pixels (255) are reported
apart so that every later stage can ignore them.  Bad input is refused with a
:class:`DatasetError` that names the offending file, never guessed around.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import ImageOps

# the image files and the label values have modules of their own; their
# public names are this module's, as before the split
from ._imagefiles import (DatasetError, check_rgb, exif_orientation, open_image, orientation,
                          oriented_size)
from ._labels import (VOC_CLASSES, VOID_LABEL, labels_of_voc_colours, VALID_LABEL, class_index,
                      voc_class_name, voc_colormap, void_message)

__all__ = [
    "VOC_CLASSES",
    "VOID_LABEL",
    "DatasetError",
    "IMAGE_SUFFIXES",
    "Sample",
    "VOCDataset",
    "class_index",
    "exif_orientation",
    "voc_class_name",
    "voc_colormap",
    "void_message",
]


IMAGE_DIR = "JPEGImages"
#: Image file suffixes, VOC's first: a data set's ``JPEGImages/<id>.jpg``, or
#: where that file is absent the one ``<id>`` file with another of them (in
#: any case: converted data sets often hold PNGs); ``segstruct predict``
#: takes a folder's files with these suffixes.
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".tif", ".tiff", ".webp")
MASK_DIR = "SegmentationClass"
SPLIT_DIR = Path("ImageSets") / "Segmentation"


@dataclass(frozen=True, eq=False)
class Sample:
    """One image with its binary target for a single class.

    Attributes
    ----------
    id : str
        Image id as listed in the split file.
    image : ndarray, shape (H, W, 3), dtype uint8
        RGB image.
    target : ndarray, shape (H, W), dtype bool
        True where the mask holds the requested class.
    void : ndarray, shape (H, W), dtype bool
        True where the mask is void (255); these pixels must be ignored.
    image_path, mask_path : Path
        Files the sample was read from.
    """

    id: str
    image: np.ndarray
    target: np.ndarray
    void: np.ndarray
    image_path: Path
    mask_path: Path


class VOCDataset:
    """A data set in the PASCAL VOC segmentation layout.

    Parameters
    ----------
    root : str or Path
        Folder holding ``JPEGImages/``, ``SegmentationClass/`` and
        ``ImageSets/Segmentation/``.

    Raises
    ------
    DatasetError
        If ``root`` or one of the three sub-folders does not exist.
    """

    def __init__(self, root: str | Path):
        root = Path(root).expanduser()
        if not root.is_dir():
            raise DatasetError(f"data set root {root} does not exist or is not a folder")
        self._root = root.resolve()
        for sub in (IMAGE_DIR, MASK_DIR, SPLIT_DIR):
            if not (self._root / sub).is_dir():
                how = (f" (one text file per split, e.g. train.txt and val.txt, listing "
                       f"the ids of {IMAGE_DIR}/ one per line)" if sub == SPLIT_DIR else "")
                raise DatasetError(
                    f"missing folder {self._root / sub}: a VOC-layout data set needs "
                    f"{IMAGE_DIR}/, {MASK_DIR}/ and {SPLIT_DIR.as_posix()}/{how}"
                )

    def __repr__(self) -> str:
        return f"VOCDataset({str(self._root)!r})"

    @property
    def root(self) -> Path:
        """Resolved path of the data set folder."""
        return self._root

    @property
    def name(self) -> str:
        """Name of the data set folder (e.g. ``'camvid_voc'``)."""
        return self._root.name

    # ------------------------------------------------------------------ splits
    def splits(self) -> list[str]:
        """Return the sorted names of the split files (``train``, ``val``...)."""
        return sorted(p.stem for p in (self._root / SPLIT_DIR).glob("*.txt") if p.is_file())

    def ids(self, split: str) -> list[str]:
        """Return the image ids of a split, in file order.

        Parameters
        ----------
        split : str
            Split name; reads ``ImageSets/Segmentation/<split>.txt``.

        Returns
        -------
        list of str
            Ids with surrounding whitespace removed; blank lines are skipped.

        Raises
        ------
        DatasetError
            If the file is missing, unreadable or empty, or a line is not a
            single id, or an id occurs twice.
        """
        path = self._root / SPLIT_DIR / f"{split}.txt"
        if not path.is_file():
            raise DatasetError(
                f"split file {path} not found; splits present: {self.splits() or 'none'}"
            )
        try:
            # utf-8-sig: a byte-order mark (some Windows editors write one) is
            # not part of the first id
            lines = path.read_text(encoding="utf-8-sig").splitlines()
        except (OSError, UnicodeDecodeError) as err:
            raise DatasetError(f"cannot read split file {path}: {err}") from err
        ids: list[str] = []
        seen: dict[str, int] = {}
        for lineno, line in enumerate(lines, start=1):
            item = line.strip()
            if not item:
                continue
            # One id per line; a second column (as in ImageSets/Main lists) or a
            # path separator means the wrong kind of file.
            if len(item.split()) != 1 or "/" in item or "\\" in item:
                raise DatasetError(
                    f"split file {path}, line {lineno}: {item!r} is not a single image id"
                )
            if item in seen:
                raise DatasetError(
                    f"split file {path}: id {item!r} appears twice "
                    f"(lines {seen[item]} and {lineno})"
                )
            seen[item] = lineno
            ids.append(item)
        if not ids:
            raise DatasetError(f"split file {path} lists no image ids")
        return ids

    # ------------------------------------------------------------------- files
    def image_path(self, id: str) -> Path:
        """Return the path of the image of ``id``.

        ``JPEGImages/<id>.jpg`` (VOC's) when it exists, else the one file
        ``JPEGImages/<id>`` with another suffix of :data:`IMAGE_SUFFIXES`, in
        lower or upper case; ``<id>.jpg`` when there is none (whoever reads
        it says it is not found, and which suffixes were looked for).

        Raises
        ------
        DatasetError
            If ``<id>.jpg`` is absent and two other files could be the image
            (``a.png`` and ``a.jpeg``).
        """
        folder = self._root / IMAGE_DIR
        jpg = folder / f"{id}.jpg"
        if jpg.is_file():
            return jpg
        # one stat per name: no listing of a large folder, nor a copy of one
        # in every pickled task; a file two names reach (a case-insensitive
        # file system) counts once
        found: dict = {}
        for suffix in IMAGE_SUFFIXES:
            for name in dict.fromkeys((f"{id}{suffix}", f"{id}{suffix.upper()}")):
                path = folder / name
                if path.is_file():
                    st = path.stat()
                    found.setdefault((st.st_dev, st.st_ino), path)
        if len(found) > 1:
            names = ", ".join(p.name for p in found.values())
            raise DatasetError(f"image {id!r}: {len(found)} files in {folder} could be it "
                               f"({names}): keep one")
        return next(iter(found.values()), jpg)

    def mask_path(self, id: str) -> Path:
        """Return the path of the PNG label mask of ``id``."""
        return self._root / MASK_DIR / f"{id}.png"

    def read_image(self, id: str) -> np.ndarray:
        """Read the image of ``id``.

        Returns
        -------
        ndarray, shape (H, W, 3), dtype uint8
            RGB pixel values, as viewers show the file: turned as its EXIF
            orientation says (phone photos), as the mask must be drawn.

        Raises
        ------
        DatasetError
            If the file is missing, not an image, truncated or corrupt, or its
            mode is not RGB (greyscale, RGBA, CMYK...: refused, not converted).
        """
        path = self._existing_image(id)
        with open_image(path, "image") as im:
            check_rgb(path, im.mode)
            # as viewers (and annotation tools) show it, as segstruct predict does
            shown = ImageOps.exif_transpose(im) if orientation(im) != 1 else im
            return np.array(shown, dtype=np.uint8)

    def image_size(self, id: str) -> tuple[int, int]:
        """Check the image of ``id`` from its header alone and return its size.

        Cheap (nothing is decoded), so a long run can check every image up
        front; a truncated file is only found when it is decoded
        (:meth:`read_image`).

        Returns
        -------
        (H, W) : tuple of int, as viewers show the image (its EXIF
            orientation applied).

        Raises
        ------
        DatasetError
            If the file is missing or not an image, or its mode is not RGB,
            with the same message as :meth:`read_image`.
        """
        path = self._existing_image(id)
        with open_image(path, "image", decode=False) as im:
            check_rgb(path, im.mode)
            return oriented_size(im)

    def _existing_image(self, id: str) -> Path:
        """:meth:`image_path`, or the DatasetError that it is not found
        under any of the suffixes looked for."""
        path = self.image_path(id)
        if not path.is_file():
            others = ", ".join(IMAGE_SUFFIXES[1:])
            named = Path(id).suffix.lower() in IMAGE_SUFFIXES
            raise DatasetError(
                f"image {path} not found (nor {id} with the suffix {others}, in lower or "
                "upper case)" + (f"; the split lists the file name {id!r}: list the id "
                                 f"{Path(id).stem!r}, without the suffix" if named else ""))
        return path

    def check_sizes(self, id: str, image_hw, mask_hw) -> None:
        """Raise the :class:`DatasetError` of :meth:`load` if image and mask differ in size."""
        if tuple(image_hw) != tuple(mask_hw):
            turned = exif_orientation(self.image_path(id))
            stored = tuple(image_hw)[::-1] if turned in (5, 6, 7, 8) else tuple(image_hw)
            hint = (f"; the mask fits the image as stored, without its EXIF orientation "
                    f"{turned}: images are read as viewers show them, so draw the mask on "
                    "the image as shown, or rotate the stored pixels and drop the tag"
                    if turned != 1 and stored == tuple(mask_hw) else "")
            raise DatasetError(
                f"size mismatch: image {self.image_path(id)} is "
                f"{image_hw[0]}x{image_hw[1]} (HxW) but mask "
                f"{self.mask_path(id)} is {mask_hw[0]}x{mask_hw[1]}{hint}"
            )

    def read_mask(self, id: str) -> np.ndarray:
        """Read the raw label mask of ``id``.

        Returns
        -------
        ndarray, shape (H, W), dtype uint8
            Class index per pixel (0..20) or 255 for void.

        Raises
        ------
        DatasetError
            If the file is missing or unreadable, is neither an index mask
            (mode 'P' or 'L') nor an RGB(A) image of VOC's colours
            (:func:`voc_colormap`: a colour-coded mask saved without its
            palette), or holds values other than 0..20 and 255.
        """
        path = self.mask_path(id)
        with open_image(path, "mask") as im:
            # No .convert(): for a palette image the array holds the palette
            # indices, which are the labels; converting would give colours.
            if im.mode in ("RGB", "RGBA"):
                labels = labels_of_voc_colours(path, np.array(im.convert("RGB")))
            elif im.mode not in ("P", "L"):
                raise DatasetError(
                    f"mask {path} has mode {im.mode!r}; expected an index mask "
                    "(mode 'P' or 'L') whose pixel values are class indices, "
                    "or VOC's colours in RGB"
                )
            else:
                labels = np.array(im, dtype=np.uint8)
        present = np.flatnonzero(np.bincount(labels.ravel(), minlength=256))
        bad = present[~VALID_LABEL[present]]
        if bad.size:
            shown = ", ".join(str(v) for v in bad[:5]) + (", ..." if bad.size > 5 else "")
            raise DatasetError(
                f"mask {path} holds invalid label values {shown}; "
                f"expected 0..{len(VOC_CLASSES) - 1} or {VOID_LABEL} (void)"
            )
        return labels

    def load(self, id: str, class_name: str) -> Sample:
        """Read one image and its binary target for one class.

        Parameters
        ----------
        id : str
            Image id.
        class_name : str
            VOC class whose pixels form the foreground.

        Returns
        -------
        Sample
            ``image`` (H, W, 3) uint8, ``target`` and ``void`` (H, W) bool.

        Raises
        ------
        DatasetError
            For an unknown class, any error of :meth:`read_image` or
            :meth:`read_mask`, or when image and mask differ in size.
        """
        cls = class_index(class_name)  # fail on a bad name before any I/O
        image = self.read_image(id)
        labels = self.read_mask(id)
        self.check_sizes(id, image.shape[:2], labels.shape)
        return Sample(
            id=id,
            image=image,
            target=labels == cls,
            void=labels == VOID_LABEL,
            image_path=self.image_path(id),
            mask_path=self.mask_path(id),
        )

    # ------------------------------------------------------------------ checks
    def check(self, split: str | None = None, class_name: str | None = None) -> list[str]:
        """Read every image and mask of one split (or all) and list the problems.

        Parameters
        ----------
        split : str, optional
            Split to check; all splits when omitted.
        class_name : str, optional
            When given, also report a split in which no mask holds this class.

        Returns
        -------
        list of str
            One message per problem (each naming its file); empty when
            everything reads cleanly. A mask that is void everywhere is
            reported too, though training and scoring accept it.
        """
        problems: list[str] = []
        if class_name is not None:
            try:
                cls = class_index(class_name)
            except DatasetError as err:
                return [str(err)]
        splits = [split] if split is not None else self.splits()
        if not splits:
            return [f"no split files in {self._root / SPLIT_DIR}"]
        # Splits overlap (trainval = train + val): read each id once.
        seen: dict[str, bool] = {}  # id -> mask holds the class
        for name in splits:
            try:
                ids = self.ids(name)
            except DatasetError as err:
                problems.append(str(err))
                continue
            for id in ids:
                if id not in seen:
                    try:
                        sample = self.load(id, class_name or "background")
                        seen[id] = bool(sample.target.any())
                    except DatasetError as err:
                        problems.append(str(err))
                        seen[id] = False
                    else:
                        if sample.void.all():
                            problems.append(void_message(sample.mask_path))
            if class_name is not None and cls != 0 and not any(seen[i] for i in ids):
                problems.append(f"split {name!r}: no mask contains class {class_name!r}")
        return problems
