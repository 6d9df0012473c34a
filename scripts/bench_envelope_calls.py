"""Seconds of the proposed method's envelope oracle on calls recorded from a
training run, for this checkout and, with ``--before``, another one, run in
turn, with a digest of every result: equal digests mean that both computed
the same labellings, objectives, bounds and search counts.

Recording runs what ``segstruct compare --methods proposed --classes CLASS
-j 1 --no-figures`` runs at ``--C`` on ``--data`` (default: the generated data
set), the library's ``Comparison`` at the command's default settings, in this
process (the oracle is replaced there by one that records) and keeps every
``--every``-th call the oracle gets (its potentials, targets, weights, loss
and warm-start labellings), so the calls are those of a real fit at the
data-set scope. Each replay runs in a
fresh process on one core (``OMP_NUM_THREADS=1``); the other checkout runs
from a copy of its packages (``segstruct`` with its ``inference`` and
``datasets`` inside), so that the installed ``segstruct`` lends it none of
this one's. The checkouts alternate ``--repeats`` times, so that a slow
spell of the machine falls on both.

    OMP_NUM_THREADS=1 python scripts/bench_envelope_calls.py --class horse \\
        --before /path/to/an/older/checkout --out out/envelope_calls/horse

Writes ``calls.pkl`` (the recorded calls, tens of MB, ignored by git;
``--calls`` replays such a file instead of recording), ``results.json`` and
``table.md`` to ``--out``.
"""
from __future__ import annotations

import argparse
import json
import pickle
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve()
# benchlib lies next to this file: Python puts the script's folder first on sys.path
sys.path.insert(0, str(HERE.parent))
from benchlib.checkouts import in_turn, machine_text, median_ratio, run_worker  # noqa: E402


def record(data: Path | None, class_name: str, C: str, every: int, cache: Path,
           path: Path) -> int:
    """Train the proposed method once, keeping every ``every``-th oracle call
    (plain arrays and the loss as a dict) in ``path``; the number kept."""
    import numpy as np

    import segstruct.inference.proposed as proposed
    calls, seen = [], [0]
    oracle = proposed.envelope_oracle

    def recording(u, edges, p, t, a, loss, **kw):
        seen[0] += 1
        if seen[0] % every == 0:
            calls.append({"u": np.array(u), "edges": np.array(edges), "p": np.array(p),
                          "t": np.array(t), "a": None if a is None else np.array(a),
                          "loss": loss.to_dict(), "polish": kw.get("polish", True),
                          "seeds": [np.array(y) for y in kw.get("seed_labellings", ())]})
        return oracle(u, edges, p, t, a, loss, **kw)

    proposed.envelope_oracle = recording
    try:
        with tempfile.TemporaryDirectory() as out:
            comparison(data, class_name, C, cache, Path(out)).run(figures=False)
    finally:
        proposed.envelope_oracle = oracle
    path.write_bytes(pickle.dumps(calls))
    return len(calls)


def comparison(data: Path | None, class_name: str, C: str, cache: Path, out: Path):
    """The ``Comparison`` of ``segstruct compare --methods proposed --classes
    CLASS --C C -j 1 -q --cache CACHE --out OUT [--data DATA]``: the command's
    default features (the top-down block on, as the command has it) and
    training settings, with ``C`` a number or "auto" (the default grid and
    folds)."""
    from segstruct.compare import Comparison
    from segstruct.datasets import VOCDataset, default_synthetic_root, make_synthetic_voc
    from segstruct.features.cache import ArrayCache
    from segstruct.features.config import FeatureConfig
    from segstruct.features.extraction import FeatureExtractor
    from segstruct.features.topdown.detector import DetectorParams
    from segstruct.learn.selection.cross_validation import DEFAULT_FOLDS, DEFAULT_GRID
    from segstruct.learn.methods import TrainingSettings
    if data is None:                   # the command's generated data set, made once
        data = default_synthetic_root()
        make_synthetic_voc(data)
    config = FeatureConfig(detector=DetectorParams(seed=FeatureConfig().seed))
    extractor = FeatureExtractor(VOCDataset(data), config, ArrayCache(cache), n_jobs=1,
                                 progress=False)
    settings = (TrainingSettings(C="auto", C_grid=DEFAULT_GRID, folds=DEFAULT_FOLDS)
                if C == "auto" else TrainingSettings(C=float(C)))
    return Comparison(extractor, [class_name], ["proposed"], settings, out,
                      seed=config.seed, progress=False, n_jobs=1)


def digest_of(results) -> str:
    """SHA-256 of what the oracle returned on each call (all but its seconds)."""
    import hashlib

    import numpy as np
    h = hashlib.sha256()
    for res in results:
        h.update(np.ascontiguousarray(res.labels).tobytes())
        h.update(repr((res.objective, res.bound, res.loss, res.score, res.fp,
                       res.fn)).encode())
        for key in sorted(res.info):
            value = res.info[key]
            if key == "seconds":
                continue
            if key == "labellings":
                for y in value:
                    h.update(np.ascontiguousarray(y).tobytes())
            else:
                h.update(f"{key}={value!r}".encode())
    return h.hexdigest()


