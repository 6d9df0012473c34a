"""Tests of segstruct.inference.triangulation: the piecewise-linear loss surface (Eq. 13).

Geometry is checked by brute force with barycentric coordinates written here,
independently of the module's half-plane tests and of ``locate``.
"""
import math

import numpy as np
import pytest

from segstruct.inference.losses import FBetaLoss, HammingLoss, IoULoss, get_loss
from segstruct.inference.triangulation import Triangulation, approximation_error, triangulate

def scale(tri):
    return max(tri.n_neg, tri.n_pos, tri.vertices.max(), 1e-300)


def barycentric(tri: Triangulation, x, y):
    """(M, P, 3) barycentric coordinates of the points in every triangle."""
    c = tri.vertices[tri.triangles]                                    # (M, 3, 2)
    x = np.asarray(x, float)[None, :]
    y = np.asarray(y, float)[None, :]
    x0, y0 = c[:, 0, 0:1], c[:, 0, 1:2]
    x1, y1 = c[:, 1, 0:1], c[:, 1, 1:2]
    x2, y2 = c[:, 2, 0:1], c[:, 2, 1:2]
    det = (y1 - y2) * (x0 - x2) + (x2 - x1) * (y0 - y2)
    l0 = ((y1 - y2) * (x - x2) + (x2 - x1) * (y - y2)) / det
    l1 = ((y2 - y0) * (x - x2) + (x0 - x2) * (y - y2)) / det
    return np.stack([l0, l1, 1.0 - l0 - l1], axis=-1)


def edge_distance(tri, x, y):
    """(M, P) smallest signed distance to the triangle's edges (> 0 inside):
    barycentric coordinate i times the height over the edge opposite corner i."""
    c = tri.vertices[tri.triangles]
    twice_area = np.abs((c[:, 1, 0] - c[:, 0, 0]) * (c[:, 2, 1] - c[:, 0, 1])
                        - (c[:, 2, 0] - c[:, 0, 0]) * (c[:, 1, 1] - c[:, 0, 1]))
    opposite = np.linalg.norm(np.roll(c, -2, axis=1) - np.roll(c, -1, axis=1), axis=-1)  # (M, 3)
    height = twice_area[:, None] / opposite
    return (barycentric(tri, x, y) * height[:, None, :]).min(axis=-1)


def closed_membership(tri, x, y):
    """(M, P) bool: point p in the closed triangle k, to the spec's 1e-9 relative tolerance."""
    return edge_distance(tri, x, y) >= -1e-9 * scale(tri)


def open_membership(tri, x, y):
    return edge_distance(tri, x, y) > 1e-9 * scale(tri)


def lattice(n_pos, n_neg):
    i, j = np.meshgrid(np.arange(math.floor(n_neg) + 1.0), np.arange(math.floor(n_pos) + 1.0),
                       indexing="ij")
    return i.ravel(), j.ravel()


def brute_owner(tri, x, y):
    """Lowest-index triangle whose closed set holds each point (-1: none)."""
    inside = closed_membership(tri, x, y)
    return np.where(inside.any(axis=0), inside.argmax(axis=0), -1)


def brute_errors(tri, loss, n_pos, n_neg):
    x, y = lattice(n_pos, n_neg)
    owner = brute_owner(tri, x, y)
    assert (owner >= 0).all()
    pl = tri.planes[owner]
    err = np.abs(get_loss(loss)(x, y, n_pos, n_neg) - (pl[:, 0] * x + pl[:, 1] * y + pl[:, 2]))
    return err.max(), err.mean()


def signed_areas(tri):
    c = tri.vertices[tri.triangles]
    return 0.5 * ((c[:, 1, 0] - c[:, 0, 0]) * (c[:, 2, 1] - c[:, 0, 1])
                  - (c[:, 2, 0] - c[:, 0, 0]) * (c[:, 1, 1] - c[:, 0, 1]))


COVER_CASES = [  # (loss, Np, Nn, M)
    ("iou", 3, 7, 6),
    ("iou", 10, 50, 40),
    ("f1", 10, 50, 15),
    ("iou", 12.5, 37.25, 20),          # area-mode totals: non-integers
    ("fbeta", 4.75, 0.5, 5),
]


