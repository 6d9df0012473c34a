"""Save and load trained models as JSON + npz (never pickle).

A model ``PATH`` is two files: ``PATH.json`` (hyper-parameters, loss, feature
settings, class, data set, code version, training summary, and the SHA-256 of
the arrays file) and ``PATH.npz`` (the weights and the codebook). Both are
written atomically; loading checks the digest, the format version and that
the weights fit the feature settings, so a corrupted file or one from another
feature configuration is refused with a message saying which.
"""
from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path

import numpy as np

from .cache import atomic_write_bytes
from .features import FeatureConfig
from .losses import loss_from_dict
from .provenance import code_version

FORMAT = "segstruct-model"
FORMAT_VERSION = 1


class ModelFileError(ValueError):
    """A model file is missing, corrupted or inconsistent."""


def model_paths(path) -> tuple[Path, Path]:
    """(json, npz) paths of a model; ``path`` may carry either suffix or none."""
    path = Path(path)
    if path.suffix in (".json", ".npz"):
        path = path.with_suffix("")
    return path.with_name(path.name + ".json"), path.with_name(path.name + ".npz")


def save_model(path, estimator, feature_config: FeatureConfig, codebook, metadata: dict) -> Path:
    """Write a fitted StructuredSVM and what is needed to use it.

    Parameters
    ----------
    path : output path (suffix optional).
    estimator : fitted ``StructuredSVM``.
    feature_config : the FeatureConfig the training features were made with.
    codebook : (n_words, 384) array or None (no SIFT block).
    metadata : extra JSON-able facts (class, data set, method, ...).

    Returns
    -------
    Path of the JSON file.
    """
    json_path, npz_path = model_paths(path)
    arrays = {"w": np.asarray(estimator.w_, np.float64)}
    if codebook is not None:
        arrays["codebook"] = np.asarray(codebook, np.float32)
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    payload = buffer.getvalue()
    params = estimator.get_params()
    params.pop("oracle", None)       # a callable; the method name says which
    params.pop("log_path", None)
    params["loss"] = estimator.loss_.to_dict()
    doc = {
        "format": FORMAT, "format_version": FORMAT_VERSION,
        "code_version": code_version(),
        "arrays_file": npz_path.name,
        "arrays_sha256": hashlib.sha256(payload).hexdigest(),
        "estimator": params,
        "features": feature_config.to_dict(),
        "n_features": int(arrays["w"].size),
        "training": {"n_iter": estimator.n_iter_, "converged": estimator.converged_,
                     "primal": estimator.primal_, "dual": estimator.dual_,
                     "gap": estimator.gap_, "fit_seconds": estimator.fit_seconds_},
        **metadata,
    }
    atomic_write_bytes(npz_path, lambda f: f.write(payload))
    text = json.dumps(doc, indent=2) + "\n"
    atomic_write_bytes(json_path, lambda f: f.write(text.encode()))
    return json_path


def load_model(path):
    """Read a model written by ``save_model``.

    Returns
    -------
    estimator : StructuredSVM with ``w_`` and ``loss_`` set (ready to predict).
    feature_config : FeatureConfig
    codebook : (n_words, 384) float32 array or None
    doc : dict, the whole JSON document.
    """
    from .ssvm import StructuredSVM

    json_path, npz_path = model_paths(path)
    for p in (json_path, npz_path):
        if not p.is_file():
            raise ModelFileError(f"model file {p} not found")
    try:
        doc = json.loads(json_path.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ModelFileError(f"model file {json_path} is not valid JSON ({err})") from err
    if doc.get("format") != FORMAT or doc.get("format_version") != FORMAT_VERSION:
        raise ModelFileError(f"{json_path} is not a segstruct model of format version "
                             f"{FORMAT_VERSION}")
    payload = npz_path.read_bytes()
    if hashlib.sha256(payload).hexdigest() != doc.get("arrays_sha256"):
        raise ModelFileError(f"{npz_path} does not match the checksum in {json_path}: "
                             "the file is corrupted or belongs to another model")
    with np.load(io.BytesIO(payload), allow_pickle=False) as data:
        w = data["w"]
        codebook = data["codebook"] if "codebook" in data.files else None
    try:
        config = FeatureConfig.from_dict(doc["features"])
        params = dict(doc["estimator"])
        loss = loss_from_dict(params.pop("loss"))
    except (KeyError, TypeError, ValueError) as err:
        raise ModelFileError(f"{json_path} has invalid settings ({err})") from err
    expected = config.n_unary + (3 if params.get("pairwise", True) else 0)
    if w.shape != (expected,):
        raise ModelFileError(
            f"{npz_path} holds {w.size} weights but its feature settings give {expected}")
    if config.sift and (codebook is None or codebook.shape[0] != config.n_words):
        raise ModelFileError(f"{npz_path} lacks the {config.n_words}-word codebook its "
                             "feature settings need")
    # The saved loss is the resolved one (kappa filled in), so kappa is None.
    estimator = StructuredSVM(**{**params, "loss": loss, "kappa": None, "progress": False})
    estimator.w_ = np.asarray(w, np.float64)
    estimator.loss_ = loss
    return estimator, config, codebook, doc
