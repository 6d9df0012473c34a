"""Numbers as text, for every table, log line and report segstruct writes."""
from __future__ import annotations

__all__ = ["MISSING", "fmt", "count"]

#: The cell of a value that was not measured or is undefined.
MISSING = "-"


def fmt(v, spec: str = ".2f") -> str:
    """``format(v, spec)``, or :data:`MISSING` for None.

    >>> fmt(12.345), fmt(None), fmt(0.5, ".0%")
    ('12.35', '-', '50%')
    """
    return MISSING if v is None else format(v, spec)


def count(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and ``noun``, singular for 1 and plural otherwise (``noun`` + "s",
    or ``plural``).

    >>> count(1, "image"), count(2, "image"), count(0, "class", "classes")
    ('1 image', '2 images', '0 classes')
    """
    return f"{n} {noun if n == 1 else plural or noun + 's'}"
