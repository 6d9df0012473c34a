"""The one HiGHS configuration of the process, and the shared set-up of the
HiGHS-based oracles (LP per triangle, MILP, decomposition).

HiGHS keeps ONE task scheduler per process, sized by the first ``run()``; a
later model whose ``threads`` option differs is refused (``run()`` returns
kError, model status "Not Set"). So every model of segstruct is made by
:func:`new_highs`, with the same ``threads``, and solved by :func:`run`,
which also recovers when code outside segstruct sized the scheduler first.
"""
from __future__ import annotations

import ctypes
import os
import sys

import highspy
import numpy as np

#: Threads of every HiGHS model. Our LPs, QPs and MILPs are small (their
#: solves take milliseconds; the data-set scope decomposition's masters have 4
#: rows), and parallel HiGHS only pays on large ones, while joblib already
#: runs one process per core.
THREADS = 1

OPTIMAL = highspy.HighsModelStatus.kOptimal
INFEASIBLE = highspy.HighsModelStatus.kInfeasible


class SolverError(RuntimeError):
    """HiGHS gave no usable answer, even after the retries of :func:`run`."""


def new_highs(**options) -> highspy.Highs:
    """A silent HiGHS instance with the process-wide thread count and ``options``."""
    h = _first_highs() if not _made_one else highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", THREADS)
    for name, value in options.items():
        h.setOptionValue(name, value)
    return h


_made_one = False


def _first_highs() -> highspy.Highs:
    """The process's first Highs instance, made without its banner.

    HiGHS prints "Running HiGHS ... Copyright ..." to the C-level standard
    output when a process makes its first instance, before any option (such as
    ``output_flag``) can be set, so a quiet run (``-q``, logs, every joblib
    worker) would still print it. Standard output is pointed at the null
    device for that one construction; where file descriptors cannot be
    redirected, the banner is printed as HiGHS does.
    """
    global _made_one
    _made_one = True
    try:
        sys.stdout.flush()
        saved, null = os.dup(1), os.open(os.devnull, os.O_WRONLY)
    except (OSError, ValueError, AttributeError):
        return highspy.Highs()
    try:
        os.dup2(null, 1)
        try:
            return highspy.Highs()
        finally:
            _flush_c_stdout()
            os.dup2(saved, 1)
    finally:
        os.close(saved)
        os.close(null)


def _flush_c_stdout() -> None:
    # When standard output is a pipe, C buffers the banner: flush it while it
    # still goes to the null device.
    try:
        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError, TypeError):
        pass


def _scheduler_refused(h) -> bool:
    return h.getModelStatus() == highspy.HighsModelStatus.kNotset


# Safer settings tried in turn on a fresh copy of a model that failed:
# presolve on (it removes the degenerate rows and columns that stall the
# simplex), then the primal simplex, then the interior-point method (LPs only).
RETRIES = ({"presolve": "on"},
           {"presolve": "on", "simplex_strategy": 4},
           {"presolve": "on", "solver": "ipm"})


def run(h: highspy.Highs, what: str, accept=(OPTIMAL,), options=None,
        retries=RETRIES) -> highspy.Highs:
    """Solve the model in ``h``, retrying until its status is in ``accept``.

    1. ``h.run()``; if HiGHS refused to start because the process-wide
       scheduler was sized with another thread count (by code outside
       segstruct), the scheduler is reset and ``h`` run again;
    2. otherwise each of ``retries`` in turn: a fresh instance holding the
       same model, with ``options`` and that retry's settings.

    Parameters
    ----------
    h : a Highs instance holding a model.
    what : the model's name for the error message ("the LP of triangle 3").
    accept : model statuses that count as an answer (e.g. also INFEASIBLE).
    options : options of the original instance, repeated on fresh ones.
    retries : sequence of option dicts (() for none; QPs and MILPs accept
        no "solver": "ipm").

    Returns
    -------
    The Highs instance that holds the answer: ``h`` itself, or a fresh one.

    Raises
    ------
    SolverError naming ``what`` and every status seen.
    """
    h.run()
    if _scheduler_refused(h):
        highspy.Highs.resetGlobalScheduler(True)
        h.run()
    seen = [h.modelStatusToString(h.getModelStatus())]
    if h.getModelStatus() in accept:
        return h
    model = h.getModel()
    for retry in retries:
        fresh = new_highs(**{**(options or {}), **retry})
        fresh.passModel(model)
        fresh.run()
        seen.append(fresh.modelStatusToString(fresh.getModelStatus()))
        if fresh.getModelStatus() in accept:
            return fresh
    raise SolverError(f"HiGHS could not solve {what}: status {', then '.join(seen)} "
                      f"(retried with {len(retries)} safer settings)")


def lp_from_triplets(row, col, val, n_rows, n_cols, cost, col_bounds, row_bounds,
                     offset=0.0, maximize=True) -> highspy.HighsLp:
    """A HiGHS LP from (row, col, value) triplets, stored column-wise.

    Parameters
    ----------
    row, col, val : (K,) arrays of the constraint matrix's entries.
    n_rows, n_cols : its shape.
    cost : (n_cols,) objective; offset : constant added to it.
    col_bounds, row_bounds : pairs (lower, upper) of arrays.
    """
    row, col, val = (np.asarray(v) for v in (row, col, val))
    keep = val != 0
    row, col, val = row[keep], col[keep], val[keep]
    order = np.lexsort((row, col))
    row, col, val = row[order], col[order], val[order]
    lp = highspy.HighsLp()
    lp.num_col_ = int(n_cols)
    lp.num_row_ = int(n_rows)
    lp.col_cost_ = np.asarray(cost, np.float64)
    lp.col_lower_, lp.col_upper_ = (np.asarray(b, np.float64) for b in col_bounds)
    lp.row_lower_, lp.row_upper_ = (np.asarray(b, np.float64) for b in row_bounds)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = np.searchsorted(col, np.arange(n_cols + 1)).astype(np.int32)
    lp.a_matrix_.index_ = row.astype(np.int32)
    lp.a_matrix_.value_ = val.astype(np.float64)
    lp.sense_ = highspy.ObjSense.kMaximize if maximize else highspy.ObjSense.kMinimize
    lp.offset_ = float(offset)
    return lp
