"""Drawing one synthetic image and its label mask: the classes' looks, the
background and its distractors, textures, shapes and where objects go."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PIL import Image
from scipy import ndimage

from ._labels import VOID_LABEL, class_index


SPLIT_CODES = {"train": 0, "val": 1}

# Colour families (RGB means). Object colours are drawn around these.
COLOURS = {
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

OBJECT_COUNT_P = (0.1, 0.4, 0.3, 0.2)  # P(0, 1, 2, 3 objects in an image)
AREA_RANGE = (0.03, 0.30)              # object area as a share of the image
BORDER_VOID_P = 0.25                    # share of images with a void border band
IMAGE_SIZE = ((180, 260), (220, 340))   # (height, width) ranges in pixels, inclusive


@dataclass(frozen=True)
class Style:
    colour: str
    texture: str
    shape: str

def class_styles(classes: tuple[str, ...]) -> dict[str, Style]:
    styles = {}
    for name in classes:
        if name in _STYLES:
            styles[name] = Style(*_STYLES[name])
        else:
            k = class_index(name)
            styles[name] = Style(_SPARE_COLOURS[k % 7], _SPARE_TEXTURES[k % 5], "blob")
    return styles


def plan_split(seed: int, split: str, n: int, classes: tuple[str, ...],
                p_empty: float = OBJECT_COUNT_P[0]) -> list[str | None]:
    """Class of the first object of each image (None: image without objects).

    The first objects cycle through the classes over the non-empty images, so
    every split holds every class about n / len(classes) times at least.
    """
    rng = np.random.default_rng([seed, SPLIT_CODES[split], 1_000_000])
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


def make_image(rng, first_class, classes, styles, area_range=AREA_RANGE,
                count_p=OBJECT_COUNT_P, image_size=IMAGE_SIZE):
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
    if rng.random() < BORDER_VOID_P:
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
        colour = style.colour if roll < 0.25 else str(rng.choice(list(COLOURS)))
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
    base = np.asarray(COLOURS[colour], np.float32) + rng.normal(0, 12, 3)
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


def _place_object(rng, shape, yy, xx, placed, tries=10, area_range=AREA_RANGE):
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
