"""Figures: overlay pixels, per-image IoU, and the PNGs of every figure."""
import numpy as np
import pytest

from matplotlib.backends.backend_agg import FigureCanvasAgg

from segstruct.learn.estimators.structured_svm import StructuredSVM
from segstruct.report.figures import (BOUNDARY_COLOUR, OUTLINE_INNER, OUTLINE_OUTER, TINT_COLOURS,
                                      VOID_COLOUR, contrasting_colour, image_iou,
                                      loss_surface_figure, outline_width, overlay,
                                      qualitative_figure, save_figure, training_figure)

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
    out = overlay(img, mask, void=void, alpha=1.0, outline=False)
    np.testing.assert_array_equal(out[0, 0], VOID_COLOUR)
    # the default tint: the one that contrasts with the shown foreground
    np.testing.assert_array_equal(out[1, 1], contrasting_colour(img, mask.astype(bool) & ~void))
    # with the outline, the void pixel beside the foreground is its dark side
    np.testing.assert_array_equal(overlay(img, mask, void=void)[0, 0], OUTLINE_OUTER)


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


def _luminance(rgb):
    return np.asarray(rgb, np.float64) @ [0.299, 0.587, 0.114]


def _flat(h, w, colour):
    return np.broadcast_to(np.array(colour, np.uint8), (h, w, 3)).copy()


@pytest.mark.parametrize("background, obj", [
    ((200, 30, 30), (215, 25, 20)),       # a red car on a red wall: the old tint hid it
    ((150, 80, 40), (160, 85, 45)),       # a chestnut horse on brown
    ((250, 250, 250), (255, 255, 255)),   # white on white
    ((5, 5, 5), (0, 0, 0)),               # black on black
    ((0, 190, 255), (0, 190, 255)),       # the other tint's own colour
])
def test_overlay_shows_an_object_of_the_images_own_colour(background, obj):
    h, w = 60, 80
    img = _flat(h, w, background)
    mask = np.zeros((h, w), bool)
    mask[15:45, 20:60] = True
    img[mask] = obj
    out = overlay(img, mask)
    width = outline_width((h, w))
    inner = np.zeros_like(mask)
    inner[15:15 + width, 20:60] = True                 # the top edge, inside
    outer = np.zeros_like(mask)
    outer[15 - width:15, 20:60] = True                 # and just outside it
    # in the image the two sides of the boundary look alike ...
    assert abs(_luminance(img[inner]).mean() - _luminance(img[outer]).mean()) < 15
    # ... in the overlay they are as far apart as light from dark
    assert _luminance(out[inner]).mean() - _luminance(out[outer]).mean() > 200
    # and along the boundary the overlay differs visibly from the image
    change = np.abs(out.astype(float) - img).sum(axis=2)
    assert change[inner | outer].mean() > 150
    # the interior is tinted with a colour far from the object's own
    centre = (slice(25, 35), slice(35, 45))
    assert np.abs(out[centre].astype(float) - img[centre]).sum(axis=2).mean() > 100


def test_contrasting_colour_avoids_the_regions_colour():
    red, cyan = TINT_COLOURS
    img = _flat(10, 10, (40, 40, 200))                 # blue
    region = np.zeros((10, 10), bool)
    region[:5] = True
    img[region] = (190, 40, 30)                        # red half
    assert contrasting_colour(img, region) == cyan
    assert contrasting_colour(img, ~region) == red
    # an empty region counts as the whole image
    assert contrasting_colour(img, np.zeros((10, 10), bool)) == contrasting_colour(img)
    assert contrasting_colour(_flat(4, 4, (128, 128, 128))) in TINT_COLOURS


def test_outline_width_survives_a_figure_cell():
    assert outline_width((12, 16)) == 1
    assert outline_width((375, 500)) == 3              # a VOC image
    # the outline sits on both sides of the boundary, each side that wide
    img = _flat(375, 500, (100, 100, 100))
    mask = np.zeros((375, 500), bool)
    mask[100:200, 100:300] = True
    out = overlay(img, mask, outline=True)
    assert (out[100:103, 150] == OUTLINE_INNER).all() and (out[97:100, 150] == OUTLINE_OUTER).all()
    assert not (out[103, 150] == OUTLINE_INNER).all() and not (out[96, 150] == OUTLINE_OUTER).all()
    # the image's border is not a boundary of a foreground touching it
    full = overlay(img, np.ones((375, 500), bool))
    assert not (full == OUTLINE_INNER).all(axis=2).any()


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
    assert len(fig.axes) == 2 * (2 + 3) + 1             # the cells, then the legend's
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


def _legend_texts(fig):
    legends = [leg for ax in fig.axes for leg in [ax.get_legend()] if leg is not None]
    assert len(legends) == 1
    return legends[0], [t.get_text() for t in legends[0].get_texts()]


def test_qualitative_legend_names_what_is_drawn_and_covers_no_cell():
    panels = [_panel("img_a", 40, 60, 0), _panel("img_b", 52, 36, 1)]
    fig = qualitative_figure(panels, ["bl2", "proposed", "bl1"], "caption; code x")
    legend, texts = _legend_texts(fig)
    joined = " | ".join(texts)
    assert "foreground tint" in joined and "predicted" in joined and "true" in joined
    assert any("outline" in t for t in texts)
    assert any("superpixel boundaries" in t for t in texts)
    assert any("void" in t for t in texts)
    FigureCanvasAgg(fig).draw()
    box = legend.get_window_extent()
    cells = [ax for ax in fig.axes if ax.get_images()]
    assert len(cells) == 2 * 5
    for ax in cells:
        assert not box.overlaps(ax.get_window_extent()), ax.get_title()
    # and the caption is still there
    # (read from the text artists: Figure.get_supxlabel is newer than the
    # oldest matplotlib supported)
    from matplotlib.text import Text
    assert "caption; code x" in [t.get_text() for t in fig.findobj(Text)]


