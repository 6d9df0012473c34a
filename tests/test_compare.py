"""segstruct compare and visualize: schema, numbers, resume, figures."""
import csv
import json

import numpy as np
import pytest

from segstruct.cli import main
from segstruct.learn.estimators.structured_svm import DEFAULT_C
from segstruct.datasets import VOCDataset

# the top-down block (on by default) costs a detector per class; these tests are
# about other things (the top-down ones switch it on)
SMALL = ["--no-top-down", "--words", "16", "--codebook-descriptors", "2000",
         "--superpixels", "felzenszwalb", "--fz-min-size", "400", "-q"]
METHODS = ["bl1", "bl2", "proposed"]
PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def finished(data_root, tmp_path_factory):
    """One tiny comparison, run once for the module: (output dir, cache args)."""
    base = tmp_path_factory.mktemp("cmp")
    cache = ["--cache", str(base / "cache")]
    out = base / "out"
    args = ["compare", "--data", str(data_root), "--classes", "car", "person",
            "--methods", *METHODS, "--max-iter", "40", "--C", f"{DEFAULT_C:g}",
            "--figure-images", "2", "--out", str(out), "-j", "2", *cache, *SMALL]
    assert main(args) == 0
    return out, cache, args


def test_results_json_names_everything(finished, data_root):
    out, _, _ = finished
    results = json.loads((out / "results.json").read_text())
    assert results["format"] == "segstruct-comparison"
    assert results["classes"] == ["car", "person"] and results["methods"] == METHODS
    assert results["data_root"] == str(data_root) and results["eval_split"] == "val"
    assert {"code_version", "machine", "features", "settings", "seed"} <= set(results)
    assert len(results["results"]) == 6
    for r in results["results"]:
        for key in ("dataset", "class", "method", "loss", "scope", "C", "M", "node_weights",
                    "seed", "code_version", "training", "eval_score", "train_score"):
            assert key in r, key
        assert r["scope"] == "dataset" and r["C"] == DEFAULT_C and r["M"] == 40
        assert r["C_units"] == "superpixel" and r["training"]["svm_C"] > 0
        assert r["inference"] == "envelope"
        assert r["node_weights"] == "count" and r["seed"] == 0
        assert r["training"]["fit_seconds"] > 0 and r["training"]["n_iter"] >= 1
        assert r["loss"]["name"] == ("adjusted_hamming" if r["method"] == "bl1" else "iou")
        assert results["table"]["iou_percent"][r["class"]][r["method"]] == \
            r["eval_score"]["voc_iou_percent"]
        assert results["table"]["train_iou_percent"][r["class"]][r["method"]] == \
            r["train_score"]["voc_iou_percent"]


def test_recorded_score_is_what_evaluate_says(finished, data_root, tmp_path):
    # an independent path: the saved model scored by `segstruct evaluate`
    out, cache, _ = finished
    record = json.loads((out / "runs" / "person-proposed.json").read_text())
    report = tmp_path / "eval.json"
    assert main(["evaluate", "--data", str(data_root), "--model", str(out / record["model"]),
                 "--split", "val", "--json", str(report), *cache, "-q"]) == 0
    evaluation = json.loads(report.read_text())
    score = dict(record["eval_score"])
    per_image = score.pop("per_image")          # the record keeps each image's counts
    assert evaluation["score"] == score
    assert [[i["tp"], i["fp"], i["fn"]] for i in evaluation["per_image"]] == per_image
    assert [i["image_id"] for i in evaluation["per_image"]] == record["eval_ids"]


