"""A generated data set in the PASCAL VOC layout: the out-of-the-box default.

Each object class has a characteristic colour *and* texture (car: blue with
horizontal stripes; person: red with dots; horse: brown with grainy noise) and
a characteristic shape.  Backgrounds are smooth random colour fields cluttered
with distractor rectangles, ellipses and bands.  A distractor may share the
colour *or* the texture of a class, never both, so a model needs both colour
and texture cues (what the paper's Lab statistics and colour-SIFT words give)
to separate objects from clutter.  Masks carry a VOC-like void band along
every object outline and, in some images, an unlabelled band at one border.

Everything is drawn with a seeded numpy Generator, so the files are identical
for identical arguments.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
from PIL import Image

# the knobs' defaults keep the names they had here
from ._drawing import AREA_RANGE as _AREA_RANGE
from ._drawing import IMAGE_SIZE as _IMAGE_SIZE
from ._drawing import OBJECT_COUNT_P as _OBJECT_COUNT_P
from ._drawing import (BORDER_VOID_P, COLOURS, SPLIT_CODES, Style, class_styles, make_image,
                       plan_split)
from .voc import (
    IMAGE_DIR, MASK_DIR, SPLIT_DIR, VOID_LABEL, DatasetError, class_index, voc_colormap,
)

__all__ = ["GENERATOR_VERSION", "make_synthetic_voc", "default_synthetic_root"]

# Bump whenever the generated content changes: it names the cache folder and
# is stored in synthetic.json, so stale sets are rebuilt, never reused.
GENERATOR_VERSION = "1"
_GENERATOR = "segstruct.datasets.synthetic"
_META_FILE = "synthetic.json"


def default_synthetic_root() -> Path:
    """Return the default folder of the synthetic data set (not created).

    Returns
    -------
    Path
        ``$SEGSTRUCT_CACHE/synthetic-voc-v<version>`` if ``SEGSTRUCT_CACHE`` is
        set, else under ``$XDG_CACHE_HOME/segstruct`` or ``~/.cache/segstruct``.
    """
    if os.environ.get("SEGSTRUCT_CACHE"):
        base = Path(os.environ["SEGSTRUCT_CACHE"])
    elif os.environ.get("XDG_CACHE_HOME"):
        base = Path(os.environ["XDG_CACHE_HOME"]) / "segstruct"
    else:
        base = Path.home() / ".cache" / "segstruct"
    return base.expanduser() / f"synthetic-voc-v{GENERATOR_VERSION}"


def make_synthetic_voc(
    root: str | Path,
    n_train: int = 40,
    n_val: int = 20,
    seed: int = 0,
    classes: tuple[str, ...] = ("car", "person", "horse"),
    *,
    area_range: tuple[float, float] | None = None,
    object_count_p: tuple[float, float, float, float] | None = None,
    image_size: tuple[tuple[int, int], tuple[int, int]] | None = None,
) -> Path:
    """Write (or reuse) a synthetic data set in the PASCAL VOC layout.

    Parameters
    ----------
    root : str or Path
        Target folder.  If it already holds a complete set made with the same
        arguments and generator version it is returned untouched.  Otherwise
        the set is built in a temporary sibling folder and renamed into place,
        so an interrupted run never leaves a half-written set at ``root``.
    n_train, n_val : int
        Number of images in ``train`` and ``val`` (``trainval`` lists both).
    seed : int
        Seed of the generator; the output is a deterministic function of all
        arguments.
    classes : tuple of str
        VOC class names to draw; masks use their VOC indices (car 7,
        person 15, horse 13), 0 for background and 255 for void.
    area_range : (low, high), optional
        Area of each object as a share of its image, drawn uniformly in
        [low, high] (0 < low <= high <= 1); default (0.03, 0.30).
    object_count_p : (p0, p1, p2, p3), optional
        Probabilities of 0, 1, 2 and 3 objects in an image (p0 sets the share
        of images without any class; summing to 1, p0 < 1); default
        (0.1, 0.4, 0.3, 0.2).
    image_size : ((h_low, h_high), (w_low, w_high)), optional
        Inclusive ranges of image height and width in pixels (at least 32);
        default ((180, 260), (220, 340)).

    The three knobs left at their defaults (None, or the default values)
    give exactly the files of earlier versions: they are recorded in
    synthetic.json only when they differ from the defaults.

    Returns
    -------
    Path
        The resolved ``root``.

    Raises
    ------
    DatasetError
        For an unknown class name, or if ``root`` exists, is not empty and is
        not a synthetic set (it is never deleted then).
    ValueError
        For non-positive image counts, or knobs out of range.
    """
    root = Path(root).expanduser().resolve()
    classes = tuple(classes)
    for n, what in ((n_train, "n_train"), (n_val, "n_val")):
        if int(n) != n or n < 1:
            raise ValueError(f"{what} must be a positive integer, got {n!r}")
    if not classes or len(set(c.lower() for c in classes)) != len(classes):
        raise DatasetError(f"classes must be distinct VOC class names, got {classes!r}")
    classes = tuple(c.lower() for c in classes)
    if "background" in classes:
        raise DatasetError("'background' is not an object class to draw")
    for name in classes:
        class_index(name)
    knobs = _check_knobs(area_range, object_count_p, image_size)

    meta = {
        "generator": _GENERATOR,
        "version": GENERATOR_VERSION,
        "params": {"n_train": int(n_train), "n_val": int(n_val), "seed": int(seed),
                   "classes": list(classes), **knobs},
    }
    if _is_complete(root, meta):
        return root
    if root.exists() and not _may_replace(root):
        raise DatasetError(
            f"{root} exists and is not a synthetic data set (no {_META_FILE}); "
            "refusing to overwrite it"
        )

    root.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{root.name}.tmp-", dir=root.parent))
    try:
        _build(tmp, meta)
        if _is_complete(root, meta):  # another process finished first
            return root
        if root.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{root.name}.old-", dir=root.parent))
            os.replace(root, old / "set")
            os.replace(tmp, root)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, root)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return root


def _check_knobs(area_range, object_count_p, image_size) -> dict:
    """The knobs that differ from the defaults, as JSON-ready lists (checked)."""
    knobs: dict[str, list[float] | list[list[int]]] = {}
    if area_range is not None:
        lo, hi = (float(v) for v in area_range)
        if not 0 < lo <= hi <= 1:
            raise ValueError(f"area_range must satisfy 0 < low <= high <= 1, got {area_range!r}")
        if (lo, hi) != _AREA_RANGE:
            knobs["area_range"] = [lo, hi]
    if object_count_p is not None:
        p = [float(v) for v in object_count_p]
        if len(p) != 4 or min(p) < 0 or abs(sum(p) - 1) > 1e-9 or p[0] >= 1:
            raise ValueError("object_count_p must be 4 probabilities of 0..3 objects "
                             f"summing to 1, with p0 < 1, got {object_count_p!r}")
        if tuple(p) != _OBJECT_COUNT_P:
            knobs["object_count_p"] = p
    if image_size is not None:
        sizes = [[int(v) for v in r] for r in image_size]
        if len(sizes) != 2 or any(len(r) != 2 or not 32 <= r[0] <= r[1] for r in sizes):
            raise ValueError("image_size must be ((h_low, h_high), (w_low, w_high)) with "
                             f"32 <= low <= high, got {image_size!r}")
        if tuple(map(tuple, sizes)) != _IMAGE_SIZE:
            knobs["image_size"] = sizes
    return knobs


def _knobs(params: dict) -> tuple:
    """(area_range, object_count_p, image_size) of a set's params, defaults filled in."""
    return (tuple(params.get("area_range", _AREA_RANGE)),
            tuple(params.get("object_count_p", _OBJECT_COUNT_P)),
            tuple(map(tuple, params.get("image_size", _IMAGE_SIZE))))


