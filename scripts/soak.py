"""Soak: train every method on every class of every real data set, at the defaults.

For every data set under ``--data`` (each subfolder a VOC-layout root) and every
class with at least ``--min-images`` training images showing it, this trains

    bl1, hamming, bl2, proposed (its default oracle, envelope) and
    proposed-decomposition (``--inference decomposition``)

on ``train`` and scores them on ``val``, through ``segstruct.compare.Comparison``
(the code ``segstruct compare`` runs), at the library's default settings
(``TrainingSettings()``: data-set loss scope, C, tol and max_iter as the library
sets them; the library's default features, ``FeatureConfig()``: the bottom-up
blocks, without the top-down block the command line adds). A run that raises is recorded (error type,
message, the traceback's last line) and the soak goes on.

Outputs, under ``--out`` (default ``out/soak`` in the repository):

    soak.json    every run's record, the settings, machine and code version
    soak.md      the table (rows data set / class, columns methods) and a summary
    models/      the comparison folders (models, training logs, per-pair records,
                 checkpoints while training) and soak.log; git-ignored (it
                 writes its own .gitignore), not meant to be committed

Resumable: a run already in soak.json with the same settings, features, data and
code (version string and a digest of the package's source files) is skipped;
soak.json is rewritten atomically after every run, and a run interrupted
mid-training continues from its checkpoint. Crashed runs are skipped too unless
``--retry-crashed``. Records made with other code or settings stay in soak.json
(until their run is made again) but are left out of the table and summary.

A solver that never returns would stall the soak: ``--timeout SECONDS`` runs
each training in its own process and records a run that outlives the limit as
a crash of type Timeout (the process start, about 2 s, counts in the limit).

    python scripts/soak.py --list                        # what would run, and what not
    python scripts/soak.py --timeout 7200                # the full soak (hours)
    python scripts/soak.py --datasets weizmann_horse_voc --methods bl1 bl2 --out /tmp/s
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
import traceback
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np

from segstruct.compare import Comparison
from segstruct.datasets import VOC_CLASSES, VOID_LABEL, VOCDataset
from segstruct.evaluate.inspection import training_set_problem
from segstruct.features.cache import ArrayCache
from segstruct.features.config import FeatureConfig
from segstruct.features.extraction import FeatureExtractor
from segstruct.io.files import atomic_write_bytes
from segstruct.io.provenance import code_version, machine, source_digest
from segstruct.learn.methods import TrainingSettings

# the parts, in scripts/soaklib/, import each other as soaklib.*
sys.path.insert(0, str(Path(__file__).resolve().parent))

from soaklib.report import (current_runs, finite, folder_size, progress_line,  # noqa: E402
                            render_markdown, summarise, summary_line)
from soaklib.runs import RUNS  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[1]
FORMAT = "segstruct-soak"
TRAIN_SPLIT, EVAL_SPLIT = "train", "val"


# ---------------------------------------------------------------------- helpers
def default_data_dir() -> Path:
    env = os.environ.get("SEGSTRUCT_SHARED_DATA")
    return Path(env) if env else REPO_ROOT.parent / "shared" / "data"


def write_text(path: Path, text: str) -> None:
    atomic_write_bytes(Path(path), lambda f: f.write(text.encode()))


def digest(payload) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def settings_for(run: str, base: TrainingSettings) -> TrainingSettings:
    _, inference = RUNS[run]
    return base if inference is None else replace(base, inference=inference)


def find_datasets(data: Path, names) -> list[Path]:
    if names:
        return [data / n for n in names]
    return sorted(p for p in data.iterdir()
                  if (p / "ImageSets" / "Segmentation").is_dir())


def classes_with_images(dataset: VOCDataset, split: str) -> dict[str, int]:
    """VOC class name -> number of ``split`` images with a (non-void) pixel of it."""
    counts = np.zeros(256, np.int64)
    for image_id in dataset.ids(split):
        counts[np.unique(dataset.read_mask(image_id))] += 1
    return {name: int(counts[v]) for v, name in enumerate(VOC_CLASSES)
            if v != 0 and v != VOID_LABEL and counts[v] > 0}


# ---------------------------------------------------------------------- the soak
class Soak:
    def __init__(self, args):
        self.args = args
        self.out = Path(args.out)
        self.json_path = self.out / "soak.json"
        self.md_path = self.out / "soak.md"
        self.work = self.out / "models"
        self.progress = sys.stdout.isatty() and sys.stderr.isatty()
        base = TrainingSettings()           # the library's defaults, nothing hard-coded
        if args.max_iter is not None:
            base = replace(base, max_iter=args.max_iter)
        self.base = base
        # the library's default features: the bottom-up blocks (`segstruct compare
        # --no-top-down`); the command line adds the top-down block by default.
        # Images as given: the soak was made before the working resolution,
        # and a resumed soak must add runs of the same features.
        self.features = FeatureConfig(long_side=None)
        self.code_version = code_version()
        self.source_digest = source_digest()
        self.doc = self._load()
        self.doc.update({
            "format": FORMAT, "format_version": 1,
            "code_version": self.code_version, "source_digest": self.source_digest,
            "machine": machine(versions=True),
            "settings": {
                "compare_settings": asdict(base),
                "runs": {name: {"method": m, "settings": asdict(settings_for(name, base))}
                         for name, (m, _) in RUNS.items()},
                "library_defaults": asdict(TrainingSettings()),
                "max_iter_option": args.max_iter,
                "features": self.features.to_dict(),
                "train_split": TRAIN_SPLIT, "eval_split": EVAL_SPLIT,
                "min_images": args.min_images, "data": str(Path(args.data).resolve()),
                "seed": 0, "timeout_seconds": args.timeout,
            },
            "warnings": [],
        })
        self.log_file = None

    # -- persistence ----------------------------------------------------------
    def _load(self) -> dict:
        if self.json_path.is_file():
            try:
                doc = json.loads(self.json_path.read_text())
                if doc.get("format") == FORMAT:
                    doc.setdefault("runs", [])
                    doc.setdefault("skipped", {})
                    return doc
            except (UnicodeDecodeError, json.JSONDecodeError):
                pass
            backup = self.json_path.with_suffix(f".unreadable-{int(time.time())}.json")
            os.replace(self.json_path, backup)
            print(f"warning: {self.json_path} is not a soak file; moved it to {backup}",
                  file=sys.stderr)
        return {"runs": [], "skipped": {}}

    def save(self) -> None:
        self.doc["updated"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        write_text(self.json_path,
                   json.dumps(finite(self.doc), indent=1, allow_nan=False) + "\n")
        write_text(self.md_path, render_markdown(self.doc))

    def say(self, line: str) -> None:
        """Library chatter (Comparison's progress lines, warnings) goes to soak.log."""
        if self.log_file is not None:
            self.log_file.write(f"{time.strftime('%H:%M:%S')} {line}\n")
            self.log_file.flush()

    # -- keys ---------------------------------------------------------------
    def run_key(self, dataset: VOCDataset, run: str) -> str:
        """What a finished run must share with this one to be skipped."""
        ids = {s: dataset.ids(s) for s in (TRAIN_SPLIT, EVAL_SPLIT)}
        return digest({
            "settings": asdict(settings_for(run, self.base)), "run": run,
            "features": self.features.to_dict(), "data_root": str(dataset.root),
            "split_lists": digest(ids), "code_version": self.code_version,
            "source_digest": self.source_digest})

    def find(self, dataset_name, class_name, run):
        for r in self.doc["runs"]:
            if (r["dataset"], r["class"], r["run"]) == (dataset_name, class_name, run):
                return r
        return None

    def put(self, record) -> None:
        runs = self.doc["runs"]
        runs[:] = [r for r in runs if (r["dataset"], r["class"], r["run"]) !=
                   (record["dataset"], record["class"], record["run"])]
        runs.append(record)
        runs.sort(key=lambda r: (r["dataset"], r["class"], list(RUNS).index(r["run"])
                                 if r["run"] in RUNS else 99))

    # -- main loop ------------------------------------------------------------
    def run(self) -> int:
        args = self.args
        self.out.mkdir(parents=True, exist_ok=True)
        self.work.mkdir(parents=True, exist_ok=True)
        gitignore = self.work / ".gitignore"
        if not gitignore.exists():
            gitignore.write_text("# models, logs and checkpoints of the soak: not committed\n*\n")
        self._lock = open(self.work / "soak.lock", "w")
        try:
            import fcntl
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except ImportError:                      # not POSIX: no lock
            pass
        except OSError:
            print(f"another soak is running in {self.out} (it holds {self._lock.name}); "
                  "wait for it, or give another --out", file=sys.stderr)
            return 2
        self.log_file = open(self.work / "soak.log", "a", encoding="utf-8")
        self.say(f"soak started: code {self.code_version}, source {self.source_digest[:12]}")
        roots = find_datasets(Path(args.data), args.datasets)
        if not roots:
            print(f"no VOC-layout data set under {args.data}", file=sys.stderr)
            return 2
        plan = []          # (dataset, class, training images with the class, run)
        for root in roots:
            try:
                plan += self._plan_dataset(root)
            except Exception as err:                 # one bad data set stops no other
                line = traceback.format_exception_only(type(err), err)[-1].strip()
                print(f"{root.name}: skipped: {line}", flush=True)
                self.doc["skipped"][root.name] = {"error": line}
        todo = []
        for item in plan:
            dataset, class_name, _, run = item
            old = self.find(dataset.name, class_name, run)
            if (old is not None and old["key"] == self.run_key(dataset, run)
                    and not (old["crashed"] and args.retry_crashed)):
                continue
            todo.append(item)
        if args.list:
            for dataset, class_name, n_images, run in plan:
                state = "to do" if (dataset, class_name, n_images, run) in todo else "done"
                print(f"{dataset.name}/{class_name} ({n_images} training images) {run}: "
                      f"{state}")
            for name, skipped in self.doc["skipped"].items():
                for class_name, reason in skipped.items():
                    print(f"{name}/{class_name}: not run: {reason}")
            return 0
        self.save()
        print(f"soak: {len(plan)} runs planned, {len(plan) - len(todo)} already in "
              f"{self.json_path}, {len(todo)} to do; code {self.code_version}; "
              f"max_iter {self.base.max_iter}, tol {self.base.tol:g}, C {self.base.C:g}, "
              f"scope {self.base.scope}", flush=True)
        for k, (dataset, class_name, n_images, run) in enumerate(todo, 1):
            record = self._one(dataset, class_name, n_images, run)
            self.put(record)
            self.save()
            print(f"[{k}/{len(todo)}] {progress_line(record)}", flush=True)
        print(summary_line(current_runs(self.doc)), flush=True)
        print(f"wrote {self.json_path} and {self.md_path}; models in {self.work} "
              f"({folder_size(self.work) / 1e6:.1f} MB)", flush=True)
        self.log_file.close()
        return 0

    def _plan_dataset(self, root: Path):
        args = self.args
        dataset = VOCDataset(root)
        extractor = FeatureExtractor(dataset, self.features, ArrayCache(), n_jobs=args.n_jobs,
                                     progress=self.progress, codebook_split=TRAIN_SPLIT)
        counts = classes_with_images(dataset, TRAIN_SPLIT)
        dataset.ids(EVAL_SPLIT)                  # DatasetError now if there is no val split
        skipped = {}
        chosen = []
        for class_name, n in counts.items():
            if args.classes and class_name not in args.classes:
                continue
            if n < args.min_images:
                skipped[class_name] = f"{n} training image(s) < --min-images {args.min_images}"
                continue
            # the check `segstruct compare` makes before training: a refusal is
            # not a crash, so it is listed here instead of run
            examples = extractor.examples(TRAIN_SPLIT, class_name, with_features=False)
            problem = training_set_problem(examples, class_name, TRAIN_SPLIT)
            if problem:
                skipped[class_name] = f"refused by the library: {problem}"
                continue
            chosen.append((class_name, n))
        self.doc["skipped"][dataset.name] = skipped
        for class_name, reason in skipped.items():
            self.say(f"{dataset.name}/{class_name}: skipped: {reason}")
        return [(dataset, c, n, run) for c, n in chosen for run in args.methods]

    def _one(self, dataset, class_name, n_images, run) -> dict:
        method, _ = RUNS[run]
        settings = settings_for(run, self.base)
        key = self.run_key(dataset, run)
        folder = self.work / dataset.name / f"{run}-{key[:10]}"
        record = {
            "dataset": dataset.name, "class": class_name, "run": run, "method": method,
            "inference": settings.inference if method == "proposed" else None,
            "key": key, "settings": asdict(settings), "code_version": self.code_version,
            "source_digest": self.source_digest, "n_train_images_with_class": n_images,
            "n_train_split_images": len(dataset.ids(TRAIN_SPLIT)),
            "crashed": False, "error_type": None, "error": None, "traceback_last_line": None,
            "work_folder": str(folder.relative_to(self.out)),
        }
        self.say(f"--- {dataset.name}/{class_name} {run}: {folder}")
        self.log_file.flush()
        job = {"root": str(dataset.root), "n_jobs": self.args.n_jobs,
               "progress": self.progress, "class_name": class_name, "method": method,
               "settings": asdict(settings), "folder": str(folder),
               "log": str(self.work / "soak.log")}
        start = time.perf_counter()
        if self.args.timeout is None:
            outcome = execute(job)
        else:
            outcome = execute_with_timeout(job, self.args.timeout)
        record.update(outcome)
        record["wall_seconds"] = time.perf_counter() - start
        return record


def execute(job: dict) -> dict:
    """Train and score one (class, method) pair with ``Comparison``; never raises
    (but for KeyboardInterrupt): a failure comes back as ``crashed``."""
    with open(job["log"], "a", encoding="utf-8") as log:
        def say(line):
            log.write(f"{time.strftime('%H:%M:%S')} {line}\n")
            log.flush()
        try:
            dataset = VOCDataset(job["root"])
            extractor = FeatureExtractor(dataset, FeatureConfig(long_side=None), ArrayCache(),
                                         n_jobs=job["n_jobs"], progress=job["progress"],
                                         codebook_split=TRAIN_SPLIT)
            comparison = Comparison(extractor, [job["class_name"]], [job["method"]],
                                    TrainingSettings(**job["settings"]), job["folder"],
                                    train_split=TRAIN_SPLIT, eval_split=EVAL_SPLIT, seed=0,
                                    progress=job["progress"], say=say)
            results = comparison.run(figures=False)
            (r,) = results["results"]
            evaluation = extractor.examples(EVAL_SPLIT, job["class_name"], with_features=False)
            eval_pixels = int(sum(int(ex.fg.sum() + ex.bg.sum()) for ex in evaluation))
            return summarise(r, eval_pixels)
        except Exception as err:                        # noqa: BLE001 - the soak goes on
            tb = traceback.format_exc()
            say(tb)
            return crash(type(err).__name__, str(err),
                         traceback.format_exception_only(type(err), err)[-1].strip(), tb)


def crash(error_type, message, last_line, tb="") -> dict:
    return {"crashed": True, "error_type": error_type, "error": message[:2000],
            "traceback_last_line": last_line, "traceback": tb[-6000:]}


def _child(conn, job):
    conn.send(execute(job))
    conn.close()


def execute_with_timeout(job: dict, timeout: float) -> dict:
    """``execute`` in a fresh process, killed after ``timeout`` seconds (a hung
    solver then costs one run, not the soak). The pair's checkpoint stays, so
    ``--retry-crashed`` continues it."""
    import multiprocessing as mp
    ctx = mp.get_context("spawn")
    receive, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(send, job), daemon=True)
    proc.start()
    send.close()
    try:
        if receive.poll(timeout):
            try:
                outcome = receive.recv()
            except EOFError:
                outcome = None
        else:
            outcome = crash("Timeout", f"no result within --timeout {timeout:g} s",
                            f"Timeout: no result within --timeout {timeout:g} s (killed)")
        if outcome is None:
            proc.join(10)
            outcome = crash("WorkerDied", f"the run's process exited with code "
                            f"{proc.exitcode}", f"WorkerDied: exit code {proc.exitcode}")
        return outcome
    finally:
        if proc.is_alive():
            proc.kill()
        proc.join()


