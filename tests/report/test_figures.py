"""Figures: overlay pixels, per-image IoU, and the PNGs of every figure."""
import numpy as np
import pytest

from segstruct.report.figures import (BOUNDARY_COLOUR, VOID_COLOUR, image_iou, loss_surface_figure,
                               overlay, qualitative_figure, save_figure, training_figure)

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _png_ok(path):
    data = path.read_bytes()
    assert len(data) > 1000
    assert data.startswith(PNG_SIGNATURE)


def _image(h, w, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (h, w, 3), dtype=np.uint8)


# --------------------------------------------------------------------------
# overlay
# --------------------------------------------------------------------------

def test_overlay_pixels():
    img = _image(12, 16)
    mask = np.zeros((12, 16), bool)
    mask[2:6, 2:6] = True
    segments = np.zeros((12, 16), np.int64)
    segments[:, 10:] = 1                       # one vertical edge between columns 9 and 10
    void = np.zeros((12, 16), bool)
    void[10, 2] = True
    colour, alpha = (200, 10, 50), 0.25
    out = overlay(img, mask, segments, colour=colour, alpha=alpha, void=void)
    assert out.shape == img.shape and out.dtype == np.uint8
    # foreground: blended colour
    expected = np.rint(0.75 * img[3, 3].astype(float) + 0.25 * np.array(colour))
    np.testing.assert_array_equal(out[3, 3], expected)
    # background away from boundaries: untouched
    np.testing.assert_array_equal(out[8, 4], img[8, 4])
    np.testing.assert_array_equal(out[0, 15], img[0, 15])
    # boundaries on both sides of the change of label, and only there
    assert (out[:, 9] == BOUNDARY_COLOUR).all() and (out[:, 10] == BOUNDARY_COLOUR).all()
    assert not (out[:, :9] == BOUNDARY_COLOUR).all(axis=2).any()
    assert not (out[:, 11:] == BOUNDARY_COLOUR).all(axis=2).any()
    # void: blended grey
    np.testing.assert_array_equal(
        out[10, 2], np.rint(0.75 * img[10, 2].astype(float) + 0.25 * np.array(VOID_COLOUR)))
    # the input is not modified
    assert not np.shares_memory(out, img)


def test_overlay_void_wins_over_foreground_and_no_segments():
    img = _image(4, 4, seed=1)
    mask = np.ones((4, 4), np.uint8)
    void = np.zeros((4, 4), bool)
    void[0, 0] = True
    out = overlay(img, mask, void=void, alpha=1.0)
    np.testing.assert_array_equal(out[0, 0], VOID_COLOUR)
    np.testing.assert_array_equal(out[1, 1], (230, 40, 40))


@pytest.mark.parametrize("kwargs, match", [
    ({"image": np.zeros((4, 4), np.uint8)}, "image"),
    ({"image": np.zeros((4, 4, 3), np.float64)}, "uint8"),
    ({"mask": np.zeros((4, 5), bool)}, "mask"),
    ({"mask": np.full((4, 4), 255, np.uint8)}, "0/1"),
    ({"segments": np.zeros((3, 4), int)}, "segments"),
    ({"void": np.zeros((5, 4), bool)}, "void"),
    ({"alpha": 1.5}, "alpha"),
])
def test_overlay_rejects_bad_input(kwargs, match):
    args = {"image": np.zeros((4, 4, 3), np.uint8), "mask": np.zeros((4, 4), bool)}
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        overlay(**args)


# --------------------------------------------------------------------------
# image_iou
# --------------------------------------------------------------------------

def test_image_iou_excludes_void():
    truth = np.array([[1, 1, 0, 0],
                      [1, 255, 255, 0]], np.uint8)
    pred = np.array([[1, 0, 1, 0],
                     [1, 1, 1, 1]], bool)
    # TP = 2 ((0,0), (1,0)); FN = 1 ((0,1)); FP = 2 ((0,2), (1,3)); void ignored
    assert image_iou(truth, pred) == pytest.approx(2 / 5)
    assert image_iou(truth, truth == 1) == 1.0
    assert image_iou(truth, np.zeros_like(pred)) == 0.0


def test_image_iou_empty_is_none():
    truth = np.array([[0, 255], [0, 0]], np.uint8)
    pred = np.array([[0, 1], [0, 0]], np.uint8)        # only on void
    assert image_iou(truth, pred) is None


def test_image_iou_rejects_bad_input():
    with pytest.raises(ValueError):
        image_iou(np.zeros((2, 2), np.uint8), np.zeros((2, 3), bool))
    with pytest.raises(ValueError):
        image_iou(np.full((2, 2), 7, np.uint8), np.zeros((2, 2), bool))


# --------------------------------------------------------------------------
# figures
# --------------------------------------------------------------------------

