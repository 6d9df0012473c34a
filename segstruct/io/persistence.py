"""Save and load trained models as JSON + npz (never pickle).

A model ``PATH`` is two files: ``PATH.json`` (hyper-parameters, loss, feature
settings, class, data set, code version, training summary, and the SHA-256 of
the arrays file) and ``PATH.npz`` (the weights and the codebook). Both are
written atomically; loading checks the digest, the format version and that
the weights fit the feature settings, so a corrupted file or one from another
feature configuration is refused with a message saying which. From format
version 2 the JSON also carries the SHA-256 of its own content, so a hand
edit (another class, other superpixel settings, ...) is refused too; version
1 files, which lack it, still load.
"""
from __future__ import annotations

import hashlib
import io
import json
import zipfile
from pathlib import Path

import numpy as np

from segstruct.datasets.voc import class_index
from segstruct.inference.losses import loss_from_dict

from segstruct.features.config import OPPONENT_DIM, FeatureConfig
from segstruct.io.files import atomic_write_bytes, write_json
from segstruct.io.stopping import deferred_stop
from segstruct.io.provenance import code_version

FORMAT = "segstruct-model"
FORMAT_VERSION = 2
READABLE_VERSIONS = (1, 2)     # 1: no checksum of the JSON itself
DOC_DIGEST = "json_sha256"

#: Prefix of the top-down detector's arrays in the arrays file.
TOP_DOWN = "top_down."

# StructuredSVM parameters of old model files that are no longer parameters
# (what a training run wrote and showed is given to fit now): ignored.
_OLD_IO_PARAMS = ("progress", "log_path", "checkpoint_path", "resume")
# Hyper-parameters of a method's own training (the projection method's set, the
# lovasz method's margin scale),
# kept in the file to say how it was made; the StructuredSVM that predicts
# with the weights has no such parameter.
_TRAINING_ONLY_PARAMS = ("projection_set", "margin_scale", "likelihood")


class ModelFileError(ValueError):
    """A model file is missing, corrupted or inconsistent."""


def model_paths(path) -> tuple[Path, Path]:
    """(json, npz) paths of a model; ``path`` may carry either suffix or none."""
    path = Path(path)
    if path.suffix in (".json", ".npz"):
        path = path.with_suffix("")
    return path.with_name(path.name + ".json"), path.with_name(path.name + ".npz")


def log_path(path) -> Path:
    """Where training a model ``path`` writes its log: ``PATH.log.json``."""
    json_path, _ = model_paths(path)
    return json_path.with_name(json_path.name[: -len(".json")] + ".log.json")


def checkpoint_path(path) -> Path:
    """Where training a model ``path`` keeps its checkpoint: ``PATH.ckpt.npz``."""
    json_path, _ = model_paths(path)
    return json_path.with_name(json_path.name[: -len(".json")] + ".ckpt.npz")


