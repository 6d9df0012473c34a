"""Same data, parameters and seed: bit-identical features and the same model,
whatever the number of worker processes (``-j``) and whether the feature
cache is fresh or already holds the features; the seed is written into every
result file.

``tests/learn/test_selection.py`` checks the same of ``compare``'s pairs
with -j 1 and -j 2 on one warm cache. The fit-path spread
(docs/reliability.md, "Fit-path spread") is how far a score moves when the
path of a fit moves (another code version); these tests say that on one
machine it does not move."""
import json

import numpy as np
import pytest

from segstruct.cli import main
from segstruct.datasets import VOCDataset
from segstruct.features.cache import ArrayCache
from segstruct.features.config import FeatureConfig
from segstruct.features.extraction import FeatureExtractor
from segstruct.features.superpixels import SuperpixelParams
from segstruct.features.topdown.detector import DetectorParams
from segstruct.learn.methods import TrainingSettings
from segstruct.workflow import train

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


# small features (as SMALL), with a small top-down block as the commands have
# one by default (as tests/test_cli.py's)
CONFIG = FeatureConfig(superpixels=SuperpixelParams(method="felzenszwalb", min_size=400),
                       n_words=16, codebook_descriptors=2000,
                       detector=DetectorParams(n_parts=0, mining_rounds=1, mining_images=4,
                                               max_positives=40))
# C by cross-validation: the folds' fits warm-started along the grid, then the refit
AUTO = TrainingSettings(C="auto", C_grid=(0.05, 1.0), folds=2)


def _train(data_root, cache, out, n_jobs: int, method: str):
    """The training workflow (``segstruct train``, each pair of ``compare``)
    with ``n_jobs`` workers for the features, the folds and the inference."""
    extractor = FeatureExtractor(VOCDataset(data_root), CONFIG, ArrayCache(cache),
                                 n_jobs=n_jobs, progress=False)
    return train(extractor, "train", "car", method, AUTO, out, val_split="val",
                 n_jobs=n_jobs, say=lambda text: None, warn=lambda text: None)


def _saved(out) -> tuple[dict, dict]:
    """The model file's arrays, and its document less what says how fast
    (and its own digest, which covers the seconds)."""
    from segstruct.io.persistence import model_paths
    json_path, npz_path = model_paths(out)
    with np.load(npz_path) as saved:
        arrays = {name: saved[name] for name in saved.files}

    def strip(value):
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items()
                    if "seconds" not in k and k != "json_sha256"}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value
    return arrays, strip(json.loads(json_path.read_text()))


@pytest.mark.slow
@pytest.mark.parametrize("method", ["bl1", "proposed"])
def test_the_same_model_whatever_the_workers_and_the_cache(data_root, tmp_path, monkeypatch,
                                                           method):
    monkeypatch.setenv("SEGSTRUCT_CACHE", str(tmp_path / "default-cache"))
    runs = {  # name: (cache folder, workers); a "warm" run reads what "fresh" wrote
        "fresh -j 1": ("a", 1), "warm -j 2": ("a", 2), "fresh -j 2": ("b", 2),
        "warm -j 1": ("b", 1)}
    saved, iterations = {}, {}
    for name, (cache, n_jobs) in runs.items():
        out = tmp_path / name.replace(" ", "_") / "model"     # the same file names
        model = _train(data_root, tmp_path / cache, out, n_jobs, method)
        saved[name], iterations[name] = _saved(out), model.estimator.n_iter_
    arrays, document = saved["fresh -j 1"]
    assert document["estimator"]["C"] in (0.05, 1.0) and np.any(arrays["w"])
    assert "arrays_sha256" in document and "C_selection" in document
    assert any(name.startswith("top_down.") for name in arrays)     # the detectors too
    for name, (these, doc) in saved.items():
        assert these.keys() == arrays.keys(), name
        for key, array in arrays.items():
            # bit for bit: dtype, shape and bytes, no tolerance
            assert (array.dtype, array.shape) == (these[key].dtype, these[key].shape), (name, key)
            assert array.tobytes() == these[key].tobytes(), (name, key)
        assert doc == document, name
        assert iterations[name] == iterations["fresh -j 1"], name
