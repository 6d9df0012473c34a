"""scripts/benchmarks/fit_spread.py: the spread of a tolerance is the range of
the scores of the fits that reached it (tighter ones included), the chosen
tolerance is the loosest whose spread stays under the bound everywhere at a
cost within the limit, the table says both, and the commands' default is the
one the records choose."""
import importlib
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


@pytest.fixture(scope="module")
def spread():
    sys.path.insert(0, str(SCRIPTS))
    try:
        yield importlib.import_module("benchmarks.fit_spread")
    finally:
        sys.path.remove(str(SCRIPTS))


def _fits(scores: dict, seconds: float, converged=True) -> dict:
    """One tolerance's starts: ``{tol: {start: val IoU}}`` -> records."""
    return {tol: {start: {"val_iou": v, "seconds": seconds * (10 if tol == "1e-05" else 1),
                          "n_iter": 7, "converged": converged}
                  for start, v in row.items()} for tol, row in scores.items()}


def _doc(second_case_1e3: float, converged=True) -> dict:
    a = _fits({"0.01": {"cold": 50.0, "reordered": 51.0},
               "0.001": {"cold": 50.0, "reordered": 50.2, "from_above": 50.1},
               "1e-05": {"cold": 50.0, "reordered": 50.0}}, 2.0)
    b = _fits({"0.01": {"cold": 30.0, "from_below": 30.1},
               "0.001": {"cold": 30.0, "from_below": second_case_1e3},
               "1e-05": {"cold": 30.0, "from_below": 30.0}}, 4.0, converged)
    return {"tols": [1e-2, 1e-3, 1e-5], "default_tol": 1e-3, "methods": ["bl1", "proposed"],
            "code_version": "0.1.0+gx", "seed": 0,
            "cases": [{"data": "generated", "class": "car", "eval_split": "val",
                       "method": "bl1", "C": 0.1, "fits": a},
                      {"data": "generated", "class": "car", "eval_split": "val",
                       "method": "proposed", "C": 1.0, "fits": b}]}


def test_the_spread_is_the_range_of_every_fit_that_reached_the_tolerance(spread):
    fits = _doc(30.3)["cases"][0]["fits"]
    assert spread.spread(fits, "1e-05") == 0.0
    assert spread.spread(fits, "0.001") == pytest.approx(0.2)
    fits["1e-05"]["cold"]["val_iou"] = 49.5     # a tighter fit reached 1e-3 and 1e-2 too
    assert spread.spread(fits, "0.001") == pytest.approx(0.7)
    assert spread.spread(fits, "0.01") == pytest.approx(1.5)


def test_the_loosest_tolerance_under_the_bound_within_the_cost_is_chosen(spread):
    chosen = spread.choose_tol(_doc(30.3))
    assert chosen["tol"] == 1e-3          # 1e-2 spreads 1 point on the first case
    assert chosen["by_tol"]["0.01"]["max_spread"] == pytest.approx(1.0)
    assert chosen["by_tol"]["1e-05"]["cost"] == pytest.approx(10.0)
    # a spread of 0.6 at 1e-3 on the second case: 1e-5 is under the bound but
    # costs 10 times today's refit, beyond the limit of 3
    assert spread.choose_tol(_doc(30.6))["tol"] is None
    assert spread.choose_tol(_doc(30.6), cost_limit=20)["tol"] == 1e-5
    # a fit that did not converge does not count as reaching the tolerance
    assert spread.choose_tol(_doc(30.3, converged=False))["tol"] is None


def test_the_table_gives_each_methods_spread_the_cost_and_the_choice(spread):
    text = spread.table(_doc(30.3))
    assert "| 0.01 | 1.00 | 0.30 | 1.00 | 1.00x | 7 | yes |" in text
    assert "| 1e-05 | 0.00 | 0.00 | 0.00 | 10.00x | 7 | yes |" in text
    assert "**0.001** (today's default: 0.001)" in text
    assert "| generated | car (val) | proposed | 1 | 0.30 | 0.30 | 0.00 | 4.0 / 4.0 / 40.0 |" \
        in text


def test_the_default_refit_tolerance_is_the_one_the_records_choose(spread):
    """The commands' --tol is what the rule picks from results/fit_spread, and
    FIT_SPREAD_POINTS is the bound that the rule kept every spread under."""
    import json

    from segstruct.learn.methods import DEFAULTS, FIT_SPREAD_POINTS, REFIT_TOL
    doc = json.loads((SCRIPTS.parent / "results" / "fit_spread" / "results.json").read_text())
    chosen = spread.choose_tol(doc)
    assert chosen["tol"] == DEFAULTS.tol == REFIT_TOL
    assert chosen["bound"] == FIT_SPREAD_POINTS
    assert chosen["by_tol"][f"{REFIT_TOL:g}"]["max_spread"] < FIT_SPREAD_POINTS
    assert doc["default_tol"] == REFIT_TOL
