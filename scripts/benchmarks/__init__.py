"""The benchmarks behind every number the README and the docs quote.

One module per benchmark; ``scripts/bench.py NAME`` runs one into
``results/NAME/``. A module has:

- ``SUMMARY``: one line on what it measures;
- ``DEFAULTS``: the groups of library defaults its numbers depend on
  (``provenance.GROUPS``); when one of them changes, ``scripts/bench.py
  check`` and the tests ask for the benchmark to be run again;
- ``add_arguments(parser)``: its options;
- ``run(args, out) -> dict``: writes its tables, figures and records into the
  folder ``out`` and returns a short summary for ``provenance.json``;
- ``describe(folder) -> str``: Markdown made from those files alone (the
  tables a reader sees), which the runner writes as ``report.md``.
"""
from __future__ import annotations

from importlib import import_module

#: benchmark name -> module of this package
BENCHMARKS = {
    "first_run": "first_run",
    "fit_spread": "fit_spread",
    "inference": "inference",
    "large_photo": "large_photo",
    "suite": "suite",
}


def load(name: str):
    """The module of benchmark ``name``."""
    if name not in BENCHMARKS:
        raise SystemExit(f"unknown benchmark {name!r}; one of: {', '.join(BENCHMARKS)} "
                         "(python scripts/bench.py list)")
    return import_module(f"benchmarks.{BENCHMARKS[name]}")
