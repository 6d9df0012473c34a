"""SuperpixelGraph: the map on the image's own pixels is made from the
working one when asked for, and never held."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from segstruct.features.per_image import SuperpixelGraph
from segstruct.features.scale import resize_labels


def _graph(work, image_shape):
    return SuperpixelGraph("img", work, np.zeros((0, 2), np.int64), np.zeros(0),
                           image_shape=image_shape)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 12), st.integers(1, 12), st.integers(1, 40), st.integers(1, 40),
       st.integers(0, 2**31 - 1))
def test_segments_and_paint_are_the_working_map_resized(h, w, H, W, seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 6))
    work = rng.integers(0, n, (h, w)).astype(np.int32)
    work.flat[0] = n - 1                                    # n nodes
    g = _graph(work, (H, W))
    expected = resize_labels(work, (H, W))
    assert g.shape == (H, W) and g.n_nodes == n
    np.testing.assert_array_equal(g.segments, expected)
    values = rng.normal(size=n)
    painted = g.paint(values)
    assert painted.dtype == values.dtype
    np.testing.assert_array_equal(painted, values[expected])
    labels = rng.integers(0, 2, n).astype(np.uint8)
    np.testing.assert_array_equal(g.paint(labels), labels[expected])


def test_a_graph_holds_no_array_of_the_image_s_size():
    """A 12-MP photo's map is 48 MB as int32; its graph holds the working one only."""
    work = np.arange(12, dtype=np.int32).reshape(3, 4)
    g = _graph(work, (300, 400))
    assert g.segments.shape == (300, 400)
    held = [v for v in vars(g).values() if isinstance(v, np.ndarray)]
    assert all(v.size <= work.size for v in held)
    same = _graph(work, None)                 # worked on at its own size
    assert same.segments is work and same.shape == (3, 4)
    np.testing.assert_array_equal(same.paint(np.arange(12) * 2), work * 2)


def test_paint_refuses_a_value_count_other_than_the_nodes():
    g = _graph(np.array([[0, 1], [1, 2]], np.int32), (4, 4))
    for values in (np.zeros(2), np.zeros(4), np.zeros((3, 1))):
        with pytest.raises(ValueError, match="3 superpixels of image img"):
            g.paint(values)
