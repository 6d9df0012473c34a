"""segstruct predict: its PNGs are the masks evaluate scores, on images with
and without masks; several class models agree with each one where only it
fires; bad inputs are refused before any work."""
import json
from pathlib import Path
import shutil
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

from segstruct.cli import main
from segstruct.datasets import DatasetError, ImageFiles, VOCDataset, make_synthetic_voc
from segstruct.datasets.voc import VOID_LABEL, class_index

SMALL = ["--no-top-down", "--words", "16", "--codebook-descriptors", "2000",
         "--superpixels", "felzenszwalb", "--fz-min-size", "400", "-q"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A data set, a cache, and bl1 models of car and person (and one of car on
    other features)."""
    base = tmp_path_factory.mktemp("predict")
    root = make_synthetic_voc(base / "voc", n_train=6, n_val=3)
    cache = ["--cache", str(base / "cache")]
    models = {}
    for name, cls, extra in (("car", "car", []), ("person", "person", []),
                             ("car_nocolour", "car", ["--no-colour"])):
        models[name] = base / name
        assert main(["train", "--data", str(root), "--class", cls, "--C", "5",
                     "--out", str(models[name]), *cache, *SMALL, *extra]) == 0
    return root, cache, models, base


def png(path):
    image = Image.open(path)
    assert image.mode == "P"
    return np.array(image)


def test_pngs_are_the_masks_that_evaluate_scores(trained, tmp_path, capsys):
    root, cache, models, _ = trained
    out = tmp_path / "out"
    assert main(["predict", "--model", str(models["car"]), "--data", str(root),
                 "--split", "val", "--out", str(out), "--overlay", *cache, "-q"]) == 0
    assert main(["evaluate", "--model", str(models["car"]), "--data", str(root),
                 "--split", "val", "--json", str(tmp_path / "ev.json"), *cache, "-q"]) == 0
    per_image = {e["image_id"]: e for e in json.loads((tmp_path / "ev.json").read_text())
                 ["per_image"]}
    data, car = VOCDataset(root), class_index("car")
    index = json.loads((out / "index.json").read_text())
    assert [e["id"] for e in index["images"]] == data.ids("val")
    assert index["models"][0]["class"] == "car" and index["split"] == "val"
    assert "code_version" in index and index["features"]["sift"] is True
    for image_id in data.ids("val"):
        labels, truth = png(out / f"{image_id}.png"), data.read_mask(image_id)
        assert labels.shape == truth.shape and set(np.unique(labels)) <= {0, car}
        scored = truth != VOID_LABEL
        tp = int(np.sum((labels == car) & (truth == car) & scored))
        fp = int(np.sum((labels == car) & (truth != car) & scored))
        fn = int(np.sum((labels != car) & (truth == car)))
        assert (tp, fp, fn) == tuple(per_image[image_id][k] for k in ("tp", "fp", "fn"))
        overlay = Image.open(out / f"{image_id}.jpg")
        assert overlay.mode == "RGB" and overlay.size == (truth.shape[1], truth.shape[0])


def test_images_without_masks_get_the_same_labels(trained, tmp_path):
    root, cache, models, _ = trained
    data = VOCDataset(root)
    folder = tmp_path / "images"
    folder.mkdir()
    for image_id in data.ids("val"):
        shutil.copy(data.image_path(image_id), folder)        # no masks beside them
    # and one more of another size and colour mode
    grey = Image.open(data.image_path(data.ids("val")[0])).convert("L").resize((50, 40))
    grey.save(folder / "grey.png")
    assert main(["predict", "--model", str(models["car"]), "--images", str(folder),
                 "--out", str(tmp_path / "a"), *cache, "-q"]) == 0
    assert main(["predict", "--model", str(models["car"]), "--data", str(root),
                 "--out", str(tmp_path / "b"), *cache, "-q"]) == 0      # --split val
    for image_id in data.ids("val"):
        np.testing.assert_array_equal(png(tmp_path / "a" / f"{image_id}.png"),
                                      png(tmp_path / "b" / f"{image_id}.png"))
    assert png(tmp_path / "a" / "grey.png").shape == (40, 50)
    index = json.loads((tmp_path / "a" / "index.json").read_text())
    assert len(index["images"]) == 4 and "split" not in index


def test_summary_lines_count_one_image_in_the_singular(trained, tmp_path, capsys):
    """predict, evaluate and features say "1 image" and "2 images", never
    "1 images" or "image(s)"."""
    root, cache, models, _ = trained
    data = VOCDataset(root)
    for n in (1, 2):
        folder = tmp_path / f"in{n}"
        folder.mkdir()
        for image_id in data.ids("val")[:n]:
            shutil.copy(data.image_path(image_id), folder)
        assert main(["predict", "--model", str(models["car"]), "--images", str(folder),
                     "--out", str(tmp_path / f"out{n}"), *cache, "-q"]) == 0
        out = capsys.readouterr().out
        assert f"labelled {n} image{'s' if n > 1 else ''} (" in out, out
    # evaluate --multiclass and features on a split of one image
    one = tmp_path / "one"
    shutil.copytree(root, one)
    (one / "ImageSets" / "Segmentation" / "val.txt").write_text(data.ids("val")[0] + "\n")
    assert main(["evaluate", "--multiclass", "--model", str(models["car"]), str(models["person"]),
                 "--data", str(one), "--other-data", *cache, "-q"]) == 0
    out = capsys.readouterr().out
    assert "2 class models on" in out and "(1 image" in out and "1 images" not in out, out
    assert main(["features", "--data", str(one), "--split", "val", *cache, *SMALL]) == 0
    out = capsys.readouterr().out
    assert "/val: 1 image, " in out and "1 images" not in out, out
    from segstruct.io.text import count
    assert (count(1, "image"), count(2, "image"), count(0, "box", "boxes")) == (
        "1 image", "2 images", "0 boxes")


def test_several_models_agree_with_each_where_it_alone_fires(trained, tmp_path):
    root, cache, models, _ = trained
    car, person = class_index("car"), class_index("person")
    for name in ("car", "person"):
        assert main(["predict", "--model", str(models[name]), "--data", str(root),
                     "--split", "train", "--out", str(tmp_path / name), *cache, "-q"]) == 0
    assert main(["predict", "--model", str(models["car"]), str(models["person"]),
                 "--data", str(root), "--split", "train", "--out", str(tmp_path / "both"),
                 *cache, "-q"]) == 0
    checked = 0
    for image_id in VOCDataset(root).ids("train"):
        a, b = (png(tmp_path / name / f"{image_id}.png") for name in ("car", "person"))
        both = png(tmp_path / "both" / f"{image_id}.png")
        only_car, only_person = (a == car) & (b == 0), (b == person) & (a == 0)
        assert np.all(both[only_car] == car) and np.all(both[only_person] == person)
        assert np.all(both[(a == 0) & (b == 0)] == 0)
        assert np.all(np.isin(both[(a == car) & (b == person)], [car, person]))
        checked += int(only_car.sum() + only_person.sum())
    assert checked > 0


def test_decision_function_is_the_prediction_and_ranks_by_max_marginals(trained):
    from segstruct.features.cache import ArrayCache
    from segstruct.features.extraction import FeatureExtractor
    from segstruct.inference.brute_force import brute_force
    from segstruct.io.persistence import load_model
    from segstruct.feature_map import MRFModel
    root, cache, models, _ = trained
    svm, config, codebook, _ = load_model(models["car"])
    ex = FeatureExtractor(VOCDataset(root), config, ArrayCache(cache[1]), progress=False,
                          codebook=codebook)
    graphs = ex.graphs("val")
    for x, m, y in zip(graphs, svm.decision_function(graphs), svm.predict(graphs)):
        np.testing.assert_array_equal((m > 0).astype(np.uint8), y)
    # on a tiny sub-graph, the max-marginals by enumeration
    x = graphs[0]
    u, p = MRFModel().potentials(x, svm.w_)
    keep = np.arange(min(8, u.size))
    sub = np.all(np.isin(x.edges, keep), axis=1)
    from segstruct.inference.maxmarginals import max_marginals
    m = max_marginals(u[keep], x.edges[sub], p[sub])
    for i in keep:
        fixed = []
        for value in (1, 0):
            lin = np.zeros(keep.size)
            lin[i] = 1e6 if value else -1e6
            best = brute_force(u[keep] + lin / 2, x.edges[sub], p[sub]).objective
            fixed.append(best - (1e6 / 2 if value else 1e6 / 2))
        assert m[i] == pytest.approx(fixed[0] - fixed[1], abs=1e-6)


@pytest.mark.parametrize("case, words", [
    ("same class twice", "both segment 'car'"),
    ("other features", "trained on other features"),
    ("no readable image", "1 image cannot be read (label the others with --skip-bad)"),
    ("no readable image, skip-bad", "no image could be read"),
    ("out is the image folder", "is the input folder"),
    ("out inside the image folder", "is inside the input folder"),
    ("recursive with data", "--recursive goes with --images"),
    ("no images", "give the images to label"),
    ("split with images", "--split goes with --data"),
    ("images and data", "not both"),
    ("out holds other files", "is not empty and holds no earlier predictions"),
    ("ensemble of felzenszwalb superpixels", "varies SLIC's number of segments"),
    ("ensemble of 6", "--ensemble 6: an ensemble has 1 to 5 members"),
    ("ensemble with marginals", "it goes with --decision map"),
])
def test_bad_inputs_are_refused(case, words, trained, tmp_path, capsys):
    root, cache, models, _ = trained
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(VOCDataset(root).image_path(VOCDataset(root).ids("val")[0]),
                folder / "a.png")
    argv = {"same class twice": ["--model", str(models["car"]), str(models["car_nocolour"]),
                                 "--images", str(folder)],
            "other features": ["--model", str(models["person"]), str(models["car_nocolour"]),
                               "--images", str(folder)],
            "no readable image": ["--model", str(models["car"]), "--images", str(folder)],
            "no readable image, skip-bad": ["--model", str(models["car"]), "--images",
                                            str(folder), "--skip-bad"],
            "out is the image folder": ["--model", str(models["car"]), "--images",
                                        str(folder)],
            "out inside the image folder": ["--model", str(models["car"]), "--images",
                                            str(folder)],
            "recursive with data": ["--model", str(models["car"]), "--data", str(root),
                                    "--recursive"],
            "no images": ["--model", str(models["car"])],
            "split with images": ["--model", str(models["car"]), "--images", str(folder),
                                  "--split", "val"],
            "images and data": ["--model", str(models["car"]), "--images", str(folder),
                                "--data", str(root)],
            "out holds other files": ["--model", str(models["car"]), "--images",
                                      str(folder)],
            "ensemble of felzenszwalb superpixels": ["--model", str(models["car"]), "--images",
                                                     str(folder), "--ensemble", "2"],
            "ensemble of 6": ["--model", str(models["car"]), "--images", str(folder),
                              "--ensemble", "6"],
            "ensemble with marginals": ["--model", str(models["car"]), "--images",
                                        str(folder), "--ensemble", "2", "--decision",
                                        "marginal"]}[case]
    out = {"out is the image folder": folder,
           "out inside the image folder": folder / "sub" / "out"}.get(case, tmp_path / "out")
    if case.startswith("no readable image"):
        (folder / "a.png").write_bytes(b"not an image")
    if case == "out holds other files":
        out.mkdir()
        (out / "notes.txt").write_text("mine")
    before = sorted(p.name for p in out.iterdir()) if out.exists() else None
    try:
        rc = main(["predict", *argv, "--out", str(out), *cache, "-q"])
    except SystemExit as exit_:
        rc = exit_.code
    err = capsys.readouterr().err
    assert rc == 2 and words in err
    if case in ("no images", "split with images", "images and data", "recursive with data"):
        # the command's own usage, not the list of commands
        assert "usage: segstruct predict " in err and "COMMAND" not in err
    # refused before any output
    assert (sorted(p.name for p in out.iterdir()) if out.exists() else None) == before


def test_a_batch_with_bad_files_names_each_and_goes_on_only_if_asked(trained, tmp_path,
                                                                     capsys):
    root, cache, models, _ = trained
    data = VOCDataset(root)
    folder = tmp_path / "in"
    (folder / "more").mkdir(parents=True)
    good = data.ids("val")[:2]
    for image_id in good:
        shutil.copy(data.image_path(image_id), folder)
    shutil.copy(data.image_path(good[0]), folder / "more" / "nested.jpg")
    (folder / "broken1.jpg").write_bytes(b"not an image")
    truncated = data.image_path(good[1]).read_bytes()
    (folder / "broken2.jpg").write_bytes(truncated[: len(truncated) // 3])
    out = tmp_path / "out"
    base = ["predict", "--model", str(models["car"]), "--images", str(folder), *cache, "-q"]

    def run(*extra):
        try:
            rc = main([*base, *extra])
        except SystemExit as exit_:
            rc = exit_.code
        return rc, capsys.readouterr().err

    # every file checked before any work: both bad ones named, nothing written
    rc, err = run("--out", str(out))
    assert rc == 2 and "2 images cannot be read" in err and "--skip-bad" in err
    assert "broken1.jpg" in err and "broken2.jpg" in err and "usage: segstruct predict" in err
    assert not out.exists()
    rc, err = run("--out", str(out), "--skip-bad")
    assert rc == 0 and "skipping 2 images" in err
    assert "broken1.jpg" in err and "broken2.jpg" in err
    assert "subfolder" in err and "more" in err and "--recursive" in err
    assert sorted(p.name for p in out.glob("*.png")) == sorted(f"{i}.png" for i in good)
    index = json.loads((out / "index.json").read_text())
    assert [e["id"] for e in index["images"]] == good
    assert sorted(Path(u["image"]).name for u in index["unreadable"]) == ["broken1.jpg",
                                                                         "broken2.jpg"]
    # the same folder again, with one image fewer: the stale mask is named, not
    # hidden, and still named by the run after; --force deletes it
    (folder / f"{good[1]}.jpg").unlink()
    for _ in range(2):
        rc, err = run("--out", str(out), "--skip-bad")
        assert rc == 0 and f"{good[1]}.png" in err and "earlier run" in err
        assert "--force deletes them" in err and (out / f"{good[1]}.png").exists()
    assert [e["id"] for e in json.loads((out / "index.json").read_text())["images"]] == \
        good[:1]
    rc, err = run("--out", str(out), "--skip-bad", "--force")
    assert rc == 0 and "deleted 1 file of an earlier run" in err
    assert sorted(p.name for p in out.glob("*.png")) == [f"{good[0]}.png"]
    assert "stale" not in json.loads((out / "index.json").read_text())
    # --recursive takes the subfolder's image too
    rc, err = run("--out", str(tmp_path / "all"), "--skip-bad", "--recursive")
    assert rc == 0 and "subfolder" not in err
    assert sorted(p.name for p in (tmp_path / "all").glob("*.png")) == sorted(
        [f"{good[0]}.png", "nested.png"])


def test_masks_may_go_below_the_folder_of_images_given_one_by_one(trained, tmp_path,
                                                                  capsys):
    """A folder given in --images is read again by --recursive, so --out may
    not lie inside it; beside images given as files, a subfolder is fine."""
    root, cache, models, _ = trained
    data = VOCDataset(root)
    folder = tmp_path / "photos"
    folder.mkdir()
    shutil.copy(data.image_path(data.ids("val")[0]), folder / "a.png")
    assert main(["predict", "--model", str(models["car"]), "--images", str(folder / "a.png"),
                 "--out", str(folder / "masks"), *cache, "-q"]) == 0
    assert (folder / "masks" / "a.png").is_file()
    capsys.readouterr()


def test_image_files_name_images_by_stem_and_refuse_clashes(tmp_path):
    Image.new("RGB", (4, 3)).save(tmp_path / "a.png")
    Image.new("RGBA", (4, 3)).save(tmp_path / "b.png")
    files = ImageFiles([tmp_path])
    assert files.ids() == ["a", "b"] and files.read_image("b").shape == (3, 4, 3)
    assert files.check() == {"a": (3, 4), "b": (3, 4)}
    Image.new("RGB", (4, 3)).save(tmp_path / "a.jpg")
    with pytest.raises(DatasetError, match="same name"):
        ImageFiles([tmp_path])
    (tmp_path / "empty").mkdir()
    with pytest.raises(DatasetError, match="holds no image"):
        ImageFiles([tmp_path / "empty"])
    with pytest.raises(DatasetError, match="not found"):
        ImageFiles([tmp_path / "missing.jpg"])


def test_python_dash_m_is_the_command_line(tmp_path):
    out = subprocess.run([sys.executable, "-m", "segstruct", "--version"], cwd=tmp_path,
                         capture_output=True, text=True, check=True).stdout
    assert out.startswith("segstruct ")


def test_evaluate_and_visualize_refuse_other_data_unless_asked(trained, tmp_path, capsys):
    """Without --data they would score the model on the generated set."""
    root, cache, models, base = trained
    other = make_synthetic_voc(tmp_path / "other", n_train=2, n_val=2, seed=5)
    for argv in (["evaluate", "--model", str(models["car"])],
                 ["visualize", "--model", str(models["car"]), "--out", str(tmp_path / "v.png")]):
        for data in ([], ["--data", str(other)]):
            with pytest.raises(SystemExit) as exc:
                main([*argv, *data, *cache, "-q"])
            assert exc.value.code == 2
            err = capsys.readouterr().err
            assert f"was trained on voc ({root})" in err and "--other-data" in err
    assert main(["evaluate", "--model", str(models["car"]), "--data", str(other),
                 "--other-data", *cache, "-q"]) == 0
    assert main(["evaluate", "--model", str(models["car"]), "--data", str(root),
                 *cache, "-q"]) == 0


def test_train_refuses_to_replace_a_model_unless_forced(trained, tmp_path, capsys):
    root, cache, models, _ = trained
    before = (models["car"].parent / "car.json").read_bytes()
    with pytest.raises(SystemExit) as exc:
        main(["train", "--data", str(root), "--class", "car", "--out", str(models["car"]),
              *cache, *SMALL])
    assert exc.value.code == 2 and "add --force" in capsys.readouterr().err
    assert (models["car"].parent / "car.json").read_bytes() == before
    copy = tmp_path / "copy"
    for suffix in (".json", ".npz"):
        shutil.copy(models["car"].parent / f"car{suffix}", tmp_path / f"copy{suffix}")
    assert main(["train", "--data", str(root), "--class", "car", "--C", "5", "--out",
                 str(copy), "--force", *cache, *SMALL]) == 0


def test_multiclass_scores_are_those_of_the_predicted_pngs(trained, tmp_path, capsys):
    from segstruct.evaluate.multiclass import ConfusionMatrix
    root, cache, models, _ = trained
    both = [str(models["car"]), str(models["person"])]
    assert main(["evaluate", "--multiclass", "--model", *both, "--data", str(root),
                 "--split", "val", "--json", str(tmp_path / "mc.json"), *cache, "-q"]) == 0
    assert "| **mean** |" in capsys.readouterr().out
    assert main(["predict", "--model", *both, "--data", str(root), "--split", "val",
                 "--out", str(tmp_path / "p"), *cache, "-q"]) == 0
    data, cm = VOCDataset(root), ConfusionMatrix()
    for image_id in data.ids("val"):
        cm.add(png(tmp_path / "p" / f"{image_id}.png"), data.read_mask(image_id))
    doc = json.loads((tmp_path / "mc.json").read_text())
    assert doc["multiclass"]["confusion"] == cm.counts.tolist()
    assert doc["multiclass"]["mean_iou_percent"] == pytest.approx(100 * cm.mean_iou())
    # "alone" is what evaluate reports for the model by itself
    assert main(["evaluate", "--model", str(models["car"]), "--data", str(root), "--split",
                 "val", "--json", str(tmp_path / "car.json"), *cache, "-q"]) == 0
    assert doc["alone"]["car"] == json.loads((tmp_path / "car.json").read_text())["score"]
    with pytest.raises(SystemExit):
        main(["evaluate", "--model", *both, "--data", str(root), *cache, "-q"])
    assert "add --multiclass" in capsys.readouterr().err


def test_compare_multiclass_combines_each_methods_models(trained, tmp_path, capsys):
    root, cache, _, _ = trained
    out = tmp_path / "cmp"
    assert main(["compare", "--data", str(root), "--classes", "car", "person", "--methods",
                 "bl1", "--C", "5", "--multiclass", "--no-figures", "--out", str(out),
                 *cache, *SMALL]) == 0
    assert "Multi-class VOC IoU" in capsys.readouterr().out
    doc = json.loads((out / "multiclass.json").read_text())
    models = [str(out / "models" / f"{c}-bl1") for c in ("car", "person")]
    assert main(["evaluate", "--multiclass", "--model", *models, "--data", str(root),
                 "--json", str(tmp_path / "mc.json"), *cache, "-q"]) == 0
    mine = json.loads((tmp_path / "mc.json").read_text())
    assert doc["multiclass"]["bl1"] == mine["multiclass"]
    assert doc["alone_voc_iou_percent"]["bl1"]["car"] == mine["alone"]["car"][
        "voc_iou_percent"]
    assert "| car |" in (out / "multiclass.md").read_text()


def test_a_model_folder_and_a_class_in_capitals_are_understood(trained, tmp_path, capsys):
    import argparse

    from segstruct.cli.common import voc_class
    root, cache, models, base = trained
    # models are path prefixes: a folder names the models it holds
    rc = main(["predict", "--model", str(base), "--images", str(root / "JPEGImages"),
               "--out", str(tmp_path / "out"), *cache, "-q"])
    err = capsys.readouterr().err
    assert rc == 2 and f"{base} is a folder: its models are" in err
    assert str(models["car"]) in err and "without its suffix" in err
    # a folder of one model is that model
    one = tmp_path / "one"
    one.mkdir()
    for suffix in (".json", ".npz"):
        shutil.copy(models["car"].with_suffix(suffix), one)
    assert main(["predict", "--model", str(one), "--images", str(root / "JPEGImages"),
                 "--out", str(tmp_path / "out"), *cache, "-q"]) == 0
    capsys.readouterr()
    # one class whatever its case, and a list of the names for a wrong one
    assert voc_class("Horse") == voc_class("HORSE") == "horse"
    with pytest.raises(argparse.ArgumentTypeError, match="aeroplane"):
        voc_class("hourse")
    with pytest.raises(SystemExit):
        main(["train", "--data", str(root), "--class", "Hourse", "--out", str(tmp_path / "m")])
    assert "--class: " in (err := capsys.readouterr().err) and "Hourse" in err and "horse" in err
