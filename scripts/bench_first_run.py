"""Wall seconds of the README's first run (``segstruct compare`` without
options, from an empty feature cache) for this checkout and other ones,
run in turn.

Each run is a fresh ``python -m segstruct compare -q`` with its own empty
cache folder (``SEGSTRUCT_CACHE``) and output folder, so it does everything
a fresh install does: it writes the generated data set, trains the
detectors, cross-validates C, fits, scores and draws. An other checkout runs
from a copy of its packages (``segstruct`` with its ``inference`` and
``datasets`` inside: ``benchlib.checkouts.importable_tree``) on this
Python and its installed dependencies; give its root folder or a git
revision of this repository (``--before 591535a``), which is exported with
``git archive``. This checkout runs as the Python running the script
imports it, which must be from this folder (an editable install). The
checkouts alternate ``--repeats`` times, so a slow spell of the machine
falls on all of them.

The environment is left as it is (as a user runs the command) unless
``--blas-threads N`` sets ``OMP_NUM_THREADS`` and ``OPENBLAS_NUM_THREADS``.

    python scripts/bench_first_run.py --before 591535a --before HEAD \\
        --repeats 2 --out out/first_run

Writes ``results.json`` (every run: seconds, CPU seconds of the run's
processes, each method's mean val and train IoU, a digest of every pair's
C, scores, objective and iterations) and ``table.md``; "same numbers" in
the table says whether every run of a checkout gave the same digest.
"""
from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path

HERE = Path(__file__).resolve()
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE.parent))
from benchlib.checkouts import checkout_version, importable_tree  # noqa: E402


