import argparse
import json
import re
import subprocess
import sys

import numpy as np
import pytest

from segstruct.cli import build_parser, main
from segstruct.cli.common import EarlierName
from segstruct.datasets import VOCDataset

# the top-down block (on by default) costs a detector per class; these tests are
# about other things (the top-down ones switch it on)
SMALL = ["--no-top-down", "--words", "16", "--codebook-descriptors", "2000",
         "--superpixels", "felzenszwalb", "--fz-min-size", "400", "-q"]


def test_help_for_every_subcommand(capsys):
    for cmd in ("inspect", "features", "train", "evaluate", "compare", "visualize", "predict"):
        with pytest.raises(SystemExit) as exc:
            main([cmd, "--help"])
        assert exc.value.code == 0
        assert "--data" in capsys.readouterr().out


def _parsers():
    """The top-level parser and every subcommand's, by name."""
    parser = build_parser()
    out = {"segstruct": parser}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            out.update({f"segstruct {name}": sub for name, sub in action.choices.items()})
    return out


def test_every_option_has_help_that_shows_its_default():
    """Rule: every option has a help text, and that text tells the user the
    default, except where there is none to tell:
    - flags that take no value (--no-cache, --resume, -h, --version, ...):
      their default is "off" and is the same for every flag;
    - required options: they have no default.
    Any other option with a default value must print "default VALUE" (or
    "default: VALUE"), so the help cannot drift from the code: write
    ``%(default)s`` in the help string; a list default may be spelt out, e.g.
    "default: bl1 bl2 proposed". An option whose default is None must say in
    words what happens without it ("default: every class", "default: not
    written").
    """
    problems = []
    for prog, parser in _parsers().items():
        formatter = parser._get_formatter()
        for action in parser._actions:
            if not action.option_strings:
                continue                        # positionals: the subcommand name
            name = f"{prog} {'/'.join(action.option_strings)}"
            if isinstance(action, EarlierName):
                continue                        # an option's earlier name, hidden
            if not action.help or action.help == argparse.SUPPRESS:
                problems.append(f"{name}: no help")
                continue
            text = formatter._expand_help(action)   # what --help prints
            if action.nargs == 0 or action.required:
                continue
            if action.default is None:
                if "default" not in text.lower():
                    problems.append(f"{name}: default None, but the help does not say "
                                    "what happens without the option")
            else:
                shown = (" ".join(map(str, action.default))
                         if isinstance(action.default, (list, tuple)) else str(action.default))
                if not re.search(r"default:?\s+(?:\./)?" + re.escape(shown) + r"(?!\w)", text):
                    problems.append(f"{name}: help does not show its default {shown!r}")
    assert not problems, "\n".join(problems)


def test_inspect_counts_and_oracle(data_root, tmp_path, capsys):
    out = tmp_path / "report.json"
    code = main(["inspect", "--data", str(data_root), "--class", "car", "--split", "train",
                 "--cache", str(tmp_path / "c"), "--json", str(out), *SMALL])
    assert code == 0
    report = json.loads(out.read_text())
    assert report["dataset"] == "voc" and "code_version" in report and "features" in report
    stats = report["splits"]["train"]["car"]
    ds = VOCDataset(data_root)
    masks = [ds.read_mask(i) for i in ds.ids("train")]
    assert stats["images"] == 6
    assert stats["images_with_class"] == sum(bool((m == 7).any()) for m in masks)
    fg = sum(int((m == 7).sum()) for m in masks)
    valid = sum(int((m != 255).sum()) for m in masks)
    assert stats["foreground_pixel_share"] == pytest.approx(fg / valid)
    assert 0 < stats["oracle_voc_iou_percent"] <= 100
    printed = capsys.readouterr().out
    assert "oracle IoU" in printed and "no problems found" in printed


def test_inspection_report_is_what_the_command_writes(data_root, tmp_path, capsys):
    """The library's inspection_report, on the values the options stand for,
    is the report ``inspect --json`` writes."""
    from segstruct.evaluate.inspection import inspection_report
    from segstruct.features.cache import ArrayCache
    from segstruct.features.config import FeatureConfig
    from segstruct.features.extraction import FeatureExtractor
    from segstruct.features.superpixels import SuperpixelParams
    out = tmp_path / "report.json"
    assert main(["inspect", "--data", str(data_root), "--class", "car", "--split", "val",
                 "--cache", str(tmp_path / "c"), "--json", str(out), *SMALL]) == 0
    capsys.readouterr()
    config = FeatureConfig(superpixels=SuperpixelParams(method="felzenszwalb", min_size=400),
                           n_words=16, codebook_descriptors=2000)
    extractor = FeatureExtractor(VOCDataset(data_root), config, ArrayCache(tmp_path / "c"),
                                 progress=False)
    report = inspection_report(extractor, ["val"], ["car"])
    assert json.loads(json.dumps(report)) == json.loads(out.read_text())
    assert capsys.readouterr().out == ""          # the workflow prints nothing


