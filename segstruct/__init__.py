"""segstruct: structured SVMs for MRF segmentation under complex losses."""
from ._version import __version__

__all__ = ["__version__"]
