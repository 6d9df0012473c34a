"""The one training workflow: ``segstruct.workflow.train`` is what ``segstruct
train`` (and each pair of ``compare``) runs; the command line only parses,
calls and prints."""
import numpy as np
import pytest

from segstruct.cli import build_parser, main
from segstruct.cli.settings import feature_config
from segstruct.datasets import VOCDataset
from segstruct.features.cache import ArrayCache
from segstruct.features.extraction import FeatureExtractor
from segstruct.io.persistence import checkpoint_path, load_model
from segstruct.learn.methods import TrainingSettings
from segstruct.workflow import curve_path, train

SMALL = ["--no-top-down", "--words", "16", "--codebook-descriptors", "2000",
         "--superpixels", "felzenszwalb", "--fz-min-size", "400", "-q"]


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("cache")


def extractor(data_root, cache) -> FeatureExtractor:
    """The features ``train`` makes from SMALL's options."""
    args = build_parser().parse_args(["train", "--data", str(data_root), "--class", "car",
                                      "--out", "m", *SMALL])
    return FeatureExtractor(VOCDataset(data_root), feature_config(args), ArrayCache(cache),
                            progress=False)


def test_the_command_is_the_workflow(data_root, cache, tmp_path, capsys):
    """The command's model and the library's, from the same settings, are the
    same to the last bit; the library prints nothing of its own."""
    assert main(["train", "--data", str(data_root), "--class", "car", "--method", "bl2",
                 "--C", "0.5", "--out", str(tmp_path / "cli"), "--cache", str(cache),
                 *SMALL]) == 0
    capsys.readouterr()
    said, warned = [], []
    model = train(extractor(data_root, cache), "train", "car", "bl2", TrainingSettings(C=0.5),
                  tmp_path / "lib", val_split="val", say=said.append, warn=warned.append)
    assert capsys.readouterr().out == ""
    cli = load_model(tmp_path / "cli")
    np.testing.assert_array_equal(model.estimator.w_, cli[0].w_)
    for key in ("train_score", "val_score", "method", "class", "train_split"):
        assert model.doc[key] == cli[3][key], key
    assert model.estimator.C == 0.5 and model.estimator.converged_
    assert not checkpoint_path(tmp_path / "lib").exists()


def test_auto_C_says_its_curve_and_leaves_no_file_behind(data_root, cache, tmp_path):
    said = []
    settings = TrainingSettings(C="auto", C_grid=(0.05, 1.0), folds=2)
    model = train(extractor(data_root, cache), "train", "car", "bl1", settings,
                  tmp_path / "m", say=said.append, warn=said.append)
    curve = model.doc["C_selection"]
    # the grid asked for, and the C past its ends that its extension added
    assert curve["extended"]["grid_asked"] == [0.05, 1.0] and curve["folds"] == 2
    assert {0.05, 1.0} <= set(curve["grid"])
    assert model.estimator.C == curve["chosen_C"] == model.doc["estimator"]["C"]
    assert any(line.startswith("C chosen by 2-fold cross-validation on voc/train (bl1, car): "
                               f"{curve['chosen_C']:g}") for line in said)
    # the model holds the curve now: no file to resume from is left
    assert not curve_path(tmp_path / "m").exists()
    assert not checkpoint_path(tmp_path / "m").exists()


def test_a_saved_curve_is_resumed_not_cross_validated_again(data_root, cache, tmp_path,
                                                            monkeypatch):
    """A curve saved beside the model with this run's identity (what compare's
    cross-validation of every pair leaves) is taken as it is."""
    import segstruct.workflow as workflow
    settings = TrainingSettings(C="auto", C_grid=(0.05, 1.0), folds=2)
    features = extractor(data_root, cache)
    first = train(features, "train", "car", "bl1", settings, tmp_path / "a",
                  keep_checkpoint=True, curve_identity="run-1", say=lambda _: None)
    assert curve_path(tmp_path / "a").exists()          # kept for its caller
    assert first.doc["C_selection"]["identity"] == "run-1"

    def no_folds(*args, **kwargs):
        raise AssertionError("cross-validated again")
    monkeypatch.setattr(workflow, "cross_validate", no_folds)
    checkpoint_path(tmp_path / "a").unlink(missing_ok=True)
    again = train(features, "train", "car", "bl1", settings, tmp_path / "a",
                  curve_identity="run-1", say=lambda _: None)
    assert again.doc["C_selection"]["chosen_C"] == first.doc["C_selection"]["chosen_C"]
    # another run's curve is not this one's
    with pytest.raises(AssertionError, match="cross-validated again"):
        train(features, "train", "car", "bl1", settings, tmp_path / "b",
              curve_identity="run-2", say=lambda _: None)


def test_calibrate_fits_the_temperature_before_the_refit(data_root, cache, tmp_path):
    said = []
    model = train(extractor(data_root, cache), "train", "car", "bl1", TrainingSettings(C=1.0),
                  tmp_path / "m", calibrate=True, say=said.append, warn=said.append)
    fit = model.doc["temperature_fit"]
    assert model.estimator.temperature_ == pytest.approx(
        fit["temperatures"][int(np.argmax(fit["log_likelihood"]))])
    assert any(line.startswith("temperature ") for line in said)


def test_without_resume_a_saved_curve_and_checkpoint_are_not_taken(data_root, cache, tmp_path,
                                                                   monkeypatch):
    """resume=False starts afresh: the curve of the run whose checkpoint lies
    beside the model is not reused (cross-validation runs again)."""
    import segstruct.workflow as workflow
    settings = TrainingSettings(C="auto", C_grid=(0.05, 1.0), folds=2)
    features = extractor(data_root, cache)
    train(features, "train", "car", "bl1", settings, tmp_path / "a", keep_checkpoint=True)
    assert curve_path(tmp_path / "a").exists() and checkpoint_path(tmp_path / "a").exists()
    calls, real = [], workflow.cross_validate

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)
    monkeypatch.setattr(workflow, "cross_validate", counted)
    said = []
    train(features, "train", "car", "bl1", settings, tmp_path / "a", resume=False,
          say=said.append)
    assert calls == [1] and not any("resuming" in line for line in said)
    # with resume (the default) the interrupted run's curve is taken
    train(features, "train", "car", "bl1", settings, tmp_path / "b", keep_checkpoint=True)
    train(features, "train", "car", "bl1", settings, tmp_path / "b", say=said.append)
    assert calls == [1, 1] and any(line.startswith("resuming the refit at C") for line in said)