@pytest.mark.parametrize("loss, n_pos, n_neg, m", COVER_CASES)
def test_partition_of_the_rectangle(loss, n_pos, n_neg, m):
    tri = triangulate(loss, n_pos, n_neg, n_triangles=m)
    assert len(tri) == m
    assert tri.vertices.dtype == np.float64 and tri.vertices.shape[1] == 2
    assert tri.triangles.dtype == np.int64 and tri.triangles.shape == (m, 3)
    assert tri.planes.dtype == np.float64 and tri.planes.shape == (m, 3)
    # Corners inside the rectangle, triangles counter-clockwise, areas adding up.
    assert tri.vertices.min() >= 0
    assert (tri.vertices[:, 0] <= n_neg).all() and (tri.vertices[:, 1] <= n_pos).all()
    area = signed_areas(tri)
    assert (area > 0).all()
    assert area.sum() == pytest.approx(n_pos * n_neg, rel=1e-12)

    # Every lattice point: in its located triangle, and in no lower-index one.
    x, y = lattice(n_pos, n_neg)
    k = tri.locate(x, y)
    assert k.dtype == np.int64 and (k >= 0).all()
    inside = closed_membership(tri, x, y)
    assert inside[k, np.arange(x.size)].all()
    lower = np.arange(m)[:, None] < k[None, :]
    assert not (inside & lower).any()
    assert (open_membership(tri, x, y).sum(axis=0) <= 1).all()

    # Random continuous points: covered, and in at most one open triangle.
    rng = np.random.default_rng(1)
    px, py = rng.uniform(0, n_neg, 3000), rng.uniform(0, n_pos, 3000)
    assert (closed_membership(tri, px, py).sum(axis=0) >= 1).all()
    assert (open_membership(tri, px, py).sum(axis=0) <= 1).all()
    np.testing.assert_array_equal(tri.locate(px, py), brute_owner(tri, px, py))


def test_random_small_domains():
    # Seeded random totals (integers and area-mode reals, zeros included) and M.
    rng = np.random.default_rng(7)
    for _ in range(15):
        n_pos = float(rng.choice([rng.integers(0, 25), rng.uniform(0, 25)]))
        n_neg = float(rng.choice([rng.integers(0, 60), rng.uniform(0, 60)]))
        m = int(rng.integers(2, 45))
        loss = str(rng.choice(["iou", "f1", "hamming"]))
        tri = triangulate(loss, n_pos, n_neg, n_triangles=m)
        assert len(tri) == m
        assert signed_areas(tri).sum() == pytest.approx((n_pos or 1.0) * (n_neg or 1.0))
        x, y = lattice(n_pos, n_neg)
        np.testing.assert_array_equal(tri.locate(x, y), brute_owner(tri, x, y))
        mx, mean = brute_errors(tri, loss, n_pos, n_neg)
        assert tri.max_error == pytest.approx(mx, abs=1e-12)
        assert tri.mean_error == pytest.approx(mean, abs=1e-12)


def test_shared_edges_go_to_the_lowest_index():
    tri = triangulate("iou", 10, 50, n_triangles=40)
    # Midpoints of every edge and every vertex lie on two or more closed triangles.
    c = tri.vertices[tri.triangles]
    mid = ((c + np.roll(c, -1, axis=1)) / 2).reshape(-1, 2)
    pts = np.concatenate([mid, tri.vertices])
    np.testing.assert_array_equal(tri.locate(pts[:, 0], pts[:, 1]),
                                  brute_owner(tri, pts[:, 0], pts[:, 1]))


def test_locate_outside_and_evaluate():
    tri = triangulate("iou", 10, 50, n_triangles=15)
    fp = np.array([-1.0, 51.0, 10.0, 10.0, 50.0 + 1e-12])
    fn = np.array([5.0, 5.0, -0.5, 10.5, 10.0])
    np.testing.assert_array_equal(tri.locate(fp, fn)[:4], -1)
    assert tri.locate(fp, fn)[4] >= 0                     # within the tolerance
    val = tri.evaluate(fp, fn)
    assert np.isnan(val[:4]).all() and np.isfinite(val[4])
    # Shapes broadcast; values are the located plane.
    x, y = np.meshgrid(np.arange(51.0), np.arange(11.0))
    k = tri.locate(x, y)
    assert k.shape == x.shape
    pl = tri.planes[k]
    np.testing.assert_allclose(tri.evaluate(x, y), pl[..., 0] * x + pl[..., 1] * y + pl[..., 2])


@pytest.mark.parametrize("loss, n_pos, n_neg, m", COVER_CASES + [("iou", 600, 11000, 40)])
def test_planes_interpolate_the_loss_at_the_corners(loss, n_pos, n_neg, m):
    tri = triangulate(loss, n_pos, n_neg, n_triangles=m)
    c = tri.vertices[tri.triangles]                               # (M, 3, 2)
    plane = (tri.planes[:, None, 0] * c[..., 0] + tri.planes[:, None, 1] * c[..., 1]
             + tri.planes[:, None, 2])
    truth = get_loss(loss)(c[..., 0], c[..., 1], n_pos, n_neg)
    np.testing.assert_allclose(plane, truth, rtol=0, atol=1e-9)


