"""The exact minimiser of the 1-D model of the line search, against brute force."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from segstruct.learn.solvers.linesearch import minimize_model


def brute(a, b, c, s, C, t_max, n=200001):
    """Dense grid plus every breakpoint: the model is piecewise quadratic."""
    hi = t_max if np.isfinite(t_max) else 50.0
    ts = np.linspace(0.0, hi, n)
    extra = [(c[j] - c[i]) / (s[i] - s[j]) for i in range(c.size) for j in range(c.size)
             if s[i] != s[j]]
    ts = np.concatenate([ts, [x for x in extra if 0 <= x <= hi]])
    vals = 0.5 * a * ts ** 2 + b * ts + C * np.max(c[:, None] + s[:, None] * ts, axis=0)
    return vals.min()


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 10 ** 6), k=st.integers(1, 6), finite=st.booleans(),
       flat=st.booleans())
def test_minimum_matches_brute_force(seed, k, finite, flat):
    rng = np.random.default_rng(seed)
    a = 0.0 if (flat and finite) else float(rng.uniform(0.1, 5))
    b = float(rng.normal() * 3)
    c, s = rng.normal(size=k), rng.normal(size=k) * 3
    C = float(rng.uniform(0.1, 10))
    t_max = float(rng.uniform(0.5, 4)) if finite else np.inf
    t, v = minimize_model(a, b, c, s, C, t_max)
    assert 0.0 <= t <= t_max
    # the value returned is the model's value at t ...
    assert v == pytest.approx(0.5 * a * t * t + b * t + C * np.max(c + s * t), abs=1e-12)
    # ... and no point of the interval is lower (the grid can only be higher)
    assert v <= brute(a, b, c, s, C, t_max) + 1e-9


def test_one_line_is_the_clipped_quadratic_minimum():
    # a/2 t^2 + b t + C (c + s t): stationary at t = -(b + C s) / a
    t, v = minimize_model(2.0, -3.0, [1.0], [-1.0], 1.0)
    assert t == pytest.approx(2.0)
    assert v == pytest.approx(4.0 - 6.0 + 1.0 - 2.0)
    t, _ = minimize_model(2.0, 3.0, [1.0], [1.0], 1.0)
    assert t == 0.0                       # increasing everywhere: stays at 0


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="one slope per intercept"):
        minimize_model(1.0, 0.0, [1.0, 2.0], [1.0], 1.0)
    with pytest.raises(ValueError, match="positive curvature"):
        minimize_model(0.0, 0.0, [1.0], [1.0], 1.0)