def test_inspect_reports_broken_files(data_root, tmp_path, capsys):
    import shutil
    root = tmp_path / "broken"
    shutil.copytree(data_root, root)
    ds = VOCDataset(root)
    bad = ds.ids("val")[0]
    data = ds.image_path(bad).read_bytes()
    ds.image_path(bad).write_bytes(data[: len(data) // 3])
    code = main(["inspect", "--data", str(root), "--class", "car", "--split", "val",
                 "--cache", str(tmp_path / "c"), *SMALL])
    assert code == 1
    out = capsys.readouterr().out
    assert "1 problem" in out and f"{bad}.jpg" in out


def test_errors_are_clear(data_root, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["inspect", "--data", str(data_root), "--class", "unicorn", *SMALL])
    assert exit_.value.code == 2 and "unicorn" in capsys.readouterr().err
    assert main(["inspect", "--data", str(tmp_path / "nowhere"), *SMALL]) == 2
    assert "nowhere" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["inspect", "--data", str(data_root), "--no-cache", "--cache", "x", *SMALL])
    assert exc.value.code == 2 and "contradict" in capsys.readouterr().err


def test_features_command(data_root, tmp_path, capsys):
    code = main(["features", "--data", str(data_root), "--split", "val", "--class", "person",
                 "--cache", str(tmp_path / "c"), *SMALL])
    assert code == 0
    out = capsys.readouterr().out
    assert "voc/val: 3 images" in out and "unary dim 29" in out  # 16 + 6 + 6 + 1
    assert any((tmp_path / "c" / "features").rglob("*.npz"))


def test_console_script_and_package_mapping(tmp_path):
    # `segstruct` is on PATH, and inference/ and datasets/ install only
    # under segstruct. (run from elsewhere so the repository is not on sys.path)
    out = subprocess.run(["segstruct", "--version"], capture_output=True, text=True,
                         cwd=tmp_path, check=True).stdout
    assert out.startswith("segstruct ")
    probe = ("import importlib.util as u; import segstruct.inference, segstruct.datasets; "
             "print(u.find_spec('inference') is None, u.find_spec('datasets') is None)")
    res = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         cwd=tmp_path, check=True).stdout.split()
    assert res == ["True", "True"]


@pytest.mark.slow
def test_default_data_set_needs_no_arguments(tmp_path, monkeypatch, capsys):
    # The README's main command on a fresh machine: no --data, generated set.
    monkeypatch.setenv("SEGSTRUCT_CACHE", str(tmp_path))
    assert main(["inspect", "--split", "val", "--class", "car", *SMALL]) == 0
    assert "synthetic-voc-v1" in capsys.readouterr().out
    assert (tmp_path / "synthetic-voc-v1" / "ImageSets" / "Segmentation" / "val.txt").exists()


@pytest.mark.slow
def test_train_then_evaluate(data_root, tmp_path, capsys):
    from segstruct.io.persistence import load_model
    cache = ["--cache", str(tmp_path / "c")]
    model = tmp_path / "car_bl1"
    assert main(["train", "--data", str(data_root), "--class", "car", "--out", str(model),
                 "--tol", "1e-3", "--C", "1", *cache, *SMALL]) == 0
    out = capsys.readouterr().out
    assert "converged" in out and (tmp_path / "car_bl1.log.json").exists()
    log = json.loads((tmp_path / "car_bl1.log.json").read_text())
    assert log[-1]["gap"] <= 0.5 * 1e-3 + 1e-9
    report = tmp_path / "eval.json"
    assert main(["evaluate", "--data", str(data_root), "--model", str(model), "--split", "val",
                 "--json", str(report), *cache, "-q"]) == 0
    result = json.loads(report.read_text())
    assert result["class"] == "car" and result["method"] == "bl1"
    assert result["dataset"] == "voc" and result["split"] == "val" and "code_version" in result
    # the printed score is the model's own VOC measure on the val split
    from segstruct.features.cache import ArrayCache
    from segstruct.features.extraction import FeatureExtractor
    svm, config, codebook, _ = load_model(model)
    ex = FeatureExtractor(VOCDataset(data_root), config, ArrayCache(tmp_path / "c"),
                          progress=False, codebook=codebook).examples("val", "car")
    expect = svm.voc_score([e.graph for e in ex], [e.pixel_counts for e in ex]).to_dict()
    assert result["score"] == expect
    # per-image counts, in split order, of the model's own predictions
    assert [r["image_id"] for r in result["per_image"]] == VOCDataset(data_root).ids("val")
    from segstruct.evaluate.scoring import superpixel_confusion
    for r, e, y in zip(result["per_image"], ex, svm.predict([e.graph for e in ex])):
        assert (r["tp"], r["fp"], r["fn"]) == superpixel_confusion(y, e.fg, e.bg)


def test_train_refuses_a_class_with_no_superpixel(data_root, tmp_path, capsys):
    code = main(["train", "--data", str(data_root), "--class", "aeroplane",
                 "--out", str(tmp_path / "m"), "--cache", str(tmp_path / "c"), *SMALL])
    assert code == 2 and "aeroplane" in capsys.readouterr().err
    assert not (tmp_path / "m.json").exists()


@pytest.mark.parametrize("method", ["bl2", "proposed"])
@pytest.mark.slow
def test_train_complex_loss_methods(method, data_root, tmp_path, capsys):
    from segstruct.io.persistence import load_model
    model = tmp_path / method
    assert main(["train", "--data", str(data_root), "--class", "car", "--method", method,
                 "--loss", "iou", "--out", str(model),
                 "--cache", str(tmp_path / "c"), *SMALL]) == 0
    svm, _, _, doc = load_model(model)
    assert doc["method"] == method and doc["estimator"]["loss"] == {"name": "iou"}
    assert doc["estimator"]["pairwise"] == (method == "proposed")
    assert "converged" in capsys.readouterr().out


def test_conflicting_training_options(data_root, tmp_path, capsys):
    base = ["train", "--data", str(data_root), "--class", "car", "--out", str(tmp_path / "m"),
            "--cache", str(tmp_path / "c"), *SMALL]
    for extra, words in ((["--method", "bl1", "--loss", "iou"], "does not apply"),
                         (["--method", "bl2", "--node-weights", "area"], "count")):
        with pytest.raises(SystemExit) as exc:
            main(base + extra)
        assert exc.value.code == 2 and words in capsys.readouterr().err