def materialise(before: str, scratch: Path, k: int) -> tuple[Path, str]:
    """(a checkout's root folder, its name) for ``--before``: the folder given,
    or git revision ``before`` of this repository exported under ``scratch``."""
    path = Path(before)
    if (path / "segstruct").is_dir():
        return path.resolve(), checkout_version(path.resolve())
    try:
        commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short=10", before],
                                capture_output=True, text=True, check=True).stdout.strip()
        archive = subprocess.run(["git", "-C", str(REPO), "archive", commit],
                                 capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        raise SystemExit(f"--before {before}: neither a checkout's root folder (with a "
                         "segstruct/ folder) nor a git revision of this repository") from None
    root = scratch / f"rev{k}"
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        try:
            tar.extractall(root, filter="data")
        except TypeError:        # Pythons without extraction filters
            tar.extractall(root)
    return root, "g" + commit


def children_cpu() -> float:
    """User + system CPU seconds of the waited-for child processes so far
    (the runs' workers included: each run waits for its own)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def summary(results: dict) -> dict:
    """Each method's mean val and train IoU, and a digest of every pair's
    numbers, from compare's results.json."""
    methods = results["methods"]
    per = {m: [r for r in results["results"] if r["method"] == m] for m in methods}
    digest = hashlib.sha256()
    for r in sorted(results["results"], key=lambda r: (r["class"], r["method"])):
        digest.update(json.dumps([r["class"], r["method"], r["C"],
                                  r["eval_score"]["voc_iou_percent"],
                                  r["train_score"]["voc_iou_percent"],
                                  r["training"]["primal"], r["training"]["n_iter"]]).encode())
    return {"val_iou": {m: statistics.mean(r["eval_score"]["voc_iou_percent"] for r in rs)
                        for m, rs in per.items()},
            "train_iou": {m: statistics.mean(r["train_score"]["voc_iou_percent"] for r in rs)
                          for m, rs in per.items()},
            "code_version": results.get("code_version"), "digest": digest.hexdigest()}


def run_once(tree: Path | None, scratch: Path, env: dict) -> dict:
    """One first run: seconds, CPU, memory and what it scored."""
    work = Path(tempfile.mkdtemp(dir=scratch))
    run_env = dict(env, SEGSTRUCT_CACHE=str(work / "cache"))
    if tree is not None:
        run_env["PYTHONPATH"] = str(tree)
    cpu0 = children_cpu()
    start = time.perf_counter()
    # from the scratch folder: no segstruct/ of the current folder shadows the tree
    done = subprocess.run([sys.executable, "-m", "segstruct", "compare", "-q",
                           "--out", str(work / "out")], env=run_env, cwd=work,
                          capture_output=True, text=True)
    seconds = time.perf_counter() - start
    cpu1 = children_cpu()
    if done.returncode != 0:
        raise SystemExit(f"segstruct compare failed ({tree or 'this checkout'}):\n"
                         f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    row = {"seconds": seconds, "cpu_seconds": cpu1 - cpu0,
           **summary(json.loads((work / "out" / "results.json").read_text()))}
    shutil.rmtree(work, ignore_errors=True)
    return row


def table(doc: dict) -> str:
    names = list(dict.fromkeys(r["checkout"] for r in doc["runs"]))
    lines = ["# The first run (`segstruct compare`, empty cache), run in turn", "",
             "| checkout | code | seconds (each run) | median s | CPU s (median) | "
             "mean val IoU of each method (train) | same numbers |",
             "|---|---|---|---|---|---|---|"]
    for name in names:
        rows = [r for r in doc["runs"] if r["checkout"] == name]
        first = rows[0]
        ious = ", ".join(f"{m} {first['val_iou'][m]:.2f} ({first['train_iou'][m]:.1f})"
                         for m in first["val_iou"])
        same = "yes" if len({r["digest"] for r in rows}) == 1 else "no"
        each = ", ".join(f"{r['seconds']:.0f}" for r in rows)
        lines.append(f"| {name} | {first['code_version']} | {each} | "
                     f"{statistics.median(r['seconds'] for r in rows):.0f} | "
                     f"{statistics.median(r['cpu_seconds'] for r in rows):.0f} | {ious} | "
                     f"{same} |")
    lines.append("")
    base = statistics.median(r["seconds"] for r in doc["runs"] if r["checkout"] == "this")
    ours = {r["digest"] for r in doc["runs"] if r["checkout"] == "this"}
    for name in names[1:]:
        other = statistics.median(r["seconds"] for r in doc["runs"] if r["checkout"] == name)
        same = {r["digest"] for r in doc["runs"] if r["checkout"] == name} == ours
        lines.append(f"- this checkout's median seconds over {name}'s: {base / other:.2f}; "
                     f"its numbers {'the same as' if same else 'other than'} this checkout's")
    m = doc["machine"]
    lines += ["", f"Machine: {m['cpu_count']} cores, Python {m['python']}, {m['processor']}; "
              f"BLAS threads {doc['blas_threads'] or 'as the environment left them'}; "
              f"psutil {'installed' if doc['psutil'] else 'absent'} (with it, loky replaces "
              "workers whose memory grew); "
              f"{doc['repeats']} rounds, the checkouts in turn."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", action="append", default=[],
                    help="another checkout's root folder or a git revision (repeatable)")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--blas-threads", type=int, default=None,
                    help="set OMP_NUM_THREADS and OPENBLAS_NUM_THREADS for the runs")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    if args.repeats < 1:
        ap.error("--repeats must be at least 1")
    # "this" runs the segstruct that this Python imports: it must be this checkout's
    found = importlib.util.find_spec("segstruct")
    if found is None or found.origin is None or \
            REPO not in Path(found.origin).resolve().parents:
        where = f"from {found.origin}" if found and found.origin else "from nowhere"
        ap.error(f"this Python imports segstruct {where}, not from {REPO}: install this "
                 f"checkout (pip install -e {REPO}) in its environment")
    sys.path.insert(0, str(REPO))
    from segstruct.io.provenance import machine

    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    if args.blas_threads is not None:
        env.update(OMP_NUM_THREADS=str(args.blas_threads),
                   OPENBLAS_NUM_THREADS=str(args.blas_threads))
    with tempfile.TemporaryDirectory() as scratch_name:
        scratch = Path(scratch_name)
        trees: list[tuple[str, Path | None]] = [("this", None)]
        for k, before in enumerate(args.before):
            root, name = materialise(before, scratch, k)
            trees.append((f"{before} ({name})", importable_tree(root, scratch / f"tree{k}")))
        runs = []
        for _ in range(args.repeats):
            for name, tree in trees:
                row = {"checkout": name, **run_once(tree, scratch, env)}
                runs.append(row)
                print(f"{name}: {row['seconds']:.0f} s, CPU {row['cpu_seconds']:.0f} s "
                      f"({row['code_version']})", flush=True)
    try:
        import psutil  # noqa: F401
        has_psutil = True
    except ImportError:
        has_psutil = False
    doc = {"machine": machine(), "blas_threads": args.blas_threads, "psutil": has_psutil,
           "repeats": args.repeats, "runs": runs}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(doc, indent=1))
    (args.out / "table.md").write_text(table(doc))
    print(table(doc))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
