"""The gallery of report.html: per-image IoU, disagreement, thumbnails, and
the page's switch between all images and the disagreements."""
import io

import numpy as np
import pytest
from PIL import Image

from segstruct.report.gallery import (DISAGREEMENT_POINTS, GalleryRow, gallery_row, iou_percent,
                                      sorted_rows, spread, thumbnail_shape)
from segstruct.report.html import ClassSection, report_html


def _panel(h=60, w=90):
    rng = np.random.default_rng(0)
    truth = np.zeros((h, w), np.uint8)
    truth[10:40, 20:60] = 1
    truth[0:5, :] = 255                        # void band
    a = np.zeros((h, w), np.uint8)
    a[10:40, 20:60] = 1                         # the truth exactly
    b = np.zeros((h, w), np.uint8)
    b[0:40, 20:40] = 1                          # half of it, and the void band
    return {"image_id": "img", "image": rng.integers(0, 256, (h, w, 3), dtype=np.uint8),
            "truth": truth, "segments": np.arange(h * w).reshape(h, w) // 7,
            "predictions": {"a": a, "b": b}}


def test_iou_and_spread():
    assert iou_percent((1, 1, 2)) == pytest.approx(25.0)
    assert iou_percent((0, 0, 0)) is None
    # an undefined IoU (nothing to find, nothing claimed) counts as right
    assert spread({"a": None, "b": 40.0}) == pytest.approx(60.0)
    assert spread({"a": 30.0}) == 0.0
    assert spread({"a": 30.0, "b": 30.5, "c": 31.0}) == pytest.approx(1.0)


def test_a_row_counts_pixels_without_void_and_draws_thumbnails():
    row = gallery_row(_panel(), ["a", "b"], side=45)
    assert row.iou["a"] == pytest.approx(100.0)
    # b: 30 x 20 inside the object (the void band not counted), 600 missed
    assert row.iou["b"] == pytest.approx(100 * 600 / (600 + 5 * 20 + 600))
    assert row.spread == pytest.approx(100 - row.iou["b"]) and row.disagree
    assert [t for t, _ in row.cells] == ["input", "ground truth", "a", "b"]
    for _, png in row.cells:
        assert Image.open(io.BytesIO(png)).size == (45, 30)
    # given counts win over the masks
    assert gallery_row(_panel(), ["a", "b"], {"b": (1, 0, 1)}).iou["b"] == pytest.approx(50)


def test_thumbnails_are_never_enlarged():
    assert thumbnail_shape((100, 50), 200) == (100, 50)
    assert thumbnail_shape((400, 100), 200) == (200, 50)


def test_rows_are_sorted_by_disagreement_and_the_switch_hides_the_agreeing():
    rows = sorted_rows([GalleryRow("x", spread=0.2), GalleryRow("y", spread=30.0),
                        GalleryRow("w", spread=DISAGREEMENT_POINTS)])
    assert [r.image_id for r in rows] == ["y", "w", "x"]
    assert [r.disagree for r in rows] == [True, True, False]
    results = {"dataset": "d", "train_split": "train", "eval_split": "val", "methods": ["a"],
               "classes": ["car"], "table": {"iou_percent": {"car": {"a": 50.0}},
                                             "mean_iou_percent": {"a": 50.0}}}
    page = report_html(results, [ClassSection("car", rows, 3)])
    assert "only the 2 disagreement(s)" in page
    assert page.count('class="row agree"') == 1 and page.count('class="row disagree"') == 2
    # the CSS rule that hides the agreeing rows when "only" is checked
    assert "input.only:checked ~ .gallery .agree { display: none; }" in page
    assert page.index('id="only-car"') < page.index('id="gallery-car"')

