"""Peak memory of ``segstruct train --C auto`` (or, with ``--compare``, of
``segstruct compare``) on workers: the summed resident memory of the
command's process tree (the main process and its worker processes), for
this checkout and, with ``--before``, another one, run in turn.

Each run is ``python -m segstruct train --data D --class C --method M -j N
-q`` (``--compare M1 M2 ...``: ``compare --classes C --methods M1 M2 ...``)
into a scratch folder, with the features read from ``--cache`` (run the
command once beforehand so that both checkouts find them there: the
measurement is of the training, not of the extraction). A sampler reads
``/proc`` every 0.2 s (Linux only) for every process below the command.
The other checkout runs from a copy of its packages (``segstruct`` with its
``inference`` and ``datasets`` folders inside), so that the installed
``segstruct`` lends it none of this one's. Every run records a digest of the
model's weights: equal digests mean the two checkouts trained the same
model.

    python scripts/bench_cv_memory.py --data ../shared/data/camvid_voc --class car \\
        --method bl1 -j 2 --before /path/to/an/older/checkout --out out/cv_memory/camvid_car
    python scripts/bench_cv_memory.py --data ../shared/data/camvid_voc --class car \\
        --compare bl1 bl2 --C 1 -j 2 --repeats 1 --out out/cv_memory/pairs/camvid_car

Writes ``results.json`` and ``table.md`` to ``--out``.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve()
# benchlib lies next to this file: Python puts the script's folder first on sys.path
sys.path.insert(0, str(HERE.parent))
from benchlib.checkouts import in_turn, median_ratio  # noqa: E402

MiB = 2 ** 20


def _children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                out += [int(c) for c in f.read().split()]
    except OSError:          # the process ended between two reads
        pass
    return out


def _rss(pid: int) -> int:
    """Resident bytes of one process (0 once it has ended)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def tree_peak(command: list[str], env: dict, cwd: Path | None) -> dict:
    """Run ``command``; its wall seconds, and the peaks of the summed RSS of
    its process tree and of the same without the command's own process."""
    start = time.perf_counter()
    proc = subprocess.Popen(command, env=env, cwd=cwd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    peak = peak_workers = 0
    while proc.poll() is None:
        stack, seen = [proc.pid], []
        while stack:
            pid = stack.pop()
            seen.append(pid)
            stack += _children(pid)
        sizes = [_rss(pid) for pid in seen]
        peak = max(peak, sum(sizes))
        peak_workers = max(peak_workers, sum(sizes[1:]))
        time.sleep(0.2)
    _, err = proc.communicate()
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{err}")
    return {"wall_seconds": time.perf_counter() - start, "peak_tree_mib": peak / MiB,
            "peak_workers_mib": peak_workers / MiB}


def command_line(args, out: Path) -> list[str]:
    """``segstruct train`` of one method, or with ``--compare`` ``segstruct
    compare`` of its methods side by side (one worker per pair)."""
    cache = ["--cache", str(args.cache)] if args.cache else []
    C = ["--C", args.C] if args.C else []
    common = ["--data", str(args.data), "-j", str(args.n_jobs), "-q", *C, *cache]
    if args.compare:
        return [sys.executable, "-m", "segstruct", "compare", "--classes", args.class_name,
                "--methods", *args.compare, "--out", str(out), *common]
    return [sys.executable, "-m", "segstruct", "train", "--class", args.class_name,
            "--method", args.method, "--out", str(out / "model"), *common]


def measure(tree: Path | None, args) -> dict:
    """One run of the command with the code of ``tree`` (None: this checkout's)."""
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "out"
        out.mkdir()
        # from the tree's folder: no segstruct/ of the current folder shadows it
        row = tree_peak(command_line(args, out), env, tree)
        models = sorted(out.rglob("*.npz"))
        digest = hashlib.sha256()
        for path in models:
            if not path.name.endswith(".ckpt.npz"):
                digest.update(path.read_bytes())
        row["weights_digest"] = digest.hexdigest()[:16]
        docs = [json.loads(p.with_suffix(".json").read_text()) for p in models
                if p.with_suffix(".json").exists()]
        row["code_version"] = docs[0].get("code_version", "unknown") if docs else "unknown"
    return row


def table(rows: list[dict], args, machine: dict) -> str:
    what = (f"compare --methods {' '.join(args.compare)}" if args.compare
            else f"train --method {args.method}")
    lines = [f"# Peak memory of `segstruct {what} --C {args.C or 'auto'}` ({args.data.name}, "
             f"{args.class_name}, -j {args.n_jobs})", "",
             "| checkout | code version | wall s | peak RSS of the process tree, MiB | of its "
             "workers, MiB | weights digest |", "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['checkout']} | {r['code_version']} | {r['wall_seconds']:.1f} | "
                     f"{r['peak_tree_mib']:.0f} | {r['peak_workers_mib']:.0f} | "
                     f"{r['weights_digest']} |")
    if any(r["checkout"] == "before" for r in rows):
        lines += ["", "Medians, this checkout over the other: peak of the tree "
                  f"{median_ratio(rows, lambda r: r['peak_tree_mib']):.2f}, of the workers "
                  f"{median_ratio(rows, lambda r: r['peak_workers_mib']):.2f}, wall "
                  f"{median_ratio(rows, lambda r: r['wall_seconds']):.2f}."]
    lines += ["", f"Machine: {machine['cpu_count']} cores, Python {machine['python']}, "
              f"{machine['processor']}; RSS sampled every 0.2 s."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, required=True, help="VOC-layout data root")
    p.add_argument("--class", dest="class_name", required=True)
    p.add_argument("--method", default="bl1", help="train's method (default bl1)")
    p.add_argument("--compare", nargs="+", metavar="METHOD",
                   help="run segstruct compare of these methods instead of train: its "
                        "pairs on the workers, one each")
    p.add_argument("--C", help="a fixed C (default: train's and compare's --C auto)")
    p.add_argument("-j", "--n-jobs", type=int, default=2)
    p.add_argument("--cache", type=Path, help="feature cache (default: segstruct's)")
    p.add_argument("--before", type=Path, help="another checkout's root, measured in turn")
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args(argv)
    if not Path("/proc/self/status").exists():
        raise SystemExit("this script reads /proc: it runs on Linux only")
    from segstruct.io.provenance import machine as machine_info
    with tempfile.TemporaryDirectory() as scratch:
        rows = in_turn(lambda tree: measure(tree, args), args.before, args.repeats,
                       Path(scratch), lambda r: f"{r['wall_seconds']:.1f} s, peak "
                       f"{r['peak_tree_mib']:.0f} MiB (workers {r['peak_workers_mib']:.0f})")
    machine = machine_info()
    args.out.mkdir(parents=True, exist_ok=True)
    settings = {"data": args.data.name, "class": args.class_name, "method": args.method,
                "compare": args.compare, "C": args.C or "auto", "n_jobs": args.n_jobs,
                "repeats": args.repeats}
    (args.out / "results.json").write_text(json.dumps(
        {"settings": settings, "machine": machine, "rows": rows}, indent=1) + "\n")
    (args.out / "table.md").write_text(table(rows, args, machine))
    print(f"wrote {args.out / 'results.json'} and table.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
