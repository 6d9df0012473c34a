"""segstruct: structured SVMs for MRF segmentation under complex losses."""
from ._version import __version__

__all__ = ["__version__", "MultivariateSVM", "StructuredSVM"]


def __getattr__(name):
    # Imported on first use, so that a bare `import segstruct` stays light
    # (the estimators pull in the learner, HiGHS and PyMaxflow).
    if name == "MultivariateSVM":
        from .multivariate import MultivariateSVM
        return MultivariateSVM
    if name == "StructuredSVM":
        from .ssvm import StructuredSVM
        return StructuredSVM
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
