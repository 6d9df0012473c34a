import numpy as np
import pytest

from segstruct.features import descriptors as F
from segstruct.features.superpixels import SuperpixelParams, segment


def test_opponent_channels_known_colours():
    img = np.array([[[255, 255, 255], [255, 0, 0], [0, 0, 0]]], np.uint8)
    o = F.opponent_channels(img)
    # white: O1 = (0+255)/2 -> 128 (127.5 rounds to even), O2 = (0+510)/4 -> 128, O3 = 255
    # red:   O1 = (255+255)/2 = 255, O2 = (255+510)/4 = 191.25 -> 191, O3 = 85
    # black: O1 = 127.5 -> 128, O2 = 127.5 -> 128, O3 = 0
    assert o[:, 0, 0].tolist() == [128, 128, 255]
    assert o[:, 0, 1].tolist() == [255, 191, 85]
    assert o[:, 0, 2].tolist() == [128, 128, 0]


def test_grid_and_dense_sift_shapes():
    rng = np.random.default_rng(0)
    img = rng.integers(0, 256, (40, 50, 3)).astype(np.uint8)
    pts = F.grid_points(img.shape, 6)
    # x in 3, 9, ..., 45 (8 values); y in 3, ..., 39 (7 values)
    assert pts.shape == (56, 2) and pts[0].tolist() == [3, 3] and pts[-1].tolist() == [45, 39]
    pts2, desc = F.dense_opponent_sift(img, 6, 4.0)
    assert np.array_equal(pts, pts2)
    assert desc.shape == (56, 384) and desc.dtype == np.float32
    assert np.all(desc >= 0) and desc.max() > 0
    # a flat image has no gradients: all-zero descriptors
    _, flat = F.dense_opponent_sift(np.full((40, 50, 3), 90, np.uint8))
    assert np.all(flat == 0)


def test_codebook_recovers_separated_clusters():
    rng = np.random.default_rng(1)
    centres = np.array([[0, 0], [10, 0], [0, 10]], np.float32)
    x = np.concatenate([c + rng.normal(0, 0.3, (200, 2)) for c in centres]).astype(np.float32)
    words = F.learn_codebook(x, 3, seed=0, iterations=10)
    found = sorted(map(tuple, np.round(words).astype(int).tolist()))
    assert found == [(0, 0), (0, 10), (10, 0)]
    ticks = []
    assert np.array_equal(words, F.learn_codebook(x, 3, seed=0, iterations=10,
                                                  on_iteration=lambda: ticks.append(1)))
    assert len(ticks) == 10                 # one progress step per iteration
    with pytest.raises(ValueError, match="distinct"):
        F.learn_codebook(np.zeros((10, 2), np.float32), 3)


def test_quantize_matches_brute_force():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(300, 8)).astype(np.float32)
    book = rng.normal(size=(17, 8)).astype(np.float32)
    naive = np.argmin(np.linalg.norm(x[:, None, :] - book[None], axis=2), axis=1)
    assert np.array_equal(F.quantize(x, book), naive)


def test_bag_of_words_hand_made():
    labels = np.array([[0, 0, 1, 1]] * 2)
    points = np.array([[0, 0], [1, 1], [2, 0], [3, 1], [3, 0]], np.float32)
    words = np.array([2, 2, 0, 1, 1])
    bow = F.bag_of_words(labels, points, words, 3, 3)
    assert bow.tolist() == [[0, 0, 1], [1 / 3, 2 / 3, 0], [0, 0, 0]]


