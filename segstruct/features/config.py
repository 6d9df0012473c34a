"""The feature settings: every setting that changes the features, and so the
cache key, in one frozen dataclass (``FeatureConfig``)."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

from segstruct.features._checks import check_number
from segstruct.features.scale import MIN_LONG_SIDE, UPSAMPLINGS
from segstruct.features.superpixels import SuperpixelParams
from segstruct.features.topdown.detector import DetectorParams

SIFT_DIM = 128
#: The normalisations of a superpixel's bag of words (``FeatureConfig.sift_norm``).
SIFT_NORMS = ("l1", "sqrt")
#: What labels images other than the cross-fitted training images
#: (``FeatureConfig.top_down_detector``).
TOP_DOWN_DETECTORS = ("folds", "whole")
OPPONENT_DIM = 3 * SIFT_DIM
COLOUR_DIM = 6
POSITION_DIM = 6


@dataclass(frozen=True)
class FeatureConfig:
    """Every setting that changes the features (and so the cache key).

    Parameters
    ----------
    superpixels : SuperpixelParams
    sift, colour, position, bias : bool
        Which unary blocks to compute.
    grid_step : int
        Spacing of the dense SIFT grid in pixels (paper: 6).
    keypoint_size : float
        OpenCV SIFT keypoint size. OpenCV's 4x4 descriptor cells are
        1.5 * size pixels wide, so size 4 gives 6 px cells that tile the
        6 px grid exactly and a 24 px patch: local enough for superpixels of
        a few thousand pixels, and several times cheaper than size 12 (72 px
        patch; ``scripts/timings.py`` times them).
    n_words : int
        Codebook size (paper: 1000).
    codebook_descriptors : int
        Size of the seeded descriptor sample k-means runs on.
    codebook_images : int
        At most this many training images are sampled for the codebook.
    kmeans_iterations : int
        Lloyd iterations of the codebook k-means.
    tau1, tau2 : float
        Pairwise colour-contrast scales for L and a, b (Eq. 27).
    boundary_unit : float
        Shared boundary lengths P_ij enter Eq. 27 in units of this many
        pixels. 100 px is about one superpixel perimeter at the paper's
        settings, which keeps pairwise features on the scale of the unary
        ones. In raw pixels, data-set sums of them reach 1e4-1e6, and the
        working-set QP then solved less accurately (its primal-dual gap stayed
        far above the one asked for).
    seed : int
        Seeds the descriptor sample and k-means initialisation.
    sift_norm : {"l1", "sqrt"}
        The bag of words of a superpixel: word counts divided by their sum
        ("l1"), or the square root of that (Hellinger's, "sqrt"), which
        damps the words every superpixel has. Applied after the cache: both
        share one cache entry.
    detector : DetectorParams or None
        The top-down block's object detector (one per class, trained on the
        training split); None (the default) leaves the block out.
    top_down_folds : int >= 1
        With the block: the training split's images are dealt into this many
        folds (``segstruct.datasets.folds``), and each image's block comes
        from a detector trained on the other folds, so the learner sees the
        detector's scores on images it was not fitted to, as on new images.
        1: the detector trained on the whole training split labels its own
        training images too (the model files made before the option).
    top_down_detector : {"folds", "whole"}
        With ``top_down_folds`` >= 2, the block of every other image (other
        splits, new images): the mean of the folds' detectors' blocks
        ("folds"; no detector sees the whole split), or the block of one
        detector trained on the whole training split ("whole").
    long_side : int, "auto" or None
        The working resolution (``segstruct.features.scale``): every image
        is resized to this long side in pixels before superpixels,
        descriptors and the detector see it, and its superpixels are
        brought back to its own pixels, so that an image and its up-sampled
        copy get nearly the same labels, and a 12-megapixel photo costs
        about what a training image costs. "auto" (the default) is the largest long side
        of the training split's images, at most 1024 (``scale.auto_long_side``),
        fixed when the features are made (a model records the number). None
        works on images as given (the model files made before the setting).
    upsampling : {"linear", "lanczos"}
        How an image smaller than the working resolution is enlarged to it
        (``scale.UPSAMPLINGS``; larger ones are always area-averaged down).
        "linear" is what the model files made before the setting used.
    """

    superpixels: SuperpixelParams = field(default_factory=SuperpixelParams)
    sift: bool = True
    colour: bool = True
    position: bool = True
    bias: bool = True
    grid_step: int = 6
    keypoint_size: float = 4.0
    n_words: int = 1000
    codebook_descriptors: int = 60000
    codebook_images: int = 200
    kmeans_iterations: int = 20
    tau1: float = 2e-2
    tau2: float = 5e-3
    boundary_unit: float = 100.0
    seed: int = 0
    sift_norm: str = "l1"
    detector: DetectorParams | None = None
    top_down_folds: int = 3
    top_down_detector: str = "folds"
    long_side: int | str | None = "auto"
    upsampling: str = "linear"

    def __post_init__(self):
        if not (self.sift or self.colour or self.position or self.bias):
            raise ValueError("at least one unary feature block must be switched on")
        for name, low, integer, inclusive in (
                ("grid_step", 1, True, True), ("keypoint_size", 0, False, False),
                ("n_words", 2, True, True), ("codebook_descriptors", 2, True, True),
                ("codebook_images", 1, True, True), ("kmeans_iterations", 1, True, True),
                ("tau1", 0, False, True), ("tau2", 0, False, True),
                ("boundary_unit", 0, False, False), ("seed", 0, True, True)):
            check_number("FeatureConfig", name, getattr(self, name), low, integer=integer,
                         inclusive=inclusive)
        if self.codebook_descriptors < self.n_words:
            raise ValueError(
                f"codebook_descriptors ({self.codebook_descriptors}) must be at "
                f"least n_words ({self.n_words})")
        if self.sift_norm not in SIFT_NORMS:
            raise ValueError(f"unknown sift_norm {self.sift_norm!r}; use one of {SIFT_NORMS}")
        if self.upsampling not in UPSAMPLINGS:
            raise ValueError(f"unknown upsampling {self.upsampling!r}; use one of "
                             f"{UPSAMPLINGS}")
        if self.top_down_detector not in TOP_DOWN_DETECTORS:
            raise ValueError(f"unknown top_down_detector {self.top_down_detector!r}; use one "
                             f"of {TOP_DOWN_DETECTORS}")
        if isinstance(self.top_down_folds, bool) or int(self.top_down_folds) != \
                self.top_down_folds or self.top_down_folds < 1:
            raise ValueError(f"top_down_folds must be an integer >= 1, got "
                             f"{self.top_down_folds!r}")
        if self.long_side is not None and self.long_side != "auto":
            try:
                check_number("FeatureConfig", "long_side", self.long_side, MIN_LONG_SIDE,
                             integer=True)
            except ValueError:
                raise ValueError(f"FeatureConfig.long_side must be 'auto', None or an integer "
                                 f">= {MIN_LONG_SIDE} (pixels), got {self.long_side!r}") from None

    def to_dict(self) -> dict:
        """The settings as recorded; without a detector, as they were before
        the top-down block existed (same cache keys, same model files)."""
        out = asdict(self)
        if self.detector is None:
            del out["detector"], out["top_down_folds"], out["top_down_detector"]
        if self.sift_norm == "l1":        # what files made before the option hold
            del out["sift_norm"]
        if self.long_side is None:        # likewise
            del out["long_side"]
        if self.upsampling == "linear":   # likewise
            del out["upsampling"]
        return out

    def bottom_up_dict(self) -> dict:
        """The settings the cached class-independent features depend on (their
        cache key; ``sift_norm`` is applied after the cache, and the key of
        an image worked on at another size than its own holds that size and
        the upsampling, :func:`scale.working_key`)."""
        out = asdict(self)
        del out["detector"], out["top_down_folds"], out["top_down_detector"], out["sift_norm"]
        del out["long_side"], out["upsampling"]
        return out

    @classmethod
    def from_dict(cls, d: dict) -> "FeatureConfig":
        d = dict(d)
        d["superpixels"] = SuperpixelParams(**d.get("superpixels", {}))
        # settings that files made before them lack: what those files used
        d.setdefault("sift_norm", "l1")
        d.setdefault("long_side", None)
        d.setdefault("upsampling", "linear")
        if d.get("detector") is not None:
            d["detector"] = DetectorParams(**d["detector"])
            d.setdefault("top_down_folds", 1)
            d.setdefault("top_down_detector", "folds")
        known = set(cls.__dataclass_fields__)
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"unknown feature settings: {sorted(unknown)}")
        return cls(**d)

    def codebook_dict(self) -> dict:
        """The settings the codebook depends on."""
        return {k: getattr(self, k) for k in (
            "grid_step", "keypoint_size", "n_words", "codebook_descriptors",
            "codebook_images", "kmeans_iterations", "seed")}

    def unary_blocks(self) -> list[tuple[str, int]]:
        """(name, width) of each switched-on unary block, in column order."""
        blocks = []
        if self.sift:
            blocks.append(("sift", self.n_words))
        if self.colour:
            blocks.append(("colour", COLOUR_DIM))
        if self.position:
            blocks.append(("position", POSITION_DIM))
        if self.bias:
            blocks.append(("bias", 1))
        if self.detector is not None:
            blocks.append(("top_down", self.detector.n_filters))
        return blocks

    @property
    def n_unary(self) -> int:
        return sum(width for _, width in self.unary_blocks())
