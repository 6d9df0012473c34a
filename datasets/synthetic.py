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
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image
from scipy import ndimage

from .voc import (
    IMAGE_DIR, MASK_DIR, SPLIT_DIR, VOID_LABEL, DatasetError, class_index, voc_colormap,
)

__all__ = ["GENERATOR_VERSION", "make_synthetic_voc", "default_synthetic_root"]

# Bump whenever the generated content changes: it names the cache folder and
# is stored in synthetic.json, so stale sets are rebuilt, never reused.
GENERATOR_VERSION = "1"
_GENERATOR = "segstruct.datasets.synthetic"
_META_FILE = "synthetic.json"
_SPLIT_CODES = {"train": 0, "val": 1}

# Colour families (RGB means). Object colours are drawn around these.
_COLOURS = {
    "blue": (45, 85, 190), "red": (195, 45, 45), "brown": (125, 80, 40),
    "green": (60, 150, 60), "yellow": (215, 195, 50), "purple": (125, 60, 165),
    "cyan": (50, 175, 185), "orange": (235, 135, 35), "pink": (230, 140, 180),
    "grey": (125, 125, 125),
}
_TEXTURES = ("hstripes", "dots", "noise", "vstripes", "checker", "dstripes", "smooth")

# (colour family, texture, shape) of each class with a hand-made style.
_STYLES = {
    "car": ("blue", "hstripes", "car"),
    "person": ("red", "dots", "person"),
    "horse": ("brown", "noise", "horse"),
}
# Other VOC classes get a style derived from their index; these lists avoid
# the hand-made colours, and 7 and 5 are coprime so the (colour, texture)
# pairs of classes 0..34 are all distinct.
_SPARE_COLOURS = ("green", "yellow", "purple", "cyan", "orange", "pink", "grey")
_SPARE_TEXTURES = ("vstripes", "checker", "dstripes", "hstripes", "dots")

_OBJECT_COUNT_P = (0.1, 0.4, 0.3, 0.2)  # P(0, 1, 2, 3 objects in an image)
_AREA_RANGE = (0.03, 0.30)              # object area as a share of the image
_BORDER_VOID_P = 0.25                    # share of images with a void border band
_IMAGE_SIZE = ((180, 260), (220, 340))   # (height, width) ranges in pixels, inclusive


