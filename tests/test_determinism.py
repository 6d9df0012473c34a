"""Same data, parameters and seed: bit-identical features and the same model;
the seed is written into every result file."""
import json

import numpy as np
import pytest

from segstruct.cli import main

# the top-down block (on by default) costs a detector per class; these tests are
# about other things (the top-down ones switch it on)
SMALL = ["--no-top-down", "--words", "16", "--codebook-descriptors", "2000",
         "--superpixels", "felzenszwalb", "--fz-min-size", "400", "-q"]


# the generated data set of the data_root fixture (tests/conftest.py)
DATA_SIZE = (5, 2)


def test_features_are_bit_identical_without_cache(data_root):
    from segstruct.datasets import VOCDataset
    from segstruct.features.cache import ArrayCache
    from segstruct.features.config import FeatureConfig
    from segstruct.features.extraction import FeatureExtractor
    config = FeatureConfig(n_words=16, codebook_descriptors=2000, seed=3)
    runs = [FeatureExtractor(VOCDataset(data_root), config, ArrayCache(enabled=False),
                             progress=False) for _ in range(2)]
    assert np.array_equal(runs[0].codebook()[0], runs[1].codebook()[0])
    for a, b in zip(*(r.graphs("train") for r in runs)):
        for name in ("segments", "edges", "boundary", "unary", "pairwise"):
            assert np.array_equal(getattr(a, name), getattr(b, name)), name
    other = FeatureExtractor(VOCDataset(data_root), FeatureConfig(
        n_words=16, codebook_descriptors=2000, seed=4), ArrayCache(enabled=False),
        progress=False)
    assert not np.array_equal(other.codebook()[0], runs[0].codebook()[0])  # the seed matters


@pytest.mark.slow
def test_same_command_same_model_and_seed_recorded(data_root, tmp_path):
    from segstruct.io.persistence import load_model
    models = []
    for k in range(2):
        out = tmp_path / f"m{k}"
        assert main(["train", "--data", str(data_root), "--class", "car", "--method",
                     "proposed", "--seed", "7", "--no-cache",
                     "--out", str(out), *SMALL]) == 0
        models.append(load_model(out))
    assert np.array_equal(models[0][0].w_, models[1][0].w_)
    assert models[0][3]["features"]["seed"] == 7
    report = tmp_path / "eval.json"
    assert main(["evaluate", "--data", str(data_root), "--model", str(tmp_path / "m0"),
                 "--json", str(report), "--no-cache", "-q"]) == 0
    assert json.loads(report.read_text())["features"]["seed"] == 7
    insp = tmp_path / "inspect.json"
    main(["inspect", "--data", str(data_root), "--class", "car", "--split", "val",
          "--seed", "7", "--json", str(insp), "--no-cache", *SMALL])
    assert json.loads(insp.read_text())["features"]["seed"] == 7
