import numpy as np
from hypothesis import given, settings, strategies as st

import segstruct.features.topdown.hog as hog
from segstruct.features.topdown.hog import (HOG_DIM, N_INSENSITIVE, N_SENSITIVE, TRUNCATION,
                                            correlate, feature_pyramid, hog_map, pad_map)


def direct_correlation(features, filt):
    h, w = filt.shape[:2]
    out = np.zeros((features.shape[0] - h + 1, features.shape[1] - w + 1))
    for y in range(out.shape[0]):
        for x in range(out.shape[1]):
            out[y, x] = np.sum(features[y:y + h, x:x + w] * filt)
    return out


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 9), st.integers(1, 9), st.integers(1, 4), st.integers(1, 3),
       st.integers(1, 5), st.integers(0, 10 ** 6))
def test_correlation_matches_a_direct_loop(rows, cols, fh, fw, d, seed):
    rng = np.random.default_rng(seed)
    feats = rng.normal(size=(rows, cols, d))
    filters = rng.normal(size=(3, fh, fw, d))
    out = correlate(feats, filters)
    assert out.shape == (max(rows - fh + 1, 0), max(cols - fw + 1, 0), 3)
    for f in range(3):
        if out.size:
            np.testing.assert_allclose(out[:, :, f], direct_correlation(feats, filters[f]),
                                       rtol=1e-4, atol=1e-4)


def edge_image(angle_deg, size=64):
    """A soft edge (a ramp 12 px wide) whose gradient points at angle_deg,
    measured from +x towards +y (rows down). A hard step would quantise the
    pixel gradients to a few directions."""
    yy, xx = np.mgrid[:size, :size] - size / 2 + 0.5
    t = np.deg2rad(angle_deg)
    ramp = np.clip((np.cos(t) * xx + np.sin(t) * yy) / 12 + 0.5, 0, 1)
    return np.rint(30 + 190 * ramp).astype(np.uint8)


def test_edge_energy_lands_in_its_orientation_bin():
    for k in range(N_SENSITIVE):
        h = hog_map(edge_image(20 * k))
        assert h.shape == (8, 8, HOG_DIM)
        sens = h[:, :, :N_SENSITIVE].sum(axis=(0, 1))
        insens = h[:, :, N_SENSITIVE:N_SENSITIVE + N_INSENSITIVE].sum(axis=(0, 1))
        assert int(np.argmax(sens)) == k
        assert int(np.argmax(insens)) == k % N_INSENSITIVE
        # the reverse contrast goes to the opposite signed bin, same unsigned bin
        rev = hog_map(255 - edge_image(20 * k))[:, :, :N_SENSITIVE].sum(axis=(0, 1))
        assert int(np.argmax(rev)) == (k + N_SENSITIVE // 2) % N_SENSITIVE


def test_flat_image_has_no_gradient_features_and_values_are_clipped():
    assert np.all(hog_map(np.full((32, 40, 3), 77, np.uint8)) == 0)
    h = hog_map(np.random.default_rng(0).integers(0, 256, (48, 48, 3)).astype(np.uint8))
    assert np.all(h[:, :, :N_SENSITIVE] <= 0.4 + 1e-6) and np.all(h >= 0)
    assert h[:, :, TRUNCATION].max() == 0


def test_padding_marks_truncation():
    p = pad_map(np.zeros((2, 3, HOG_DIM), np.float32), 1, 2)
    assert p.shape == (4, 7, HOG_DIM)
    assert p[0, 0, TRUNCATION] == 1 and p[1, 2, TRUNCATION] == 0


def test_pyramid_scales_and_sizes():
    img = np.random.default_rng(1).integers(0, 256, (96, 128, 3)).astype(np.uint8)
    pyr = feature_pyramid(img, cell=8, interval=4, max_scale=2.0, min_cells=3, pad=(1, 2))
    assert pyr.scales[0] == 2.0
    np.testing.assert_allclose(pyr.scales[4], 1.0)
    for lv, s in zip(pyr.levels, pyr.scales):
        assert lv.shape[0] - 2 == int(round(96 * s)) // 8 or abs(lv.shape[0] - 2 - 96 * s / 8) <= 1
        assert lv.shape[0] - 2 >= 3
    # level 0 (scale 2) is computed with 4 px cells at scale 1: the same grid
    assert pyr.levels[0].shape[:2] == (96 // 4 + 2, 128 // 4 + 4)


def test_a_memo_shares_hog_maps_between_pyramids_of_one_image(monkeypatch):
    """Pyramids of one image for other filters (other pads, fewer levels, a
    root stage's coarser top) read the maps a memo holds, and are the
    pyramids made without it."""
    img = np.random.default_rng(2).integers(0, 256, (90, 130, 3)).astype(np.uint8)
    made = []

    def counted(image, cell=8):
        made.append((image.shape, cell))
        return hog_map(image, cell)

    monkeypatch.setattr(hog, "hog_map", counted)
    memo: dict = {}
    settings_ = [dict(max_scale=2.0, min_cells=3, pad=(2, 3)),      # the first fills it
                 dict(max_scale=2.0, min_cells=5, pad=(4, 1)),      # fewer levels
                 dict(max_scale=1.0, min_cells=3, pad=(1, 1))]      # the roots' stage
    for k, kw in enumerate(settings_):
        before = len(made)
        shared = feature_pyramid(img, cell=8, interval=5, memo=memo, **kw)
        assert len(made) == before if k else len(made) == len(shared.levels) == len(memo)
        alone = feature_pyramid(img, cell=8, interval=5, **kw)
        assert len(shared.levels) == len(alone.levels)
        np.testing.assert_array_equal(shared.scales, alone.scales)
        for a, b in zip(shared.levels, alone.levels):
            np.testing.assert_array_equal(a, b)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 12), st.integers(1, 14), st.integers(1, 6), st.integers(1, 11),
       st.sampled_from([1, 2, 6]), st.integers(0, 10 ** 6))
