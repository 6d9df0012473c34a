import json

import numpy as np
import pytest

from segstruct.features import FeatureConfig
from segstruct.model import Graph
from segstruct.persistence import ModelFileError, load_model, model_paths, save_model
from segstruct.ssvm import StructuredSVM

CONFIG = FeatureConfig(sift=False)          # 6 colour + 6 position + 1 bias = 13


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
    assert config == CONFIG and codebook is None
    assert doc["class"] == "car" and "code_version" in doc
    assert np.array_equal(loaded.w_, svm.w_)
    assert loaded.loss_ == svm.loss_ and loaded.C == 2.0
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