# ---------------------------------------------------------------------- command line
def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        description="Train every method on every class of every data set at the "
                    "library's default settings and record crashes, convergence, gaps, "
                    "scores and collapses (see the module docstring).")
    ap.add_argument("--data", type=Path, default=default_data_dir(),
                    help="folder whose subfolders are VOC-layout roots (default: "
                         "$SEGSTRUCT_SHARED_DATA, else ../shared/data beside the repository)")
    ap.add_argument("--out", type=Path, default=REPO_ROOT / "out" / "soak",
                    help="output folder (default: out/soak in the repository)")
    ap.add_argument("--datasets", nargs="+", metavar="NAME",
                    help="subfolders of --data to soak (default: every VOC-layout one)")
    ap.add_argument("--classes", nargs="+", metavar="CLASS",
                    help="only these VOC class names (default: every class with enough "
                         "training images)")
    ap.add_argument("--methods", nargs="+", choices=list(RUNS), default=list(RUNS),
                    metavar="RUN", help=f"runs to make (default: all of {', '.join(RUNS)})")
    ap.add_argument("--min-images", type=int, default=5,
                    help="a class needs this many training images showing it (default 5)")
    ap.add_argument("-j", "--n-jobs", type=int, default=1,
                    help="worker processes for feature extraction (default 1)")
    ap.add_argument("--max-iter", type=int, default=None,
                    help=f"cutting-plane iterations (default: the library's, "
                         f"{TrainingSettings().max_iter})")
    ap.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                    help="run each training in its own process and kill it after this "
                         "long, recorded as a crash of type Timeout (default: no limit, "
                         "in this process)")
    ap.add_argument("--list", action="store_true",
                    help="print the planned runs (and the classes not run, with why) and "
                         "stop; trains nothing (computes superpixels that are not cached)")
    ap.add_argument("--retry-crashed", action="store_true",
                    help="run crashed runs again even when recorded with this code")
    return ap


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    if args.n_jobs == 0:
        raise SystemExit("--n-jobs must be positive or -1")
    if args.classes:
        unknown = [c for c in args.classes if c not in VOC_CLASSES[1:]]
        if unknown:
            raise SystemExit(f"unknown class name(s) {unknown}; use VOC names")
    soak = Soak(args)
    try:
        return soak.run()
    except KeyboardInterrupt:
        print(f"interrupted; finished runs are in {soak.json_path}; run the same command "
              "again to go on (the run in progress continues from its checkpoint)",
              file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