@pytest.mark.parametrize("loss, n_pos, n_neg, m", COVER_CASES)
def test_reported_error_is_the_lattice_error(loss, n_pos, n_neg, m):
    tri = triangulate(loss, n_pos, n_neg, n_triangles=m)
    assert tri.error_exact
    mx, mean = brute_errors(tri, loss, n_pos, n_neg)
    assert tri.max_error == pytest.approx(mx, abs=1e-12)
    assert tri.mean_error == pytest.approx(mean, abs=1e-12)
    assert approximation_error(tri, loss) == pytest.approx((mx, mean, True), abs=1e-12)


def test_sampled_estimate_is_a_close_lower_bound():
    n_pos, n_neg = 300, 1500                      # 451,801 lattice points: truth is cheap
    tri = triangulate("iou", n_pos, n_neg, n_triangles=40)
    true_max, true_mean, exact = approximation_error(tri, "iou", exact=True)
    assert exact and tri.error_exact and tri.max_error == pytest.approx(true_max, abs=1e-12)
    est_max, est_mean, exact = approximation_error(tri, "iou", exact=False, seed=3)
    assert not exact
    assert est_max <= true_max + 1e-12
    assert est_max >= 0.95 * true_max
    assert est_mean == pytest.approx(true_mean, rel=0.05)


@pytest.mark.parametrize("loss", ["iou", "f1"])
def test_error_falls_as_triangles_are_added(loss):
    tris = [triangulate(loss, 10, 50, n_triangles=m) for m in (4, 15, 40, 100)]
    assert [len(t) for t in tris] == [4, 15, 40, 100]
    errors = [t.max_error for t in tris]
    assert all(a >= b for a, b in zip(errors, errors[1:])), errors
    assert errors[-1] < 0.25 * errors[0]
    assert tris[-1].mean_error < tris[0].mean_error


def test_refinement_gathers_where_iou_curves():
    # IoU = (FP + FN) / (Np + FP) curves most where Np + FP is small.
    tri = triangulate("iou", 10, 50, n_triangles=40)
    fp_centre = tri.vertices[tri.triangles][..., 0].mean(axis=1)
    assert (fp_centre < 10).sum() > (fp_centre > 25).sum()


@pytest.mark.parametrize("target", [0.05, 0.01])
def test_max_error_mode_meets_its_target(target):
    tri = triangulate("iou", 10, 50, max_error=target)
    assert tri.max_error <= target
    mx, _ = brute_errors(tri, "iou", 10, 50)
    assert mx <= target
    coarser = triangulate("iou", 10, 50, max_error=4 * target)
    assert len(coarser) <= len(tri)


@pytest.mark.parametrize("loss", [HammingLoss(), get_loss("adjusted_hamming", kappa=0.3)])
@pytest.mark.parametrize("m", [2, 7, 40])
def test_a_plane_is_approximated_exactly(loss, m):
    tri = triangulate(loss, 10, 50, n_triangles=m)
    assert len(tri) == m
    assert tri.max_error < 1e-12
    x, y = lattice(10, 50)
    np.testing.assert_allclose(tri.evaluate(x, y), loss(x, y, 10, 50), atol=1e-12)


def test_halfplanes_agree_with_barycentric_test():
    tri = triangulate("f1", 10, 50, n_triangles=25)
    rng = np.random.default_rng(2)
    x, y = rng.uniform(-2, 52, 4000), rng.uniform(-1, 11, 4000)
    bary = barycentric(tri, x, y).min(axis=-1)                    # (M, P)
    for k in range(len(tri)):
        h = tri.halfplanes(k)
        assert h.shape == (3, 3)
        np.testing.assert_allclose(np.hypot(h[:, 0], h[:, 1]), 1.0)
        inside = (h[:, 0:1] * x + h[:, 1:2] * y <= h[:, 2:3]).all(axis=0)
        clear = np.abs(bary[k]) > 1e-9                              # away from the edges
        np.testing.assert_array_equal(inside[clear], bary[k][clear] > 0)
        # The corners satisfy all three rows (to rounding).
        c = tri.vertices[tri.triangles[k]]
        assert (h[:, :2] @ c.T <= h[:, 2:3] + 1e-9).all()


