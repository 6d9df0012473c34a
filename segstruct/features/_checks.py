"""One check of a numeric feature setting, with a message that names it."""
from __future__ import annotations

import math
from numbers import Integral, Real


def check_number(owner: str, name: str, value, low: float, *, integer: bool = False,
                 inclusive: bool = True) -> None:
    """Raise ValueError unless ``value`` is a finite number (an integer with
    ``integer``) at least ``low`` (above it, with ``inclusive`` False).

    The message starts ``owner.name`` (e.g. ``FeatureConfig.n_words``), so a
    caller can put its own name for the setting (a command-line option)
    in its place.
    """
    kind = Integral if integer else Real
    ok = isinstance(value, kind) and not isinstance(value, bool) and math.isfinite(float(value))
    if ok:
        number = float(value)
        ok = number >= low if inclusive else number > low
    if not ok:
        what = "an integer" if integer else "a number"
        bound = f"{'>=' if inclusive else '>'} {low:g}"
        raise ValueError(f"{owner}.{name} must be {what} {bound}, got {value!r}")
