"""Tests of segstruct.inference.losses: values worked out by hand, ranges, degenerate cases."""
import json
import math
import sys
import types
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from segstruct.inference.losses import (
    LOSS_NAMES,
    AdjustedHammingLoss,
    CallableLoss,
    FBetaLoss,
    HammingLoss,
    IoULoss,
    Loss,
    counts,
    get_loss,
    loss_from_dict,
    totals,
)

# (loss, fp, fn, n_pos, n_neg, expected), each expected value worked out by hand.
HAND_CASES = [
    # Hamming: FP + FN.
    (HammingLoss(), 2, 3, 5, 10, 5.0),               # 2 + 3
    (HammingLoss(), 0.5, 1.25, 3, 4, 1.75),          # area weights: 0.5 + 1.25
    # Adjusted Hamming: kappa FP + FN.
    (AdjustedHammingLoss(0.5), 2, 3, 5, 10, 4.0),    # 0.5*2 + 3
    (AdjustedHammingLoss(4.0), 1, 0, 2, 7, 4.0),     # 4*1 + 0
    # IoU: (FP + FN) / (Np + FP).
    (IoULoss(), 2, 3, 5, 10, 5 / 7),                 # (2+3)/(5+2)
    (IoULoss(), 0, 5, 5, 3, 1.0),                    # nothing found: 5/5
    (IoULoss(), 1.5, 0.5, 2.5, 4, 0.5),              # (1.5+0.5)/(2.5+1.5) = 2/4
    (IoULoss(), 4, 0, 0, 4, 1.0),                    # Np = 0, FP = 4: 4/4
    (IoULoss(), 0, 0, 0, 4, 0.0),                    # Np = FP = 0: defined 0
    # F-beta: 1 - (1+b2) TP / ((1+b2) TP + b2 FN + FP), TP = Np - FN.
    (FBetaLoss(1.0), 2, 3, 5, 10, 5 / 9),            # TP=2: 1 - 4/(4+3+2)
    (FBetaLoss(2.0), 2, 3, 5, 10, 7 / 12),           # b2=4: 1 - 10/(10+12+2) = 14/24
    (FBetaLoss(0.5), 2, 3, 5, 10, 11 / 21),          # b2=1/4: 1 - 2.5/(2.5+0.75+2) = 2.75/5.25
    (FBetaLoss(1.0), 0, 4, 4, 6, 1.0),               # TP=0: 1 - 0/(0+4+0)
    (FBetaLoss(1.0), 3, 0, 0, 6, 1.0),               # Np = 0, FP = 3: 1 - 0/3
    (FBetaLoss(1.0), 0, 0, 0, 6, 0.0),               # denominator 0: defined 0
    (FBetaLoss(1.0), 1, 1, 3, 2, 1 / 3),             # TP=2: 1 - 4/(4+1+1) = 2/6
]