def test_colour_and_position_features():
    img = np.zeros((10, 20, 3), np.uint8)
    img[:, :10] = (200, 30, 30)
    img[:, 10:] = (20, 90, 220)
    labels = np.zeros((10, 20), np.int32)
    labels[:, 10:] = 1
    lab = F.rgb_to_lab(img)
    col = F.colour_features(lab, labels, 2)
    assert np.allclose(col[:, 3:], 0, atol=1e-4)  # uniform colour: no spread
    expect_l = F.rgb_to_lab(np.array([[[200, 30, 30]]], np.uint8))[0, 0, 0] / 100
    assert col[0, 0] == pytest.approx(expect_l, abs=1e-5)
    pos = F.position_features(labels, 2)
    # left half: centroid x = 5/20, y = 5/10, extent 0.5 x 1, area 0.5, full box
    assert np.allclose(pos[0], [0.25, 0.5, 0.5, 1.0, 0.5, 1.0])
    assert np.allclose(pos[1], [0.75, 0.5, 0.5, 1.0, 0.5, 1.0])


def test_pairwise_features_eq27():
    lab_mean = np.array([[50.0, 0, 0], [60.0, 10, -20], [50.0, 0, 0]])
    edges = np.array([[0, 1], [0, 2]])
    out = F.pairwise_features(lab_mean, edges, np.array([7.0, 3.0]), 2e-2, 5e-3)
    # dL = 10 -> exp(-2); da = 10 -> exp(-0.5); db = 20 -> exp(-2); same colour -> P
    assert np.allclose(out[0], 7 * np.exp([-2.0, -0.5, -2.0]))
    assert np.allclose(out[1], [3, 3, 3])
    rng = np.random.default_rng(3)
    lab = rng.uniform(-128, 128, (30, 3))
    e = np.array([(i, j) for i in range(30) for j in range(i + 1, 30)])
    assert np.all(F.pairwise_features(lab, e, rng.uniform(0, 100, len(e))) >= 0)


def test_unary_blocks_and_switches():
    rng = np.random.default_rng(4)
    img = rng.integers(0, 256, (60, 80, 3)).astype(np.uint8)
    labels = segment(img, SuperpixelParams(method="felzenszwalb", min_size=200))
    n = labels.max() + 1
    cfg = F.FeatureConfig(n_words=5, codebook_descriptors=50)
    book = rng.uniform(0, 50, (5, 384)).astype(np.float32)
    u = F.unary_features(img, labels, cfg, book)
    assert u.shape == (n, 5 + 6 + 6 + 1) == (n, cfg.n_unary)
    assert np.allclose(u[:, :5].sum(axis=1), 1)  # normalised bag of words
    assert np.all(u[:, -1] == 1)
    only_bias = F.FeatureConfig(sift=False, colour=False, position=False)
    assert F.unary_features(img, labels, only_bias).tolist() == [[1.0]] * n
    with pytest.raises(ValueError, match="codebook"):
        F.unary_features(img, labels, cfg, None)
    with pytest.raises(ValueError):
        F.FeatureConfig(sift=False, colour=False, position=False, bias=False)


def test_config_round_trip():
    cfg = F.FeatureConfig(superpixels=SuperpixelParams(method="slic"), n_words=50,
                          codebook_descriptors=500, tau1=0.1)
    assert F.FeatureConfig.from_dict(cfg.to_dict()) == cfg
    with pytest.raises(ValueError, match="unknown feature settings"):
        F.FeatureConfig.from_dict({**cfg.to_dict(), "colour_sift": True})


def test_the_upsampling_is_recorded_unless_it_is_the_earlier_one():
    """Settings made before the option enlarged linearly: they hold no
    ``upsampling`` and read back as "linear"; another one is recorded, kept
    out of the bottom-up settings (the cache key holds it with the working
    size) and checked."""
    linear = F.FeatureConfig()
    assert linear.upsampling == "linear" and "upsampling" not in linear.to_dict()
    assert F.FeatureConfig.from_dict(linear.to_dict()) == linear
    lanczos = F.FeatureConfig(upsampling="lanczos")
    assert lanczos.to_dict()["upsampling"] == "lanczos"
    assert F.FeatureConfig.from_dict(lanczos.to_dict()) == lanczos != linear
    assert lanczos.bottom_up_dict() == linear.bottom_up_dict()
    with pytest.raises(ValueError, match="unknown upsampling 'cubic'"):
        F.FeatureConfig(upsampling="cubic")
