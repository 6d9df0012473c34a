from dataclasses import replace

from segstruct.features.config import FeatureConfig
from segstruct.features.superpixels import SuperpixelParams
from segstruct.report.tables import blocks_text, features_text


def test_features_text_names_the_superpixels_and_the_working_resolution():
    slic = FeatureConfig(long_side=560)
    text = features_text(slic.to_dict())
    assert text.startswith(blocks_text(slic.to_dict()) + " (")
    assert "superpixels SLIC, 80 segments, compactness 20; images at a long side of 560 px" \
        in text
    fz = replace(slic, superpixels=SuperpixelParams(method="felzenszwalb", min_size=400),
                 long_side=None)
    assert features_text(fz.to_dict()).endswith(
        "(superpixels Felzenszwalb, k 200, sigma 0.01, minimum area 400 px; "
        "images as given)")
    assert features_text({}) == blocks_text({}) == "features not recorded"


def test_the_chosen_C_table_says_how_far_the_grid_extended():
    import io

    from segstruct.report.tables import _chosen_C_table
    curve = {"grid": [0.003, 0.01, 0.03], "chosen_C": 0.003, "pooled_iou_percent": [61.0, 60.0, 55.0],
             "fit_seconds": [[1.0], [1.0], [1.0]],
             "extended": {"below": 1, "above": 0, "grid_asked": [0.01, 0.03], "bound": 3,
                          "bound_reached": False}}
    plain = {**curve, "grid": [0.01, 0.03], "chosen_C": 0.03,
             "pooled_iou_percent": [50.0, 55.0], "fit_seconds": [[1.0], [1.0]],
             "extended": {**curve["extended"], "below": 0}}
    results = {"settings": {"folds": 3, "C_grid": [0.01, 0.03]}, "methods": ["bl1", "bl2"],
               "classes": ["car"], "train_split": "train",
               "results": [{"class": "car", "method": "bl1", "C_selection": curve},
                           {"class": "car", "method": "bl2", "C_selection": plain}]}
    out = io.StringIO()
    _chosen_C_table(out, results)
    row = [line for line in out.getvalue().splitlines() if line.startswith("| car")][0]
    assert "| 0.003 (61.00, 3 s; grid +1 below) | 0.03 (55.00, 2 s) |" in row