def test_qualitative_legend_leaves_out_what_is_not_drawn():
    panel = _panel("plain", 20, 20, 3)
    panel["truth"][panel["truth"] == 255] = 0            # no void
    del panel["segments"]                                # no superpixel boundaries
    fig = qualitative_figure([panel], ["bl1"], "")
    _, texts = _legend_texts(fig)
    assert len(texts) == 2
    assert not any("superpixel" in t or "void" in t for t in texts)


def test_qualitative_rows_share_a_tint_that_contrasts_with_the_object():
    h, w = 40, 40
    image = _flat(h, w, (180, 40, 30))                   # all red
    truth = np.zeros((h, w), np.uint8)
    truth[10:30, 10:30] = 1
    panel = {"image_id": "red", "image": image, "truth": truth,
             "predictions": {"a": truth.copy(), "b": np.roll(truth, 3, axis=1)}}
    fig = qualitative_figure([panel], ["a", "b"], "")
    centre = (slice(18, 22), slice(18, 22))
    tints = []
    for ax in fig.axes[1:4]:                             # ground truth, a, b
        picture = np.asarray(ax.get_images()[0].get_array())
        tints.append(picture[centre].reshape(-1, 3)[0])
        # the tinted object stands out from the red image
        assert np.abs(picture[centre].astype(float) - image[centre]).sum(axis=2).min() > 150
    assert all((t == tints[0]).all() for t in tints)


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


def _converging_log(final, n=30, seed=0):
    """A cutting-plane-like log: primal falls to ``final``, dual rises to it."""
    rng = np.random.default_rng(seed)
    k = np.arange(1, n + 1)
    primal = final * (1 + 2.0 * 0.7 ** k * (1 + 0.3 * rng.random(n)))
    dual = final * (1 - 0.8 ** k)
    best = np.minimum.accumulate(primal)
    return [{"iteration": int(i), "primal": float(p), "best_primal": float(b),
             "dual": float(d), "gap": float(b - d), "n_violated": 1,
             "n_constraints": int(i), "max_violation": float(p - d)}
            for i, p, b, d in zip(k, primal, best, dual)]


def test_every_methods_objective_spans_its_axis():
    # Hamming loss (objective ~5-12) beside IoU losses (~0.05-0.1)
    logs = {"bl1": _converging_log(5.0, seed=0), "bl2": _converging_log(0.05, seed=1),
            "proposed": _converging_log(0.06, seed=2)}
    fig = training_figure(logs, caption="fake logs", scopes="dataset")
    ax_obj = fig.axes[0]
    assert "F*" in ax_obj.get_ylabel() and "final" in ax_obj.get_ylabel()
    low, high = (np.log10(v) for v in ax_obj.get_ylim())
    assert len(ax_obj.get_lines()) == 6
    for line in ax_obj.get_lines():
        y = np.asarray(line.get_ydata(), float)
        y = np.log10(y[np.isfinite(y)])
        # each line, primal or dual, covers a good part of the axis's decades
        assert (y.max() - y.min()) / (high - low) > 0.3, line.get_label()
    # the final objectives themselves are named in the legend
    texts = [t.get_text() for t in ax_obj.get_legend().get_texts()]
    for name, log in logs.items():
        assert f"{name}: F* = {log[-1]['best_primal']:.4g}" in texts


@pytest.fixture(scope="module")
def dataset_scope_log(chain_graphs):
    X, Y = chain_graphs(seed=5, n_graphs=6, n=8, lean=0.7)
    est = StructuredSVM(scope="dataset", C=2.0, tol=1e-4).fit(X, Y)
    assert est.n_iter_ >= 4
    return est.log_


def test_panel_c_at_the_dataset_scope_shows_the_working_set(dataset_scope_log):
    log = dataset_scope_log
    # the violated-example count says nothing there: the training set is one example
    assert {e["n_violated"] for e in log} <= {0, 1}
    fig = training_figure({"bl1": log}, caption="c", scopes="dataset")
    ax_vio = fig.axes[2]
    assert "working set" in ax_vio.get_title()
    (line,) = ax_vio.get_lines()
    y = np.asarray(line.get_ydata(), float)
    np.testing.assert_array_equal(y, [e["n_constraints"] for e in log])
    assert len(np.unique(y)) > 2 and y.max() > 1
    # per image (or unknown), the violated examples as before
    fig = training_figure({"bl1": log}, scopes="image")
    assert "violated margin" in fig.axes[2].get_title()
    np.testing.assert_array_equal(fig.axes[2].get_lines()[0].get_ydata(),
                                  [e["n_violated"] for e in log])
    # mixed scopes: the violated count of the per-image methods only
    fig = training_figure({"a": log, "b": log}, scopes={"a": "dataset", "b": "image"})
    assert len(fig.axes[2].get_lines()) == 1 and "per-image" in fig.axes[2].get_title()


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
