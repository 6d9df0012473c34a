import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from segstruct.features.config import FeatureConfig
from segstruct.features.superpixels import SuperpixelParams
from segstruct.io.persistence import (DOC_DIGEST, ModelFileError, _doc_digest, load_model,
                                   model_paths, save_model)
from segstruct.learn.estimators.structured_svm import StructuredSVM
from segstruct.feature_map import Graph

CONFIG = FeatureConfig(sift=False, long_side=300)   # 6 colour + 6 position + 1 bias = 13


def fitted(rng):
    X, Y = [], []
    for _ in range(5):
        n = 6
        edges = np.array([(i, i + 1) for i in range(n - 1)])
        X.append(Graph(rng.normal(size=(n, CONFIG.n_unary)), edges,
                       rng.uniform(0, 1, (n - 1, 3))))
        t = rng.integers(0, 2, n)
        t[0] = 1
        Y.append(t)
    return StructuredSVM(C=2.0).fit(X, Y), X


def test_round_trip_predicts_identically(tmp_path):
    svm, X = fitted(np.random.default_rng(0))
    save_model(tmp_path / "m", svm, CONFIG, None, {"class": "car", "method": "bl1"})
    loaded, config, codebook, doc = load_model(tmp_path / "m.json")
    assert config == CONFIG and codebook is None          # the working long side too
    assert doc["class"] == "car" and "code_version" in doc
    assert np.array_equal(loaded.w_, svm.w_)
    assert loaded.loss_ == svm.loss_ and loaded.C == 2.0
    assert loaded.loss == svm.loss_        # the resolved loss, kappa filled in
    for a, b in zip(loaded.predict(X), svm.predict(X)):
        assert np.array_equal(a, b)


def test_corrupted_or_mismatched_files_are_refused(tmp_path):
    svm, _ = fitted(np.random.default_rng(1))
    json_path = save_model(tmp_path / "m", svm, CONFIG, None, {"class": "car"})
    _, npz_path = model_paths(tmp_path / "m")
    data = npz_path.read_bytes()
    npz_path.write_bytes(data[:-10] + b"0123456789")
    with pytest.raises(ModelFileError, match="checksum"):
        load_model(tmp_path / "m")
    npz_path.write_bytes(data)
    doc = json.loads(json_path.read_text())
    doc["features"]["position"] = False        # another feature configuration
    json_path.write_text(json.dumps(doc))
    with pytest.raises(ModelFileError, match="weights"):
        load_model(tmp_path / "m")
    json_path.write_text("{not json")
    with pytest.raises(ModelFileError, match="JSON"):
        load_model(tmp_path / "m")
    with pytest.raises(ModelFileError, match="not found"):
        load_model(tmp_path / "other")


DATA = Path(__file__).resolve().parents[1] / "data"


def test_a_model_saved_before_the_io_left_the_constructor_loads():
    # written by segstruct at 7b38227 from fitted(default_rng(0)): its JSON
    # holds "progress" among the estimator's parameters
    doc = json.loads((DATA / "model_7b38227.json").read_text())
    assert "progress" in doc["estimator"]
    loaded, config, codebook, _ = load_model(DATA / "model_7b38227")
    svm, X = fitted(np.random.default_rng(0))
    # a file from before the working resolution and SLIC's default: images as
    # given, Felzenszwalb superpixels (every field of them was written)
    old = SuperpixelParams(method="felzenszwalb", n_segments=50, compactness=10.0)
    assert config == replace(CONFIG, long_side=None, superpixels=old) and codebook is None
    assert "progress" not in loaded.get_params()
    # its C was the objective's own (2.0): in the paper's units, twice that
    assert (loaded.C, loaded.C_units) == (4.0, "paper")
    # today's code trains the same model (bit for bit with the numpy that wrote
    # the file; other builds differ in the last bits)
    np.testing.assert_allclose(loaded.w_, svm.w_, rtol=1e-9, atol=1e-12)
    assert loaded.loss_ == svm.loss_ and loaded.n_features_in_ == svm.w_.size
    for a, b in zip(loaded.predict(X), svm.predict(X)):
        assert np.array_equal(a, b)


def test_old_io_parameters_are_ignored_but_unknown_ones_refused(tmp_path):
    svm, _ = fitted(np.random.default_rng(2))
    json_path = save_model(tmp_path / "m", svm, CONFIG, None, {"class": "car"})
    doc = json.loads(json_path.read_text())
    assert not {"progress", "log_path", "checkpoint_path", "resume"} & set(doc["estimator"])
    doc["estimator"].update(progress=True, log_path="m.log.json",
                            checkpoint_path="m.ckpt.npz", resume=True)
    doc[DOC_DIGEST] = _doc_digest(doc)
    json_path.write_text(json.dumps(doc))
    loaded, *_ = load_model(tmp_path / "m")
    assert np.array_equal(loaded.w_, svm.w_)
    doc["estimator"]["no_such_parameter"] = 1
    doc[DOC_DIGEST] = _doc_digest(doc)
    json_path.write_text(json.dumps(doc))
    with pytest.raises(ModelFileError, match="invalid estimator settings"):
        load_model(tmp_path / "m")