def test_tables_match_results(finished):
    out, _, _ = finished
    results = json.loads((out / "results.json").read_text())
    iou = results["table"]["iou_percent"]
    train = results["table"]["train_iou_percent"]
    rows = list(csv.reader((out / "table.csv").read_text().splitlines()))
    assert rows[0][:7] == ["class", *METHODS, *(f"{m} train" for m in METHODS)]
    assert [r[0] for r in rows[1:]] == ["car", "person", "mean"]
    for row in rows[1:3]:
        assert [float(v) for v in row[1:7]] == pytest.approx(
            [iou[row[0]][m] for m in METHODS] + [train[row[0]][m] for m in METHODS], abs=1e-4)
    means = [np.mean([table[c][m] for c in ("car", "person")])
             for table in (iou, train) for m in METHODS]
    assert [float(v) for v in rows[3][1:7]] == pytest.approx(means, abs=1e-4)
    md = (out / "table.md").read_text()
    assert "| class | bl1 | bl2 | proposed | bl1 − proposed | bl2 − proposed |" in md
    # each cell: the evaluation split's IoU, its interval, the training split's
    # in brackets; the intervals are results.json's, as the CSV's are
    spans = results["intervals"]["iou_percent"]
    low, high = spans["car"]["bl1"]
    assert (f"| car | {iou['car']['bl1']:.2f} [{low:.1f}, {high:.1f}] "
            f"({train['car']['bl1']:.1f}) |") in md
    assert [float(v) for v in rows[1][7:9]] == pytest.approx([low, high], abs=1e-4)
    low, high = results["intervals"]["mean_iou_percent"]["proposed"]
    assert f"**{means[2]:.2f} [{low:.1f}, {high:.1f}] ({means[5]:.1f})**" in md
    difference = results["intervals"]["difference"]["person"]["bl2"]
    assert difference["difference"] == pytest.approx(iou["person"]["bl2"] -
                                                     iou["person"]["proposed"])
    assert f"{difference['difference']:+.1f} [" in md and difference["verdict"] in md
    # the table names data, loss, scope, C, M, the superpixels, the working
    # resolution and the code version
    side = results["features"]["long_side"]
    assert isinstance(side, int)
    for words in (results["data_root"], "scope dataset", f"C {DEFAULT_C:g}",
                  "oracle envelope (exact)",
                  "superpixels Felzenszwalb, k 200, sigma 0.01, minimum area 400 px",
                  f"images at a long side of {side} px", results["code_version"]):
        assert words in md


def test_second_run_trains_nothing(finished, monkeypatch):
    out, _, args = finished
    before = (out / "results.json").read_text()

    def no_training(self, X, Y, callbacks=None):
        raise AssertionError("a finished pair was trained again")
    monkeypatch.setattr("segstruct.learn.estimators.structured_svm.StructuredSVM.fit", no_training)
    assert main(args + ["--no-figures"]) == 0
    after = json.loads((out / "results.json").read_text())
    assert after["results"] == json.loads(before)["results"]


def test_resume_finishes_only_the_missing_pair(finished, tmp_path, monkeypatch):
    import shutil
    out, _, args = finished
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    (copy / "runs" / "car-bl2.json").unlink()       # as if interrupted before it
    trained = []
    from segstruct.learn.estimators.structured_svm import StructuredSVM
    real_fit = StructuredSVM.fit

    def counting_fit(self, X, Y, callbacks=None):
        trained.append(self.pairwise)   # False: bl2 only
        return real_fit(self, X, Y, callbacks)
    monkeypatch.setattr("segstruct.learn.estimators.structured_svm.StructuredSVM.fit", counting_fit)
    new_args = [a if a != str(out) else str(copy) for a in args]
    assert main(new_args + ["--no-figures"]) == 0
    assert trained == [False]
    assert (copy / "runs" / "car-bl2.json").exists()


def test_other_settings_in_the_same_folder_are_refused(finished, capsys):
    out, _, args = finished
    assert main(args + ["--C", "2", "--no-figures"]) == 2
    err = capsys.readouterr().err
    assert "settings" in err and "another --out" in err


def test_figures_are_written(finished):
    out, _, _ = finished
    for name in ("training-car", "qualitative-car", "loss-surface-car", "training-person",
                 "qualitative-person", "loss-surface-person"):
        path = out / "figures" / f"{name}.png"
        assert path.stat().st_size > 1000 and path.read_bytes()[:8] == PNG, name


