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
