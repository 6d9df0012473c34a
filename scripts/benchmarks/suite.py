"""The README's test command: ``pytest`` in a fresh process, with an empty
feature cache and ``OMP_NUM_THREADS=1``, as CI runs it; its wall seconds and
its closing counts (less the one test that reads this record). Writes
``suite.json`` and ``pytest.log`` (the last lines of its output).
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SUMMARY = "the README's `pytest`: wall time and counts, from an empty cache"
DEFAULTS = ()

REPO = Path(__file__).resolve().parents[2]

#: The test that reads this benchmark's own record (the README's minutes):
#: left out of the run that makes the record.
OWN_RECORD_TEST = "tests/test_readme.py::test_the_readme_claims_are_the_benchmarks"


def add_arguments(parser) -> None:
    parser.add_argument("pytest_args", nargs="*", help="extra arguments for pytest")


def run(args, out: Path) -> dict:
    with tempfile.TemporaryDirectory(prefix="bench-suite-") as cache:
        # as in an activated virtual environment: its scripts (`segstruct`) on PATH
        path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
        env = {**os.environ, "SEGSTRUCT_CACHE": cache, "OMP_NUM_THREADS": "1",
               "OPENBLAS_NUM_THREADS": "1", "PATH": path}
        t0 = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                               "--deselect", OWN_RECORD_TEST, *args.pytest_args],
                              cwd=REPO, env=env, capture_output=True, text=True)
        seconds = time.perf_counter() - t0
    tail = (done.stdout + done.stderr).splitlines()[-40:]
    (out / "pytest.log").write_text("\n".join(tail) + "\n")
    counts = {}
    for line in reversed(tail):
        found = re.findall(r"(\d+) (passed|failed|skipped|xfailed|xpassed|errors?|deselected)",
                           line)
        if found:
            counts = {k: int(v) for v, k in found}
            break
    record = {"seconds": round(seconds, 1), "returncode": done.returncode, "counts": counts,
              "python": sys.version.split()[0], "arguments": args.pytest_args,
              "environment": {"OMP_NUM_THREADS": "1", "cache": "empty"}}
    (out / "suite.json").write_text(json.dumps(record, indent=1) + "\n")
    if done.returncode != 0:
        raise SystemExit(f"pytest exited {done.returncode}; see {out / 'pytest.log'}")
    return {"seconds": record["seconds"], "counts": counts}


def describe(folder: Path) -> str:
    """One sentence: the counts and the time."""
    r = json.loads((folder / "suite.json").read_text())
    counts = ", ".join(f"{n} {k}" for k, n in r["counts"].items())
    minutes, seconds = divmod(round(r["seconds"]), 60)
    return (f"`pytest` on Python {r['python']}, from an empty feature cache with "
            f"`OMP_NUM_THREADS=1`: {counts}, in {minutes} min {seconds:02d} s "
            f"({r['seconds']:.0f} s).")