@pytest.mark.slow
def test_train_stopped_at_max_iter_resumes_with_a_higher_one(data_root, tmp_path, capsys):
    from segstruct.io.persistence import load_model
    cache = ["--cache", str(tmp_path / "c")]
    base = ["train", "--data", str(data_root), "--class", "car", "--tol", "1e-5", "--C", "1",
            *cache, *SMALL]
    assert main(base + ["--out", str(tmp_path / "ref")]) == 0
    assert main(base + ["--out", str(tmp_path / "m"), "--max-iter", "3"]) == 0
    assert (tmp_path / "m.ckpt.npz").exists() and "--resume" in capsys.readouterr().out
    with pytest.raises(SystemExit):              # not silently restarted
        main(base + ["--out", str(tmp_path / "m")])
    assert main(base + ["--out", str(tmp_path / "m"), "--resume", "--max-iter", "500"]) == 0
    assert np.array_equal(load_model(tmp_path / "m")[0].w_, load_model(tmp_path / "ref")[0].w_)
    assert not (tmp_path / "m.ckpt.npz").exists()


@pytest.mark.slow
def test_default_C_auto_resumes_its_refit_at_the_C_it_chose(data_root, tmp_path, capsys):
    """C is cross-validated by default; a refit stopped at --max-iter resumes at
    the C chosen before (not a new choice made with the new --max-iter)."""
    from segstruct.io.persistence import load_model
    cache = ["--cache", str(tmp_path / "c")]
    base = ["train", "--data", str(data_root), "--class", "car", "--tol", "1e-5", *cache,
            *SMALL, "--out", str(tmp_path / "m")]
    assert main(base + ["--max-iter", "3"]) == 0
    out = capsys.readouterr().out
    assert "C chosen by 3-fold cross-validation" in out
    assert (tmp_path / "m.ckpt.npz").exists() and (tmp_path / "m.cv.json").exists()
    chosen = json.loads((tmp_path / "m.cv.json").read_text())["chosen_C"]
    assert main(base + ["--resume", "--max-iter", "500"]) == 0
    out = capsys.readouterr().out
    assert f"resuming the refit at C {chosen:g}" in out and "C chosen by" not in out
    svm = load_model(tmp_path / "m")[0]
    assert svm.C == chosen
    assert not (tmp_path / "m.ckpt.npz").exists() and not (tmp_path / "m.cv.json").exists()
    # the same model as one uninterrupted run at that C
    assert main(["train", "--data", str(data_root), "--class", "car", "--tol", "1e-5", *cache,
                 *SMALL, "--out", str(tmp_path / "ref"), "--C", f"{chosen!r}"]) == 0
    assert np.array_equal(svm.w_, load_model(tmp_path / "ref")[0].w_)


def test_default_C_auto_falls_back_on_a_split_too_small_to_fold(data_root, tmp_path, capsys):
    """Without --C, a training split of fewer images than folds trains at the
    fixed default C (with a note); an explicit --C auto is refused there."""
    from segstruct.io.persistence import load_model
    from segstruct.learn.estimators.structured_svm import DEFAULT_C
    args = ["train", "--data", str(data_root), "--class", "car", "--cache",
            str(tmp_path / "c"), *SMALL, "--folds", "50"]
    with pytest.raises(SystemExit) as exc:            # --folds alone implies no default
        main(args + ["--C", "auto", "--out", str(tmp_path / "a")])
    assert exc.value.code == 2 and "fewer than the 50 folds" in capsys.readouterr().err
    assert main(args + ["--out", str(tmp_path / "m")]) == 0
    assert "too few for 50-fold cross-validation" in capsys.readouterr().err
    assert load_model(tmp_path / "m")[0].C == DEFAULT_C


def test_features_without_a_class_refuse_the_top_down_options_and_leave_the_options_alone(
        data_root, tmp_path, capsys, monkeypatch):
    """Without --class the features command makes no top-down block: its
    options are refused, and the parsed options are not changed to say so."""
    with pytest.raises(SystemExit) as exc:
        main(["features", "--data", str(data_root), "--cache", str(tmp_path / "c"), "-q",
              "--top-down-folds", "5"])
    assert exc.value.code == 2 and "without --class there is none" in capsys.readouterr().err
    from segstruct.cli import features
    seen = []
    real = features.make_extractor

    def spy(args, dataset, *rest, **kwargs):
        seen.append((args.no_top_down, kwargs.get("bottom_up_only")))
        return real(args, dataset, *rest, **kwargs)
    monkeypatch.setattr(features, "make_extractor", spy)
    assert main(["features", "--data", str(data_root), "--cache", str(tmp_path / "c"), "-q",
                 "--no-top-down", "--words", "16", "--codebook-descriptors", "2000"]) == 0
    assert main(["features", "--data", str(data_root), "--cache", str(tmp_path / "c"), "-q",
                 "--words", "16", "--codebook-descriptors", "2000"]) == 0
    assert seen == [(True, False), (False, True)]


