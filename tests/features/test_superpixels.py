import numpy as np
import pytest
from scipy import ndimage

from segstruct.features.superpixels import (SuperpixelParams, adjacency, majority_targets, paint,
                                   pixel_counts, relabel_raster_order, segment)

# 0 0 1 1
# 0 0 1 1
# 2 2 3 3
HAND = np.array([[0, 0, 1, 1], [0, 0, 1, 1], [2, 2, 3, 3]])


def test_adjacency_hand_made():
    edges, boundary = adjacency(HAND)
    # 0|1 along two rows, 0/2 along two columns, 1/3 along two columns,
    # 2|3 along one row; 0 and 3 only touch diagonally (not 4-connected).
    assert edges.tolist() == [[0, 1], [0, 2], [1, 3], [2, 3]]
    assert boundary.tolist() == [2.0, 2.0, 2.0, 1.0]


def _random_image(seed, h=120, w=160):
    rng = np.random.default_rng(seed)
    img = np.zeros((h, w, 3), np.uint8)
    for _ in range(12):
        y0, x0 = rng.integers(0, h - 10), rng.integers(0, w - 10)
        img[y0:y0 + rng.integers(10, 60), x0:x0 + rng.integers(10, 80)] = rng.integers(0, 256, 3)
    return img


@pytest.mark.parametrize("method", ["felzenszwalb", "slic"])
def test_graph_invariants(method):
    params = SuperpixelParams(method=method, min_size=100, n_segments=30)
    labels = segment(_random_image(1), params)
    n = labels.max() + 1
    assert labels.dtype == np.int32 and set(np.unique(labels)) == set(range(n))
    edges, boundary = adjacency(labels)
    assert np.all(edges[:, 0] < edges[:, 1])
    assert len({tuple(e) for e in edges.tolist()}) == len(edges)  # unique
    assert np.all(boundary > 0)
    # The boundary lengths add up to the number of 4-neighbour pixel pairs
    # with different labels, and every such pair's labels form an edge.
    h = labels[:, :-1] != labels[:, 1:]
    v = labels[:-1, :] != labels[1:, :]
    assert boundary.sum() == h.sum() + v.sum()
    pairs = {tuple(sorted(p)) for p in zip(labels[:, :-1][h], labels[:, 1:][h])}
    pairs |= {tuple(sorted(p)) for p in zip(labels[:-1, :][v], labels[1:, :][v])}
    assert pairs == {tuple(e) for e in edges.tolist()}


def test_felzenszwalb_regions_connected_and_large_enough():
    params = SuperpixelParams(method="felzenszwalb", min_size=300)
    labels = segment(_random_image(2), params)
    for k in range(labels.max() + 1):
        mask = labels == k
        assert ndimage.label(mask)[1] == 1, f"superpixel {k} is not connected"
        assert mask.sum() >= 300


def test_relabel_raster_order():
    raw = np.array([[7, 7, 3], [5, 3, 3]])
    assert relabel_raster_order(raw).tolist() == [[0, 0, 1], [2, 1, 1]]


def test_pixel_counts_and_majority_hand_made():
    target = np.array([[1, 1, 0, 0], [1, 0, 0, 0], [1, 1, 0, 1]], bool)
    void = np.array([[0, 0, 0, 0], [0, 1, 1, 1], [0, 0, 1, 1]], bool)
    fg, bg = pixel_counts(HAND, target, void)
    # sp0: pixels (0,0)(0,1)(1,0) fg, (1,1) void -> fg 3, bg 0
    # sp1: (0,2)(0,3) bg, (1,2)(1,3) void -> fg 0, bg 2
    # sp2: (2,0)(2,1) fg -> fg 2, bg 0;  sp3: all void -> 0, 0
    assert fg.tolist() == [3, 0, 2, 0] and bg.tolist() == [0, 2, 0, 0]
    assert majority_targets(fg, bg).tolist() == [1, 0, 1, 0]
    assert majority_targets(np.array([2]), np.array([2])).tolist() == [0]  # tie -> bg


def test_paint_round_trip():
    rng = np.random.default_rng(0)
    labels = segment(_random_image(3), SuperpixelParams(method="felzenszwalb", min_size=100))
    y = rng.integers(0, 2, labels.max() + 1).astype(np.uint8)
    painted = paint(labels, y)
    # reading any pixel of each superpixel back gives its label
    first = np.unique(labels.ravel(), return_index=True)[1]
    assert np.array_equal(painted.ravel()[first], y)
    with pytest.raises(ValueError):
        paint(labels, y[:-1])


