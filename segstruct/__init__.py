"""segstruct: structured SVMs for MRF segmentation under complex losses."""
from ._version import __version__

__all__ = ["__version__", "MultivariateSVM"]


def __getattr__(name):
    # Imported on first use, so that a bare `import segstruct` stays light
    # (MultivariateSVM pulls in the learner, HiGHS and PyMaxflow).
    if name == "MultivariateSVM":
        from .multivariate import MultivariateSVM
        return MultivariateSVM
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