@pytest.mark.parametrize("extra, words", [
    (["--superpixels", "slic", "--fz-scale", "300"], "--fz-scale"),
    (["--fz-min-size", "300"],                            # SLIC is the default
     "--fz-min-size set Felzenszwalb, but --superpixels is slic (the default): "
     "add --superpixels felzenszwalb"),
    (["--superpixels", "felzenszwalb", "--slic-segments", "50"], "--slic-segments"),
    (["--superpixels", "felzenszwalb", "--slic-sigma", "2"], "--slic-sigma"),
    (["--slic-sigma", "-1"], "--slic-sigma must be"),
    (["--superpixels", "felzenszwalb", "--fz-sigma", "-1"], "--fz-sigma must be"),
    (["--no-sift", "--words", "50"], "--words"),
    (["--no-sift", "--codebook-split", "train"], "--codebook-split"),
    (["--no-top-down", "--top-down-folds", "5"], "--top-down-folds"),
    (["--no-top-down", "--top-down-detector", "whole"], "--top-down-detector"),
    (["--top-down-folds", "0"], "--top-down-folds must be at least 1"),
    (["--long-side", "8"], "a long side of at least 16 pixels, got 8"),
    (["--long-side", "big"], "expected auto, none or a number of pixels, got 'big'"),
])
def test_feature_options_that_would_be_ignored_are_refused(extra, words, data_root, tmp_path,
                                                           capsys):
    with pytest.raises(SystemExit) as exc:
        main(["features", "--data", str(data_root), "--cache", str(tmp_path / "c"), "-q",
              *extra])
    assert exc.value.code == 2 and words in capsys.readouterr().err


@pytest.mark.slow
def test_no_polish_gives_the_papers_oracle(data_root, tmp_path):
    from segstruct.io.persistence import load_model
    model = tmp_path / "paper"
    assert main(["train", "--data", str(data_root), "--class", "car", "--method", "proposed",
                 "--inference", "decomposition", "--triangles", "6", "--no-polish",
                 "--out", str(model),
                 "--cache", str(tmp_path / "c"), *SMALL]) == 0
    assert "inference='decomposition'" in load_model(model)[3]["oracle"]
    assert "polish=False" in load_model(model)[3]["oracle"]


def test_earlier_option_names_still_parse_with_a_warning():
    """Recorded commands use --lp-solver, --weights and --top-down, the options'
    earlier names: they still parse, and say what to give instead."""
    required = ["train", "--class", "car", "--out", "m"]
    with pytest.warns(FutureWarning) as caught:
        args = build_parser().parse_args([*required, "--lp-solver", "lp", "--weights", "area",
                                          "--top-down"])
    assert (args.inference, args.node_weights, args.top_down) == ("lp", "area", True)
    said = " ".join(str(w.message) for w in caught)
    assert "--inference" in said and "--node-weights" in said and "on by default" in said
    args = build_parser().parse_args(required)
    assert (args.inference, args.node_weights) == (None, "count")


def test_superpixel_and_working_resolution_options_reach_the_settings():
    from segstruct.cli.settings import feature_config
    train = ["train", "--class", "car", "--out", "m"]
    parse = build_parser().parse_args
    config = feature_config(parse([*train, "--slic-sigma", "2", "--upsampling", "lanczos"]))
    assert (config.superpixels.sigma, config.upsampling) == (2.0, "lanczos")
    config = feature_config(parse([*train, "--superpixels", "felzenszwalb", "--fz-sigma", "0.8"]))
    assert config.superpixels.sigma == 0.8
    with pytest.raises(SystemExit):
        parse([*train, "--upsampling", "cubic"])


def test_top_down_block_is_on_by_default(data_root, tmp_path, capsys):
    from segstruct.cli.settings import feature_config
    from segstruct.features.config import FeatureConfig
    from segstruct.features.topdown.detector import DetectorParams
    train = ["train", "--class", "car", "--out", "m", "--seed", "4"]
    parse = build_parser().parse_args
    assert feature_config(parse(train)).detector == DetectorParams(seed=4)
    assert feature_config(parse([*train, "--no-top-down"])).detector is None
    # the switch of the days it was off by default still parses (and changes nothing)
    with pytest.warns(FutureWarning):
        assert feature_config(parse([*train, "--top-down"])).detector == DetectorParams(seed=4)
    # features without a class: the bottom-up blocks only, said so, no detector
    cache = ["--cache", str(tmp_path / "c")]
    assert main(["features", "--data", str(data_root), *cache,
                 *[a for a in SMALL if a not in ("--no-top-down", "-q")]]) == 0
    out = capsys.readouterr()
    bottom_up = FeatureConfig(n_words=16).n_unary
    assert "bottom-up features only" in out.err and f"unary dim {bottom_up}," in out.out
    assert not (tmp_path / "c" / "detector").exists()
    with pytest.raises(SystemExit) as exc:
        main(["detector", "--data", str(data_root), "--class", "car", *cache, *SMALL])
    assert exc.value.code == 2 and "--no-top-down" in capsys.readouterr().err


