import numpy as np
from hypothesis import given, settings, strategies as st

from segstruct.features.topdown.transform import (bounded_distance_transform, placed_cells,
                                                  placed_distance_transform)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 4), st.integers(1, 12), st.integers(1, 12), st.integers(0, 3),
       st.integers(1, 7), st.integers(1, 7), st.booleans(), st.booleans(),
       st.integers(0, 10 ** 6))
def test_placed_distance_transform_is_the_whole_one_read_at_the_parts_cells(
        p, h, w, radius, ho, wo, ties, free, seed):
    """Bit for bit the whole transform at cells (min(2r + a0, H - 1),
    min(2q + a1, W - 1)): anchors past the map's edge (clamped cells), ties
    (rounded responses, no cost) and the displacements included."""
    rng = np.random.default_rng(seed)
    response = rng.normal(size=(p, h, w)).astype(np.float32)
    if ties:
        response = np.round(response)
    cost = rng.normal(size=(p, 4))
    cost[:, [1, 3]] = np.abs(cost[:, [1, 3]])
    if free:
        cost[:] = 0.0
    anchors = rng.integers(0, 14, size=(p, 2))
    best, dy, dx = bounded_distance_transform(response, cost, radius)
    rows = np.minimum(2 * np.arange(ho)[None, :, None] + anchors[:, 0, None, None], h - 1)
    cols = np.minimum(2 * np.arange(wo)[None, None, :] + anchors[:, 1, None, None], w - 1)
    k = np.arange(p)[:, None, None]
    got_best, got_dy, got_dx = placed_distance_transform(response, cost, radius, anchors, (ho, wo))
    assert got_best.dtype == np.float32 and got_dy.dtype == got_dx.dtype == np.int64
    np.testing.assert_array_equal(got_best, best[k, rows, cols])
    np.testing.assert_array_equal(got_dy, dy[k, rows, cols])
    np.testing.assert_array_equal(got_dx, dx[k, rows, cols])


def test_placed_distance_transform_with_no_root_cells_is_empty():
    best, dy, dx = placed_distance_transform(np.zeros((2, 5, 5)), np.zeros((2, 4)), 2,
                                             np.zeros((2, 2), int), (0, 3))
    assert best.shape == dy.shape == dx.shape == (2, 0, 3)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 3), st.integers(1, 9), st.integers(1, 9), st.integers(0, 5),
       st.integers(0, 5), st.integers(0, 10 ** 6))
def test_placed_cells_are_the_roots_part_cells_clamped_to_the_map(p, h, w, ho, wo, seed):
    """Cell by cell: (2r + a0, 2q + a1), moved onto the map's last row or
    column where it falls past it, and ``inside`` only where it did not."""
    anchors = np.random.default_rng(seed).integers(0, 12, size=(p, 2))
    rows, cols, inside = placed_cells(anchors, (ho, wo), (h, w))
    assert rows.shape == cols.shape == inside.shape == (p, ho, wo)
    for k in range(p):
        for r in range(ho):
            for q in range(wo):
                y, x = 2 * r + anchors[k, 0], 2 * q + anchors[k, 1]
                assert (rows[k, r, q], cols[k, r, q]) == (min(y, h - 1), min(x, w - 1))
                assert inside[k, r, q] == (y < h and x < w)