def save_model(path, estimator, feature_config: FeatureConfig, codebook, metadata: dict,
               shape_detectors=None, training: dict | None = None) -> Path:
    """Write a fitted StructuredSVM and what is needed to use it.

    Parameters
    ----------
    path : output path (suffix optional).
    estimator : fitted ``StructuredSVM``.
    feature_config : the FeatureConfig the training features were made with.
    codebook : (n_words, 384) array or None (no SIFT block).
    metadata : extra JSON-able facts (class, data set, method, ...).
    shape_detectors : ShapeDetector or list of them: the detectors whose mean
        block new images get (``FeatureExtractor.block_detectors``; one per
        fold with cross-fitting); needed when ``feature_config.detector`` is
        set (the top-down block).

    training : dict, the training run's summary (iterations, convergence,
        objective, ...); default: read off the fitted ``estimator`` (one
        restored by ``from_weights`` has none: give its file's).

    Returns
    -------
    Path of the JSON file.
    """
    if feature_config.long_side == "auto":
        raise ValueError("the feature settings' long_side is 'auto': save the settings the "
                         "features were made with (FeatureExtractor.config), which hold "
                         "the working long side in pixels")
    json_path, npz_path = model_paths(path)
    arrays = {"w": np.asarray(estimator.w_, np.float64)}
    if codebook is not None:
        arrays["codebook"] = np.asarray(codebook, np.float32)
    top_down = None
    if feature_config.detector is not None:
        detectors = (list(shape_detectors) if isinstance(shape_detectors, (list, tuple))
                     else [shape_detectors] if shape_detectors is not None else [])
        if not detectors or any(sd.params != feature_config.detector for sd in detectors):
            raise ValueError(f"not saving model {json_path}: its features have a top-down "
                             "block, so it needs the detectors they were made with")
        # one prefix per detector: top_down.0., top_down.1., ... (a single
        # detector under top_down. alone is the format before cross-fitting)
        top_down = []
        for k, sd in enumerate(detectors):
            detector_arrays, settings = sd.to_arrays()
            arrays.update({f"{TOP_DOWN}{k}.{name}": v for name, v in detector_arrays.items()})
            top_down.append(settings)
    # Refuse before writing anything: a model that could not be loaded back
    # must not be written at all.
    problem = _arrays_problem(arrays["w"], arrays.get("codebook"), feature_config,
                              estimator.get_params(deep=False).get("pairwise", True))
    if problem:
        raise ValueError(f"not saving model {json_path}: {problem}")
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)     # type: ignore[arg-type]  # numpy's stub: **arrays as allow_pickle
    payload = buffer.getvalue()
    params = estimator.get_params(deep=False)
    params.pop("oracle", None)       # a callable; the method name says which
    params.pop("warm_start", None)   # how it ran, not what it is
    params["loss"] = estimator.loss_.to_dict()
    doc = {
        "format": FORMAT, "format_version": FORMAT_VERSION,
        "code_version": code_version(),
        "arrays_file": npz_path.name,
        "arrays_sha256": hashlib.sha256(payload).hexdigest(),
        "estimator": params,
        "features": feature_config.to_dict(),
        "n_features": int(arrays["w"].size),
        **({"top_down": top_down} if top_down is not None else {}),
        # the temperature of the model's marginals (a CRF's 1; an SSVM's when
        # calibrated): what predict --decision needs besides the weights
        **({"temperature": float(estimator.temperature_)}
           if getattr(estimator, "temperature_", None) is not None else {}),
        "training": training if training is not None else {
            "n_iter": estimator.n_iter_, "converged": estimator.converged_,
            "primal": estimator.primal_, "dual": estimator.dual_, "gap": estimator.gap_,
            "fit_seconds": estimator.fit_seconds_,
            # the objective's C, which primal, dual and gap are values of
            **({"svm_C": estimator.svm_C_} if hasattr(estimator, "svm_C_") else {})},
        **metadata,
    }
    doc[DOC_DIGEST] = _doc_digest(doc)
    # a stop between the two would leave a document naming other arrays
    # (refused when read); the model is written whole
    with deferred_stop():
        atomic_write_bytes(npz_path, lambda f: f.write(payload))
        write_json(json_path, doc)
    return json_path


