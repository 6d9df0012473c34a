"""Tests of the VOC-layout reader and the synthetic data set generator."""
import os
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageOps

from segstruct.datasets import (
    VOC_CLASSES,
    VOID_LABEL,
    DatasetError,
    VOCDataset,
    class_index,
    default_synthetic_root,
    make_synthetic_voc,
    voc_colormap,
)
from segstruct.datasets.images import ImageFiles
from segstruct.datasets.voc import exif_orientation
from segstruct.datasets import synthetic

CLASS_VALUES = {"car": 7, "person": 15, "horse": 13}


# --------------------------------------------------------------------- helpers
def write_voc(root: Path, samples: dict, splits: dict | None = None) -> VOCDataset:
    """Write a tiny VOC-layout set.

    ``samples`` maps id -> (image, mask); each is an ndarray (saved with
    Pillow: image as JPEG, mask as palette PNG), a PIL image (saved as PNG,
    lossless, whatever the file name says), bytes (written verbatim) or None
    (file left out).
    """
    for sub in ("JPEGImages", "SegmentationClass", "ImageSets/Segmentation"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    for id, (image, mask) in samples.items():
        _write(root / "JPEGImages" / f"{id}.jpg", image, "JPEG")
        _write(root / "SegmentationClass" / f"{id}.png", mask, "PNG")
    if splits is None:
        splits = {"train": "\n".join(samples) + "\n"}
    for name, text in splits.items():
        (root / "ImageSets/Segmentation" / f"{name}.txt").write_text(text)
    return VOCDataset(root)


def _write(path, content, fmt):
    if content is None:
        return
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif isinstance(content, Image.Image):
        content.save(path, format="PNG")
    elif content.ndim == 2 and fmt == "PNG":
        im = Image.fromarray(content)
        im.putpalette(voc_colormap().ravel().tolist())
        im.save(path)
    else:
        Image.fromarray(content).save(path, format=fmt, quality=95)


def rgb(h=4, w=5, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (h, w, 3), dtype=np.uint8)


def labels(h=4, w=5, value=0):
    return np.full((h, w), value, dtype=np.uint8)


# ------------------------------------------------------------------- synthetic
@pytest.fixture(scope="module")
def synth(tmp_path_factory) -> VOCDataset:
    root = make_synthetic_voc(tmp_path_factory.mktemp("syn") / "set", n_train=15, n_val=12)
    return VOCDataset(root)


def test_synthetic_layout_and_values(synth):
    assert synth.splits() == ["train", "trainval", "val"]
    train, val = synth.ids("train"), synth.ids("val")
    assert (len(train), len(val)) == (15, 12)
    assert synth.ids("trainval") == train + val
    assert synth.check() == []
    shapes = set()
    for id in train + val:
        image, lab = synth.read_image(id), synth.read_mask(id)
        assert image.dtype == np.uint8 and image.ndim == 3 and image.shape[2] == 3
        assert lab.shape == image.shape[:2]
        assert 180 <= lab.shape[0] <= 260 and 220 <= lab.shape[1] <= 340
        assert set(np.unique(lab)) <= {0, 7, 13, 15, 255}
        if (lab != 0).any():
            # a void band separates every object from the background
            obj = (lab != 0) & (lab != VOID_LABEL)
            assert not (obj[:, 1:] & (lab[:, :-1] == 0)).any()
            assert not (obj[1:, :] & (lab[:-1, :] == 0)).any()
        shapes.add(lab.shape)
    assert len(shapes) > 5  # sizes vary
    with Image.open(synth.mask_path(train[0])) as im:
        assert im.mode == "P"
        assert im.getpalette()[: 3 * 16] == voc_colormap()[:16].ravel().tolist()


def test_synthetic_every_class_in_every_split(synth):
    for split in ("train", "val"):
        ids = synth.ids(split)
        for name, value in CLASS_VALUES.items():
            n = sum((synth.read_mask(i) == value).any() for i in ids)
            assert n >= 3, (split, name, n)
            assert n < len(ids)  # not in every image either


def test_synthetic_class_colour_and_texture_cues(synth):
    """Car pixels are bluish with horizontal stripes, person pixels reddish."""
    pix = {name: [] for name in CLASS_VALUES}
    grad = []  # car: (mean |d/dy|, mean |d/dx|) of brightness
    for id in synth.ids("trainval"):
        s = synth.load(id, "car")
        image, lab = s.image.astype(float), synth.read_mask(id)
        for name, value in CLASS_VALUES.items():
            pix[name].append(image[lab == value])
        inner = s.target[1:-1, 1:-1] & s.target[:-2, 1:-1] & s.target[2:, 1:-1] \
            & s.target[1:-1, :-2] & s.target[1:-1, 2:]
        if inner.any():
            grey = image.mean(axis=2)
            dy = np.abs(grey[2:, 1:-1] - grey[:-2, 1:-1])[inner]
            dx = np.abs(grey[1:-1, 2:] - grey[1:-1, :-2])[inner]
            grad.append((dy.mean(), dx.mean()))
    car, person, horse = (np.concatenate(pix[n]).mean(axis=0) for n in ("car", "person", "horse"))
    assert car[2] > car[0] + 50 and person[0] > person[2] + 50
    assert horse[0] > horse[2] + 30  # brown: more red than blue
    dy, dx = np.mean(grad, axis=0)
    assert dy > 2 * dx


def test_synthetic_deterministic(tmp_path):
    a = make_synthetic_voc(tmp_path / "a", n_train=3, n_val=2, seed=1)
    b = make_synthetic_voc(tmp_path / "b", n_train=3, n_val=2, seed=1)
    c = make_synthetic_voc(tmp_path / "c", n_train=3, n_val=2, seed=2)
    masks = sorted(p.name for p in (a / "SegmentationClass").iterdir())
    assert len(masks) == 5
    for sub, names in (("SegmentationClass", masks),
                       ("JPEGImages", [m.replace(".png", ".jpg") for m in masks])):
        for name in names:
            assert (a / sub / name).read_bytes() == (b / sub / name).read_bytes()
    assert any((a / "SegmentationClass" / m).read_bytes()
               != (c / "SegmentationClass" / m).read_bytes() for m in masks)
    assert (a / "synthetic.json").read_text() == (b / "synthetic.json").read_text()
    assert "seed=1" in (a / "SOURCE.md").read_text()


def test_synthetic_idempotent_and_rebuilds_when_needed(tmp_path):
    root = tmp_path / "set"
    assert make_synthetic_voc(root, n_train=3, n_val=2) == root.resolve()
    stamps = {p: p.stat().st_mtime_ns for p in root.rglob("*")}
    os.utime(root / "synthetic.json", ns=(1, 1))  # any rewrite would reset it
    stamps[root / "synthetic.json"] = 1
    make_synthetic_voc(root, n_train=3, n_val=2)
    assert {p: p.stat().st_mtime_ns for p in root.rglob("*")} == stamps

    # a file went missing: the set is incomplete and is rebuilt
    (root / "SegmentationClass" / "val_0001.png").unlink()
    make_synthetic_voc(root, n_train=3, n_val=2)
    assert (root / "SegmentationClass" / "val_0001.png").is_file()

    # other parameters: replaced, with no stale files left behind
    make_synthetic_voc(root, n_train=2, n_val=1)
    assert len(list((root / "JPEGImages").iterdir())) == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["set"]  # no temporary folders


def test_synthetic_interrupted_build_leaves_nothing(tmp_path, monkeypatch):
    calls = []
    real_write = synthetic._write_sample

    def failing_write(*args):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        real_write(*args)

    monkeypatch.setattr(synthetic, "_write_sample", failing_write)
    with pytest.raises(KeyboardInterrupt):
        make_synthetic_voc(tmp_path / "set", n_train=3, n_val=2)
    assert list(tmp_path.iterdir()) == []


def test_synthetic_refuses_foreign_folder_and_bad_args(tmp_path):
    root = tmp_path / "mine"
    root.mkdir()
    (root / "notes.txt").write_text("keep me")
    with pytest.raises(DatasetError, match="mine"):
        make_synthetic_voc(root, n_train=2, n_val=1)
    assert (root / "notes.txt").read_text() == "keep me"
    with pytest.raises(DatasetError, match="unicorn"):
        make_synthetic_voc(tmp_path / "x", classes=("car", "unicorn"))
    with pytest.raises(ValueError):
        make_synthetic_voc(tmp_path / "x", n_train=0)


def test_default_synthetic_root(monkeypatch, tmp_path):
    monkeypatch.setenv("SEGSTRUCT_CACHE", str(tmp_path / "c"))
    assert default_synthetic_root() == tmp_path / "c" / "synthetic-voc-v1"
    monkeypatch.delenv("SEGSTRUCT_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert default_synthetic_root() == tmp_path / "x" / "segstruct" / "synthetic-voc-v1"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "h"))
    assert default_synthetic_root() == tmp_path / "h" / ".cache" / "segstruct" / "synthetic-voc-v1"


# ---------------------------------------------------------------------- reader
def test_class_index():
    assert class_index("car") == 7 and class_index("Person") == 15
    assert class_index("background") == 0 and VOC_CLASSES[13] == "horse"
    for bad in ("ca", "cars", "", "person "):
        with pytest.raises(DatasetError, match="expected one of"):
            class_index(bad)


def test_voc_colormap():
    cmap = voc_colormap()
    assert cmap.shape == (256, 3) and cmap.dtype == np.uint8
    assert cmap[0].tolist() == [0, 0, 0] and cmap[1].tolist() == [128, 0, 0]
    assert cmap[15].tolist() == [192, 128, 128] and cmap[255].tolist() == [224, 224, 192]


def test_target_and_void_on_handmade_mask(tmp_path):
    mask = np.array([[0, 15, 15, 255, 0],
                     [0, 15, 7, 255, 0],
                     [255, 0, 7, 7, 0],
                     [0, 0, 0, 15, 255]], dtype=np.uint8)
    image = rgb()
    # image stored losslessly (PNG bytes under .jpg: Pillow reads by content)
    ds = write_voc(tmp_path, {"a": (Image.fromarray(image), mask)})
    s = ds.load("a", "person")
    assert s.id == "a" and s.image_path.name == "a.jpg" and s.mask_path.name == "a.png"
    np.testing.assert_array_equal(s.image, image)
    np.testing.assert_array_equal(s.target, mask == 15)
    np.testing.assert_array_equal(s.void, mask == 255)
    assert s.target.dtype == bool and s.void.dtype == bool and s.target.sum() == 4
    np.testing.assert_array_equal(ds.load("a", "car").target, mask == 7)
    np.testing.assert_array_equal(ds.read_mask("a"), mask)
    assert ds.name == tmp_path.name and ds.root == tmp_path.resolve()


def test_greyscale_l_mask_is_accepted(tmp_path):
    ds = write_voc(tmp_path, {"a": (rgb(), None)})
    Image.fromarray(labels(value=13)).save(ds.mask_path("a"))  # mode 'L'
    assert ds.load("a", "horse").target.all()


def test_missing_folder(tmp_path):
    with pytest.raises(DatasetError, match="nowhere"):
        VOCDataset(tmp_path / "nowhere")
    (tmp_path / "JPEGImages").mkdir()
    (tmp_path / "SegmentationClass").mkdir()
    with pytest.raises(DatasetError, match=r"ImageSets/Segmentation/ \(one text file per "
                                           r"split, e\.g\. train\.txt and val\.txt"):
        VOCDataset(tmp_path)
    (tmp_path / "SegmentationClass").rmdir()
    (tmp_path / "ImageSets" / "Segmentation").mkdir(parents=True)
    with pytest.raises(DatasetError, match="SegmentationClass"):
        VOCDataset(tmp_path)


@pytest.mark.parametrize("which", ["image", "mask"])
def test_missing_file(tmp_path, which):
    image, mask = (None, labels()) if which == "image" else (rgb(), None)
    ds = write_voc(tmp_path, {"gone": (image, mask)})
    with pytest.raises(DatasetError, match=r"gone\.(jpg|png)"):
        ds.load("gone", "car")
    assert any("gone" in p for p in ds.check())


@pytest.mark.parametrize("name", ["a.png", "a.jpeg", "a.PNG", "a.JPG", "a.tiff", "a.bmp"])
def test_images_of_other_suffixes_are_found(tmp_path, name):
    """A converted data set's JPEGImages/ may hold PNGs (or JPEGs named
    otherwise): the one file of the id is read, pixel for pixel (lossless
    formats; JPEG decoded as Pillow decodes it), and named in messages."""
    ds = write_voc(tmp_path, {"a": (None, labels(4, 5, 7))})
    pixels = rgb(4, 5, seed=3)
    fmt = {"png": "PNG", "jpeg": "JPEG", "jpg": "JPEG", "tiff": "TIFF", "bmp": "BMP"}
    Image.fromarray(pixels).save(tmp_path / "JPEGImages" / name,
                                 format=fmt[name.split(".")[1].lower()], quality=95)
    assert ds.image_path("a") == tmp_path.resolve() / "JPEGImages" / name
    with Image.open(tmp_path / "JPEGImages" / name) as im:
        expected = np.array(im.convert("RGB"))
    if name.lower().endswith(("png", "tiff", "bmp")):
        np.testing.assert_array_equal(expected, pixels)
    np.testing.assert_array_equal(ds.read_image("a"), expected)
    assert ds.image_size("a") == (4, 5)
    assert ds.load("a", "car").target.all()
    assert ds.check() == []


def test_the_jpg_is_the_image_and_two_others_are_refused(tmp_path):
    """VOC's <id>.jpg wins over any other file of the id; without it, two
    other files are ambiguous, and both are named; none: the message says
    which suffixes were looked for."""
    ds = write_voc(tmp_path, {"a": (rgb(seed=1), labels())})
    Image.fromarray(rgb(seed=2)).save(tmp_path / "JPEGImages" / "a.png")
    assert ds.image_path("a").name == "a.jpg"
    (tmp_path / "JPEGImages" / "a.jpg").unlink()
    assert ds.image_path("a").name == "a.png"
    Image.fromarray(rgb(seed=2)).save(tmp_path / "JPEGImages" / "a.webp", lossless=True)
    with pytest.raises(DatasetError, match=r"image 'a': 2 files .* \(a\.png, a\.webp\): keep one"):
        ds.image_path("a")
    assert any("a.png, a.webp" in p for p in ds.check())
    for name in ("a.png", "a.webp"):
        (tmp_path / "JPEGImages" / name).unlink()
    with pytest.raises(DatasetError, match=r"a\.jpg not found \(nor a with the suffix "
                                           r"\.jpeg, \.png, .*\.webp, in lower or upper case\)"):
        ds.read_image("a")


def test_split_files_with_a_byte_order_mark_or_file_names(tmp_path):
    """A split file saved with a UTF-8 byte-order mark lists its first id as
    it is; one that lists file names is refused with the id to list."""
    ds = write_voc(tmp_path, {"a": (rgb(), labels()), "b": (rgb(seed=1), labels())},
                   splits={"train": "a\nb\n", "val": "b.jpg\n"})
    (tmp_path / "ImageSets/Segmentation/train.txt").write_text("a\nb\n", encoding="utf-8-sig")
    assert (tmp_path / "ImageSets/Segmentation/train.txt").read_bytes()[:3] == b"\xef\xbb\xbf"
    assert ds.ids("train") == ["a", "b"]
    assert ds.read_image("a").shape == (4, 5, 3)
    with pytest.raises(DatasetError, match=r"the split lists the file name 'b\.jpg': list the "
                                           r"id 'b', without the suffix"):
        ds.read_image(ds.ids("val")[0])


def _save_turned(path, pixels, orientation):
    exif = Image.Exif()
    exif[0x0112] = orientation
    Image.fromarray(pixels).save(path, format="JPEG", quality=95, exif=exif.tobytes())


@pytest.mark.parametrize("orientation", [3, 6, 8])
def test_a_data_sets_images_are_read_as_viewers_show_them(tmp_path, orientation):
    """A phone photo's EXIF orientation is applied in training as in
    predict: the mask, drawn on the image as shown, fits it; a mask that
    fits the image only as stored is refused, saying why."""
    stored = rgb(4, 6, seed=5)
    with_tag = tmp_path / "tagged.jpg"
    _save_turned(with_tag, stored, orientation)
    with Image.open(with_tag) as im:
        shown = np.array(ImageOps.exif_transpose(im))
        plain = np.array(im)
    assert shown.shape[:2] == ((6, 4) if orientation in (6, 8) else (4, 6))
    assert shown.shape != plain.shape or not np.array_equal(shown, plain)    # it turns
    ds = write_voc(tmp_path / "voc", {"a": (None, labels(*shown.shape[:2], value=13))})
    (ds.root / "JPEGImages" / "a.jpg").write_bytes(with_tag.read_bytes())
    np.testing.assert_array_equal(ds.read_image("a"), shown)
    assert ds.image_size("a") == shown.shape[:2]
    assert ds.load("a", "horse").target.all() and ds.check() == []
    assert exif_orientation(ds.image_path("a")) == orientation
    # the same file through predict's reader: the same pixels
    np.testing.assert_array_equal(ImageFiles([ds.image_path("a")]).read_image("a"), shown)
    if orientation in (6, 8):
        Image.fromarray(labels(4, 6, value=13)).save(ds.mask_path("a"))
        with pytest.raises(DatasetError, match=rf"the mask fits the image as stored, without "
                                               rf"its EXIF orientation {orientation}"):
            ds.load("a", "horse")


def test_turned_images_have_cache_digests_of_their_own(tmp_path):
    """Earlier versions read a data set's images as stored: the digest of a
    turned image is not its bytes' alone, so no such entry is taken for it,
    while an image without a turn keeps its digest (and its entries)."""
    from segstruct.features.cache import file_digest, image_digest
    pixels = rgb(4, 6, seed=6)
    _save_turned(tmp_path / "t.jpg", pixels, 6)
    _save_turned(tmp_path / "u.jpg", pixels, 1)
    Image.fromarray(pixels).save(tmp_path / "p.png")
    assert image_digest(tmp_path / "t.jpg") == file_digest(tmp_path / "t.jpg") + "-exif6"
    for name in ("u.jpg", "p.png"):
        assert image_digest(tmp_path / name) == file_digest(tmp_path / name)


# An image and mask of different sizes: tests/test_bad_input.py
# (test_image_mask_size_mismatch), which also checks the training path.


def test_invalid_label_value(tmp_path):
    mask = labels()
    mask[0, 0], mask[1, 1] = 42, 21
    ds = write_voc(tmp_path, {"m": (rgb(), mask)})
    with pytest.raises(DatasetError, match=r"m\.png.*21, 42"):
        ds.read_mask("m")


def test_rgb_colour_mask_refused(tmp_path):
    ds = write_voc(tmp_path, {"c": (rgb(), None)})
    Image.fromarray(rgb()).save(ds.mask_path("c"))
    with pytest.raises(DatasetError, match=r"c\.png is a colour image whose colours are not "
                                           r"all VOC's \(\(\d+, \d+, \d+\), .*\).*index mask"):
        ds.read_mask("c")
    Image.fromarray(rgb()).convert("CMYK").save(ds.mask_path("c").with_suffix(".tif"))
    ds.mask_path("c").unlink()
    ds.mask_path("c").with_suffix(".tif").rename(ds.mask_path("c"))
    with pytest.raises(DatasetError, match=r"c\.png has mode 'CMYK'.*index mask"):
        ds.read_mask("c")


@pytest.mark.parametrize("mode", ["RGB", "RGBA"])
def test_a_mask_of_voc_colours_in_rgb_reads_as_its_labels(tmp_path, mode):
    """A palette mask saved as colours (its palette applied): every colour is
    VOC's, so each pixel reads as the label of its colour."""
    values = np.array([[0, 7, 13, 15, 255], [20, 1, 0, 255, 13], [7, 7, 0, 0, 0],
                       [15, 2, 3, 4, 5]], np.uint8)
    ds = write_voc(tmp_path, {"c": (rgb(), values)})
    np.testing.assert_array_equal(ds.read_mask("c"), values)
    with Image.open(ds.mask_path("c")) as im:
        im.convert(mode).save(ds.mask_path("c"))
    with Image.open(ds.mask_path("c")) as im:
        assert im.mode == mode
    np.testing.assert_array_equal(ds.read_mask("c"), values)
    assert ds.load("c", "horse").target.sum() == 2
    # one colour off VOC's: refused, naming it
    colours = voc_colormap()[values]
    colours[0, 0] = (1, 2, 3)
    Image.fromarray(colours).save(ds.mask_path("c"))
    with pytest.raises(DatasetError, match=r"not all VOC's \(\(1, 2, 3\)\)"):
        ds.read_mask("c")


@pytest.mark.parametrize("text", ["", "\n  \n"])
def test_empty_split(tmp_path, text):
    ds = write_voc(tmp_path, {"a": (rgb(), labels())}, splits={"train": text})
    with pytest.raises(DatasetError, match=r"train\.txt.*no image ids"):
        ds.ids("train")


def test_missing_split(tmp_path):
    ds = write_voc(tmp_path, {"a": (rgb(), labels())})
    with pytest.raises(DatasetError) as err:
        ds.ids("val")
    assert "val.txt" in str(err.value) and "train" in str(err.value)


def test_split_whitespace_and_duplicates(tmp_path):
    ds = write_voc(tmp_path, {"a": (rgb(), labels()), "b": (rgb(), labels())},
                   splits={"train": " a \n\n b\t\n", "dup": "a\nb\na\n", "two": "a 1\n"})
    assert ds.ids("train") == ["a", "b"]
    with pytest.raises(DatasetError, match=r"dup\.txt.*'a'"):
        ds.ids("dup")
    with pytest.raises(DatasetError, match=r"two\.txt"):
        ds.ids("two")
    assert ds.splits() == ["dup", "train", "two"]


def test_unknown_class_name(tmp_path):
    ds = write_voc(tmp_path, {"a": (rgb(), labels())})
    with pytest.raises(DatasetError, match="unicorn"):
        ds.load("a", "unicorn")
    assert any("unicorn" in p for p in ds.check(class_name="unicorn"))


def test_check_reports_missing_class(tmp_path):
    ds = write_voc(tmp_path, {"a": (rgb(), labels(value=7))})
    assert ds.check(class_name="car") == []
    assert any("horse" in p for p in ds.check(class_name="horse"))


def test_truncated_jpeg(tmp_path):
    ds = write_voc(tmp_path, {"cut": (rgb(64, 64), labels(64, 64))})
    data = ds.image_path("cut").read_bytes()
    ds.image_path("cut").write_bytes(data[: len(data) // 2])
    with pytest.raises(DatasetError, match=r"cut\.jpg"):
        ds.read_image("cut")


def test_non_image_bytes(tmp_path):
    ds = write_voc(tmp_path, {"junk": (b"this is not an image", b"\x89PNG nope")})
    with pytest.raises(DatasetError, match=r"junk\.jpg"):
        ds.read_image("junk")
    with pytest.raises(DatasetError, match=r"junk\.png"):
        ds.read_mask("junk")


@pytest.mark.parametrize("mode", ["L", "RGBA", "CMYK"])
def test_non_rgb_image_refused(tmp_path, mode):
    ds = write_voc(tmp_path, {"g": (None, labels())})
    im = Image.fromarray(rgb()).convert(mode)
    im.save(ds.image_path("g"), format="PNG" if mode == "RGBA" else "JPEG")
    with pytest.raises(DatasetError, match=rf"g\.jpg.*'{mode}'"):
        ds.read_image("g")


# ------------------------------------------------------------------- real data
@pytest.mark.shared_data
def test_camvid_voc(camvid_root):
    ds = VOCDataset(camvid_root)
    assert {"train", "val", "test"} <= set(ds.splits())
    counts = {s: len(ds.ids(s)) for s in ("train", "val", "test")}
    assert counts == {"train": 367, "val": 101, "test": 233}
    for id in (ds.ids("train")[0], ds.ids("test")[-1]):
        assert set(np.unique(ds.read_mask(id))) <= {0, 7, 15, 255}
    s = ds.load(ds.ids("val")[0], "car")
    assert s.image.shape == s.target.shape + (3,) and s.target.any() and s.void.any()


@pytest.mark.shared_data
def test_weizmann_horse_voc(horse_root):
    ds = VOCDataset(horse_root)
    assert len(ds.ids("train")) == 164 and len(ds.ids("val")) == 164
    s = ds.load(ds.ids("val")[0], "horse")
    assert s.image.dtype == np.uint8 and s.image.shape == s.target.shape + (3,)
    assert 0 < s.target.mean() < 1
    assert not s.void.any()
