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
