"""ImageFiles reads images of every kind a user may have as (H, W, 3) uint8."""
import numpy as np
import pytest
from PIL import Image

from segstruct.datasets.images import ImageFiles


@pytest.mark.parametrize("kind", ["16-bit", "32-bit int", "float"])
def test_wide_greyscale_images_keep_their_contrast(kind, tmp_path):
    """A 16-bit PNG was read as all 255 (Pillow's convert clips): scaled now."""
    ramp = np.linspace(0.0, 1.0, 64 * 16).reshape(16, 64)
    if kind == "16-bit":
        pixels, path = np.rint(ramp * 65535).astype(np.uint16), tmp_path / "a.png"
    elif kind == "32-bit int":
        pixels, path = np.rint(ramp * 65535).astype(np.int32), tmp_path / "a.tif"
    else:
        pixels, path = ramp.astype(np.float32), tmp_path / "a.tif"
    Image.fromarray(pixels).save(path)
    rgb = ImageFiles([path]).read_image("a")
    assert rgb.shape == (16, 64, 3) and rgb.dtype == np.uint8
    assert np.array_equal(rgb[..., 0], rgb[..., 2])
    # the ramp from black to white, to within rounding
    assert np.abs(rgb[..., 0].astype(int) - np.rint(ramp * 255)).max() <= 1
    assert rgb.min() == 0 and rgb.max() == 255


def test_an_8_bit_grey_image_is_unchanged_in_value(tmp_path):
    grey = np.arange(256, dtype=np.uint8).reshape(16, 16)
    Image.fromarray(grey).save(tmp_path / "g.png")
    rgb = ImageFiles([tmp_path / "g.png"]).read_image("g")
    assert np.array_equal(rgb, np.repeat(grey[..., None], 3, axis=2))


def _photo(height=12, width=20):
    """An RGB image whose every pixel differs, so that a turn or a mirror shows."""
    rng = np.random.default_rng(0)
    return rng.integers(0, 256, (height, width, 3), dtype=np.uint8)


def _by_definition(path) -> np.ndarray:
    """A stored image's RGB by its mode's definition, computed here from the
    stored values (not by Pillow's conversion, which the reader uses)."""
    with Image.open(path) as im:
        values = np.array(im)
        if im.mode == "1":
            grey = np.where(values, 255, 0).astype(np.uint8)
        elif im.mode in ("L", "LA"):          # alpha is dropped: the stored colours
            grey = values if im.mode == "L" else values[..., 0]
        elif im.mode in ("RGB", "RGBA"):
            return values[..., :3]
        elif im.mode == "P":                  # the palette's colours
            palette = np.array(im.getpalette(), np.uint8).reshape(-1, 3)
            return palette[values]
        elif im.mode == "CMYK":               # R = (255 - C)(255 - K) / 255 ...
            c = values.astype(np.float64)
            return np.rint((255 - c[..., :3]) * (255 - c[..., 3:]) / 255).astype(np.uint8)
        elif im.mode in ("I;16", "I"):        # 16-bit: to 0..255 (Pillow < 10.1: "I")
            grey = np.rint(values / 257.0).astype(np.uint8)
        else:
            raise AssertionError(f"no definition for mode {im.mode}")
    return np.repeat(grey[..., None], 3, axis=2)


@pytest.mark.parametrize("mode", ["L", "LA", "RGB", "RGBA", "P", "PA", "CMYK", "1", "I;16"])
@pytest.mark.parametrize("suffix", [".png", ".tif", ".jpg"])
def test_every_mode_reads_as_its_definition_says(mode, suffix, tmp_path):
    """8-bit modes, 16-bit grey, and palette (with transparency) images in
    PNG, TIFF and JPEG: the RGB of each mode's definition (CMYK to within
    rounding)."""
    if mode not in {".png": ("L", "LA", "RGB", "RGBA", "P", "PA", "1", "I;16"),
                    ".tif": ("L", "RGB", "RGBA", "P", "CMYK", "1"),
                    ".jpg": ("L", "RGB", "CMYK")}[suffix]:
        pytest.skip("a format that does not store the mode")
    if mode == "I;16":
        stored = Image.fromarray(_photo()[..., 0].astype(np.uint16) * 257 + 3)
    elif mode == "PA":
        stored = Image.fromarray(_photo()).convert("P")
        stored.info["transparency"] = 5
    else:
        stored = Image.fromarray(_photo()).convert(mode)
    path = tmp_path / f"a{suffix}"
    stored.save(path, **({"quality": 95} if suffix == ".jpg" else {}))
    rgb = ImageFiles([path]).read_image("a")
    assert rgb.dtype == np.uint8 and rgb.shape == (12, 20, 3)
    expected = _by_definition(path)
    tolerance = 1 if mode == "CMYK" else 0
    assert np.abs(rgb.astype(int) - expected.astype(int)).max() <= tolerance


@pytest.mark.parametrize("channels", [3, 4])
def test_16_bit_colour_pngs_keep_their_high_bytes(channels, tmp_path):
    """48- and 64-bit PNGs (written by OpenCV): each channel's top 8 bits."""
    import cv2
    values = np.random.default_rng(1).integers(0, 65536, (6, 8, channels), dtype=np.uint16)
    order = [2, 1, 0, 3][:channels]            # OpenCV writes BGR(A)
    cv2.imwrite(str(tmp_path / "a.png"), values[..., order])
    rgb = ImageFiles([tmp_path / "a.png"]).read_image("a")
    assert np.array_equal(rgb, (values[..., :3] >> 8).astype(np.uint8))


def test_an_image_that_cannot_be_converted_is_refused_with_its_file_and_mode(tmp_path,
                                                                            monkeypatch):
    from segstruct.datasets import DatasetError
    Image.fromarray(_photo()).convert("P").save(tmp_path / "a.png")

    def refuse(self, *args, **kwargs):
        raise ValueError("conversion not supported")
    monkeypatch.setattr(Image.Image, "convert", refuse)
    with pytest.raises(DatasetError, match=r"cannot convert image .*a\.png \(P\) to RGB"):
        ImageFiles([tmp_path / "a.png"]).read_image("a")


@pytest.mark.parametrize("orientation", range(1, 9))
@pytest.mark.parametrize("suffix", [".jpg", ".png"])
def test_exif_orientation_is_applied_as_viewers_show_the_image(orientation, suffix,
                                                                tmp_path):
    """A phone photo stored on its side with an orientation tag: read, sized
    and labelled the way viewers show it (Pillow's ``exif_transpose``)."""
    from PIL import ImageOps
    exif = Image.Exif()
    exif[0x0112] = orientation
    path = tmp_path / f"a{suffix}"
    Image.fromarray(_photo()).save(path, exif=exif.tobytes(), **(
        {"quality": 100, "subsampling": 0} if suffix == ".jpg" else {}))
    files = ImageFiles([path])
    with Image.open(path) as im:
        assert im.getexif().get(0x0112) == orientation
        shown = np.array(ImageOps.exif_transpose(im).convert("RGB"))
        stored = np.array(im.convert("RGB"))
    rgb = files.read_image("a")
    np.testing.assert_array_equal(rgb, shown)
    assert files.image_size("a") == rgb.shape[:2] == files.check()["a"]
    turned = orientation in (5, 6, 7, 8)
    assert rgb.shape[:2] == ((20, 12) if turned else (12, 20))
    assert np.array_equal(rgb, stored) == (orientation == 1)