@pytest.mark.parametrize("loss, fp, fn, n_pos, n_neg, expected", HAND_CASES)
def test_hand_computed_values(loss, fp, fn, n_pos, n_neg, expected):
    value = loss(fp, fn, n_pos, n_neg)
    assert isinstance(value, np.ndarray) and value.dtype == np.float64
    assert float(value) == pytest.approx(expected, rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("loss, fp, fn, n_pos, n_neg, expected", HAND_CASES)
def test_vectorised_matches_scalar(loss, fp, fn, n_pos, n_neg, expected):
    fps = np.array([[fp, 0.0], [fp, fp]])
    value = loss(fps, fn, n_pos, n_neg)
    assert value.shape == (2, 2)
    assert value[0, 0] == value[1, 0] == value[1, 1] == float(loss(fp, fn, n_pos, n_neg))
    assert value[0, 1] == float(loss(0.0, fn, n_pos, n_neg))


@pytest.mark.parametrize("loss", [HammingLoss(), AdjustedHammingLoss(0.3), IoULoss(),
                                  FBetaLoss(1.0), FBetaLoss(3.0)])
@pytest.mark.parametrize("n_pos, n_neg", [(0, 0), (0, 5), (5, 0), (3, 4), (2.5, 0.75)])
def test_zero_exactly_at_target(loss, n_pos, n_neg):
    assert float(loss(0, 0, n_pos, n_neg)) == 0.0


def _lattice(max_count=6):
    """All in-range integer (FP, FN, Np, Nn) with Np, Nn <= max_count."""
    rows = [(fp, fn, n_pos, n_neg)
            for n_pos in range(max_count + 1) for n_neg in range(max_count + 1)
            for fp in range(n_neg + 1) for fn in range(n_pos + 1)]
    return tuple(np.array(c, dtype=float) for c in zip(*rows))


@pytest.mark.parametrize("loss", [IoULoss(), FBetaLoss(1.0), FBetaLoss(0.3), FBetaLoss(4.0)])
def test_ratio_losses_in_unit_interval_on_lattice(loss):
    fp, fn, n_pos, n_neg = _lattice()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no divide-by-zero / invalid warnings
        value = loss(fp, fn, n_pos, n_neg)
    assert np.all(np.isfinite(value))
    assert np.all((value >= 0) & (value <= 1))
    # 1 exactly when nothing is right (TP = 0) and something is wrong.
    nothing_right = (n_pos - fn == 0) & (fp + fn > 0)
    np.testing.assert_allclose(value[nothing_right], 1.0, rtol=0, atol=1e-15)


def test_iou_is_one_minus_jaccard_on_lattice():
    fp, fn, n_pos, _ = _lattice()
    tp = n_pos - fn
    union = tp + fp + fn
    expected = [1 - tp_ / un if un else 0.0 for tp_, un in zip(tp, union)]
    np.testing.assert_allclose(IoULoss()(fp, fn, n_pos, 0), expected, rtol=1e-12, atol=1e-15)


def test_fbeta_matches_precision_recall_form():
    # F = (1+b2) P R / (b2 P + R), from precision and recall, away from zeros.
    fp, fn, n_pos, n_neg = _lattice()
    tp = n_pos - fn
    ok = tp > 0
    for beta in (0.5, 1.0, 2.0):
        prec, rec = tp[ok] / (tp[ok] + fp[ok]), tp[ok] / n_pos[ok]
        f = (1 + beta**2) * prec * rec / (beta**2 * prec + rec)
        np.testing.assert_allclose(FBetaLoss(beta)(fp, fn, n_pos, n_neg)[ok], 1 - f,
                                   rtol=1e-12, atol=1e-15)


def test_linear_coefficients():
    assert HammingLoss().linear_coefficients == (1.0, 1.0)
    assert AdjustedHammingLoss(0.25).linear_coefficients == (0.25, 1.0)
    assert IoULoss().linear_coefficients is None
    assert FBetaLoss(2.0).linear_coefficients is None
    assert CallableLoss(lambda fp, fn, p, n: fp + fn).linear_coefficients is None
    rng = np.random.default_rng(0)
    fp, fn = rng.random(20) * 5, rng.random(20) * 5
    for loss in (HammingLoss(), AdjustedHammingLoss(0.7)):
        alpha, beta = loss.linear_coefficients
        np.testing.assert_allclose(loss(fp, fn, 5, 5), alpha * fp + beta * fn, rtol=1e-14)


@pytest.mark.parametrize("bad", [0, -1.0, math.inf, math.nan, "x", None, True])
def test_bad_hyperparameters(bad):
    with pytest.raises(ValueError):
        AdjustedHammingLoss(bad)
    with pytest.raises(ValueError):
        FBetaLoss(bad)


# ---- counts and totals ---------------------------------------------------------

def _naive_counts(y, t, a):
    fp = fn = 0.0
    for yi, ti, ai in zip(y, t, a):
        if yi == 1 and ti == 0:
            fp += ai
        if yi == 0 and ti == 1:
            fn += ai
    return fp, fn


@pytest.mark.parametrize("seed", range(5))
def test_counts_and_totals_match_naive_loop(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 30))
    t = rng.integers(0, 2, n)
    a = rng.random(n) * 100
    a[rng.random(n) < 0.2] = 0.0  # void-only superpixels
    y = rng.integers(0, 2, (7, n)).astype(np.uint8)
    fp, fn = counts(y, t, a)
    assert fp.shape == fn.shape == (7,)
    for k in range(7):
        exp_fp, exp_fn = _naive_counts(y[k], t, a)
        assert fp[k] == pytest.approx(exp_fp, rel=1e-12, abs=1e-12)
        assert fn[k] == pytest.approx(exp_fn, rel=1e-12, abs=1e-12)
        fp1, fn1 = counts(y[k], t, a)
        assert isinstance(fp1, float) and fp1 == pytest.approx(exp_fp, rel=1e-12, abs=1e-12)
        assert isinstance(fn1, float) and fn1 == pytest.approx(exp_fn, rel=1e-12, abs=1e-12)
    n_pos, n_neg = totals(t, a)
    assert n_pos == pytest.approx(sum(ai for ti, ai in zip(t, a) if ti == 1))
    assert n_neg == pytest.approx(sum(ai for ti, ai in zip(t, a) if ti == 0))
    # Unit weights by default: plain counts of superpixels.
    assert totals(t) == (float(np.sum(t == 1)), float(np.sum(t == 0)))
    assert counts(y[0], t) == _naive_counts(y[0], t, np.ones(n))