def load_model(path):
    """Read a model written by ``save_model``.

    ``path`` is the model's prefix (PATH for PATH.json and PATH.npz, either
    suffix accepted) or a folder that holds exactly one model.

    Returns
    -------
    estimator : StructuredSVM (FirstOrderSVM for the first-order solvers)
        with ``w_``, ``loss_`` and ``n_features_in_`` set (ready to predict;
        see ``BaseSSVM.from_weights``), and ``temperature_`` when the file
        holds one (a crf model's 1, a calibrated SSVM's).
    feature_config : FeatureConfig
    codebook : (n_words, 384) float32 array or None
    doc : dict, the whole JSON document.
    """
    from segstruct.learn.estimators.first_order_svm import FirstOrderSVM
    from segstruct.learn.estimators.structured_svm import STOCHASTIC_SOLVERS, StructuredSVM

    if Path(path).is_dir():
        # models are path prefixes (PATH.json + PATH.npz); a folder of one model is it
        inside = sorted(p.with_suffix("") for p in Path(path).glob("*.json")
                        if p.with_suffix(".npz").is_file())
        if len(inside) != 1:
            hint = (f": its models are {', '.join(str(p) for p in inside[:5])}"
                    f"{', ...' if len(inside) > 5 else ''}" if inside else
                    ", with no model in it")
            raise ModelFileError(f"{path} is a folder{hint}; give a model's path without its "
                                 "suffix (PATH for PATH.json and PATH.npz)")
        path = inside[0]
    json_path, npz_path = model_paths(path)
    for p in (json_path, npz_path):
        if not p.is_file():
            raise ModelFileError(f"model file {p} not found")
    try:
        doc = json.loads(json_path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ModelFileError(f"model file {json_path} is not valid JSON ({err})") from err
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ModelFileError(f"{json_path} is not a segstruct model file")
    if doc.get("format_version") not in READABLE_VERSIONS:
        raise ModelFileError(f"{json_path} has model format version "
                             f"{doc.get('format_version')!r}; this code reads versions "
                             f"{', '.join(map(str, READABLE_VERSIONS))}")
    try:
        payload = npz_path.read_bytes()
    except OSError as err:
        raise ModelFileError(f"cannot read model file {npz_path} ({err})") from err
    if hashlib.sha256(payload).hexdigest() != doc.get("arrays_sha256"):
        raise ModelFileError(f"{npz_path} does not match the checksum in {json_path}: "
                             "the file is corrupted or belongs to another model")
    try:
        with np.load(io.BytesIO(payload), allow_pickle=False) as data:
            w = data["w"]
            codebook = data["codebook"] if "codebook" in data.files else None
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as err:
        raise ModelFileError(f"{npz_path} is not a readable model arrays file ({err})") from err
    config, params, loss = _settings(doc, json_path)
    problem = _arrays_problem(w, codebook, config, params.get("pairwise", True))
    if problem is None and config.detector is not None and "top_down" not in doc:
        problem = "its features have a top-down block, but it holds no detector"
    if problem:
        raise ModelFileError(f"{npz_path} does not fit the settings in {json_path}: {problem}")
    # Files written before the I/O left the constructor hold some of it
    # ("progress"); it says how that run went, not what the model is.
    for name in _OLD_IO_PARAMS + _TRAINING_ONLY_PARAMS:
        params.pop(name, None)
    # ... and name the node weight mode by its old name, "weights".
    if "weights" in params:
        params["node_weights"] = params.pop("weights")
    # Files made before C_units hold the objective's own C: the paper's is twice it.
    if "C_units" not in params and isinstance(params.get("C"), (int, float)):
        params.update(C=2.0 * params["C"], C_units="paper")
    # The saved loss is the resolved one (kappa filled in), so kappa is None;
    # a first-order learner's model is its own class (it has no working set).
    learner = FirstOrderSVM if params.get("solver") in STOCHASTIC_SOLVERS else StructuredSVM
    try:
        estimator = learner.from_weights(w, loss, **{**params, "kappa": None})
    except (TypeError, ValueError) as err:
        raise ModelFileError(f"{json_path} has invalid estimator settings ({err})") from err
    try:
        estimator.check_params()      # each field's type and range, named
    except ValueError as err:
        raise ModelFileError(f"{json_path} has invalid estimator settings (estimator.{err})") \
            from err
    temperature = doc.get("temperature")
    if temperature is not None:
        if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) \
                or not 0 < temperature < float("inf"):
            raise ModelFileError(f"{json_path} has an invalid temperature {temperature!r}: "
                                 "it must be a positive number")
        estimator.temperature_ = float(temperature)
    # Checked after the specific checks above, whose messages say more.
    if doc["format_version"] >= 2 and doc.get(DOC_DIGEST) != _doc_digest(doc):
        raise ModelFileError(f"{json_path} does not match its own checksum "
                             f"({DOC_DIGEST}): it was edited by hand or is corrupted; "
                             "train the model again rather than editing it")
    return estimator, config, codebook, doc