@pytest.mark.slow
def test_top_down_train_evaluate_and_detector_commands(data_root, tmp_path, monkeypatch, capsys):
    """The top-down block (on by default) end to end with cheap detector
    settings: the model carries its detector, evaluate scores it as training
    did, and detector reports the AP."""
    import json

    from segstruct.cli import settings as cli
    from segstruct.features.topdown.detector import DetectorParams
    from segstruct.io.persistence import load_model, load_shape_detector

    monkeypatch.setattr(cli, "DetectorParams", lambda seed: DetectorParams(
        n_parts=0, mining_rounds=1, mining_images=4, max_positives=40, seed=seed))
    cache = ["--cache", str(tmp_path / "c")]
    small = [a for a in SMALL if a != "--no-top-down"]    # the block is on by default
    with pytest.raises(SystemExit), pytest.warns(FutureWarning):
        main(["features", "--data", str(data_root), "--top-down", *cache, *small])
    assert "give --class" in capsys.readouterr().err
    model = tmp_path / "m"
    # one detector for all images: evaluate on the training split sees what training saw
    assert main(["train", "--data", str(data_root), "--class", "car", "--top-down-folds", "1",
                 "--out", str(model), "--max-iter", "30", *cache, *small]) == 0
    _, config, _, doc = load_model(model)
    assert config.detector is not None and doc["top_down"][0]["class"] == "car"
    detectors = load_shape_detector(model)
    assert len(detectors) == 1 and detectors[0].params == config.detector
    out = tmp_path / "e.json"

    def no_training(*args, **kwargs):
        raise AssertionError("evaluate trained a detector instead of using the model's")
    from segstruct.features import detection
    monkeypatch.setattr(detection, "train_detector", no_training)
    assert main(["evaluate", "--data", str(data_root), "--model", str(model), "--split",
                 "train", "--json", str(out), "--cache", str(tmp_path / "c2"),
                 "-q"]) == 0
    assert json.loads(out.read_text())["score"]["voc_iou_percent"] == pytest.approx(
        doc["train_score"]["voc_iou_percent"])
    # cross-fitted (the default): the model carries the folds' detectors, and
    # evaluate on val gives the validation score that train recorded
    monkeypatch.undo()
    monkeypatch.setattr(cli, "DetectorParams", lambda seed: DetectorParams(
        n_parts=0, mining_rounds=1, mining_images=4, max_positives=40, seed=seed))
    crossed = tmp_path / "x"
    assert main(["train", "--data", str(data_root), "--class", "car", "--top-down-folds", "2",
                 "--out", str(crossed), "--max-iter", "30", *cache, *small]) == 0
    _, config, _, doc = load_model(crossed)
    assert config.top_down_folds == 2 and len(load_shape_detector(crossed)) == 2
    assert doc["val_split"] == "val"
    assert main(["evaluate", "--data", str(data_root), "--model", str(crossed), "--split",
                 "val", "--json", str(out), "--cache", str(tmp_path / "c3"), "-q"]) == 0
    assert json.loads(out.read_text())["score"] == doc["val_score"]
    monkeypatch.undo()
    monkeypatch.setattr(cli, "DetectorParams", lambda seed: DetectorParams(
        n_parts=0, mining_rounds=1, mining_images=4, max_positives=40, seed=seed))
    assert main(["detector", "--data", str(data_root), "--class", "car", "--out",
                 str(tmp_path / "d"), "-j", "2", *cache, *small]) == 0
    record = json.loads((tmp_path / "d" / "detector-car.json").read_text())
    assert record["split"] == "val" and record["features"]["detector"]["n_parts"] == 0
    # cross-fitted (the default): the AP of each fold's detector, and their mean
    aps = record["detector_average_precision"]
    assert len(aps) == record["features"]["top_down_folds"] == 3
    known = [a for a in aps if a is not None]
    assert record["average_precision"] == (pytest.approx(np.mean(known)) if known else None)
    assert (tmp_path / "d" / "detector-car.png").stat().st_size > 0


# --------------------------------------------------------------------------
# the first-order solvers and the lovasz method

def test_every_solver_parses_for_train_and_compare():
    from segstruct.learn.estimators.structured_svm import SOLVERS
    parser = build_parser()
    for solver in SOLVERS:
        args = parser.parse_args(["train", "--class", "car", "--out", "m", "--solver", solver])
        assert args.solver == solver
        assert parser.parse_args(["compare", "--solver", solver]).solver == solver
    assert parser.parse_args(["compare"]).solver == "oneslack"
    assert parser.parse_args(["compare"]).methods == ["bl1", "bl2", "proposed"]
    assert parser.parse_args(["train", "--method", "lovasz", "--class", "car",
                              "--out", "m"]).method == "lovasz"


@pytest.mark.parametrize("extra, words", [
    (["--solver", "sgd", "--scope", "dataset"], "solver 'sgd' needs the per-image loss scope"),
    (["--solver", "bcfw"], "solver 'bcfw' needs the per-image loss scope"),  # default scope
    (["--solver", "bcfw", "--scope", "image", "--resume"], "keeps no checkpoint"),
    (["--method", "lovasz", "--resume"], "keeps no checkpoint"),
    (["--method", "lovasz", "--solver", "nslack"], "--solver nslack does not apply to lovasz"),
    (["--method", "lovasz", "--solver", "sgd"], "SGD needs the per-image loss scope"),
    (["--method", "projection", "--solver", "sgd", "--scope", "image"],
     "--solver sgd does not apply to projection"),
    (["--projection-set", "budget"], "applies to the projection method only"),
])
def test_solver_options_that_cannot_work_are_refused(extra, words, data_root, tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["train", "--data", str(data_root), "--class", "car", "--out", str(tmp_path / "m"),
              "--cache", str(tmp_path / "c"), *extra, *SMALL])
    assert exc.value.code == 2 and words in capsys.readouterr().err
    assert not (tmp_path / "c").exists()          # refused before any feature


def test_compare_refuses_first_order_solvers_at_the_dataset_scope(data_root, tmp_path, capsys):
    for extra, words in ((["--solver", "sgd"], "needs the per-image loss scope"),
                         (["--methods", "lovasz", "--solver", "nslack"], "does not apply")):
        with pytest.raises(SystemExit) as exc:
            main(["compare", "--data", str(data_root), "--classes", "car",
                  "--out", str(tmp_path / "o"), "--cache", str(tmp_path / "c"), *extra, *SMALL])
        assert exc.value.code == 2 and words in capsys.readouterr().err