def test_bad_input():
    with pytest.raises(ValueError, match="uint8"):
        segment(np.zeros((5, 5, 3), np.float32))
    with pytest.raises(ValueError, match="unknown superpixel method"):
        SuperpixelParams(method="watershed")


@pytest.mark.shared_data
def test_paper_settings_on_real_image(camvid_root):
    from PIL import Image
    path = sorted((camvid_root / "JPEGImages").glob("*.jpg"))[0]
    img = np.asarray(Image.open(path).convert("RGB"))
    labels = segment(img, SuperpixelParams(method="felzenszwalb"))
    n = labels.max() + 1
    # min area 1330 caps the count at H*W/1330 (130 for 480x360)
    assert 5 <= n <= img.shape[0] * img.shape[1] // 1330
    assert np.bincount(labels.ravel()).min() >= 1330


def test_default_slic_on_real_image_gives_about_the_papers_count(camvid_root):
    """The default (SLIC, 80 segments): connected superpixels, about as many
    as the paper's ~50 (55-80 on the shared photos), whatever the size."""
    from PIL import Image
    from skimage.transform import rescale
    path = sorted((camvid_root / "JPEGImages").glob("*.jpg"))[0]
    img = np.asarray(Image.open(path).convert("RGB"))
    assert SuperpixelParams().method == "slic"
    half = (rescale(img, 0.5, channel_axis=2) * 255).round().astype(np.uint8)
    for image in (img, half):
        labels = segment(image)
        n = labels.max() + 1
        assert 40 <= n <= 100, n
        for k in range(n):
            assert ndimage.label(labels == k)[1] == 1, f"superpixel {k} is not connected"


def test_settings_that_cut_alike_are_equal_and_share_cache_keys():
    """A method's unused fields do not tell settings apart: a Felzenszwalb
    setting from a model file written when SLIC's defaults were 50 / 10
    equals today's, so its model and cached features are found again."""
    written_before = {"method": "felzenszwalb", "scale": 200.0, "sigma": 0.01,
                      "min_size": 1330, "n_segments": 50, "compactness": 10.0}
    today = SuperpixelParams(method="felzenszwalb")
    assert SuperpixelParams(**written_before) == today
    assert SuperpixelParams(method="felzenszwalb", n_segments=7, compactness=3.0) == today
    assert today.to_dict() == written_before
    slic = SuperpixelParams()
    assert SuperpixelParams(scale=10.0, min_size=5) == slic
    # the fields a method uses still tell settings apart, and are still checked
    assert SuperpixelParams(n_segments=30) != slic
    assert SuperpixelParams(method="felzenszwalb", min_size=30) != today
    with pytest.raises(ValueError, match="n_segments"):
        SuperpixelParams(method="felzenszwalb", n_segments=0)


def test_slic_smooths_with_sigma_as_scikit_image_does():
    """SLIC's Gaussian pre-smoothing (``sigma``, pixels) reaches scikit-image;
    the default smooths nothing, so SLIC cuts as it did before taking one."""
    from skimage.segmentation import slic
    rng = np.random.default_rng(0)
    image = (rng.random((60, 80, 3)) * 60).astype(np.uint8)
    image[:, 40:] += 120                      # two halves under the noise

    def reference(sigma):
        return relabel_raster_order(slic(image, n_segments=20, compactness=20.0,
                                         sigma=sigma, start_label=0,
                                         enforce_connectivity=True))

    plain = segment(image, SuperpixelParams(n_segments=20))
    np.testing.assert_array_equal(plain, reference(0))
    smoothed = segment(image, SuperpixelParams(n_segments=20, sigma=3.0))
    np.testing.assert_array_equal(smoothed, reference(3.0))
    assert not np.array_equal(smoothed, plain)
    # a SLIC setting keeps its sigma (it is not one of SLIC's unused fields)
    assert SuperpixelParams(sigma=3.0) != SuperpixelParams()
    assert SuperpixelParams(sigma=3.0).describe().endswith("sigma 3")
    assert "sigma" not in SuperpixelParams().describe()