def measure(calls_path: Path) -> dict:
    """Every recorded call once, in this process (whatever ``segstruct``
    imports): seconds in all, cuts per call, and the results' digest."""
    from segstruct.inference.envelope import envelope_oracle
    from segstruct.inference.losses import loss_from_dict
    from segstruct.io.provenance import code_version
    calls = pickle.loads(calls_path.read_bytes())
    losses = [loss_from_dict(c["loss"]) for c in calls]
    results, seconds = [], 0.0
    for c, loss in zip(calls, losses):
        start = time.perf_counter()
        results.append(envelope_oracle(c["u"], c["edges"], c["p"], c["t"], c["a"], loss,
                                       seed_labellings=c["seeds"], polish=c["polish"]))
        seconds += time.perf_counter() - start
    cuts = sum(r.info["graph_cuts"] for r in results)
    return {"code_version": code_version(), "calls": len(calls), "seconds": seconds,
            "cuts_per_call": cuts / max(1, len(calls)),
            "nodes_per_call": sum(len(c["u"]) for c in calls) / max(1, len(calls)),
            "digest": digest_of(results)}


def run_in(tree: Path | None, calls_path: Path) -> dict:
    """``measure`` in a fresh process importing ``segstruct`` from ``tree``
    (an importable copy of a checkout's packages), or as this process would."""
    return run_worker(HERE, tree, ["--calls", str(calls_path.resolve())])


def table(doc: dict) -> str:
    rows = doc["runs"]
    first = rows[0]
    lines = ["# Seconds of the envelope oracle on recorded calls", "",
             "| code | seconds | ms per call | digest |", "|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['code_version']} | {r['seconds']:.2f} | "
                     f"{1000 * r['seconds'] / max(1, r['calls']):.1f} | {r['digest'][:12]} |")
    lines.append("")
    if "ratio" in doc:
        lines.append(f"- this checkout's median over the other's: {doc['ratio']:.2f}; "
                     f"the same results: {'yes' if doc['same_numbers'] else 'NO'}")
    lines += ["", f"{first['calls']} calls recorded from the proposed method's training "
              f"({doc['recorded']}); {first['nodes_per_call']:.0f} nodes and "
              f"{first['cuts_per_call']:.1f} graph cuts per call; "
              f"{machine_text(doc['machine'])}."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=None,
                    help="a VOC-layout data set (default: the generated one)")
    ap.add_argument("--class", dest="class_name", default="horse")
    ap.add_argument("--C", default="1", help="the fit's C (default 1)")
    ap.add_argument("--every", type=int, default=1, help="keep every N-th call (default 1)")
    ap.add_argument("--calls", type=Path, default=None,
                    help="replay this calls.pkl instead of recording")
    ap.add_argument("--cache", type=Path, default=None,
                    help="the recording run's feature cache (default: a temporary one)")
    ap.add_argument("--before", type=Path, default=None,
                    help="another checkout (its root folder) to measure in turn")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        print(json.dumps(measure(args.calls)))
        return 0
    if args.out is None:
        ap.error("give --out DIR")
    if args.every < 1 or args.repeats < 1:
        ap.error("--every and --repeats take a count >= 1")
    sys.path.insert(0, str(HERE.parent.parent))
    from segstruct.io.provenance import machine
    args.out.mkdir(parents=True, exist_ok=True)
    scratch = tempfile.TemporaryDirectory()
    calls_path = args.calls
    recorded = f"replayed from {args.calls}"
    if calls_path is None:
        calls_path = args.out / "calls.pkl"
        cache = args.cache or Path(scratch.name) / "cache"
        n = record(args.data, args.class_name, args.C, args.every, cache, calls_path)
        recorded = (f"{args.data or 'the generated data set'}, class {args.class_name}, "
                    f"C {args.C}: {n} calls kept, one in {args.every}")
        print(f"recorded {n} calls into {calls_path}", flush=True)
    runs = in_turn(lambda tree: run_in(tree, calls_path),
                   args.before.resolve() if args.before else None, args.repeats,
                   Path(scratch.name), lambda row: f"{row['seconds']:.2f} s")
    doc = {"recorded": recorded, "machine": machine(), "runs": runs}
    if args.before:
        doc["ratio"] = median_ratio(runs, lambda r: r["seconds"])
        doc["same_numbers"] = len({r["digest"] for r in runs}) == 1
    (args.out / "results.json").write_text(json.dumps(doc, indent=1))
    (args.out / "table.md").write_text(table(doc))
    print(table(doc))
    scratch.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
