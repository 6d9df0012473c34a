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


@pytest.mark.parametrize("mode", ["L", "LA", "RGB", "RGBA", "P", "CMYK", "1", "I;16"])
@pytest.mark.parametrize("suffix", [".png", ".tif"])
def test_every_mode_reads_as_pillow_converts_it(mode, suffix, tmp_path):
    """8-bit modes become RGB exactly as Pillow's conversion makes them (the
    known conversion); a 16-bit one as its values scaled to 0..255."""
    if (mode, suffix) in (("CMYK", ".png"), ("LA", ".tif"), ("I;16", ".tif")):
        pytest.skip("a format that does not store the mode")
    stored = Image.fromarray(_photo()).convert(mode) if mode != "I;16" else \
        Image.fromarray((_photo()[..., 0].astype(np.uint16) * 257))
    path = tmp_path / f"a{suffix}"
    stored.save(path)
    rgb = ImageFiles([path]).read_image("a")
    with Image.open(path) as back:
        # Pillow before 10.1 reads a 16-bit PNG as 32-bit "I"
        assert back.mode == mode or (mode, back.mode) == ("I;16", "I")
        if mode == "I;16":
            expected = np.repeat(_photo()[..., :1], 3, axis=2)
        else:
            expected = np.array(back.convert("RGB"))
    assert rgb.dtype == np.uint8 and rgb.shape == (12, 20, 3)
    np.testing.assert_array_equal(rgb, expected)


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
