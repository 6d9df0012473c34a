"""scripts/scale_agreement.py's superpixel mode: its overlap measure and its
settings, checked on partitions whose agreement is known."""
import argparse
import json

import numpy as np
import pytest


def test_overlap_is_one_only_for_the_same_partition(load_script):
    overlap = load_script("scale_agreement").overlap
    a = np.repeat(np.arange(4), 25).reshape(10, 10)          # four bands
    renumbered = 3 - a                                         # same partition
    assert overlap(a, renumbered) == 1.0
    # one band split in two: 5 of its 25 pixels leave the best match
    split = a.copy()
    split[0, :5] = 4
    assert overlap(a, split) == pytest.approx(0.95)
    # symmetric in its two directions (a coarser b would look perfect one way)
    coarse = np.zeros_like(a)
    assert overlap(a, coarse) == overlap(coarse, a) == pytest.approx(0.25)


def test_settings_parse_into_superpixel_params(load_script):
    parse = load_script("scale_agreement").superpixel_setting
    p = parse("felzenszwalb:sigma=0.8,scale=100,min_size=500")
    assert (p.method, p.sigma, p.scale, p.min_size) == ("felzenszwalb", 0.8, 100.0, 500)
    assert isinstance(p.min_size, int)
    assert parse("slic").method == "slic"
    for bad, says in (("fz", "unknown superpixel method"), ("slic:foo=1", "'foo'"),
                      ("felzenszwalb:sigma=x", "sigma must be a number"),
                      ("felzenszwalb:sigma=-1", "sigma")):
        with pytest.raises(argparse.ArgumentTypeError, match=says):
            parse(bad)


def test_superpixel_mode_writes_its_table(load_script, data_root, tmp_path):
    script = load_script("scale_agreement")
    out = tmp_path / "sp"
    assert script.main(["--data", str(data_root), "--superpixels", "felzenszwalb",
                        "felzenszwalb:sigma=0.8", "--images", "2", "--out", str(out)]) == 0
    doc = json.loads((out / "results.json").read_text())
    assert doc["long_side"] == max(max(size) for size in _sizes(data_root))
    assert [s["params"]["sigma"] for s in doc["settings"]] == [0.01, 0.8]
    for s in doc["settings"]:
        assert len(s["rows"]) == 2 and s["mean_superpixels"] >= 1
        assert all(0 < r["x2"] <= 1 and 0 < r["x4"] <= 1 for r in s["rows"])
    assert "sigma 0.8" in (out / "table.md").read_text()


def _sizes(root):
    from segstruct.datasets import VOCDataset
    dataset = VOCDataset(root)
    return [dataset.image_size(i) for i in dataset.ids("train")]


def test_models_of_one_class_in_other_folders_get_other_names(load_script):
    name = load_script("scale_agreement")._model_name
    assert name("runs/slic-c20/horse-bl1") == "slic-c20/horse-bl1"
    assert name("runs/slic-c20/horse-bl1") != name("runs/slic-c40/horse-bl1")


class _HalfModel:
    """Labels the right half of any image, by pixel centres: the masks of an
    image and of its copies are the same picture, drawn on other grids."""

    def predict(self, images, cache=None, ensemble=None):
        out = []
        for image in images:
            height, width = np.asarray(image).shape[:2]
            right = (np.arange(width) + 0.5) / width >= 0.5
            out.append(np.repeat(right[None, :], height, axis=0).astype(np.uint8))
        return out


def test_a_copy_is_compared_on_its_own_pixels_and_on_the_image_s(load_script, tmp_path):
    from PIL import Image
    script = load_script("scale_agreement")
    Image.fromarray(np.full((3, 5, 3), 128, np.uint8)).save(tmp_path / "a.png")

    class Files:
        def image_path(self, image_id):
            return tmp_path / f"{image_id}.png"

    row, = script.agreement(_HalfModel(), Files(), ["a"], cache=None)
    # 5 columns: the image's mask takes columns 2-4 (centre 2.5 of 5 is the
    # middle); its 2x copy's takes 5-9 of 10, so replicated, column 4 of the
    # copy disagrees (1 of 10), and on the image's pixels nothing does
    assert row["x2"] == pytest.approx(0.9)
    assert row["x2_small"] == 1.0 and row["x4_small"] == 1.0
    assert row["x4"] == pytest.approx(18 / 20)       # columns 8 and 9 of 20
    assert row["noise"] == 1.0