def test_figures_drawn_on_workers_are_those_drawn_here(finished, monkeypatch):
    """The figures are tasks on the workers (the run's -j 2): drawn again in
    this process (-j 1), every file is the same, byte for byte."""
    out, _, args = finished
    before = {p.name: p.read_bytes() for p in (out / "figures").glob("*.png")}
    assert len(before) == 6                      # 3 kinds x 2 classes (C fixed: no cv)
    from segstruct.compare import figures
    written = []
    real = figures.save_qualitative

    def recording(*a, **k):
        written.append(a[1])
        return real(*a, **k)
    monkeypatch.setattr(figures, "save_qualitative", recording)
    assert main(args + ["-j", "1", "-q"]) == 0   # the later -j wins
    assert written == ["car", "person"]          # in this process, one after another
    after = {p.name: p.read_bytes() for p in (out / "figures").glob("*.png")}
    assert after == before


def test_absent_class_is_refused_before_training(data_root, tmp_path, capsys):
    out = tmp_path / "out"
    code = main(["compare", "--data", str(data_root), "--classes", "car", "aeroplane",
                 "--methods", "bl1", "--out", str(out), "--cache", str(tmp_path / "c"),
                 *SMALL])
    assert code == 2 and "aeroplane" in capsys.readouterr().err
    assert not (out / "runs").exists()


def test_bad_options_fail_before_training(data_root, tmp_path, capsys):
    base = ["compare", "--data", str(data_root), "--classes", "car", "--out",
            str(tmp_path / "o"), "--cache", str(tmp_path / "c"), *SMALL]
    assert main(base + ["--C", "-1"]) == 2
    assert "C must be a finite number > 0" in capsys.readouterr().err
    with pytest.raises(SystemExit) as usage:        # a usage error, as train's
        main(base + ["--node-weights", "area"])
    assert usage.value.code == 2 and \
        "count node weights" in capsys.readouterr().err
    assert main(base + ["--split-eval", "nosuchsplit"]) == 2
    assert "nosuchsplit" in capsys.readouterr().err
    assert not (tmp_path / "o" / "runs").exists()


def test_visualize_draws_given_images(finished, data_root, tmp_path, capsys):
    out, cache, _ = finished
    ids = VOCDataset(data_root).ids("val")[:2]
    png = tmp_path / "grid.png"
    models = [str(out / "models" / f"car-{m}") for m in METHODS]
    assert main(["visualize", "--data", str(data_root), "--model", *models, "--images", *ids,
                 "--out", str(png), *cache, "-q"]) == 0
    assert png.read_bytes()[:8] == PNG and png.stat().st_size > 1000
    printed = capsys.readouterr().out
    assert all(i in printed for i in ids)
    # models of two classes, and ids not in the split, are refused
    with pytest.raises(SystemExit):
        main(["visualize", "--data", str(data_root), "--model", models[0],
              str(out / "models" / "person-bl1"), "--out", str(png), *cache, "-q"])
    assert main(["visualize", "--data", str(data_root), "--model", models[0], "--images",
                 "nope", "--out", str(png), *cache, "-q"]) == 2
    assert "nope" in capsys.readouterr().err


def test_pick_images_prefers_the_class_and_is_seeded(data_root):
    from segstruct.compare import pick_images
    ds = VOCDataset(data_root)
    a = pick_images(ds, "train", "car", 3, seed=1)
    assert a == pick_images(ds, "train", "car", 3, seed=1) and len(set(a)) == 3
    showing = [i for i in ds.ids("train") if (ds.read_mask(i) == 7).any()]
    assert set(a[:min(3, len(showing))]) <= set(showing)


