"""The README as a user meets it: a short front door whose numbers come from
``results/`` and whose Python snippets run from the repository root.

- its shape: at most 200 lines, a figure of results in the first 60, a "Your
  own data" section, no links out of the repository;
- its numbers: the first run's table is ``results/first_run/summary.md``,
  the minutes are those the benchmark runner measured, and any other number
  in its prose is on a short list of numbers that are not measurements
  (versions, years, class indices), so a new measurement cannot be written
  into it by hand;
- its snippets and ``python -m segstruct --help``, run in a subprocess from
  the repository root with the package installed there (the folder
  ``segstruct/`` then shadows the install).
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
RESULTS = ROOT / "results"

# Numbers in the README's prose that are not measurements: Python versions,
# the paper's and Joachims' years, a confidence level, the VOC class indices
# and void label, the licence's version.
NOT_MEASURED = {"3.10", "3.13", "2010", "2005", "95", "0", "1", "20", "255", "3.0"}


def readme() -> str:
    return README.read_text(encoding="utf-8")


def prose(text: str) -> str:
    """The README without fenced code blocks, indented blocks, inline code,
    link targets and table rows: the sentences a measurement would hide in."""
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    lines = [re.sub(r"^\d+\. ", "", line) for line in text.splitlines()
             if not line.startswith("    ") and not line.lstrip().startswith("|")]
    text = "\n".join(lines)
    text = re.sub(r"`[^`]*`", "", text)
    text = re.sub(r"\]\([^)]*\)", "]", text)
    return text


def python_snippets(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def first_run() -> dict:
    return json.loads((RESULTS / "first_run" / "intervals.json").read_text())


def test_the_readme_is_a_front_door():
    text = readme()
    lines = text.splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines; at most 200"
    figures = [m for m in re.finditer(r"!\[[^\]]*\]\(([^)]+)\)", text)
               if text[:m.start()].count("\n") < 60]
    assert figures, "no figure in the README's first 60 lines"
    for m in figures:
        assert (ROOT / m.group(1)).is_file(), f"the README's figure {m.group(1)} is missing"
    assert re.search(r"^## Your own data$", text, flags=re.M), "no 'Your own data' section"
    for target in re.findall(r"\]\(([^)#]+)", text):
        if target.startswith(("http://", "https://")):
            continue
        path = (ROOT / target).resolve()
        assert path.is_relative_to(ROOT), f"README links out of the repository: {target}"
        assert path.exists(), f"README links to a missing file: {target}"
    assert not re.search(r"\bissue \d+|#\d+\b", text), "README names an issue"


def test_the_first_run_table_is_the_benchmarks():
    table = (RESULTS / "first_run" / "summary.md").read_text().strip()
    assert table in readme(), ("README's table differs from results/first_run/summary.md; "
                               "copy it from there (python scripts/bench.py first_run makes it)")


def _minutes(path: str, key: str = "seconds") -> tuple[str, ...]:
    return (str(round(json.loads((RESULTS / path).read_text())[key] / 60)),)


def _large_photo() -> tuple[str, ...]:
    rows = json.loads((RESULTS / "large_photo" / "results.json").read_text())["rows"]
    photo, = [r for r in rows if r["input"] == "photo" and r["ensemble"] == 5]
    return f"{photo['seconds']:.1f}", f"{photo['peak_mib']:.0f}"


#: The README's measured claims: a pattern of its prose (whitespace folded),
#: and the values its groups must have, from the files the benchmarks write.
CLAIMS = {
    r"It took (\d+) minutes on a 2-core machine from an empty cache":
        lambda: _minutes("first_run/timing.json"),
    r"`pytest` took (\d+) minutes there": lambda: _minutes("suite/suite.json"),
    r"a 12-megapixel photo took (\d+\.\d) s and (\d+) MiB": _large_photo,
}


def test_the_readme_claims_are_the_benchmarks():
    text = " ".join(readme().split())
    for pattern, expected in CLAIMS.items():
        found = re.search(pattern, text)
        assert found, f"README no longer says {pattern!r}"
        assert found.groups() == expected(), (
            f"README says {found.group(0)!r}; the benchmark's files give {expected()}")


def test_every_other_number_in_the_readme_is_not_a_measurement():
    text = " ".join(prose(readme()).split())
    for pattern in CLAIMS:
        text = re.sub(re.sub(r"`[^`]*`", "", pattern).strip(), "", text)
    numbers = set(re.findall(r"(?<![\w.])\d+(?:\.\d+)?(?![\w])", text))
    unchecked = sorted(numbers - NOT_MEASURED)
    assert not unchecked, (
        f"README's prose has numbers no test checks against results/: {unchecked}. "
        "Quote measurements from a benchmark's files (python scripts/bench.py) and check "
        "them in tests/test_readme.py's CLAIMS")


def test_the_first_run_intervals_hold_their_values():
    doc = first_run()
    for row in doc["per_class"].values():
        for cell in row.values():
            low, high = cell["interval"]
            assert low <= cell["iou"] <= high
    # the table's methods are compare's
    compare = json.loads((RESULTS / "first_run" / "compare" / "results.json").read_text())
    assert doc["methods"] == compare["methods"] and doc["classes"] == compare["classes"]
    for r in compare["results"]:
        assert doc["per_class"][r["class"]][r["method"]]["iou"] == pytest.approx(
            r["eval_score"]["voc_iou_percent"], abs=0.006)


# --- the snippets, run as a user runs them -----------------------------------

def _run(code: str, env: dict) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"snippet failed:\n{code}\n{done.stderr[-3000:]}"
    return done


def _snippet(marker: str) -> str:
    found = [s for s in python_snippets(readme()) if marker in s]
    assert len(found) == 1, f"README has {len(found)} Python snippets with {marker!r}"
    return found[0]


@pytest.fixture(scope="module")
def user_env(tmp_path_factory):
    """The environment of a user's shell: a cache of their own (where the
    generated data set goes too), BLAS on one thread."""
    cache = tmp_path_factory.mktemp("cache")
    return {**os.environ, "SEGSTRUCT_CACHE": str(cache), "OMP_NUM_THREADS": "1"}


def test_python_m_segstruct_runs_from_the_repository_root(user_env):
    done = subprocess.run([sys.executable, "-m", "segstruct", "--help"], cwd=ROOT,
                          env=user_env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: segstruct")
    # the source tree imports whole from the root: the two sibling packages too
    done = subprocess.run([sys.executable, "-c", "import segstruct.datasets, "
                           "segstruct.inference.triangulation as t, segstruct; "
                           "print(segstruct.__file__); print(t.__file__)"],
                          cwd=ROOT, env=user_env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    here, triangulation = done.stdout.split()
    assert Path(here).resolve() == ROOT / "segstruct" / "__init__.py"
    assert Path(triangulation).resolve() == ROOT / "inference" / "triangulation" / "__init__.py"


def test_the_binary_mask_snippet_writes_class_indices(tmp_path, user_env):
    masks = tmp_path / "my_data" / "SegmentationClass"
    masks.mkdir(parents=True)
    from PIL import Image
    white = np.zeros((8, 10), np.uint8)
    white[2:5, 3:7] = 255
    ones = (white > 0).astype(np.uint8)
    Image.fromarray(white).save(masks / "a.png")
    Image.fromarray(ones).save(masks / "b.png")
    code = _snippet("VOC_CLASSES").replace('"my_data/', f'"{tmp_path}/my_data/')
    _run(code, user_env)
    for name in ("a.png", "b.png"):
        got = np.array(Image.open(masks / name))
        assert set(np.unique(got)) == {0, 13}
        assert np.array_equal(got == 13, white > 0)


@pytest.mark.slow
def test_the_api_snippets_run_from_the_repository_root(tmp_path, user_env):
    train = _snippet("estimator_for")
    done = _run(train, user_env)
    assert re.search(r"val IoU \d+\.\d %", done.stdout), done.stdout
    # the saved-model snippet, on a model trained as the command line does
    from segstruct.datasets.synthetic import make_synthetic_voc
    data = make_synthetic_voc(Path(user_env["SEGSTRUCT_CACHE"]) / "synthetic-voc-v1")
    model = tmp_path / "models" / "car-proposed"
    subprocess.run([sys.executable, "-m", "segstruct", "train", "--data", str(data), "--class",
                    "car", "--method", "proposed", "--C", "1", "--no-top-down", "--out",
                    str(model), "-q", "-j", "1"], cwd=tmp_path, env=user_env, check=True,
                   capture_output=True, timeout=900)
    photo = data / "JPEGImages" / (data / "ImageSets" / "Segmentation" / "val.txt"
                                   ).read_text().split()[0]
    photo = photo.with_suffix(".jpg")
    apply = _snippet("SegmentationModel.load")
    code = (apply.replace('"segstruct-compare/models/car-proposed"', f'"{model}"')
            .replace('["photo.jpg"]', f'["{photo}"]'))
    assert code != apply
    done = _run(code, user_env)
    from PIL import Image
    width, height = Image.open(photo).size
    assert done.stdout.split() == ["car", "proposed", f"({height},", f"{width})", "uint8"]
