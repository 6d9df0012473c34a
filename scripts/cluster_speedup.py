"""Time of one ``segstruct compare`` in one process and on a local Dask cluster.

Starts a ``LocalCluster`` of ``--workers`` single-threaded worker processes
on this machine, then runs the same comparison with ``-j 1`` and no cluster
and with ``--scheduler``, each from an empty feature cache, and both again
with their features cached (new output folders). Checks that all four wrote
the same table, and writes ``OUT/cluster.json`` and ``OUT/cluster.md`` with
the times and their ratios. Needs the dask extra.

Each comparison is the ``segstruct compare`` command run as a user runs it,
``python -m segstruct compare ...`` in a process of its own, timed whole:
what is measured is the command, its start-up and its handing of work to the
cluster included (the same start-up in both, so the ratio is the command's),
not a part of it that a script assembles from the library.

    python scripts/cluster_speedup.py --out out/parallel
    python scripts/cluster_speedup.py --data ../shared/data/weizmann_horse_voc --out ...
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def run_compare(args_list) -> float:
    """Seconds of one ``segstruct`` command (``args_list``: its arguments), run
    in a process of its own with this one's environment."""
    start = time.perf_counter()
    code = subprocess.run([sys.executable, "-m", "segstruct", *args_list]).returncode
    if code != 0:
        raise SystemExit(f"segstruct {' '.join(args_list)} exited with {code}")
    return time.perf_counter() - start


def main(argv=None) -> int:
    import distributed

    from segstruct.io.provenance import code_version, machine

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, help="VOC root (default: the generated data set)")
    ap.add_argument("--classes", nargs="+", default=["car", "person", "horse"],
                    help="default: car person horse")
    ap.add_argument("--methods", nargs="+", default=["bl1", "bl2", "proposed"],
                    help="default: bl1 bl2 proposed")
    ap.add_argument("--workers", type=int, default=2, help="default 2")
    ap.add_argument("--out", type=Path, default=Path("out/parallel"))
    args = ap.parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    work = Path(tempfile.mkdtemp(prefix="cluster-speedup-"))
    data = ["--data", str(args.data)] if args.data else []
    common = ["compare", *data, "--classes", *args.classes, "--methods", *args.methods,
              "--no-top-down", "--no-figures", "-q"]
    seconds = {}
    try:
        with distributed.LocalCluster(n_workers=args.workers, threads_per_worker=1,
                                      processes=True, dashboard_address=":0",
                                      silence_logs=40) as cluster:
            # each from an empty cache, then again with the features cached
            # (new output folders: only the training and scoring of the pairs)
            for run in ("cold", "warm"):
                for where in ("local", "cluster"):
                    extra = ["--scheduler", cluster.scheduler_address] if where == "cluster" \
                        else []
                    seconds[run, where] = run_compare(
                        [*common, "--cache", str(work / f"cache-{where}"),
                         "--out", str(work / f"{where}-{run}"), *extra])
        tables = {name: json.loads((work / name / "results.json").read_text())["table"]
                  for name in ("local-cold", "cluster-cold", "local-warm", "cluster-warm")}
        if len({json.dumps(t, sort_keys=True) for t in tables.values()}) != 1:
            raise SystemExit(f"the tables differ: {tables}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    local, remote = seconds["cold", "local"], seconds["cold", "cluster"]
    warm_local, warm_remote = seconds["warm", "local"], seconds["warm", "cluster"]
    report = {"data": str(args.data) if args.data else "generated", "classes": args.classes,
              "methods": args.methods, "features": "bottom-up (--no-top-down)",
              "workers": args.workers, "seconds_local": local, "seconds_cluster": remote,
              "speedup": local / remote, "seconds_local_cached": warm_local,
              "seconds_cluster_cached": warm_remote, "speedup_cached": warm_local / warm_remote,
              "table": tables["local-cold"],
              "code_version": code_version(), "machine": machine()}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "cluster.json").write_text(json.dumps(report, indent=2) + "\n")
    text = (f"# compare in one process and on a local Dask cluster\n\n"
            f"Data {report['data']}, classes {' '.join(args.classes)}, methods "
            f"{' '.join(args.methods)}, bottom-up features, each run from an empty feature "
            f"cache; {os.cpu_count()} cores; code {report['code_version']}.\n\n"
            f"| run | empty cache, s | features cached, s |\n|---|---|---|\n"
            f"| one process (-j 1) | {local:.1f} | {warm_local:.1f} |\n"
            f"| LocalCluster, {args.workers} workers | {remote:.1f} | {warm_remote:.1f} |\n"
            f"| speed-up | {report['speedup']:.2f}x | {report['speedup_cached']:.2f}x |\n\n"
            f"The four tables are identical. The codebook (k-means) is learnt in the "
            f"segstruct process in both.\n")
    (args.out / "cluster.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