def load_shape_detectors(path):
    """The detectors of a model's top-down block (a list of ShapeDetector:
    one per fold with cross-fitting; their mean block is the block of a new
    image), or None for a model without the block.

    Read from the model's arrays file, after :func:`load_model`'s checks.
    """
    from segstruct.features.detection import ShapeDetector

    _, _, _, doc = load_model(path)
    if "top_down" not in doc:
        return None
    _, npz_path = model_paths(path)
    with np.load(npz_path, allow_pickle=False) as data:
        arrays = {k[len(TOP_DOWN):]: data[k] for k in data.files if k.startswith(TOP_DOWN)}
    settings = doc["top_down"]
    try:
        if isinstance(settings, dict):       # one detector, the format before cross-fitting
            return [ShapeDetector.from_arrays(arrays, settings)]
        return [ShapeDetector.from_arrays(
            {name[len(f"{k}."):]: v for name, v in arrays.items() if name.startswith(f"{k}.")},
            one) for k, one in enumerate(settings)]
    except (KeyError, TypeError, ValueError) as err:
        raise ModelFileError(f"{npz_path} holds no usable detector ({err})") from err


#: The name of :func:`load_shape_detectors` before cross-fitting (it returns the list).
load_shape_detector = load_shape_detectors


def _settings(doc: dict, json_path: Path):
    """(FeatureConfig, estimator parameters less the loss, the loss) of a
    model document; ModelFileError naming a missing or invalid field."""
    for key in ("features", "estimator"):
        if not isinstance(doc.get(key), dict):
            raise ModelFileError(f"{json_path} has invalid settings (field {key!r}: "
                                 f"{'missing' if key not in doc else 'not an object'})")
    if "loss" not in doc["estimator"]:
        raise ModelFileError(f"{json_path} has invalid settings (field 'estimator.loss': "
                             "missing)")
    try:
        config = FeatureConfig.from_dict(doc["features"])
        params = dict(doc["estimator"])
        if "class" in doc:
            class_index(doc["class"])
    except (KeyError, TypeError, ValueError) as err:
        raise ModelFileError(f"{json_path} has invalid settings ({err})") from err
    try:
        loss = loss_from_dict(params.pop("loss"))
    except (KeyError, TypeError, ValueError, AttributeError) as err:
        raise ModelFileError(f"{json_path} has invalid settings (field 'estimator.loss': "
                             f"{err})") from err
    return config, params, loss


def _doc_digest(doc: dict) -> str:
    """SHA-256 of a model document without its own digest (canonical JSON)."""
    body = {k: v for k, v in doc.items() if k != DOC_DIGEST}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":"))
                          .encode()).hexdigest()


def _arrays_problem(w, codebook, config: FeatureConfig, pairwise: bool) -> str | None:
    """What is wrong with weights and codebook for these feature settings, or None."""
    expected = config.n_unary + (3 if pairwise else 0)
    if w.shape != (expected,):
        return (f"{w.size} weights, but the feature settings give {expected} "
                f"({' + '.join(f'{n} {name}' for name, n in config.unary_blocks())}"
                f"{' + 3 pairwise' if pairwise else ''})")
    if not np.all(np.isfinite(w)):
        return f"{int(np.count_nonzero(~np.isfinite(w)))} weights are not finite"
    if config.sift:
        if codebook is None:
            return f"no codebook, but the feature settings need a {config.n_words}-word one"
        if codebook.shape != (config.n_words, OPPONENT_DIM):
            return (f"a codebook of shape {codebook.shape}, but the feature settings "
                    f"need ({config.n_words}, {OPPONENT_DIM})")
        if not np.all(np.isfinite(codebook)):
            return "the codebook holds non-finite values"
    return None
