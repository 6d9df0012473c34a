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
