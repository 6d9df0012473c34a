"""Synthetic detection data made in the tests (bright ellipses on noise) and
a detector trained on it once per session."""
import numpy as np

CLASS = 15   # VOC "person"


def ellipse_mask(shape, cy, cx, h, w):
    yy, xx = np.mgrid[:shape[0], :shape[1]]
    return ((yy - cy) / (h / 2)) ** 2 + ((xx - cx) / (w / 2)) ** 2 <= 1


def synthetic_set(n, seed, size=(160, 200)):
    """n images with one or two ellipses, tall (h/w = 1/0.6) or wide (1/1.6).

    Returns
    -------
    images : list of (H, W, 3) uint8, masks : list of (H, W) uint8 (CLASS inside).
    """
    rng = np.random.default_rng(seed)
    images, masks = [], []
    H, W = size
    for _ in range(n):
        img = rng.normal(90, 20, (H, W, 3))
        mask = np.zeros((H, W), np.uint8)
        for _ in range(int(rng.integers(1, 3))):
            tall = rng.random() < 0.5
            h = rng.uniform(40, 70)
            w = min(h * (0.6 if tall else 1.6), W - 10)
            cy = rng.uniform(h / 2 + 2, H - h / 2 - 2)
            cx = rng.uniform(w / 2 + 2, W - w / 2 - 2)
            inside = ellipse_mask((H, W), cy, cx, h, w)
            if (mask[inside] > 0).any():
                continue
            img[inside] += 90
            mask[inside] = CLASS
        images.append(np.clip(img, 0, 255).astype(np.uint8))
        masks.append(mask)
    return images, masks


import pytest  # noqa: E402

from segstruct.features.topdown import DetectorParams, train_detector  # noqa: E402

# Small but complete: two components, parts, two mining rounds a stage (one
# is not enough for the parts: AP 0.22 against 1.0); about half a minute.
SYNTH_PARAMS = DetectorParams(n_parts=4, mining_images=15, mining_rounds=2, seed=3)


@pytest.fixture(scope="session")
def synthetic_data():
    """(train images, train masks, test images, test masks)."""
    return synthetic_set(24, 0) + synthetic_set(10, 1)


@pytest.fixture(scope="session")
def trained(synthetic_data):
    """A detector trained on the synthetic training set (and its root-only stage)."""
    images, masks = synthetic_data[:2]
    stages = {}
    det = train_detector(images, masks, CLASS, SYNTH_PARAMS,
                         on_stage=lambda name, d, t: stages.__setitem__(name, d))
    return det, stages["roots"]