def test_options_that_would_be_ignored_or_leak_are_refused(data_root, tmp_path, capsys):
    base = ["compare", "--data", str(data_root), "--classes", "car", "--out",
            str(tmp_path / "o"), "--cache", str(tmp_path / "c"), *SMALL]
    cases = [
        (["--split-eval", "train"], "own training data"),
        (["--codebook-split", "val"], "training data only"),
        (["--no-figures", "--figure-ids", "x"], "contradict"),
        (["--methods", "bl1", "--loss", "f1"], "does not apply"),
        (["--methods", "bl1", "bl2", "--triangles", "8"], "only to the proposed"),
        (["--methods", "bl1", "bl2", "--no-polish"], "only to the proposed"),
        (["--methods", "proposed", "--triangles", "8"], "envelope inference"),
        (["--loss", "iou", "--beta", "2"], "--beta applies only"),
    ]
    for extra, words in cases:
        with pytest.raises(SystemExit) as exc:
            main(base + extra)
        assert exc.value.code == 2 and words in capsys.readouterr().err, extra
    assert not (tmp_path / "o").exists()


def test_outputs_never_overwrite_the_model_read(finished, data_root, tmp_path, capsys):
    out, cache, _ = finished
    model = out / "models" / "car-bl1"
    before = (out / "models" / "car-bl1.json").read_bytes()
    for cmd in (["evaluate", "--model", str(model), "--json", str(model) + ".json"],
                ["visualize", "--model", str(model), "--out", str(model) + ".npz"]):
        with pytest.raises(SystemExit) as exc:
            main(cmd + ["--data", str(data_root), *cache, "-q"])
        assert exc.value.code == 2 and "destroy" in capsys.readouterr().err
    assert (out / "models" / "car-bl1.json").read_bytes() == before


@pytest.mark.slow
def test_an_interrupted_pair_continues_from_its_checkpoint(data_root, tmp_path, monkeypatch,
                                                           capsys):
    from segstruct.learn.callbacks import Checkpoint
    args = ["compare", "--data", str(data_root), "--classes", "car", "--methods", "bl1",
            "--out", str(tmp_path / "o"), "--cache", str(tmp_path / "c"), "--no-figures",
            "--tol", "1e-5", *SMALL]
    reference = tmp_path / "ref"
    assert main([a if a != str(tmp_path / "o") else str(reference) for a in args]) == 0
    real_save = Checkpoint.on_iteration
    calls = []

    def save_then_die(self, *a, **k):
        real_save(self, *a, **k)
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
    monkeypatch.setattr(Checkpoint, "on_iteration", save_then_die)
    assert main(args) == 130                      # interrupted after 3 iterations
    assert (tmp_path / "o" / "models" / "car-bl1.ckpt.npz").exists()
    monkeypatch.setattr(Checkpoint, "on_iteration", real_save)
    capsys.readouterr()
    assert main(args) == 0
    assert "resuming from" in capsys.readouterr().out
    done = json.loads((tmp_path / "o" / "runs" / "car-bl1.json").read_text())
    ref = json.loads((reference / "runs" / "car-bl1.json").read_text())
    assert done["training"]["n_iter"] == ref["training"]["n_iter"]
    assert done["eval_score"] == ref["eval_score"]
    assert not (tmp_path / "o" / "models" / "car-bl1.ckpt.npz").exists()


