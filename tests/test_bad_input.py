"""Every bad input gets a clear error naming the file or value, and no partial
output (issue "Reliability: bad input").

One test per kind of bad input: each checks the error type AND that the
message names the offending file or value. The data-root tests at the end
check that ``segstruct inspect`` reports every problem of every split and
that ``train`` / ``evaluate`` stop with the same message.
"""
import json
import shutil
from pathlib import Path

import highspy
import numpy as np
import pytest
from PIL import Image

from segstruct.cli import main
from segstruct.datasets import DatasetError, VOCDataset, make_synthetic_voc, voc_colormap
from segstruct.evaluate.inspection import inspect_dataset, training_set_problem
from segstruct.features.cache import ArrayCache
from segstruct.features.config import FeatureConfig
from segstruct.features.extraction import FeatureExtractor
from segstruct.features.superpixels import SuperpixelParams
from segstruct.io.persistence import ModelFileError, load_model, model_paths, save_model
from segstruct.learn.methods import estimator_for
from segstruct.learn.estimators.structured_svm import StructuredSVM
from segstruct.feature_map import Graph

# the top-down block (on by default) costs a detector per class; these tests are
# about other things (the top-down ones switch it on)
SMALL = ["--no-top-down", "--words", "16", "--codebook-descriptors", "2000",
         "--superpixels", "felzenszwalb", "--fz-min-size", "400", "-q"]
CAR = 7


# --------------------------------------------------------------------- helpers
def save_mask(path: Path, labels: np.ndarray) -> None:
    im = Image.fromarray(labels.astype(np.uint8))
    im.putpalette(voc_colormap().ravel().tolist())
    im.save(path)