@pytest.mark.parametrize("n_pos, n_neg", [(0, 50), (10, 0), (0, 0), (0, 7.5)])
@pytest.mark.parametrize("loss", ["iou", "f1", "hamming"])
def test_degenerate_domains(loss, n_pos, n_neg):
    tri = triangulate(loss, n_pos, n_neg, n_triangles=6)
    assert len(tri) == 6
    assert (signed_areas(tri) > 0).all()
    # The padded rectangle [0, max(Nn, 1)] x [0, max(Np, 1)] is covered exactly.
    assert signed_areas(tri).sum() == pytest.approx(max(n_neg, 1) * max(n_pos, 1))
    x, y = lattice(n_pos, n_neg)
    k = tri.locate(x, y)
    assert (k >= 0).all()
    np.testing.assert_array_equal(k, brute_owner(tri, x, y))
    assert np.isfinite(tri.evaluate(x, y)).all()
    mx, mean = brute_errors(tri, loss, n_pos, n_neg)
    assert tri.error_exact
    assert tri.max_error == pytest.approx(mx, abs=1e-12)
    assert tri.mean_error == pytest.approx(mean, abs=1e-12)
    # Outside the real (collapsed) rectangle: -1.
    assert tri.locate(n_neg + 0.5, n_pos) == -1
    assert tri.locate(n_neg, n_pos + 0.5) == -1


def test_iou_with_no_positives_is_matched_on_the_lattice():
    # Np = 0: IoU is 0 at FP = 0 and 1 for every FP >= 1, a jump between two
    # lattice points; a few triangles capture it exactly on the lattice.
    tri = triangulate("iou", 0, 50, n_triangles=6)
    x = np.arange(51.0)
    np.testing.assert_allclose(tri.evaluate(x, 0 * x), (x > 0).astype(float), atol=1e-9)


@pytest.mark.parametrize("kwargs", [
    {},                                                  # neither M nor max_error
    {"n_triangles": 10, "max_error": 0.1},               # both
    {"n_triangles": 1},
    {"n_triangles": 0},
    {"n_triangles": 2.5},
    {"n_triangles": True},
    {"max_error": 0.0},
    {"max_error": -0.1},
    {"max_error": float("nan")},
    {"max_error": "small"},
])
def test_invalid_arguments(kwargs):
    with pytest.raises(ValueError):
        triangulate("iou", 10, 50, **kwargs)


@pytest.mark.parametrize("n_pos, n_neg, loss", [
    (-1, 50, "iou"), (10, float("nan"), "iou"), (10, float("inf"), "iou"),
    ("ten", 50, "iou"), (10, 50, "no-such-loss"),
])
def test_invalid_domain_or_loss(n_pos, n_neg, loss):
    with pytest.raises(ValueError):
        triangulate(loss, n_pos, n_neg, n_triangles=10)


def test_results_are_independent_copies():
    a = triangulate(IoULoss(), 10, 50, n_triangles=15)
    a.planes[:] = 0.0
    a.vertices[:] = 0.0
    b = triangulate("iou", 10, 50, n_triangles=15)
    assert np.abs(b.planes).sum() > 0 and b.vertices.max() == 50
    assert b.loss_name == "iou"
    assert triangulate(FBetaLoss(2.0), 10, 50, n_triangles=4).loss_name == "fbeta(beta=2.0)"


def test_callable_loss():
    def sq(fp, fn, n_pos, n_neg):
        return ((fp + fn) / (n_pos + n_neg)) ** 2

    tri = triangulate(sq, 10, 50, n_triangles=20)
    assert tri.loss_name == "sq"
    mx, mean = brute_errors(tri, sq, 10, 50)
    assert tri.max_error == pytest.approx(mx, abs=1e-12)


def test_large_domain_uses_a_sampled_estimate():
    tri = triangulate("iou", 3000, 40000, n_triangles=40)
    assert len(tri) == 40
    assert not tri.error_exact
    assert np.isfinite(tri.max_error) and 0 < tri.max_error < 0.1
    assert 0 < tri.mean_error < tri.max_error
    assert signed_areas(tri).sum() == pytest.approx(3000 * 40000, rel=1e-12)
    # Spot check against the truth on random lattice points (a lower bound).
    rng = np.random.default_rng(5)
    x, y = rng.integers(0, 40001, 20000).astype(float), rng.integers(0, 3001, 20000).astype(float)
    err = np.abs(tri.evaluate(x, y) - IoULoss()(x, y, 3000, 40000))
    assert err.max() <= tri.max_error + 1e-12