def test_correlation_adds_each_cells_taps_in_order_bit_for_bit(rows, cols, fh, fw, n, seed):
    """One strided sum (two or more output columns) or the loop over taps
    (one column), the same float32 numbers as adding the taps one at a
    time in (i, j) order: what the detectors and the cache were made with."""
    rng = np.random.default_rng(seed)
    feats = rng.random((rows + fh - 1, cols + fw - 1, HOG_DIM), dtype=np.float32)
    feats[rng.random(feats.shape) < 0.3] = 0.0
    filters = rng.normal(size=(n, fh, fw, HOG_DIM)).astype(np.float32)
    d = HOG_DIM
    kernel = np.ascontiguousarray(filters.transpose(3, 1, 2, 0).reshape(d, fh * fw * n))
    z = (feats.reshape(-1, d) @ kernel).reshape(feats.shape[0], feats.shape[1], fh, fw, n)
    expected = np.zeros((rows, cols, n), np.float32)
    for i in range(fh):
        for j in range(fw):
            expected += z[i:i + rows, j:j + cols, i, j]
    got = correlate(feats, filters)
    assert got.dtype == np.float32 and got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(hog.tap_sums(z, rows, cols), expected)


def test_shared_maps_find_an_images_maps_again_while_the_process_memo_is_shared(monkeypatch):
    """The same pixels read again (another array) find the maps an earlier
    call kept, and make the same pyramid; other pixels do not; outside
    ``sharing`` nothing is shared."""
    from segstruct.io.process_memo import release, sharing
    rng = np.random.default_rng(3)
    img = rng.integers(0, 256, (70, 90, 3)).astype(np.uint8)
    other = img.copy()
    other[0, 0, 0] ^= 1
    made = []

    def counted(image, cell=8):
        made.append(cell)
        return hog_map(image, cell)

    monkeypatch.setattr(hog, "hog_map", counted)
    alone = feature_pyramid(img, max_scale=2.0, pad=(2, 2))
    per_pyramid = len(made)
    assert hog.shared_maps(img) is None
    release()
    try:
        with sharing():
            first = feature_pyramid(img, max_scale=2.0, pad=(2, 2), memo=hog.shared_maps(img))
            assert len(made) == 2 * per_pyramid
            again = feature_pyramid(img.copy(), max_scale=2.0, pad=(3, 1),
                                    memo=hog.shared_maps(img.copy()))
            assert len(made) == 2 * per_pyramid      # nothing made anew
            feature_pyramid(other, max_scale=2.0, pad=(2, 2), memo=hog.shared_maps(other))
            assert len(made) == 3 * per_pyramid
        for a, b, c in zip(alone.levels, first.levels, again.levels):
            np.testing.assert_array_equal(a, b)
            np.testing.assert_array_equal(a[2:-2, 2:-2], c[3:-3, 1:-1])   # other pad
    finally:
        release()