def test_lovasz_with_another_loss_is_refused(data_root, tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["train", "--data", str(data_root), "--class", "car", "--method", "lovasz",
              "--loss", "f1", "--out", str(tmp_path / "m"), "--cache", str(tmp_path / "c"),
              *SMALL])
    assert exc.value.code == 2 and "IoU loss only" in capsys.readouterr().err


@pytest.mark.slow
def test_train_bcfw_end_to_end(data_root, tmp_path, capsys):
    from segstruct.io.persistence import load_model
    cache = ["--cache", str(tmp_path / "c")]
    model = tmp_path / "bcfw"
    assert main(["train", "--data", str(data_root), "--class", "car", "--solver", "bcfw",
                 "--scope", "image", "--C", "5", "--max-iter", "60", "--out", str(model),
                 *cache, *SMALL]) == 0
    out = capsys.readouterr().out
    assert "iterations" in out and "% on train" in out and "--resume" not in out
    svm, _, _, doc = load_model(model)
    assert doc["method"] == "bl1"
    assert (doc["estimator"]["solver"], doc["estimator"]["scope"]) == ("bcfw", "image")
    log = json.loads((tmp_path / "bcfw.log.json").read_text())
    assert len(log) == doc["training"]["n_iter"] <= 60
    assert all(e["solver"] == "bcfw" and e["gap"] >= 0 for e in log)
    assert doc["training"]["gap"] == pytest.approx(log[-1]["gap"])
    assert doc["training"]["dual"] <= doc["training"]["primal"]
    assert doc["training"]["converged"] == (log[-1]["gap"] <= 5 * doc["estimator"]["tol"])
    assert not (tmp_path / "bcfw.ckpt.npz").exists()
    assert main(["evaluate", "--data", str(data_root), "--model", str(model), "--split", "val",
                 *cache, "-q"]) == 0
    assert "VOC IoU" in capsys.readouterr().out


@pytest.mark.slow
def test_train_lovasz_end_to_end_and_its_model_predicts_the_same_after_loading(
        data_root, tmp_path, capsys):
    from segstruct.features.cache import ArrayCache
    from segstruct.features.extraction import FeatureExtractor
    from segstruct.io.persistence import load_model
    from segstruct.learn.methods import estimator_for
    cache = ["--cache", str(tmp_path / "c")]
    model = tmp_path / "lov"
    assert main(["train", "--data", str(data_root), "--class", "car", "--method", "lovasz",
                 "--out", str(model), *cache, *SMALL]) == 0
    assert "lovasz on" in capsys.readouterr().out
    svm, config, codebook, doc = load_model(model)
    assert doc["method"] == "lovasz" and doc["estimator"]["loss"] == {"name": "iou"}
    assert doc["estimator"]["scope"] == "dataset" and doc["estimator"]["solver"] == "oneslack"
    assert not (tmp_path / "lov.ckpt.npz").exists()
    # the same training in Python: the same weights, and the loaded model predicts
    # as the fitted one
    ex = FeatureExtractor(VOCDataset(data_root), config, ArrayCache(tmp_path / "c"),
                          progress=False, codebook=codebook)
    train, val = ex.examples("train", "car"), ex.examples("val", "car")
    # at the C that the command line's cross-validation chose
    fitted = estimator_for("lovasz", C=doc["estimator"]["C"], tol=doc["estimator"]["tol"]).fit(
        [e.graph for e in train], [e.pixel_counts for e in train])
    np.testing.assert_array_equal(svm.w_, fitted.w_)
    for a, b in zip(svm.predict([e.graph for e in val]), fitted.predict([e.graph for e in val])):
        np.testing.assert_array_equal(a, b)
    selection = fitted.pairwise_selection_
    np.testing.assert_array_equal(svm.w_[-3:], -selection["scale"])
    log = json.loads((tmp_path / "lov.log.json").read_text())
    assert log[-1]["pairwise_selection"]["ratio"] == selection["ratio"]
    # the strength was chosen by the training IoU that train reports
    assert doc["train_score"]["voc_iou_percent"] == pytest.approx(
        100 * max(v for v in selection["train_iou"] if v is not None))
    assert main(["evaluate", "--data", str(data_root), "--model", str(model), "--split", "val",
                 *cache, "-q"]) == 0


def test_train_lovasz_by_sgd_matches_the_library_and_is_not_called_converged(
        data_root, tmp_path, capsys):
    from segstruct.io.persistence import load_model
    from segstruct.learn.solvers.lovasz_hinge import fit_sgd
    from segstruct.learn.estimators.lovasz_svm import LovaszSVM
    from segstruct.learn.estimators.structured_svm import StructuredSVM
    model = tmp_path / "lov"
    assert main(["train", "--data", str(data_root), "--class", "car", "--method", "lovasz",
                 "--solver", "sgd", "--scope", "image", "--C", "5", "--max-iter", "30",
                 "--out", str(model), "--cache", str(tmp_path / "c"), *SMALL]) == 0
    said = capsys.readouterr()
    # no stopping test: never converged, and no --resume is offered
    assert "after 30 iterations" in said.out and "not converged" in said.err
    assert "--resume" not in said.out + said.err
    svm, config, codebook, doc = load_model(model)
    assert (doc["estimator"]["solver"], doc["training"]["converged"]) == ("sgd", False)
    log = json.loads((tmp_path / "lov.log.json").read_text())
    assert len(log) == 30 and all(e["solver"] == "lovasz sgd" for e in log)
    # the unary weights are fit_sgd's on the same features
    from segstruct.features.cache import ArrayCache
    from segstruct.features.extraction import FeatureExtractor
    ex = FeatureExtractor(VOCDataset(data_root), config, ArrayCache(tmp_path / "c"),
                          progress=False, codebook=codebook)
    train = ex.examples("train", "car")
    _, _, _, ts, ws = StructuredSVM(scope="image")._examples(
        [e.graph for e in train], [e.pixel_counts for e in train])
    scales = LovaszSVM(scope="image").margin_scales(ts, ws)
    fit = fit_sgd([s * np.asarray(e.graph.unary, float) for s, e in zip(scales, train)],
                  ts, ws, C=doc["training"]["svm_C"], epochs=30)
    np.testing.assert_allclose(svm.w_[:fit.w.size], fit.w)
    assert doc["training"]["primal"] == pytest.approx(fit.objective)