@dataclass(frozen=True)
class _Style:
    colour: str
    texture: str
    shape: str


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
        and all((split_dir / f"{s}.txt").is_file() for s in _SPLIT_CODES)
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
    styles = _class_styles(classes)
    cmap = voc_colormap().ravel().tolist()
    for sub in (IMAGE_DIR, MASK_DIR, SPLIT_DIR):
        (out / sub).mkdir(parents=True, exist_ok=True)

    split_ids: dict[str, list[str]] = {}
    stats: dict[str, dict] = {}
    for split, n in (("train", params["n_train"]), ("val", params["n_val"])):
        plan = _plan_split(params["seed"], split, n, classes, count_p[0])
        ids, counts, pixels = [], {c: 0 for c in classes}, np.zeros(256, np.int64)
        for i, first_class in enumerate(plan):
            id = f"{split}_{i:04d}"
            rng = np.random.default_rng([params["seed"], _SPLIT_CODES[split], i])
            image, labels = _make_image(rng, first_class, classes, styles, area_range,
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


def _class_styles(classes: tuple[str, ...]) -> dict[str, _Style]:
    styles = {}
    for name in classes:
        if name in _STYLES:
            styles[name] = _Style(*_STYLES[name])
        else:
            k = class_index(name)
            styles[name] = _Style(_SPARE_COLOURS[k % 7], _SPARE_TEXTURES[k % 5], "blob")
    return styles


def _plan_split(seed: int, split: str, n: int, classes: tuple[str, ...],
                p_empty: float = _OBJECT_COUNT_P[0]) -> list[str | None]:
    """Class of the first object of each image (None: image without objects).

    The first objects cycle through the classes over the non-empty images, so
    every split holds every class about n / len(classes) times at least.
    """
    rng = np.random.default_rng([seed, _SPLIT_CODES[split], 1_000_000])
    empty = rng.random(n) < p_empty
    start = int(rng.integers(len(classes)))
    plan: list[str | None] = []
    k = start
    for is_empty in empty:
        if is_empty:
            plan.append(None)
        else:
            plan.append(classes[k % len(classes)])
            k += 1
    return plan


def _make_image(rng, first_class, classes, styles, area_range=_AREA_RANGE,
                count_p=_OBJECT_COUNT_P, image_size=_IMAGE_SIZE):
    """Draw one image and its label mask.

    Returns
    -------
    image : ndarray, shape (H, W, 3), dtype uint8
    labels : ndarray, shape (H, W), dtype uint8
    """
    (h_lo, h_hi), (w_lo, w_hi) = image_size
    h, w = int(rng.integers(h_lo, h_hi + 1)), int(rng.integers(w_lo, w_hi + 1))
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    image = _background(rng, h, w)

    # Distractors: never the (colour, texture) pair of any class.
    class_pairs = {(s.colour, s.texture) for s in styles.values()}
    for _ in range(int(rng.integers(3, 8))):
        colour, texture = _distractor_look(rng, styles, class_pairs)
        _paint(image, _distractor_shape(rng, yy, xx), colour, texture, rng, yy, xx)

    # Objects: 1-3 when the plan gives a first class, else none.
    names = []
    if first_class is not None:
        p_more = np.array(count_p[1:]) / sum(count_p[1:])
        n_obj = int(rng.choice([1, 2, 3], p=p_more))
        names = [first_class] + [classes[int(rng.integers(len(classes)))] for _ in range(n_obj - 1)]
    instances = np.zeros((h, w), np.int32)
    placed = []
    for name in names:
        style = styles[name]
        mask = _place_object(rng, style.shape, yy, xx, placed, area_range=area_range)
        placed.append(mask)
        _paint(image, mask, style.colour, style.texture, rng, yy, xx)
        instances[mask] = len(placed)

    labels = np.zeros((h, w), np.uint8)
    for k, name in enumerate(names, start=1):
        labels[instances == k] = class_index(name)
    # VOC-like void band of 3-5 px centred on each visible object outline.
    for k in range(1, len(names) + 1):
        visible = instances == k
        if visible.any():
            width = int(rng.integers(3, 6))
            inner, outer = (width + 1) // 2, width // 2
            band = (visible & (ndimage.distance_transform_edt(visible) <= inner)) | (
                ~visible & (ndimage.distance_transform_edt(~visible) <= outer))
            labels[band] = VOID_LABEL
    # Some images also get an unlabelled band along one border.
    if rng.random() < _BORDER_VOID_P:
        size = int(rng.integers(8, 21))
        band = (np.s_[:size, :], np.s_[-size:, :], np.s_[:, :size], np.s_[:, -size:])
        labels[band[int(rng.integers(4))]] = VOID_LABEL

    image += rng.normal(0.0, 4.0, image.shape).astype(np.float32)  # sensor noise
    return np.clip(image, 0, 255).round().astype(np.uint8), labels


def _background(rng, h, w):
    """Smooth random colour field, shape (h, w, 3), float32 in 0..255."""
    grid = rng.integers(30, 226, size=(int(rng.integers(2, 5)), int(rng.integers(2, 6)), 3))
    field = Image.fromarray(grid.astype(np.uint8)).resize((w, h), Image.BICUBIC)
    return np.asarray(field, dtype=np.float32).copy()


def _distractor_look(rng, styles, class_pairs):
    """(colour, texture) of a distractor: half the time a hard negative that
    copies one cue of a class; never both cues of the same class."""
    style = list(styles.values())[int(rng.integers(len(styles)))]
    while True:
        roll = rng.random()
        colour = style.colour if roll < 0.25 else str(rng.choice(list(_COLOURS)))
        texture = style.texture if 0.25 <= roll < 0.5 else str(rng.choice(_TEXTURES))
        if (colour, texture) not in class_pairs:
            return colour, texture


def _distractor_shape(rng, yy, xx):
    h, w = yy.shape
    kind = int(rng.integers(3))
    cy, cx = rng.uniform(0, h), rng.uniform(0, w)
    if kind == 0:  # rectangle
        ry, rx = rng.uniform(0.05, 0.25) * h, rng.uniform(0.05, 0.25) * w
        return (np.abs(yy - cy) <= ry) & (np.abs(xx - cx) <= rx)
    if kind == 1:  # rotated ellipse
        return _ellipse(yy, xx, cy, cx, rng.uniform(0.05, 0.22) * h,
                        rng.uniform(0.05, 0.22) * w, rng.uniform(0, np.pi))
    # band across the image at a random angle
    angle = rng.uniform(0, np.pi)
    dist = (yy - cy) * np.cos(angle) - (xx - cx) * np.sin(angle)
    return np.abs(dist) <= rng.uniform(5, 18)


def _texture(kind, rng, yy, xx):
    """Brightness modulation field, shape (H, W), roughly in [-1, 1]."""
    period, phase = rng.uniform(6, 10), rng.uniform(0, 2 * np.pi)

    def wave(t):  # square wave: hard-edged stripes of half a period each
        return np.sign(np.sin(2 * np.pi * t / period + phase))

    if kind == "hstripes":
        return wave(yy)
    if kind == "vstripes":
        return wave(xx)
    if kind == "dstripes":
        return wave((xx + yy) / np.sqrt(2))
    if kind == "checker":
        return wave(yy) * np.sign(np.sin(2 * np.pi * xx / period))
    if kind == "dots":
        p, r = rng.uniform(7, 10), rng.uniform(1.8, 2.8)
        dy, dx = (yy % p) - p / 2, (xx % p) - p / 2
        return np.where(dy * dy + dx * dx <= r * r, 1.0, -0.5)
    if kind == "noise":
        grain = ndimage.gaussian_filter(rng.standard_normal(yy.shape), 1.2)
        return np.clip(grain / grain.std(), -2, 2) / 2
    return np.zeros_like(yy)  # smooth


def _paint(image, mask, colour, texture, rng, yy, xx):
    """Fill ``mask`` of ``image`` (in place) with a jittered colour and texture."""
    if not mask.any():
        return
    base = np.asarray(_COLOURS[colour], np.float32) + rng.normal(0, 12, 3)
    pattern = _texture(texture, rng, yy, xx)[mask].astype(np.float32)
    image[mask] = base * (1 + 0.35 * pattern[:, None])


def _ellipse(yy, xx, cy, cx, ry, rx, angle=0.0):
    c, s = np.cos(angle), np.sin(angle)
    u = ((yy - cy) * c + (xx - cx) * s) / ry
    v = (-(yy - cy) * s + (xx - cx) * c) / rx
    return u * u + v * v <= 1


def _rounded_rect(yy, xx, cy, cx, ry, rx, r):
    qy = np.maximum(np.abs(yy - cy) - (ry - r), 0)
    qx = np.maximum(np.abs(xx - cx) - (rx - r), 0)
    return (qy * qy + qx * qx <= r * r) & (np.abs(yy - cy) <= ry) & (np.abs(xx - cx) <= rx)


def _blob(rng, yy, xx, cy, cx, ry, rx):
    """Ellipse with a randomly perturbed radius: an irregular blob."""
    theta = np.arctan2((yy - cy) / ry, (xx - cx) / rx)
    radius = np.ones_like(theta)
    for k in range(2, 6):
        radius += rng.uniform(0, 0.12) * np.cos(k * theta + rng.uniform(0, 2 * np.pi))
    return ((yy - cy) / ry) ** 2 + ((xx - cx) / rx) ** 2 <= radius ** 2


# Width / height of the bounding box, and the share of the box the shape fills.
_SHAPE_BOX = {"car": ((1.8, 2.6), 0.8), "person": ((0.33, 0.45), 0.6),
              "horse": ((1.2, 1.6), 0.5), "blob": ((0.7, 1.4), 0.75)}


def _shape_mask(rng, shape, yy, xx, y0, x0, bh, bw):
    """Mask of a class shape inside the box (y0, x0, bh, bw)."""
    cy, cx = y0 + bh / 2, x0 + bw / 2
    if shape == "car":  # wide rounded body plus a cabin on top
        body = _rounded_rect(yy, xx, y0 + 0.65 * bh, cx, 0.35 * bh, bw / 2, 0.25 * bh)
        cab_x = cx + rng.uniform(-0.1, 0.1) * bw
        cabin = _rounded_rect(yy, xx, y0 + 0.3 * bh, cab_x, 0.3 * bh, 0.28 * bw, 0.2 * bh)
        return body | cabin
    if shape == "person":  # tall ellipse with a round head
        head_r = 0.11 * bh
        body = _ellipse(yy, xx, y0 + 2 * head_r + 0.39 * bh, cx, 0.39 * bh, bw / 2)
        return body | _ellipse(yy, xx, y0 + head_r, cx, head_r, head_r)
    if shape == "horse":  # irregular body blob, four legs, neck and head
        body_cy = y0 + 0.4 * bh
        mask = _blob(rng, yy, xx, body_cy, cx, 0.2 * bh, 0.38 * bw)
        for frac in (0.2, 0.32, 0.68, 0.8):
            lx = x0 + frac * bw + rng.uniform(-0.02, 0.02) * bw
            mask |= (np.abs(xx - lx) <= 0.035 * bw) & (yy >= body_cy) & (yy <= y0 + bh)
        side = 1 if rng.random() < 0.5 else -1
        mask |= _ellipse(yy, xx, y0 + 0.22 * bh, cx + side * 0.38 * bw, 0.2 * bh, 0.07 * bw,
                         side * 0.6)
        return mask
    return _blob(rng, yy, xx, cy, cx, bh / 2, bw / 2)


def _place_object(rng, shape, yy, xx, placed, tries=10, area_range=_AREA_RANGE):
    """Draw a shape of random size (``area_range`` of the image, by default
    3-30 %) at a random place,
    retrying when it would hide or be hidden by more than a quarter of
    another object."""
    h, w = yy.shape
    (lo, hi), fill = _SHAPE_BOX[shape]
    for _ in range(tries):
        aspect = rng.uniform(lo, hi)
        area = rng.uniform(*area_range) * h * w / fill
        bh, bw = np.sqrt(area / aspect), np.sqrt(area * aspect)
        scale = min(1.0, 0.95 * h / bh, 0.95 * w / bw)
        bh, bw = bh * scale, bw * scale
        y0, x0 = rng.uniform(0, h - bh), rng.uniform(0, w - bw)
        mask = _shape_mask(rng, shape, yy, xx, y0, x0, bh, bw)
        size = mask.sum()
        if all((mask & other).sum() <= 0.25 * min(size, other.sum()) for other in placed):
            break
    return mask


def _source_text(meta: dict, styles: dict[str, _Style], stats: dict) -> str:
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
        f"{int(_BORDER_VOID_P * 100)} % of images also have a void band of 8-20 px "
        "along one border. Gaussian noise (sigma 4) is added to every image.",
        "",
        "| class | colour | texture | shape |",
        "|---|---|---|---|",
    ]
    lines += [f"| {c} | {s.colour} {_COLOURS[s.colour]} | {s.texture} | {s.shape} |"
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
