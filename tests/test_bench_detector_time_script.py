"""scripts/bench_detector_time.py: the other checkout is measured with its
own packages, not those the installed segstruct would lend it."""
import os
import subprocess
import sys


def test_the_other_checkout_imports_its_own_inference_and_datasets(load_script, tmp_path):
    load_script("bench_detector_time")          # puts scripts/ on sys.path
    from benchlib.checkouts import importable_tree
    checkout = tmp_path / "other"
    for name, folder in (("segstruct", "segstruct"), ("inference", "inference"),
                         ("datasets", "datasets")):
        (checkout / folder).mkdir(parents=True)
        (checkout / folder / "__init__.py").write_text(f"WHERE = 'other {name}'\n")
    tree = importable_tree(checkout, tmp_path / "tree")
    probe = ("import segstruct, segstruct.inference as i, segstruct.datasets as d; "
             "print(segstruct.WHERE, '|', i.WHERE, '|', d.WHERE)")
    # as the script runs it: PYTHONPATH the copy, from the copy's folder, in
    # the interpreter whose segstruct (an editable install here) maps
    # segstruct.inference and segstruct.datasets to this checkout
    done = subprocess.run([sys.executable, "-c", probe], cwd=tree, capture_output=True,
                          text=True, env=dict(os.environ, PYTHONPATH=str(tree)), check=True)
    assert done.stdout.split("|") == ["other segstruct ", " other inference ",
                                      " other datasets\n"]
