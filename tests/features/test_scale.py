"""The working resolution's arithmetic: shapes, label maps and images."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from segstruct.features.scale import (AUTO_MAX_LONG_SIDE, MIN_LONG_SIDE, auto_long_side,
                                      resize_image, resize_labels, working_key,
                                      working_shape)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 5000), st.integers(1, 5000), st.integers(MIN_LONG_SIDE, 3000))
def test_working_shape_has_the_long_side_and_keeps_the_aspect(h, w, long_side):
    wh, ww = working_shape((h, w), long_side)
    assert max(wh, ww) == long_side and min(wh, ww) >= 1
    # the short side is the long side's rounded share
    short, long_ = (wh, h / w * long_side) if h < w else (ww, w / h * long_side)
    if h != w:
        assert abs(short - long_) <= 0.5 + 1e-9 or short == 1
    assert working_shape((h, w), None) == (h, w)
    # an image and its copy k times larger get one working shape
    assert working_shape((3 * h, 3 * w), long_side) == (wh, ww)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 40), st.integers(1, 40), st.integers(1, 5), st.integers(0, 2 ** 31))
def test_labels_grown_by_a_whole_factor_are_each_pixel_repeated(h, w, k, seed):
    labels = np.random.default_rng(seed).integers(0, 50, (h, w)).astype(np.int32)
    grown = resize_labels(labels, (h * k, w * k))
    np.testing.assert_array_equal(grown, np.kron(labels, np.ones((k, k), np.int32)))
    # and shrunk back, each block gives its label again
    np.testing.assert_array_equal(resize_labels(grown, (h, w)), labels)


def test_grown_labels_keep_every_label_and_invent_none():
    rng = np.random.default_rng(1)
    labels = rng.integers(0, 30, (17, 23))
    grown = resize_labels(labels, (40, 61))
    assert set(np.unique(grown)) == set(np.unique(labels))


def test_resized_images_average_when_shrunk_and_keep_their_type():
    rng = np.random.default_rng(2)
    image = rng.integers(0, 256, (8, 12, 3), dtype=np.uint8)
    assert resize_image(image, (8, 12)) is image
    big = np.kron(image, np.ones((4, 4, 1), np.uint8))
    # a copy 4x larger by repeated pixels shrinks back exactly (area averaging)
    np.testing.assert_array_equal(resize_image(big, (8, 12)), image)
    half = resize_image(image, (4, 6))
    assert half.dtype == np.uint8 and half.shape == (4, 6, 3)
    block = image[:2, :2].reshape(-1, 3).astype(float).mean(axis=0)
    np.testing.assert_allclose(half[0, 0], block, atol=1)
    grown = resize_image(image, (16, 24))
    assert grown.shape == (16, 24, 3) and grown.dtype == np.uint8


def test_auto_long_side_is_the_largest_within_bounds():
    assert auto_long_side([(10, 300), (400, 20), (50, 350)]) == 400
    assert auto_long_side([(3, 4)]) == MIN_LONG_SIDE
    # a training split of phone photos is brought down, not every image up
    assert auto_long_side([(3000, 4000), (300, 200)]) == AUTO_MAX_LONG_SIDE
    with pytest.raises(ValueError, match="no image"):
        auto_long_side([])


def _wave(h, w, step):
    """A smooth two-dimensional wave sampled at pixel centres ``step`` apart
    (0..255, period 24 pixels of the finest grid)."""
    y = (np.arange(h) + 0.5) * step - 0.5
    x = (np.arange(w) + 0.5) * step - 0.5
    wave = 127.5 + 100 * np.sin(2 * np.pi * y / 24)[:, None] * np.cos(2 * np.pi * x / 24)
    return np.repeat(wave[:, :, None], 3, axis=2)


def test_lanczos_enlarges_a_smooth_image_closer_to_its_truth_than_linear():
    """Enlarging a coarse sampling of a smooth wave 4x: Lanczos comes closer
    to the wave sampled finely than linear interpolation does; shrinking
    does not depend on the setting (area averaging)."""
    coarse = np.round(_wave(24, 32, 4.0)).astype(np.uint8)
    truth = _wave(96, 128, 1.0)[8:-8, 8:-8]                # away from the borders

    def error(upsampling):
        grown = resize_image(coarse, (96, 128), upsampling).astype(float)[8:-8, 8:-8]
        return np.abs(grown - truth).mean()

    assert error("lanczos") < 0.5 * error("linear"), (error("lanczos"), error("linear"))
    big = np.round(_wave(96, 128, 1.0)).astype(np.uint8)
    np.testing.assert_array_equal(resize_image(big, (24, 32), "lanczos"),
                                  resize_image(big, (24, 32), "linear"))
    with pytest.raises(ValueError, match="unknown upsampling 'cubic'"):
        resize_image(coarse, (96, 128), "cubic")


def test_working_keys_name_the_upsampling_only_when_it_is_not_the_earlier_one():
    assert working_key(None, "lanczos") == {}            # an image worked on as it is
    assert working_key((30, 40), "linear") == {"work": [30, 40]}   # the entries made before
    assert working_key((30, 40), "lanczos") == {"work": [30, 40], "upsampling": "lanczos"}
