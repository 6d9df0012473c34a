"""This checkout against another, in turn: each measurement a fresh one-core
process running a script's ``--worker`` mode, the other checkout from a copy
of its packages (``scripts/bench_detector_time.py``,
``scripts/bench_envelope_calls.py``)."""
from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Callable


def importable_tree(code: Path, into: Path) -> Path:
    """A copy of a checkout's packages that imports on its own: ``segstruct``
    with the checkout's ``inference`` and ``datasets`` folders inside it.
    (With ``PYTHONPATH`` pointing at the checkout alone, an editable install
    of this one still lends its ``segstruct.inference`` and
    ``segstruct.datasets``, which pyproject.toml maps from other folders.)"""
    skip = shutil.ignore_patterns("__pycache__")
    shutil.copytree(code / "segstruct", into / "segstruct", ignore=skip)
    for name in ("inference", "datasets"):
        if (code / name).is_dir():
            shutil.copytree(code / name, into / "segstruct" / name, ignore=skip)
    return into


def checkout_version(code: Path) -> str:
    """The commit of a checkout (``.dirty`` with changed tracked files)."""
    def git(*a):
        return subprocess.run(["git", "-C", str(code), *a], capture_output=True, text=True,
                              check=True).stdout.strip()
    try:
        dirty = git("status", "--porcelain", "--untracked-files=no")
        return "g" + git("rev-parse", "--short=10", "HEAD") + (".dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "not a git checkout"


def run_worker(script: Path, tree: Path | None, worker_args: list[str]) -> dict:
    """``script --worker ARGS`` in a fresh process on one core, importing
    ``segstruct`` from ``tree`` (an :func:`importable_tree`) or as this
    process would; the JSON object of its last line of output."""
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    # from the tree's folder: no segstruct/ of the current folder shadows it
    done = subprocess.run([sys.executable, str(script), "--worker", *worker_args], env=env,
                          cwd=tree, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"the measurement with {tree or 'this checkout'} failed:\n"
                         f"{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def in_turn(measure: Callable[[Path | None], dict], before: Path | None, repeats: int,
            scratch: Path, say: Callable[[dict], str]) -> list[dict]:
    """``measure(tree)`` for this checkout (tree None) and, with ``before``,
    for a copy of that checkout's packages made under ``scratch``, the two
    alternating ``repeats`` times (a slow spell of the machine falls on
    both). Each row gets ``checkout`` ("this" or "before"; the other's
    ``code_version`` gains its commit) and is printed as ``say(row)``.

    Raises
    ------
    SystemExit
        ``before`` holds no ``segstruct/`` folder.
    """
    trees: list[Path | None] = [None]
    if before is not None:
        if not (before / "segstruct").is_dir():
            raise SystemExit(f"--before {before}: no segstruct/ folder there; give a "
                             "checkout's root")
        trees.append(importable_tree(before, scratch / "before"))
    rows = []
    for _ in range(repeats):
        for tree in trees:
            row = measure(tree)
            row["checkout"] = "this" if tree is None else "before"
            if tree is not None and before is not None:
                # the copy is no git checkout: its commit is the checkout's
                row["code_version"] = row["code_version"] + "+" + checkout_version(before)
            rows.append(row)
            print(f"{row['checkout']}: {say(row)} ({row['code_version']})", flush=True)
    return rows


def median_ratio(rows: list[dict], value: Callable[[dict], float]) -> float:
    """This checkout's median of ``value(row)`` over the other's (rows of
    :func:`in_turn`)."""
    def median(which):
        return statistics.median(value(r) for r in rows if r["checkout"] == which)
    return median("this") / median("before")


def machine_text(machine: dict) -> str:
    """How a table's footer names the machine (``segstruct.io.provenance.machine()``)."""
    return (f"one process per row, one core; machine: {machine['cpu_count']} cores, "
            f"Python {machine['python']}, {machine['processor']}")