def test_projection_set_with_area_weights_is_refused_before_features(
        data_root, tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:        # a usage error: with the usage text
        main(["train", "--data", str(data_root), "--class", "car", "--method", "projection",
              "--projection-set", "marginal", "--node-weights", "area", "--out",
              str(tmp_path / "m"), "--cache", str(tmp_path / "c"), *SMALL])
    assert exc.value.code == 2 and "area node weights need the cube" in capsys.readouterr().err
    assert not (tmp_path / "c").exists()


@pytest.mark.slow
def test_train_projection_on_the_budget_set_records_it(data_root, tmp_path, capsys):
    from segstruct.io.persistence import load_model
    cache = ["--cache", str(tmp_path / "c")]
    for name, extra in (("cube", []), ("budget", ["--projection-set", "budget"])):
        assert main(["train", "--data", str(data_root), "--class", "car", "--method",
                     "projection", "--out", str(tmp_path / name), *extra, *cache, *SMALL]) == 0
    docs = {name: load_model(tmp_path / name)[3] for name in ("cube", "budget")}
    assert docs["budget"]["estimator"]["projection_set"] == "budget"
    assert docs["cube"]["estimator"]["projection_set"] == "cube"
    # a foreground budget changes the loss, so the learnt weights differ
    assert load_model(tmp_path / "cube")[0].w_.tolist() != \
        load_model(tmp_path / "budget")[0].w_.tolist()


@pytest.mark.slow
def test_compare_runs_lovasz_and_a_first_order_solver(data_root, tmp_path):
    out = tmp_path / "o"
    assert main(["compare", "--data", str(data_root), "--classes", "car",
                 "--methods", "bl1", "lovasz", "--solver", "bcfw", "--scope", "image",
                 "--C", "5", "--max-iter", "40", "--figure-images", "1", "--out", str(out),
                 "--cache", str(tmp_path / "c"), *SMALL]) == 0
    results = json.loads((out / "results.json").read_text())
    runs = {r["method"]: r for r in results["results"]}
    assert set(runs) == {"bl1", "lovasz"} and results["settings"]["solver"] == "bcfw"
    assert runs["bl1"]["training"]["n_iter"] == 40 and not runs["bl1"]["training"]["converged"]
    assert runs["lovasz"]["loss"]["name"] == "iou" and runs["lovasz"]["scope"] == "image"
    assert all(r["eval_score"]["voc_iou_percent"] is not None for r in runs.values())
    assert (out / "figures" / "training-car.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "lovasz" in (out / "table.md").read_text()


# --------------------------------------------------------------------------
# C units, the validation split, word normalisation


@pytest.mark.slow
def test_C_units_reach_the_model_and_the_paper_setting_is_the_same_problem(data_root,
                                                                          tmp_path):
    """--C-units paper with the paper's C is the objective of superpixel units
    at the C that maps to it: the same weights."""
    from segstruct.io.persistence import load_model
    cache = ["--cache", str(tmp_path / "c")]
    base = ["train", "--data", str(data_root), "--class", "car", "--method", "bl2",
            "--tol", "1e-6", *cache, *SMALL]
    assert main(base + ["--C", "2", "--out", str(tmp_path / "sp")]) == 0
    svm, _, _, doc = load_model(tmp_path / "sp")
    assert doc["estimator"]["C_units"] == "superpixel"
    svm_C = doc["training"]["svm_C"]
    assert main(base + ["--C", repr(2 * svm_C), "--C-units", "paper",
                        "--out", str(tmp_path / "paper")]) == 0
    paper, _, _, doc = load_model(tmp_path / "paper")
    assert doc["estimator"]["C_units"] == "paper"
    assert doc["training"]["svm_C"] == pytest.approx(svm_C)
    np.testing.assert_allclose(paper.w_, svm.w_, rtol=1e-6, atol=1e-9)


@pytest.mark.slow
def test_train_scores_the_validation_split_and_refuses_a_bad_one(data_root, tmp_path, capsys):
    from segstruct.io.persistence import load_model
    cache = ["--cache", str(tmp_path / "c")]
    base = ["train", "--data", str(data_root), "--class", "car", *cache, *SMALL]
    assert main(base + ["--out", str(tmp_path / "m")]) == 0
    out = capsys.readouterr().out
    _, _, _, doc = load_model(tmp_path / "m")
    assert doc["val_split"] == "val"
    assert f"{doc['val_score']['voc_iou_percent']:.2f} % on val" in out
    assert f"{doc['train_score']['voc_iou_percent']:.2f} % on train" in out
    assert main(base + ["--split-val", "none", "--out", str(tmp_path / "n")]) == 0
    assert "val_score" not in load_model(tmp_path / "n")[3]
    for bad, words in ((["--split-val", "test"], "has no such split"),
                       (["--split-val", "train"], "is the training split")):
        with pytest.raises(SystemExit) as exc:
            main(base + bad + ["--out", str(tmp_path / "x")])
        assert exc.value.code == 2 and words in capsys.readouterr().err


def test_train_without_a_val_split_says_val_iou_is_not_measured(data_root, tmp_path, capsys):
    """A data set with no ImageSets/Segmentation/val.txt: train says, in one
    line, that no val IoU is measured and how to get one; with a val split,
    or --split-val none, it says nothing of the kind."""
    import shutil
    root = tmp_path / "noval"
    shutil.copytree(data_root, root)
    (root / "ImageSets" / "Segmentation" / "val.txt").unlink()
    assert "val" not in VOCDataset(root).splits()
    base = ["train", "--class", "car", "--C", "1", "--cache", str(tmp_path / "c"), *SMALL]
    assert main(base + ["--data", str(root), "--out", str(tmp_path / "m")]) == 0
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if "no val split" in line]
    assert len(lines) == 1, out
    assert "val IoU is not measured" in lines[0]
    assert "ImageSets/Segmentation/val.txt" in lines[0]
    assert "segstruct evaluate" in lines[0] and "--split" in lines[0]
    for extra in ([], ["--split-val", "none"]):
        assert main(base + ["--data", str(data_root), "--out", str(tmp_path / "v"),
                            "--force", *extra]) == 0
        assert "not measured" not in capsys.readouterr().out


@pytest.mark.slow
def test_square_rooted_words_are_the_l1_words_square_rooted(data_root, tmp_path):
    from segstruct.features.cache import ArrayCache
    from segstruct.features.extraction import FeatureExtractor
    from segstruct.io.persistence import load_model
    cache = ["--cache", str(tmp_path / "c")]
    for norm in ("l1", "sqrt"):
        assert main(["train", "--data", str(data_root), "--class", "car", "--sift-norm", norm,
                     "--max-iter", "5", "--out", str(tmp_path / norm), *cache, *SMALL]) == 0
    graphs = {}
    for norm in ("l1", "sqrt"):
        _, config, codebook, _ = load_model(tmp_path / norm)
        assert config.sift_norm == norm
        ex = FeatureExtractor(VOCDataset(data_root), config, ArrayCache(tmp_path / "c"),
                              progress=False, codebook=codebook).examples("val", "car")
        graphs[norm] = np.concatenate([e.graph.unary for e in ex])
    words = config.n_words
    np.testing.assert_allclose(graphs["sqrt"][:, :words], np.sqrt(graphs["l1"][:, :words]))
    np.testing.assert_array_equal(graphs["sqrt"][:, words:], graphs["l1"][:, words:])
    assert np.allclose(graphs["l1"][:, :words].sum(axis=1), 1.0)


def test_resume_with_another_setting_names_it(data_root, tmp_path, capsys):
    cache = ["--cache", str(tmp_path / "c")]
    base = ["train", "--data", str(data_root), "--class", "car", "--tol", "1e-6", *cache,
            *SMALL, "--out", str(tmp_path / "m")]
    assert main(base + ["--C", "1", "--max-iter", "2"]) == 0
    assert (tmp_path / "m.ckpt.npz").exists()
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:      # a usage error: the command's usage
        main(base + ["--C", "3", "--resume", "--max-iter", "50"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    # by the option the user gave
    assert "other settings: --C 1 (now 3); give those to continue it" in err
    assert "delete it" in err and "usage: segstruct train" in err
    # a feature setting changed, and a block switched off
    other = [flag if flag != "16" else "12" for flag in base]
    with pytest.raises(SystemExit):
        main(other + ["--C", "1", "--resume", "--max-iter", "50", "--no-colour"])
    err = capsys.readouterr().err
    assert "--no-colour not given (now given), --words 16 (now 12);" in err
    assert "--C 1" not in err and "n_words" not in err


@pytest.mark.slow
def test_train_shows_progress_in_a_log_and_nothing_with_q(data_root, tmp_path, capsys):
    """stderr is not a terminal here: plain progress lines, not silence."""
    loud = [flag for flag in SMALL if flag != "-q"]
    args = ["train", "--data", str(data_root), "--class", "car", "--C", "1",
            "--cache", str(tmp_path / "c"), *loud]
    assert main(args + ["--out", str(tmp_path / "a")]) == 0
    err = capsys.readouterr().err
    assert "cutting planes: 0/1000 iteration (0 %)" in err and "(started)" in err
    assert "(done)" in err and "\r" not in err
    # dated lines; max_iter bounds a training, so its lines estimate no time left
    lines = [line for line in err.splitlines() if "cutting planes:" in line]
    assert lines and all(line[:4].isdigit() and line[4] == "-" for line in lines)
    assert not any("ETA" in line for line in lines)
    assert main(args + ["-q", "--out", str(tmp_path / "b")]) == 0
    assert "(started)" not in capsys.readouterr().err


@pytest.mark.parametrize("command, extra, words", [
    ("train", ["--max-iter", "0"], "--max-iter must be an integer >= 1, got 0"),
    ("train", ["--tol", "-1"], "--tol must be a finite number > 0, got -1.0"),
    ("compare", ["--max-iter", "0"], "--max-iter must be an integer >= 1, got 0"),
    ("compare", ["--tol", "-1"], "--tol must be a finite number > 0, got -1.0"),
])
def test_training_options_out_of_range_name_the_option(command, extra, words, tmp_path,
                                                       capsys):
    """Checked before any data is read, named as the user typed them (not
    the estimator's parameter), with the command's own usage."""
    argv = [command, "--data", str(tmp_path / "nowhere"), "--out", str(tmp_path / "o"),
            *(["--class", "car"] if command == "train" else []), *extra]
    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err
    assert exc.value.code == 2 and words in err and f"usage: segstruct {command} " in err