def tiny_voc(root: Path, samples: dict, split_text: str | None = None) -> VOCDataset:
    """A VOC-layout set of hand-made images (JPEG) and masks (palette PNG)."""
    for sub in ("JPEGImages", "SegmentationClass", "ImageSets/Segmentation"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    for image_id, (image, mask) in samples.items():
        if image is not None:
            Image.fromarray(image).save(root / "JPEGImages" / f"{image_id}.jpg", quality=95)
        if mask is not None:
            save_mask(root / "SegmentationClass" / f"{image_id}.png", mask)
    text = "\n".join(samples) + "\n" if split_text is None else split_text
    (root / "ImageSets/Segmentation/train.txt").write_text(text)
    return VOCDataset(root)


def rgb(h=24, w=32, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (h, w, 3), dtype=np.uint8)


def mask(h=24, w=32, value=0):
    return np.full((h, w), value, np.uint8)


def no_sift_extractor(ds, **kw):
    config = FeatureConfig(sift=False, superpixels=SuperpixelParams(method="felzenszwalb", min_size=20))
    return FeatureExtractor(ds, config, ArrayCache(enabled=False), progress=False, **kw)


@pytest.fixture(scope="module")
def clean_root(tmp_path_factory):
    return make_synthetic_voc(tmp_path_factory.mktemp("syn") / "voc", n_train=6, n_val=3)


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("cache")


# ------------------------------------------------- files: reader and training
@pytest.mark.parametrize("which", ["image", "mask"])
def test_missing_image_or_mask(tmp_path, which):
    image, labels = (None, mask()) if which == "image" else (rgb(), None)
    ds = tiny_voc(tmp_path, {"a": (rgb(seed=1), mask()), "gone": (image, labels)})
    path = ds.image_path("gone") if which == "image" else ds.mask_path("gone")
    with pytest.raises(DatasetError, match=rf"^{which} .*gone\.(jpg|png) not found"):
        ds.load("gone", "car")
    # training stops on it before any superpixel is computed
    with pytest.raises(DatasetError) as err:
        no_sift_extractor(ds).examples("train", "car")
    assert str(path) in str(err.value)


def test_image_mask_size_mismatch(tmp_path):
    ds = tiny_voc(tmp_path, {"odd": (rgb(24, 32), mask(24, 30))})
    with pytest.raises(DatasetError) as err:
        ds.load("odd", "car")
    msg = str(err.value)
    assert "odd.jpg" in msg and "odd.png" in msg and "24x32" in msg and "24x30" in msg
    with pytest.raises(DatasetError) as err2:
        no_sift_extractor(ds).examples("train", "car")
    assert str(err2.value) == msg            # the same message in training


@pytest.mark.parametrize("value", [21, 42, 254])
def test_mask_label_outside_0_20_and_255(tmp_path, value):
    labels = mask()
    labels[3, 4] = value
    ds = tiny_voc(tmp_path, {"m": (rgb(), labels)})
    with pytest.raises(DatasetError, match=rf"m\.png holds invalid label values {value}\b"):
        ds.read_mask("m")
    with pytest.raises(DatasetError, match=rf"m\.png.*{value}"):
        no_sift_extractor(ds).examples("train", "car")


@pytest.mark.parametrize("mode", ["L", "RGBA", "LA", "P"])
def test_grey_or_rgba_image(tmp_path, mode):
    ds = tiny_voc(tmp_path, {"g": (None, mask())})
    Image.fromarray(rgb()).convert(mode).save(ds.image_path("g"), format="PNG")
    with pytest.raises(DatasetError, match=rf"g\.jpg has mode '{mode}'.*'RGB'"):
        ds.read_image("g")
    # found from the header alone, so training stops before any work
    with pytest.raises(DatasetError, match=rf"g\.jpg has mode '{mode}'"):
        ds.image_size("g")
    with pytest.raises(DatasetError, match=rf"g\.jpg has mode '{mode}'"):
        no_sift_extractor(ds).examples("train", "car")


@pytest.mark.parametrize("which, damage", [("image", "truncate"), ("image", "garbage"),
                                           ("mask", "truncate"), ("mask", "garbage")])
def test_truncated_or_corrupt_jpeg_png(tmp_path, which, damage):
    ds = tiny_voc(tmp_path, {"bad": (rgb(64, 64), mask(64, 64, CAR))})
    path = ds.image_path("bad") if which == "image" else ds.mask_path("bad")
    data = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(data[: len(data) // 2])
    else:
        path.write_bytes(data[:20] + b"\x00garbage" * 50)
    with pytest.raises(DatasetError) as err:
        ds.load("bad", "car")
    assert str(path) in str(err.value)
    assert "truncated or corrupt" in str(err.value) or "not a readable image" in str(err.value)
    with pytest.raises(DatasetError) as err2:
        no_sift_extractor(ds).examples("train", "car")
    assert str(err2.value) == str(err.value)


@pytest.mark.parametrize("text", ["", "\n \n\t\n"])
def test_empty_split_list(tmp_path, text, capsys):
    ds = tiny_voc(tmp_path, {"a": (rgb(), mask())}, split_text=text)
    split_file = tmp_path / "ImageSets/Segmentation/train.txt"
    with pytest.raises(DatasetError, match=rf"{split_file}.*lists no image ids"):
        ds.ids("train")
    assert main(["inspect", "--data", str(tmp_path), "--no-cache", *SMALL]) == 1
    assert f"{split_file} lists no image ids" in capsys.readouterr().out


def test_missing_or_no_split_files(tmp_path, capsys):
    ds = tiny_voc(tmp_path, {"a": (rgb(), mask())})
    with pytest.raises(DatasetError, match=r"val\.txt not found; splits present: \['train'\]"):
        ds.ids("val")
    (tmp_path / "ImageSets/Segmentation/train.txt").unlink()
    assert ds.check() == [f"no split files in {ds.root / 'ImageSets/Segmentation'}"]
    # inspect must not call a root without splits clean
    assert main(["inspect", "--data", str(tmp_path), "--no-cache", *SMALL]) == 1
    assert "no split files" in capsys.readouterr().out


def test_split_list_naming_missing_ids(tmp_path):
    ds = tiny_voc(tmp_path, {"a": (rgb(), mask())}, split_text="a\nghost\n")
    problems = ds.check()
    assert any("ghost.jpg not found" in p for p in problems)
    report = inspect_dataset(no_sift_extractor(ds))
    # both missing files are reported, each naming its path
    assert (f"train/ghost: image {ds.image_path('ghost')} not found (nor ghost with the "
            "suffix .jpeg, .png, .bmp, .tif, .tiff, .webp, in lower or upper case)"
            in report["problems"])
    assert f"train/ghost: mask {ds.mask_path('ghost')} not found" in report["problems"]
    with pytest.raises(DatasetError, match=r"ghost\.png not found"):
        no_sift_extractor(ds).examples("train", "car")


# ------------------------------------------------------ classes and void areas
def examples_of(ds, class_name="car"):
    return no_sift_extractor(ds).examples("train", class_name, with_features=False)


def test_class_absent_from_every_training_image(tmp_path, clean_root, cache_dir, capsys):
    # aeroplane is in no synthetic mask: training is refused, saying why
    out = tmp_path / "m"
    code = main(["train", "--data", str(clean_root), "--class", "aeroplane", "--out", str(out),
                 "--cache", str(cache_dir), *SMALL])
    err = capsys.readouterr().err
    assert code == 2 and "'aeroplane'" in err and "nothing to learn" in err
    assert not list(tmp_path.iterdir())                       # no output at all
    ds = tiny_voc(tmp_path / "t", {"a": (rgb(), mask(value=0)), "b": (rgb(seed=2), mask())})
    msg = training_set_problem(examples_of(ds), "car", "train")
    assert "no non-void pixel of split 'train' has class 'car'" in msg


def test_binary_masks_are_named_as_the_likely_cause(tmp_path, capsys):
    """Masks that mark the object 255 (binary masks) hold no class: inspect
    says so, and so does train, which otherwise names the classes found."""
    binary = mask()
    binary[:, :16] = 255
    ds = tiny_voc(tmp_path / "binary", {"a": (rgb(), binary), "b": (rgb(seed=2), binary)})
    report = inspect_dataset(no_sift_extractor(ds))
    assert report["classes"] == []
    assert any(p.startswith("no mask holds an object class, only background (0) and void "
                            "(255): masks that mark the object 255 (binary masks)")
               for p in report["problems"])
    code = main(["train", "--data", str(ds.root), "--class", "horse", "--out",
                 str(tmp_path / "m"), "--no-cache", *SMALL])
    err = capsys.readouterr().err
    assert code == 2 and "its masks hold no object class: masks that mark the object 255" in err
    horse = mask()
    horse[:, :16] = 13
    ds = tiny_voc(tmp_path / "horse", {"a": (rgb(), horse)})
    assert main(["train", "--data", str(ds.root), "--class", "car", "--out",
                 str(tmp_path / "m"), "--no-cache", *SMALL]) == 2
    err = capsys.readouterr().err
    assert "has class 'car'" in err and err.rstrip().endswith("its masks hold 'horse'")
    # a set with classes is not called binary
    assert not any("binary" in p for p in inspect_dataset(no_sift_extractor(ds))["problems"])


def test_binary_masks_hint_gives_the_asked_class_index(tmp_path, capsys):
    """With binary masks, train and inspect name the VOC index the masks must
    hold for the class asked for (cat = 8), not only example classes."""
    binary = mask()
    binary[:, :16] = 255
    ds = tiny_voc(tmp_path / "binary", {"a": (rgb(), binary), "b": (rgb(seed=2), binary)})
    code = main(["train", "--data", str(ds.root), "--class", "cat", "--out",
                 str(tmp_path / "m"), "--no-cache", *SMALL])
    err = capsys.readouterr().err
    assert code == 2 and "must hold its VOC class index instead (cat = 8;" in err
    msg = training_set_problem(examples_of(ds, "cat"), "cat", "train", [])
    assert "(cat = 8;" in msg
    # inspect with the class named: the same hint, once; without: the examples
    problems = inspect_dataset(no_sift_extractor(ds), class_names=["cat"])["problems"]
    assert sum("(cat = 8;" in p for p in problems) == 1, problems
    problems = inspect_dataset(no_sift_extractor(ds))["problems"]
    assert any("(car = 7, horse = 13, person = 15;" in p for p in problems), problems


def test_class_present_only_in_void_regions(tmp_path):
    # VOC marks difficult objects void, so a class can be "there" only as 255:
    # no non-void pixel has it, and the message says so.
    labels = mask()
    labels[5:15, 5:20] = 255                  # where the object would be
    ds = tiny_voc(tmp_path, {"a": (rgb(), labels)})
    msg = training_set_problem(examples_of(ds), "car", "train")
    assert "'car'" in msg and "all marked void" in msg
    # objects smaller than the superpixels: pixels of the class, but no superpixel
    labels = mask()
    labels[0, 0] = CAR
    ds = tiny_voc(tmp_path / "small", {"a": (rgb(), labels)})
    msg = training_set_problem(examples_of(ds), "car", "train")
    assert "'car' has 1 non-void pixels" in msg and "majority label of no superpixel" in msg
    assert "a larger --slic-segments" in msg          # how to fix it, at the default
    # the other ways a split can leave nothing to learn
    ds = tiny_voc(tmp_path / "void", {"a": (rgb(), mask(value=255))})
    assert "void (255) everywhere" in training_set_problem(examples_of(ds), "car", "train")
    ds = tiny_voc(tmp_path / "all", {"a": (rgb(), mask(value=CAR))})
    assert "no background" in training_set_problem(examples_of(ds), "car", "train")
    labels = mask()
    labels[:, :16] = CAR
    ds = tiny_voc(tmp_path / "ok", {"a": (rgb(), labels)})
    assert training_set_problem(examples_of(ds), "car", "train") is None


def test_image_whose_superpixels_are_all_void(tmp_path):
    fg = mask()
    fg[:, :16] = CAR
    ds = tiny_voc(tmp_path, {"a": (rgb(), fg), "void": (rgb(seed=3), mask(value=255)),
                             "b": (rgb(seed=4), fg[:, ::-1].copy())})
    # reported (it contributes nothing, which usually means a broken mask) ...
    message = f"mask {ds.mask_path('void')} is void (255) everywhere"
    assert any(p.startswith(message) for p in ds.check())
    report = inspect_dataset(no_sift_extractor(ds), class_names=["car"])
    assert any(p.startswith(f"train/void: {message}") for p in report["problems"])
    assert report["splits"]["train"]["car"]["images"] == 3    # but still counted
    # ... but no error for training: weight 0 everywhere, no NaN anywhere
    examples = no_sift_extractor(ds).examples("train", "car")
    void_ex = examples[1]
    assert void_ex.void_only.all() and not void_ex.node_weights("count").any()
    X, Y = [ex.graph for ex in examples], [ex.pixel_counts for ex in examples]
    for method, kw in (("bl1", {}), ("bl1", {"scope": "image", "solver": "nslack"}),
                       ("bl2", {"scope": "image"}),
                       ("proposed", {"scope": "image", "n_triangles": 6}),
                       ("proposed", {"node_weights": "area", "n_triangles": 6})):
        svm = estimator_for(method, max_iter=20, **kw).fit(X, Y)
        assert np.all(np.isfinite(svm.w_))
        score = svm.voc_score(X, Y).to_dict()
        assert np.isfinite(score["voc_iou_percent"])


# ------------------------------------------------------------------- features
def test_non_finite_features_name_the_image(tmp_path, monkeypatch):
    import segstruct.features.descriptors as F
    ds = tiny_voc(tmp_path, {"a": (rgb(), mask()), "nan_img": (rgb(seed=5), mask())})
    real = F.colour_features

    def poisoned(lab, labels, n):
        out = real(lab, labels, n)
        if poisoned.calls == 1:               # the second image
            out[0, 3] = np.nan
        poisoned.calls += 1
        return out

    poisoned.calls = 0
    monkeypatch.setattr(F, "colour_features", poisoned)
    cache = ArrayCache(tmp_path / "cache")
    extractor = FeatureExtractor(ds, FeatureConfig(sift=False), cache, progress=False)
    with pytest.raises(ValueError) as err:
        extractor.graphs("train")
    assert "'nan_img'" in str(err.value) and "nan_img.jpg" in str(err.value)
    assert "non-finite unary" in str(err.value)
    # nothing non-finite was cached: the next run computes it afresh, cleanly
    monkeypatch.setattr(F, "colour_features", real)
    graphs = extractor.graphs("train")
    assert all(np.isfinite(g.unary).all() and np.isfinite(g.pairwise).all() for g in graphs)


def test_non_finite_cached_features_are_refused(tmp_path):
    ds = tiny_voc(tmp_path, {"a": (rgb(), mask())})
    cache = ArrayCache(tmp_path / "cache")
    extractor = FeatureExtractor(ds, FeatureConfig(sift=False), cache, progress=False)
    extractor.graphs("train")
    entry = next((tmp_path / "cache" / "features").rglob("*.npz"))
    with np.load(entry) as data:
        arrays = dict(data)
    arrays["unary"][0, 0] = np.inf
    np.savez(entry, **arrays)
    with pytest.raises(ValueError) as err:
        extractor.graphs("train")
    assert "'a'" in str(err.value) and "non-finite unary" in str(err.value)
    assert str(entry) in str(err.value) and "--no-cache" in str(err.value)


@pytest.mark.parametrize("name, image", [
    ("constant", np.full((30, 40, 3), 128, np.uint8)),
    ("black", np.zeros((30, 40, 3), np.uint8)),
    ("white", np.full((30, 40, 3), 255, np.uint8)),
    ("one_wide", rgb(30, 1)),
    ("one_high", rgb(1, 30)),
    ("one_pixel", rgb(1, 1)),
])
def test_adversarial_images_give_finite_features(tmp_path, name, image):
    ds = tiny_voc(tmp_path, {name: (image, mask(*image.shape[:2], value=CAR))})
    codebook = np.random.default_rng(0).uniform(0, 200, (8, 384)).astype(np.float32)
    for method, long_side in (("felzenszwalb", None), ("slic", None), ("felzenszwalb", 64)):
        config = FeatureConfig(n_words=8, codebook_descriptors=8, long_side=long_side,
                               superpixels=SuperpixelParams(method=method))
        graph, = FeatureExtractor(ds, config, ArrayCache(enabled=False), progress=False,
                                  codebook=codebook).graphs("train")
        assert graph.segments.shape == image.shape[:2]
        assert graph.unary.shape == (graph.n_nodes, config.n_unary)
        assert np.isfinite(graph.unary).all() and np.isfinite(graph.pairwise).all()


# ----------------------------------------------------------------- model files
CONFIG = FeatureConfig(sift=False, long_side=None)   # 13 unary weights


def fitted_svm(seed=0, n_unary=CONFIG.n_unary):
    rng = np.random.default_rng(seed)
    X, Y = [], []
    for _ in range(4):
        edges = np.array([(i, i + 1) for i in range(5)])
        X.append(Graph(rng.normal(size=(6, n_unary)), edges, rng.uniform(0, 1, (5, 3))))
        Y.append(np.r_[1, rng.integers(0, 2, 5)])
    return StructuredSVM().fit(X, Y)


@pytest.fixture
def saved(tmp_path):
    json_path = save_model(tmp_path / "m", fitted_svm(), CONFIG, None, {"class": "car"})
    return json_path, model_paths(tmp_path / "m")[1]


def edit_json(path, change):
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


@pytest.mark.parametrize("change, words", [
    (lambda d: d["features"].update(position=False), r"16 weights, but the feature "
                                                     r"settings give 10"),
    (lambda d: d["features"].update(sift=True, n_words=16), r"16 weights.*give 32 \(16 sift \+"),
    (lambda d: d["features"].update(tau1=0.5), r"does not match its own checksum"),
    (lambda d: d["features"]["superpixels"].update(min_size=100), r"own checksum"),
    (lambda d: d.update({"class": "bus"}), r"own checksum"),
    (lambda d: d.update({"class": "unicorn"}), r"invalid settings.*unicorn"),
    (lambda d: d["features"].update(colour_space="hsv"), r"invalid settings.*colour_space"),
    (lambda d: d["estimator"].update(warp=9), r"invalid estimator settings.*warp"),
    # a field of the wrong type is named, not a comparison of str and int
    (lambda d: d["features"]["superpixels"].update(min_size="400"),
     r"invalid settings \(SuperpixelParams\.min_size must be an integer >= 1, got '400'\)"),
    (lambda d: d["features"].update(n_words="16"),
     r"FeatureConfig\.n_words must be an integer >= 2, got '16'"),
    (lambda d: d["estimator"].update(C="big"), r"estimator\.C must be a finite number > 0, "
                                                r"got 'big'"),
    (lambda d: d["estimator"].update(C=-1), r"estimator\.C must be a finite number > 0"),
    (lambda d: d["estimator"].update(tol=[1]), r"estimator\.tol must be"),
    (lambda d: d["estimator"].update(pairwise="yes"), r"estimator\.pairwise must be"),
    (lambda d: d["estimator"].update(loss=5), r"field 'estimator\.loss'"),
    (lambda d: d["estimator"].pop("loss"), r"field 'estimator\.loss': missing"),
    (lambda d: d.pop("features"), r"field 'features': missing"),
    (lambda d: d.update(format_version=7), r"format version 7"),
    (lambda d: d.pop("arrays_sha256"), r"m\.npz does not match the checksum"),
])
def test_model_json_from_other_features_or_edited(saved, change, words):
    json_path, _ = saved
    edit_json(json_path, change)
    with pytest.raises(ModelFileError, match=words) as err:
        load_model(json_path)
    assert "m.json" in str(err.value) or "m.npz" in str(err.value)


@pytest.mark.parametrize("damage", ["truncate", "flip", "empty", "other_model"])
def test_corrupted_model_arrays(saved, tmp_path, damage):
    _, npz_path = saved
    data = npz_path.read_bytes()
    if damage == "truncate":
        npz_path.write_bytes(data[: len(data) // 2])
    elif damage == "flip":
        npz_path.write_bytes(data[:100] + bytes([data[100] ^ 1]) + data[101:])
    elif damage == "empty":
        npz_path.write_bytes(b"")
    else:
        save_model(tmp_path / "other", fitted_svm(seed=9), CONFIG, None, {"class": "car"})
        shutil.copy(model_paths(tmp_path / "other")[1], npz_path)
    with pytest.raises(ModelFileError, match=rf"{npz_path}.*checksum"):
        load_model(npz_path)


def test_model_arrays_inconsistent_with_a_valid_checksum(saved):
    # arrays that match the digest in the JSON but not its settings (written
    # by hand, or by other code): each refused with what is wrong
    import hashlib
    import io
    json_path, npz_path = saved

    def put(**arrays):
        buffer = io.BytesIO()
        np.savez(buffer, **arrays)
        npz_path.write_bytes(buffer.getvalue())
        doc = json.loads(json_path.read_text())
        doc["arrays_sha256"] = hashlib.sha256(buffer.getvalue()).hexdigest()
        json_path.write_text(json.dumps(doc))

    put(w=np.full(CONFIG.n_unary + 3, np.nan))
    with pytest.raises(ModelFileError, match=r"m\.npz.*16 weights are not finite"):
        load_model(json_path)
    put(weights=np.zeros(16))
    with pytest.raises(ModelFileError, match=r"m\.npz is not a readable model arrays file"):
        load_model(json_path)
    npz_path.write_bytes(b"PK not a zip")
    put_digest = hashlib.sha256(b"PK not a zip").hexdigest()
    edit_json(json_path, lambda d: d.update(arrays_sha256=put_digest))
    with pytest.raises(ModelFileError, match=r"m\.npz is not a readable model arrays file"):
        load_model(json_path)


def test_model_codebook_must_fit_the_features(tmp_path):
    config = FeatureConfig(n_words=4, codebook_descriptors=10, colour=False, position=False,
                           long_side=None)
    svm = fitted_svm(n_unary=config.n_unary)
    for codebook, words in ((None, "no codebook"), (np.zeros((5, 384)), r"\(5, 384\)"),
                            (np.full((4, 384), np.inf), "non-finite")):
        with pytest.raises(ValueError, match=rf"not saving model .*m\.json: .*{words}"):
            save_model(tmp_path / "m", svm, config, codebook, {"class": "car"})
        assert not list(tmp_path.iterdir())          # nothing written
    with pytest.raises(ValueError, match=r"8 weights, but the feature settings give 16"):
        save_model(tmp_path / "m", svm, CONFIG, None, {})
    # a JSON whose n_words was changed: the codebook no longer fits (and the
    # weights neither), named in the message
    save_model(tmp_path / "m", svm, config, np.zeros((4, 384)), {"class": "car"})
    edit_json(tmp_path / "m.json", lambda d: d["features"].update(n_words=5))
    with pytest.raises(ModelFileError, match=r"m\.npz does not fit the settings in .*m\.json"):
        load_model(tmp_path / "m")


def test_version_1_model_files_still_load(saved):
    # files written before the JSON carried its own checksum
    json_path, _ = saved
    edit_json(json_path, lambda d: (d.pop("json_sha256"), d.update(format_version=1)))
    assert load_model(json_path)[3]["format_version"] == 1
    edit_json(json_path, lambda d: d.update(format_version=2))     # 2 needs the checksum
    with pytest.raises(ModelFileError, match="own checksum"):
        load_model(json_path)


@pytest.mark.slow
def test_evaluation_uses_the_models_features(clean_root, cache_dir, tmp_path, capsys):
    model = tmp_path / "car"
    assert main(["train", "--data", str(clean_root), "--class", "car", "--out", str(model),
                 "--cache", str(cache_dir), *SMALL]) == 0
    # features of another configuration in the same cache change nothing
    assert main(["features", "--data", str(clean_root), "--split", "val", "--cache",
                 str(cache_dir), "--words", "8", "--codebook-descriptors", "2000",
                 "--superpixels", "felzenszwalb", "--fz-min-size", "400", "-q"]) == 0
    reports = []
    for cache in (["--cache", str(cache_dir)], ["--no-cache"]):
        out = tmp_path / f"eval{len(reports)}.json"
        assert main(["evaluate", "--data", str(clean_root), "--model", str(model),
                     "--json", str(out), "-q", *cache]) == 0
        reports.append(json.loads(out.read_text())["score"])
    assert reports[0] == reports[1]
    # and evaluation takes no feature options at all
    with pytest.raises(SystemExit) as exc:
        main(["evaluate", "--data", str(clean_root), "--model", str(model), "--words", "8"])
    assert exc.value.code == 2 and "--words" in capsys.readouterr().err


# -------------------------------------------------------------- HiGHS statuses
def small_mrf(seed=0, n=8):
    rng = np.random.default_rng(seed)
    edges = np.array([(i, i + 1) for i in range(n - 1)])
    t = np.r_[1.0, (rng.random(n - 1) < 0.4)]
    return rng.normal(size=n), edges, -rng.uniform(0, 1, n - 1), t, np.ones(n)


def _oracles():
    from segstruct.inference.decomposition import decomposition_oracle
    from segstruct.inference.lp import lp_oracle
    from segstruct.inference.milp import milp_oracle
    return {"lp": lambda *a: lp_oracle(*a, "iou", n_triangles=6),
            "decomposition": lambda *a: decomposition_oracle(*a, "iou", n_triangles=6),
            "milp": lambda *a: milp_oracle(*a, "iou")}


@pytest.mark.parametrize("status, text", [("kTimeLimit", "Time limit reached"),
                                          ("kIterationLimit", "Iteration limit reached"),
                                          ("kSolveError", "Solve error"),
                                          ("kUnboundedOrInfeasible", "infeasible or unbounded"),
                                          ("kInfeasible", "Infeasible")])
@pytest.mark.parametrize("oracle", ["lp", "decomposition", "milp"])
def test_highs_status_other_than_optimal(monkeypatch, oracle, status, text):
    run = _oracles()[oracle]
    mrf = small_mrf()
    run(*mrf)                                                 # fine as it is
    monkeypatch.setattr(highspy.Highs, "getModelStatus",
                        lambda self: getattr(highspy.HighsModelStatus, status))
    with pytest.raises(RuntimeError, match=text):
        run(*mrf)


def test_highs_time_limit_of_the_milp():
    from segstruct.inference.milp import MILPError, milp_oracle
    with pytest.raises(MILPError, match="status Time limit reached"):
        milp_oracle(*small_mrf(), "iou", time_limit=0.0)


def test_decomposition_master_turning_infeasible(monkeypatch):
    from segstruct.inference import decomposition as D
    real, calls = D._master, []

    def flaky(*args):
        calls.append(1)
        return real(*args) if len(calls) == 1 else None

    monkeypatch.setattr(D, "_master", flaky)
    with pytest.raises(RuntimeError, match="triangle 0 infeasible.*status Infeasible"):
        D.decomposition_oracle(*small_mrf(), "iou", n_triangles=6)


# ------------------------------------------------------- command-line options
@pytest.mark.parametrize("extra, words", [
    (["--no-cache", "--cache", "x"], "contradict"),
    (["--top-down"], "contradict"),        # SMALL says --no-top-down
    (["--n-jobs", "0"], "--n-jobs"),
    (["--method", "bl1", "--loss", "iou"], "does not apply"),
    (["--method", "bl2", "--node-weights", "area"], "count"),
])
def test_conflicting_cli_options(clean_root, tmp_path, capsys, extra, words):
    with pytest.raises(SystemExit) as exc:
        main(["train", "--data", str(clean_root), "--class", "car",
              "--out", str(tmp_path / "m"), *SMALL, *extra])
    assert exc.value.code == 2 and words in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


# ------------------------------------------------ a data root with many faults
@pytest.fixture(scope="module")
def broken_root(clean_root, tmp_path_factory):
    """A copy of the synthetic set with one fault per file, in every split."""
    root = tmp_path_factory.mktemp("broken") / "voc"
    shutil.copytree(clean_root, root)
    ds = VOCDataset(root)
    train, val = ds.ids("train"), ds.ids("val")
    faults = {}
    ds.mask_path(train[1]).unlink()
    faults[train[1]] = f"mask {ds.mask_path(train[1])} not found"
    save_mask(ds.mask_path(train[2]), ds.read_mask(train[2])[:, :-3])
    faults[train[2]] = f"size mismatch: image {ds.image_path(train[2])}"
    labels = ds.read_mask(train[3])
    labels[0, 0] = 42
    save_mask(ds.mask_path(train[3]), labels)
    faults[train[3]] = f"mask {ds.mask_path(train[3])} holds invalid label values 42"
    with Image.open(ds.image_path(train[4])) as im:
        im.convert("L").save(ds.image_path(train[4]), format="JPEG")
    faults[train[4]] = f"image {ds.image_path(train[4])} has mode 'L'"
    data = ds.image_path(val[0]).read_bytes()
    ds.image_path(val[0]).write_bytes(data[: len(data) // 3])
    faults[val[0]] = f"cannot decode {ds.image_path(val[0])}: truncated or corrupt"
    save_mask(ds.mask_path(val[1]), np.full_like(ds.read_mask(val[1]), 255))
    faults[val[1]] = f"mask {ds.mask_path(val[1])} is void (255) everywhere"
    split_dir = root / "ImageSets/Segmentation"
    (split_dir / "val.txt").write_text("\n".join(val + ["ghost"]) + "\n")
    faults["ghost"] = f"image {ds.image_path('ghost')} not found"
    (split_dir / "test.txt").write_text("\n")
    faults["test"] = f"split file {split_dir / 'test.txt'} lists no image ids"
    return root, faults


def test_inspect_reports_every_problem_of_every_split(broken_root, cache_dir, tmp_path, capsys):
    root, faults = broken_root
    report_path = tmp_path / "report.json"
    code = main(["inspect", "--data", str(root), "--cache", str(cache_dir),
                 "--json", str(report_path), *SMALL])
    assert code == 1
    printed = capsys.readouterr().out
    problems = json.loads(report_path.read_text())["problems"]
    for key, message in faults.items():
        assert any(message in p for p in problems), (key, problems)
        assert message in printed
    ds = VOCDataset(root)
    assert f"val/ghost: mask {ds.mask_path('ghost')} not found" in problems
    # every split the bad ids belong to (trainval = train + val)
    train_ids = ds.ids("train")
    for split in ("train", "trainval"):
        assert any(p.startswith(f"{split}/{train_ids[1]}: ") for p in problems)
    # the clean ids are summarised
    assert report_path.exists()
    assert json.loads(report_path.read_text())["splits"]["train"]["car"]["images"] == 2


def test_failed_inspect_writes_no_json(broken_root, cache_dir, tmp_path, capsys):
    root, _ = broken_root
    out = tmp_path / "report.json"
    with pytest.raises(SystemExit) as exit_:      # refused while the options are read
        main(["inspect", "--data", str(root), "--class", "unicorn", "--json", str(out),
              "--cache", str(cache_dir), *SMALL])
    assert exit_.value.code == 2
    assert "unicorn" in capsys.readouterr().err and not out.exists()


def test_train_and_evaluate_stop_with_inspects_message(broken_root, clean_root, cache_dir,
                                                      tmp_path, capsys):
    root, faults = broken_root
    report = inspect_dataset(FeatureExtractor(VOCDataset(root), cache=ArrayCache(cache_dir),
                                              progress=False), splits=["train", "val"])
    messages = {p.split(": ", 1)[1] for p in report["problems"]}
    first_bad = VOCDataset(root).ids("train")[1]
    out = tmp_path / "m"
    code = main(["train", "--data", str(root), "--class", "car", "--out", str(out),
                 "--cache", str(cache_dir), *SMALL])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert err.startswith("segstruct train: error: ")
    message = err.split("error: ", 1)[1]
    assert message in messages and faults[first_bad] in message
    assert not list(tmp_path.iterdir())                      # no model, log or checkpoint
    # evaluation of a good model on the broken val split stops the same way
    model = tmp_path / "good"
    assert main(["train", "--data", str(clean_root), "--class", "car", "--out", str(model),
                 "--cache", str(cache_dir), *SMALL]) == 0
    capsys.readouterr()
    out_json = tmp_path / "eval.json"
    code = main(["evaluate", "--data", str(root), "--model", str(model), "--split", "val",
                 "--json", str(out_json), "--cache", str(cache_dir), "-q", "--other-data"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.split("error: ", 1)[1] in messages
    assert not out_json.exists()


def test_the_python_api_refuses_what_it_would_get_silently_wrong():
    """Mismatched lengths, NaN counts and arrays given as graphs are refused
    with messages that say what to give instead."""
    from segstruct.toy import chain_problem
    X, Y = chain_problem(n_graphs=4)
    svm = StructuredSVM(C=1.0).fit(X, Y)
    with pytest.raises(ValueError, match="X has 4 graphs but Y 2 label arrays"):
        svm.voc_score(X, Y[:2])
    with pytest.raises(ValueError, match="X has 3 graphs but Y 4 label arrays"):
        StructuredSVM(C=1.0).fit(X[:3], Y)
    with pytest.raises(ValueError, match=r"X\[1\] has 8 nodes but Y\[1\] has labels of 3"):
        svm.voc_score(X[:2], [Y[0], Y[1][:3]])
    with pytest.raises(ValueError, match=r"X\[1\] has 8 nodes but Y\[1\] has labels of 3"):
        StructuredSVM(C=1.0).fit(X[:2], [Y[0], Y[1][:3]])
    bad = [y.astype(np.float64) for y in Y]
    bad[2][5, 1] = np.nan
    for call in (lambda: StructuredSVM(C=1.0).fit(X, bad), lambda: svm.voc_score(X, bad)):
        with pytest.raises(ValueError, match=r"Y\[2\]: pixel counts must be finite.*row 5 "):
            call()
    bad[2][5, 1] = -3.0
    with pytest.raises(ValueError, match=r"Y\[2\]: pixel counts must be non-negative: row 5 "):
        StructuredSVM(C=1.0).fit(X, bad)
    bad[2][5, 1] = 0.5
    with pytest.raises(ValueError, match=r"Y\[2\]: pixel counts must be whole numbers: row 5"):
        StructuredSVM(C=1.0).fit(X, bad)
    with pytest.raises(TypeError, match=r"X\[0\] is a ndarray, not a graph"):
        svm.predict([X[0].unary])
    with pytest.raises(TypeError, match="X must be a sequence of graphs"):
        svm.predict(X[0].unary)
    with pytest.raises(TypeError, match=r"X\[1\] is a ndarray"):
        StructuredSVM(C=1.0).fit([X[0], X[1].unary], Y[:2])


def test_class_names_of_the_python_api_are_matched_in_any_case(clean_root, tmp_path):
    """"Car" is VOC's "car": the same examples, and a model trained with it
    stored under VOC's spelling; a name that is no VOC class is refused."""
    from segstruct.datasets import voc_class_name
    from segstruct.workflow import train_model
    assert voc_class_name("DiningTable") == "diningtable"
    with pytest.raises(DatasetError, match="unknown class name 'Cars'"):
        voc_class_name("Cars")
    extractor = no_sift_extractor(VOCDataset(clean_root))
    upper = extractor.examples("train", "Car")
    lower = extractor.examples("train", "car")
    assert all(np.array_equal(a.pixel_counts, b.pixel_counts) for a, b in zip(upper, lower))
    model = train_model(StructuredSVM(C=1.0), [e.graph for e in upper],
                        [e.pixel_counts for e in upper], tmp_path / "m", extractor,
                        split="train", class_name="CAR", method="bl1")
    assert model.class_name == "car"
    assert json.loads(model_paths(tmp_path / "m")[0].read_text())["class"] == "car"
