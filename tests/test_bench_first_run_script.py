"""scripts/bench_first_run.py: a git revision becomes a checkout to run, each
run is summarised from compare's results.json, and the table names the
ratio of medians and whether the checkouts computed the same numbers."""
import subprocess

import pytest


def _results(val, primal=0.5):
    rows = []
    for c in ("car", "horse"):
        for m, v in zip(("bl1", "proposed"), val):
            rows.append({"class": c, "method": m, "C": 1.0,
                         "eval_score": {"voc_iou_percent": v},
                         "train_score": {"voc_iou_percent": v + 5},
                         "training": {"primal": primal, "n_iter": 10}})
    return {"methods": ["bl1", "proposed"], "results": rows, "code_version": "0.1.0+gx"}


def test_summary_means_per_method_and_a_digest_of_every_number(load_script):
    bench = load_script("bench_first_run")
    s = bench.summary(_results((40.0, 60.0)))
    assert s["val_iou"] == {"bl1": 40.0, "proposed": 60.0}
    assert s["train_iou"] == {"bl1": 45.0, "proposed": 65.0}
    assert s["digest"] == bench.summary(_results((40.0, 60.0)))["digest"]
    assert s["digest"] != bench.summary(_results((40.0, 60.0), primal=0.5000001))["digest"]


def test_table_gives_the_ratio_of_medians_and_same_numbers(load_script):
    bench = load_script("bench_first_run")
    same = bench.summary(_results((40.0, 60.0)))
    other = bench.summary(_results((41.0, 60.0)))
    runs = ([{"checkout": "this", "seconds": s, "cpu_seconds": 2 * s, **same} for s in (90, 110)]
            + [{"checkout": "old", "seconds": s, "cpu_seconds": s, **other} for s in (190, 210)])
    doc = {"machine": {"cpu_count": 2, "python": "3.11", "processor": "x"},
           "blas_threads": None, "psutil": False, "repeats": 2, "runs": runs}
    text = bench.table(doc)
    assert "| this | 0.1.0+gx | 90, 110 | 100 | 200 | bl1 40.00 (45.0), proposed 60.00 (65.0) " \
           "| yes |" in text
    assert "median seconds over old's: 0.50; its numbers other than this checkout's" in text


def test_a_revision_is_exported_and_a_bad_one_refused(load_script, tmp_path):
    bench = load_script("bench_first_run")
    done = subprocess.run(["git", "-C", str(bench.REPO), "rev-parse", "HEAD"],
                          capture_output=True)
    if done.returncode != 0:
        pytest.skip("not a git checkout")
    root, name = bench.materialise("HEAD", tmp_path, 0)
    assert (root / "segstruct" / "__init__.py").is_file() and name.startswith("g")
    assert bench.materialise(str(root), tmp_path, 1)[0] == root      # a folder as it is
    with pytest.raises(SystemExit, match="neither a checkout"):
        bench.materialise("no-such-revision-xyz", tmp_path, 2)