def test_counts_extremes():
    t = np.array([1, 0, 1, 0])
    a = np.array([1.0, 2.0, 3.0, 4.0])
    assert counts(t, t, a) == (0.0, 0.0)
    assert counts(1 - t, t, a) == (6.0, 4.0)  # FP = Nn, FN = Np
    assert totals(t, a) == (4.0, 6.0)
    assert counts(np.zeros((0, 4)), t, a)[0].shape == (0,)
    assert totals(np.zeros(0, int)) == (0.0, 0.0)


def test_counts_validation():
    t = np.array([1, 0, 1])
    with pytest.raises(ValueError, match="shape"):
        counts(np.array([1, 0]), t)
    with pytest.raises(ValueError, match="shape"):
        counts(np.zeros((2, 2, 3)), t)
    with pytest.raises(ValueError, match="shape"):
        counts(np.array([1, 0, 1]), t, a=np.ones(2))
    with pytest.raises(ValueError):
        counts(np.array([1, 0, 2]), t)
    with pytest.raises(ValueError):
        counts(np.array([1, 0, 1]), np.array([1, 0, 255]))
    with pytest.raises(ValueError):
        totals(t, a=np.array([1.0, -1.0, 1.0]))
    with pytest.raises(ValueError):
        totals(np.ones((2, 2)))


# ---- construction, saving ------------------------------------------------------

def test_get_loss_names():
    assert get_loss("hamming") == HammingLoss()
    assert get_loss("adjusted_hamming", kappa=0.2) == AdjustedHammingLoss(0.2)
    assert get_loss("Adjusted-Hamming", kappa=0.2) == AdjustedHammingLoss(0.2)
    assert get_loss("iou") == IoULoss()
    assert get_loss("f1") == FBetaLoss(1.0)
    assert get_loss("fbeta", beta=2) == FBetaLoss(2.0)
    assert get_loss("fbeta") == FBetaLoss(1.0)
    assert set(LOSS_NAMES) == {"hamming", "adjusted_hamming", "iou", "f1", "fbeta"}
    loss = IoULoss()
    assert get_loss(loss) is loss
    wrapped = get_loss(lambda fp, fn, p, n: fp, name="fp only")
    assert isinstance(wrapped, CallableLoss) and "fp only" in repr(wrapped)


def test_get_loss_errors():
    with pytest.raises(ValueError) as err:
        get_loss("jaccard")
    for name in LOSS_NAMES:
        assert name in str(err.value)
    with pytest.raises(ValueError):
        get_loss("adjusted_hamming")  # kappa is required
    with pytest.raises(ValueError):
        get_loss("hamming", kappa=2.0)
    with pytest.raises(ValueError):
        get_loss("f1", beta=2.0)
    with pytest.raises(ValueError):
        get_loss(IoULoss(), beta=2.0)
    with pytest.raises(ValueError):
        get_loss(3.0)


@pytest.mark.parametrize("loss", [HammingLoss(), AdjustedHammingLoss(0.125), IoULoss(),
                                  FBetaLoss(1.0), FBetaLoss(0.5)])
def test_dict_round_trip(loss):
    d = json.loads(json.dumps(loss.to_dict()))
    back = loss_from_dict(d)
    assert type(back) is type(loss) and back == loss
    assert repr(back) == repr(loss)
    fp, fn, n_pos, n_neg = _lattice(3)
    np.testing.assert_array_equal(back(fp, fn, n_pos, n_neg), loss(fp, fn, n_pos, n_neg))


def test_repr():
    assert repr(HammingLoss()) == "HammingLoss()"
    assert repr(AdjustedHammingLoss(0.5)) == "AdjustedHammingLoss(kappa=0.5)"
    assert repr(FBetaLoss(2)) == "FBetaLoss(beta=2.0)"


def test_callable_loss_round_trip_by_import_path(monkeypatch):
    module = types.ModuleType("segstruct_test_custom_loss")

    def half_hamming(fp, fn, n_pos, n_neg):
        return 0.5 * (fp + fn)

    half_hamming.__module__ = module.__name__
    half_hamming.__qualname__ = "half_hamming"
    module.half_hamming = half_hamming
    monkeypatch.setitem(sys.modules, module.__name__, module)
    d = json.loads(json.dumps(CallableLoss(half_hamming).to_dict()))
    back = loss_from_dict(d)
    assert isinstance(back, CallableLoss) and back.fn is half_hamming
    assert float(back(2, 4, 5, 5)) == 3.0
    with pytest.raises(ValueError, match="cannot save"):
        CallableLoss(lambda fp, fn, p, n: fp).to_dict()


# ---- user callables ------------------------------------------------------------

def scalar_only(fp, fn, n_pos, n_neg):
    """A loss written for Python scalars: `if` and math fail on arrays."""
    if n_pos + fp == 0:
        return 0.0
    return math.sqrt(fp + fn) / (n_pos + fp)


