"""Numbers as text, for every table, log line and report segstruct writes."""
from __future__ import annotations

__all__ = ["MISSING", "fmt"]

#: The cell of a value that was not measured or is undefined.
MISSING = "-"


def fmt(v, spec: str = ".2f") -> str:
    """``format(v, spec)``, or :data:`MISSING` for None.

    >>> fmt(12.345), fmt(None), fmt(0.5, ".0%")
    ('12.35', '-', '50%')
    """
    return MISSING if v is None else format(v, spec)