def _panel(image_id, h, w, seed):
    rng = np.random.default_rng(seed)
    truth = np.zeros((h, w), np.uint8)
    truth[h // 4: 3 * h // 4, w // 4: 3 * w // 4] = 1
    truth[0, :] = 255
    segments = (np.arange(h)[:, None] // 4) * 100 + np.arange(w)[None, :] // 5
    preds = {"bl1": np.zeros((h, w), np.uint8),            # no foreground: IoU 0
             "bl2": rng.integers(0, 2, (h, w)).astype(np.uint8),
             "proposed": (truth == 1).astype(np.uint8)}
    return {"image_id": image_id, "image": _image(h, w, seed), "truth": truth,
            "segments": segments, "predictions": preds}


def test_qualitative_figure(tmp_path):
    panels = [_panel("img_a", 20, 30, 0), _panel("img_b", 26, 18, 1)]
    methods = ["bl2", "proposed", "bl1"]
    fig = qualitative_figure(panels, methods, "synthetic data; class car; segstruct test")
    assert len(fig.axes) == 2 * (2 + 3)
    titles = [ax.get_title() for ax in fig.axes]
    for r, panel in enumerate(panels):
        row = titles[r * 5: (r + 1) * 5]
        assert fig.axes[r * 5].get_ylabel() == panel["image_id"]
        for title, m in zip(row[2:], methods):
            pred = panel["predictions"][m].astype(bool)
            keep = panel["truth"] != 255
            fg = panel["truth"] == 1
            iou = (fg & pred).sum() / ((fg | pred) & keep).sum()
            assert title.startswith(m)
            assert f"IoU {100 * iou:.1f}%" in title
    assert "IoU 0.0%" in titles[4] and "IoU 100.0%" in titles[3]
    path = save_figure(fig, tmp_path / "q.png")
    assert path == tmp_path / "q.png"
    _png_ok(path)


def test_qualitative_figure_undefined_iou_and_missing_method():
    panel = _panel("empty", 12, 12, 2)
    panel["truth"][panel["truth"] == 1] = 0
    panel["predictions"] = {"bl1": np.zeros((12, 12), np.uint8)}
    fig = qualitative_figure([panel], ["bl1"], "")
    assert fig.axes[2].get_title() == "bl1  IoU -"
    with pytest.raises(ValueError, match="proposed"):
        qualitative_figure([panel], ["bl1", "proposed"], "")


def test_loss_surface_figure(tmp_path):
    fig, tris = loss_surface_figure("iou", n_pos=6, n_neg=10, n_triangles=(8, 4),
                                    caption="IoU, Np = 6, Nn = 10")
    assert [len(t) for t in tris] == [8, 4]
    assert tris[0].max_error <= tris[1].max_error
    titles = [ax.get_title() for ax in fig.axes]
    for t in tris:
        assert any(f"M = {len(t)}" in s and f"max error {t.max_error:.3g}" in s
                   and f"mean {t.mean_error:.3g}" in s for s in titles)
    _png_ok(save_figure(fig, tmp_path / "surface.png"))


def test_loss_surface_figure_takes_a_loss_object():
    from segstruct.inference.losses import get_loss
    fig, tris = loss_surface_figure(get_loss("fbeta", beta=2.0), 4, 5, n_triangles=3)
    assert [len(t) for t in tris] == [3]
    assert "beta" in fig.axes[0].get_title()


def test_training_figure(tmp_path):
    run_a = [{"iteration": 1, "primal": 614.0, "best_primal": 614.0, "dual": 1e-9,
              "gap": 614.0, "n_violated": 3, "n_constraints": 1, "max_violation": 40.0},
             {"iteration": 2, "primal": 300.0, "best_primal": 300.0, "dual": 250.0,
              "gap": 50.0, "n_violated": 1, "n_constraints": 2, "max_violation": 0.0},
             # converged: zero gap, and no "n_constraints"
             {"iteration": 3, "primal": 260.0, "best_primal": 260.0, "dual": 260.0,
              "gap": 0.0, "n_violated": 0}]
    run_b = [{"iteration": 1, "primal": 0.5, "best_primal": 0.5, "dual": 0.0, "gap": 0.5,
              "n_violated": 1},
             {"iteration": 2, "primal": 0.2, "best_primal": 0.2, "n_violated": 1}]  # no dual/gap
    fig = training_figure({"bl1": run_a, "proposed": run_b}, caption="fake logs")
    ax_obj, ax_gap, ax_vio, ax_max = fig.axes
    assert len(ax_obj.get_lines()) == 4 and len(ax_gap.get_lines()) == 2
    assert len(ax_vio.get_lines()) == 2 and len(ax_max.get_lines()) == 2
    np.testing.assert_array_equal(ax_vio.get_lines()[0].get_ydata(), [3, 1, 0])
    # a zero violation is a gap on the log panel; run b has no violations logged
    assert list(ax_max.get_lines()[0].get_ydata()[:1]) == [40.0]
    assert np.isnan(ax_max.get_lines()[0].get_ydata()[1])
    assert np.all(np.isnan(ax_max.get_lines()[1].get_ydata()))
    # the zero gap is left out of the log panel rather than drawn as 0
    gap_a = ax_gap.get_lines()[0].get_ydata()
    assert np.isnan(gap_a[2]) and gap_a[1] == 50.0
    assert ax_obj.get_yscale() == "log" and ax_gap.get_yscale() == "log"
    assert [t.get_text() for t in ax_gap.get_legend().get_texts()] == ["bl1", "proposed"]
    _png_ok(save_figure(fig, tmp_path / "train.png"))


def test_save_figure_creates_directories_and_leaves_no_temporaries(tmp_path):
    fig = training_figure({"a": [{"iteration": 1, "primal": 1.0, "dual": 0.5, "gap": 0.5,
                                  "n_violated": 1}]})
    target = tmp_path / "new" / "nested" / "dir" / "fig.png"
    assert save_figure(fig, str(target)) == target
    _png_ok(target)
    first = target.read_bytes()
    save_figure(fig, target)                       # overwriting works too
    assert target.read_bytes()[:8] == first[:8]
    assert sorted(p.name for p in target.parent.iterdir()) == ["fig.png"]