def test_callable_loss_with_non_vectorised_function():
    loss = get_loss(scalar_only)
    fp, fn, n_pos, n_neg = _lattice(4)
    value = loss(fp, fn, n_pos, n_neg)
    assert value.shape == fp.shape and value.dtype == np.float64
    expected = [scalar_only(*args) for args in zip(fp, fn, n_pos, n_neg)]
    np.testing.assert_allclose(value, expected, rtol=1e-14)
    assert float(loss(0, 0, 0, 3)) == 0.0
    assert float(loss(1, 3, 3, 3)) == pytest.approx(0.5)  # sqrt(4) / 4
    # Broadcasting of scalars against arrays works too.
    # sqrt(0+3)/(3+0) = 1/sqrt(3) and sqrt(1+3)/(3+1) = 1/2.
    np.testing.assert_allclose(loss(np.array([0.0, 1.0]), 3, 3, 3), [1 / math.sqrt(3), 0.5])


def test_callable_loss_array_aware_and_constant():
    calls = []

    def array_aware(fp, fn, n_pos, n_neg):
        calls.append(np.shape(fp))
        return np.asarray(fp) * 2 + fn

    value = CallableLoss(array_aware)(np.arange(4.0), 1.0, 5, 5)
    np.testing.assert_array_equal(value, [1, 3, 5, 7])
    assert calls == [(4,)]  # called once on the whole array, not per element
    const = CallableLoss(lambda fp, fn, p, n: 0.5)(np.arange(3.0), 0, 3, 3)
    np.testing.assert_array_equal(const, [0.5, 0.5, 0.5])


@pytest.mark.parametrize("bad", [math.inf, -math.inf, math.nan])
def test_callable_loss_must_be_finite(bad):
    loss = CallableLoss(lambda fp, fn, p, n: np.where(np.asarray(fp) > 1, bad, 0.0))
    assert float(loss(0, 0, 1, 1)) == 0.0
    with pytest.raises(ValueError, match="non-finite"):
        loss(np.arange(4.0), 0, 3, 3)
    with pytest.raises(ValueError, match="non-finite"):
        loss(2.0, 0, 3, 3)


def test_loss_base_class_is_abstract():
    with pytest.raises(NotImplementedError):
        Loss()(1, 1, 1, 1)
    with pytest.raises(TypeError):
        CallableLoss(3)


# ---- property test -------------------------------------------------------------

# totals and the (FP, FN) as fractions of them, and an F-beta's beta
_TOTALS = dict(n_pos=st.floats(0, 1e6, allow_nan=False, allow_infinity=False),
               n_neg=st.floats(0, 1e6, allow_nan=False, allow_infinity=False),
               fp_frac=st.floats(0, 1), fn_frac=st.floats(0, 1), beta=st.floats(1e-3, 1e3))


@settings(max_examples=300, deadline=None)
@given(**_TOTALS)
def test_ratio_losses_in_unit_interval_random(n_pos, n_neg, fp_frac, fn_frac, beta):
    fp, fn = fp_frac * n_neg, fn_frac * n_pos
    for loss in (IoULoss(), FBetaLoss(beta)):
        value = float(loss(fp, fn, n_pos, n_neg))
        assert math.isfinite(value)
        assert 0.0 <= value <= 1.0, (loss, fp, fn, n_pos, n_neg, value)


@settings(max_examples=400, deadline=None)
@given(**_TOTALS, kappa=st.floats(1e-3, 1e3), integral=st.booleans())
def test_value_is_the_array_formula_bit_for_bit(n_pos, n_neg, fp_frac, fn_frac, beta, kappa,
                                                integral):
    """``Loss.value`` (the envelope oracle's scalar path) gives exactly the
    number of the array formula, zero denominators included."""
    fp, fn = fp_frac * n_neg, fn_frac * n_pos
    if integral:
        n_pos, n_neg, fp, fn = (float(round(v)) for v in (n_pos, n_neg, fp, fn))
    for loss in (HammingLoss(), AdjustedHammingLoss(kappa), IoULoss(), FBetaLoss(beta),
                 CallableLoss(lambda a, b, p, n: a + 2 * b)):
        for args in ((fp, fn, n_pos, n_neg), (0.0, 0.0, 0.0, n_neg), (fp, 0.0, 0.0, n_neg),
                     (0.0, 0.0, 0.0, 0.0), (np.float64(fp), np.float64(fn), n_pos, n_neg)):
            got = loss.value(*args)
            assert type(got) is float
            expected = float(loss(*args))
            assert got == expected and math.copysign(1, got) == math.copysign(1, expected), \
                (loss, args, got, expected)