# ---------------------------------------------------------------- cache logic
def _read_meta(root: Path) -> dict | None:
    try:
        return json.loads((root / _META_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _is_complete(root: Path, meta: dict) -> bool:
    """True when ``root`` holds every file of a set made with ``meta``."""
    found = _read_meta(root)
    if not found or {k: found.get(k) for k in meta} != meta:
        return False
    split_dir = root / SPLIT_DIR
    try:
        ids = (split_dir / "trainval.txt").read_text(encoding="utf-8").split()
    except OSError:
        return False
    expected = meta["params"]["n_train"] + meta["params"]["n_val"]
    return (
        len(ids) == expected
        and all((split_dir / f"{s}.txt").is_file() for s in SPLIT_CODES)
        and all((root / IMAGE_DIR / f"{i}.jpg").is_file()
                and (root / MASK_DIR / f"{i}.png").is_file() for i in ids)
    )


def _may_replace(root: Path) -> bool:
    """A folder may be replaced when it is empty or an (outdated) synthetic set."""
    if not root.is_dir():
        return False
    meta = _read_meta(root)
    return (meta is not None and meta.get("generator") == _GENERATOR) or not any(root.iterdir())


# ------------------------------------------------------------------- building
def _build(out: Path, meta: dict) -> None:
    """Write every file of the set into the (empty) folder ``out``."""
    params = meta["params"]
    classes = tuple(params["classes"])
    area_range, count_p, image_size = _knobs(params)
    styles = class_styles(classes)
    cmap = voc_colormap().ravel().tolist()
    for sub in (IMAGE_DIR, MASK_DIR, SPLIT_DIR):
        (out / sub).mkdir(parents=True, exist_ok=True)

    split_ids: dict[str, list[str]] = {}
    stats: dict[str, dict] = {}
    for split, n in (("train", params["n_train"]), ("val", params["n_val"])):
        plan = plan_split(params["seed"], split, n, classes, count_p[0])
        ids, counts, pixels = [], {c: 0 for c in classes}, np.zeros(256, np.int64)
        for i, first_class in enumerate(plan):
            id = f"{split}_{i:04d}"
            rng = np.random.default_rng([params["seed"], SPLIT_CODES[split], i])
            image, labels = make_image(rng, first_class, classes, styles, area_range,
                                        count_p, image_size)
            _write_sample(out, id, image, labels, cmap)
            ids.append(id)
            present = np.bincount(labels.ravel(), minlength=256)
            pixels += present
            for c in classes:
                counts[c] += bool(present[class_index(c)])
        split_ids[split] = ids
        stats[split] = {"images": n, "images_with_class": counts,
                        "pixel_share": _shares(pixels, classes)}

    split_ids["trainval"] = split_ids["train"] + split_ids["val"]
    for split, ids in split_ids.items():
        (out / SPLIT_DIR / f"{split}.txt").write_text("\n".join(ids) + "\n", encoding="utf-8")
    (out / "SOURCE.md").write_text(_source_text(meta, styles, stats), encoding="utf-8")
    # Written last: its presence (with matching content) marks a complete set.
    (out / _META_FILE).write_text(
        json.dumps({**meta, "stats": stats}, indent=2, sort_keys=True) + "\n", encoding="utf-8"
    )


def _write_sample(out: Path, id: str, image: np.ndarray, labels: np.ndarray, cmap: list) -> None:
    # 4:4:4 chroma keeps the thin colour textures intact through JPEG.
    Image.fromarray(image).save(out / IMAGE_DIR / f"{id}.jpg", quality=95, subsampling=0)
    mask = Image.fromarray(labels)
    mask.putpalette(cmap)  # 'L' -> 'P' with the VOC colours; indices unchanged
    mask.save(out / MASK_DIR / f"{id}.png", optimize=False)


def _shares(pixels: np.ndarray, classes: tuple[str, ...]) -> dict[str, float]:
    total = pixels.sum()
    out = {c: round(float(pixels[class_index(c)] / total), 4) for c in classes}
    out["background"] = round(float(pixels[0] / total), 4)
    out["void"] = round(float(pixels[VOID_LABEL] / total), 4)
    return out


def _source_text(meta: dict, styles: dict[str, Style], stats: dict) -> str:
    p = meta["params"]
    (a_lo, a_hi), count_p, ((h_lo, h_hi), (w_lo, w_hi)) = _knobs(p)
    knob_text = "".join(f", {k}={p[k]}" for k in ("area_range", "object_count_p", "image_size")
                        if k in p)
    lines = [
        "# Synthetic VOC-layout segmentation data set",
        "",
        f"Generated by `{_GENERATOR}.make_synthetic_voc` (generator version "
        f"{meta['version']}) with n_train={p['n_train']}, n_val={p['n_val']}, "
        f"seed={p['seed']}, classes={tuple(p['classes'])}{knob_text}. Nothing here is "
        "real data; "
        "the same arguments always give the same files.",
        "",
        "## Layout and labels",
        "JPEGImages/<id>.jpg (RGB, JPEG quality 95, 4:4:4), SegmentationClass/<id>.png "
        "(palette PNG, VOC colour map, pixel value = VOC class index), "
        "ImageSets/Segmentation/{train,val,trainval}.txt. "
        "Labels: 0 background, "
        + ", ".join(f"{class_index(c)} {c}" for c in p["classes"])
        + ", 255 void.",
        "",
        "## How images are drawn",
        f"- Size: height {h_lo}-{h_hi}, width {w_lo}-{w_hi} px, random per image.",
        "- Background: a smooth bicubic colour field from a coarse random grid, "
        "plus 3-7 distractor rectangles, ellipses and bands. A distractor copies the "
        "colour or the texture of a class (half the time, as a hard negative) but never "
        "both, so colour and texture cues are both needed.",
        f"- Objects: 0-3 per image ({100 * count_p[0]:g} % of images have none), "
        f"{100 * a_lo:g}-{100 * a_hi:g} % of the image area "
        "each, random position; objects overlap by at most about a quarter.",
        "- Void: a 3-5 px band centred on each object's visible outline; "
        f"{int(BORDER_VOID_P * 100)} % of images also have a void band of 8-20 px "
        "along one border. Gaussian noise (sigma 4) is added to every image.",
        "",
        "| class | colour | texture | shape |",
        "|---|---|---|---|",
    ]
    lines += [f"| {c} | {s.colour} {COLOURS[s.colour]} | {s.texture} | {s.shape} |"
              for c, s in styles.items()]
    lines += ["", "## Counts", "", "| split | images | " + " | ".join(
        f"with {c}" for c in p["classes"]) + " | pixel share (class, void) |",
        "|---" * (len(p["classes"]) + 3) + "|"]
    for split, st in stats.items():
        share = ", ".join(f"{k} {100 * v:.1f} %" for k, v in st["pixel_share"].items()
                          if k != "background")
        lines.append(f"| {split} | {st['images']} | " + " | ".join(
            str(st["images_with_class"][c]) for c in p["classes"]) + f" | {share} |")
    return "\n".join(lines) + "\n"