@pytest.mark.slow
def test_an_interruption_after_training_keeps_the_trained_model(data_root, tmp_path,
                                                                 monkeypatch):
    """Killed while the eval split is scored, a pair's converged training is not
    lost: the rerun restores it from the checkpoint without iterating."""
    from segstruct.learn.estimators import structured_svm as ssvm
    args = ["compare", "--data", str(data_root), "--classes", "car", "--methods", "bl1",
            "--out", str(tmp_path / "o"), "--cache", str(tmp_path / "c"), "--no-figures",
            *SMALL]
    real_score = ssvm.StructuredSVM.voc_score
    scored = []

    def die_on_the_eval_split(self, X, Y, *args):
        scored.append(1)
        if len(scored) == 2:                      # the training split first, then eval
            raise KeyboardInterrupt
        return real_score(self, X, Y, *args)
    monkeypatch.setattr(ssvm.StructuredSVM, "voc_score", die_on_the_eval_split)
    assert main(args) == 130
    assert (tmp_path / "o" / "models" / "car-bl1.ckpt.npz").exists()
    monkeypatch.setattr(ssvm.StructuredSVM, "voc_score", real_score)
    iterations = []
    real_planes = ssvm.cutting_planes

    def counting(*a, **k):
        for state in real_planes(*a, **k):
            iterations.append(1)
            yield state
    monkeypatch.setattr(ssvm, "cutting_planes", counting)
    assert main(args) == 0
    assert iterations == []                      # restored, not trained again
    assert not (tmp_path / "o" / "models" / "car-bl1.ckpt.npz").exists()


def test_unreadable_eval_data_and_bad_ids_fail_before_training(data_root, tmp_path, capsys):
    import shutil
    root = tmp_path / "voc"
    shutil.copytree(data_root, root)
    ds = VOCDataset(root)
    base = ["compare", "--data", str(root), "--classes", "car", "--methods", "bl1",
            "--out", str(tmp_path / "o"), "--cache", str(tmp_path / "c"), *SMALL]
    assert main(base + ["--figure-ids", "nope"]) == 2
    assert "nope" in capsys.readouterr().err
    bad = ds.ids("val")[0]
    ds.mask_path(bad).write_bytes(ds.mask_path(bad).read_bytes()[:50])
    assert main(base) == 2
    assert bad in capsys.readouterr().err
    assert not (tmp_path / "o" / "models").exists()


def test_overlapping_splits_are_refused(data_root, tmp_path, capsys):
    import shutil
    root = tmp_path / "voc"
    shutil.copytree(data_root, root)
    ds = VOCDataset(root)
    split_dir = root / "ImageSets" / "Segmentation"
    (split_dir / "trainval.txt").write_text("\n".join(ds.ids("train") + ds.ids("val")) + "\n")
    assert main(["compare", "--data", str(root), "--classes", "car", "--methods", "bl1",
                 "--split-train", "trainval", "--out", str(tmp_path / "o"),
                 "--cache", str(tmp_path / "c"), *SMALL]) == 2
    assert "share" in capsys.readouterr().err


def test_evaluate_compares_two_models_with_a_paired_interval(finished, data_root, tmp_path,
                                                             capsys):
    from segstruct.evaluate.bootstrap import paired_bootstrap
    from segstruct.evaluate.intervals import N_RESAMPLES, _draw_seed
    out, cache, _ = finished
    a, b = (json.loads((out / "runs" / f"person-{m}.json").read_text())
            for m in ("proposed", "bl1"))
    report = tmp_path / "both.json"
    capsys.readouterr()
    assert main(["evaluate", "--data", str(data_root), "--model", str(out / a["model"]),
                 str(out / b["model"]), "--ensemble", "1", "--json", str(report),
                 *cache, "-q"]) == 0
    said = capsys.readouterr().out
    doc = json.loads(report.read_text())
    names = doc["models"]
    difference = doc["intervals"]["difference"]["person"][names[1]]
    # bl1 minus proposed, paired over the same images as compare's records
    expected = paired_bootstrap(b["eval_score"]["per_image"], a["eval_score"]["per_image"],
                                N_RESAMPLES, seed=_draw_seed(0, a["eval_ids"], len(a["eval_ids"])))
    assert difference["difference"] == pytest.approx(expected["difference"])
    assert difference["interval"] == pytest.approx(expected["interval"])
    assert f"{names[1]} - {names[0]}: {difference['difference']:+.1f}" in said
    assert difference["verdict"] in said and "95 % interval [" in said
    with pytest.raises(SystemExit):
        main(["evaluate", "--data", str(data_root), "--model", str(out / a["model"]),
              str(out / "models" / "car-bl1"), *cache, "-q"])
