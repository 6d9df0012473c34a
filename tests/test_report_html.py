"""report.html: one self-contained page a real browser renders.

The browser tests open the page in headless Chromium (the system's package:
.ci/run installs it), read the DOM after the page's scripts ran and take a
screenshot; :func:`report_problems` is the checker, and a report with a
broken or missing picture must fail it. Without a browser they skip, saying
why; the tests of the page's content run everywhere.
"""
import json
import re
import shutil
import subprocess

import numpy as np
import pytest
from PIL import Image

from segstruct.cli import main
from segstruct.compare.figures import qualitative_panels
from segstruct.compare.report import REPORT_FILE, class_section, read_results
from segstruct.datasets import VOCDataset
from segstruct.learn.estimators.structured_svm import DEFAULT_C
from segstruct.report.gallery import DISAGREEMENT_POINTS
from segstruct.report.html import FIGURE_TITLES

# one class, two methods, no top-down block and few iterations: the page's
# parts, not the models, are under test
SMALL = ["--no-top-down", "--words", "16", "--codebook-descriptors", "2000",
         "--superpixels", "felzenszwalb", "--fz-min-size", "400", "-q", "-j", "1"]
METHODS = ["bl1", "proposed"]
BROWSERS = ("chromium", "chromium-browser", "google-chrome")


@pytest.fixture(scope="module")
def finished(data_root, tmp_path_factory):
    """One tiny comparison with its report: (output dir, cache args)."""
    base = tmp_path_factory.mktemp("report")
    cache = ["--cache", str(base / "cache")]
    out = base / "out"
    assert main(["compare", "--data", str(data_root), "--classes", "car", "--methods", *METHODS,
                 "--max-iter", "10", "--C", f"{DEFAULT_C:g}", "--figure-images", "1",
                 "--out", str(out), *cache, *SMALL]) == 0
    return out, cache


def browser() -> str:
    """A headless-capable Chromium's path, or skip the test saying why."""
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    pytest.skip(f"no browser ({', '.join(BROWSERS)}) on PATH: the report's browser test "
                "needs Chromium (Debian/Ubuntu: apt-get install chromium; .ci/run installs it)")


def _headless(chrome: str, profile, *args) -> subprocess.CompletedProcess:
    return subprocess.run([chrome, "--headless=new", "--no-sandbox", "--disable-gpu",
                           "--no-first-run", f"--user-data-dir={profile}",
                           "--virtual-time-budget=10000", *args],
                          capture_output=True, text=True, timeout=180, check=False)


def report_problems(path, workdir, classes, n_methods: int, n_images: int) -> list[str]:
    """What is wrong with a report as headless Chromium shows it (empty: nothing).

    Parameters
    ----------
    path : the report.html.
    workdir : a folder for the browser's profile and screenshot.
    classes : the table's classes, in order.
    n_methods : the methods compared.
    n_images : pictures the page must show: every gallery cell and figure.
    """
    chrome = browser()
    dom = _headless(chrome, workdir / "profile", "--dump-dom", path.resolve().as_uri()).stdout
    problems = []
    body = re.search(r"<body([^>]*)>", dom)
    marks = dict(re.findall(r'data-images-(ok|broken)="(\d+)"', body.group(1) if body else ""))
    if not marks:
        problems.append("the page's image check did not run (no data-images-ok on <body>)")
    else:
        if int(marks["broken"]):
            problems.append(f"{marks['broken']} picture(s) the browser could not decode")
        if int(marks["ok"]) != n_images:
            problems.append(f"{marks['ok']} picture(s) decoded, {n_images} expected")
    table = re.search(r'<section id="table">.*?(<table.*?</table>)', dom, re.S)
    if table is None:
        problems.append("no table in the table's section")
    else:
        rows = [re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row, re.S)
                for row in re.findall(r"<tr[^>]*>(.*?)</tr>", table.group(1), re.S)]
        named = [r for r in rows if r and r[0].strip() in [*classes, "mean"]]
        if [r[0].strip() for r in named] != [*classes, "mean"]:
            problems.append(f"the table's rows are {[r[0] for r in rows]}, expected "
                            f"{[*classes, 'mean']}")
        if any(len(r) < 1 + n_methods for r in named):
            problems.append(f"a table row has fewer than {1 + n_methods} cells")
    shot = workdir / "screenshot.png"
    shot.unlink(missing_ok=True)
    _headless(chrome, workdir / "profile", f"--screenshot={shot}", "--window-size=1200,2400",
              "--hide-scrollbars", path.resolve().as_uri())
    if not shot.is_file():
        return [*problems, "the browser wrote no screenshot"]
    pixels = np.asarray(Image.open(shot).convert("RGB"))
    colours = len(np.unique(pixels.reshape(-1, 3), axis=0))
    drawn = float(np.mean(np.any(pixels < 240, axis=2)))
    # text on white has a few dozen colours; figures and photos thousands
    if colours < 1000 or drawn < 0.05:
        problems.append(f"the screenshot looks blank ({colours} colours, {drawn:.1%} of it "
                        "not white)")
    return problems


def _expected_images(out, results) -> int:
    """Pictures of a report: each class's gallery cells and its figures."""
    n_val = len(VOCDataset(results["data_root"]).ids(results["eval_split"]))
    figures = sum((out / "figures" / f"{k}-{c}.png").is_file()
                  for k in FIGURE_TITLES for c in results["classes"])
    return len(results["classes"]) * n_val * (2 + len(results["methods"])) + figures


def test_the_report_renders_in_a_browser(finished, tmp_path):
    out, _ = finished
    results = read_results(out)
    n_images = _expected_images(out, results)
    assert n_images > 2 + len(METHODS)
    assert report_problems(out / REPORT_FILE, tmp_path, results["classes"], len(METHODS),
                           n_images) == []


def test_a_broken_or_missing_picture_fails_the_check(finished, tmp_path):
    out, _ = finished
    results = read_results(out)
    n_images = _expected_images(out, results)
    page = (out / REPORT_FILE).read_text()
    browser()                  # skip before any work without a browser
    # one gallery picture's data cut short: the browser cannot decode it
    broken = tmp_path / "broken.html"
    start = page.index('<div class="row')
    uri = page.index("data:image/png;base64,", start) + len("data:image/png;base64,")
    broken.write_text(page[:uri] + "AAAA" + page[uri + 200:])
    problems = report_problems(broken, tmp_path, results["classes"], len(METHODS), n_images)
    assert any("could not decode" in p for p in problems), problems
    # the gallery's pictures gone from the page
    missing = tmp_path / "missing.html"
    missing.write_text(re.sub(r"<figure>.*?</figure>", "", page, flags=re.S))
    problems = report_problems(missing, tmp_path, results["classes"], len(METHODS), n_images)
    assert any("expected" in p for p in problems), problems


def test_the_switch_shows_only_the_disagreements(finished, tmp_path):
    """The page opened with "only the disagreements" chosen shows those rows alone."""
    out, _ = finished
    page = (out / REPORT_FILE).read_text()
    chrome = browser()
    n_rows, n_disagree = page.count('<div class="row '), page.count('<div class="row disagree"')
    assert n_rows > n_disagree           # the fixture has images the methods agree on
    only = tmp_path / "only.html"
    only.write_text(page.replace('id="all-car" checked>', 'id="all-car">')
                    .replace('id="only-car">', 'id="only-car" checked>'))
    for path, shown in ((out / REPORT_FILE, n_rows), (only, n_disagree)):
        dom = _headless(chrome, tmp_path / "profile", "--dump-dom",
                        path.resolve().as_uri()).stdout
        assert re.search(r'<body[^>]*data-rows-shown="(\d+)"', dom).group(1) == str(shown)


def test_the_page_names_nothing_outside_itself(finished):
    out, _ = finished
    page = (out / REPORT_FILE).read_text()
    links = re.findall(r"""(?:src|href)\s*=\s*["']([^"']*)["']""", page)
    assert links and all(v.startswith(("data:image/png;base64,", "#")) for v in links), \
        sorted({v[:40] for v in links})
    assert not re.search(r"https?://", page)
    assert "<link" not in page and not re.search(r"<script[^>]*\bsrc=", page)
    assert "@import" not in page and "url(" not in page


def test_the_table_shows_the_results(finished):
    out, _ = finished
    results = read_results(out)
    table = re.search(r'<section id="table">.*?</table>', (out / REPORT_FILE).read_text(),
                      re.S).group(0)
    spans = results["intervals"]
    for c in results["classes"]:
        row = re.search(rf"<tr[^>]*><th>{c}</th>(.*?)</tr>", table).group(1)
        cells = re.findall(r"<td>([^<]*)</td>", row)
        assert [cell.split(" [")[0] for cell in cells] == [
            f"{results['table']['iou_percent'][c][m]:.2f}" for m in results["methods"]]
        low, high = spans["iou_percent"][c][results["methods"][0]]
        assert f"[{low:.1f}, {high:.1f}]" in cells[0]
        # the difference from proposed, with its verdict
        difference = spans["difference"][c]["bl1"]
        assert difference["verdict"] in row and f"{difference['difference']:+.1f} [" in row


def test_the_gallery_scores_each_image_as_the_evaluation_did(finished):
    """The per-image counts of every image add up to the record's VOC score,
    and the page shows each image's IoU of them, most disagreement first."""
    out, _ = finished
    results = read_results(out)
    record = results["results"][0]
    dataset = VOCDataset(results["data_root"])
    from segstruct.segmentation_model import SegmentationModel
    model = SegmentationModel.load(out / record["model"])
    ids = dataset.ids(results["eval_split"])
    panels = qualitative_panels(model.extractor(dataset), record["class"],
                                results["eval_split"], ids, {"m": model.estimator})
    totals = np.sum([p["counts"]["m"] for p in panels], axis=0)
    score = record["eval_score"]
    assert list(totals) == [score["tp"], score["fp"], score["fn"]]
    page = (out / REPORT_FILE).read_text()
    rows = re.findall(r'<div class="row (agree|disagree)" data-image="([^"]+)">.*?spread '
                      r"([0-9.]+) points", page, re.S)
    assert sorted(i for _, i, _ in rows) == sorted(ids)
    spreads = [float(s) for _, _, s in rows]
    assert spreads == sorted(spreads, reverse=True)
    assert [k for k, _, _ in rows] == ["disagree" if s >= DISAGREEMENT_POINTS else "agree"
                                       for s in spreads]
    # the record's method: its IoU under each image's mask
    method = record["method"]
    for panel in panels:
        tp, fp, fn = panel["counts"]["m"]
        shown = "-" if tp + fp + fn == 0 else f"{100 * tp / (tp + fp + fn):.1f} %"
        row = re.search(rf'data-image="{panel["image_id"]}">.*?</figure></div>', page, re.S)
        assert f"{method}<br>IoU {shown}<" in row.group(0)


def test_a_records_per_image_counts_are_used(finished):
    out, _ = finished
    results = json.loads((out / "results.json").read_text())
    dataset = VOCDataset(results["data_root"])
    ids = dataset.ids(results["eval_split"])
    for k, r in enumerate(results["results"]):
        r["eval_ids"] = ids
        # counts no model would give: IoU 1/(1+k+1+j) for image j
        r["eval_score"]["per_image"] = [[1, k + j, 1] for j in range(len(ids))]
    section = class_section(out, results, "car", dataset)
    for row in section.rows:
        j = ids.index(row.image_id)
        assert row.iou == {r["method"]: pytest.approx(100 / (2 + k + j))
                           for k, r in enumerate(results["results"])}
    assert section.n_images == len(ids)


def test_report_rebuilds_the_page_from_the_folder(finished, tmp_path, capsys):
    out, cache = finished
    page = (out / REPORT_FILE).read_text()
    target = tmp_path / "again.html"
    assert main(["report", str(out), "--output", str(target), "-q", *cache]) == 0
    assert target.read_text() == page
    # one image per class: the one where the methods disagree most
    assert main(["report", str(out), "--output", str(target), "--gallery-images", "1",
                 "-q", *cache]) == 0
    assert target.read_text().count('<div class="row') == 1


def test_report_refuses_a_folder_without_results(tmp_path, capsys):
    assert main(["report", str(tmp_path), "-q"]) == 2
    err = capsys.readouterr().err
    assert "holds no results.json" in err and "--out folder" in err
    (tmp_path / "results.json").write_text('{"format": "other"}')
    assert main(["report", str(tmp_path), "-q"]) == 2
    assert "segstruct-comparison" in capsys.readouterr().err
    # data moved since: the page needs them, and --data says where
    (tmp_path / "results.json").write_text(json.dumps(
        {"format": "segstruct-comparison", "data_root": str(tmp_path / "gone")}))
    with pytest.raises(SystemExit) as exc:
        main(["report", str(tmp_path), "-q"])
    assert exc.value.code == 2 and "give --data ROOT" in capsys.readouterr().err


def test_compare_without_the_report(finished, data_root, tmp_path):
    """--no-report writes no page (a resumed run: nothing is trained again)."""
    out, cache = finished
    copy = tmp_path / "out"
    shutil.copytree(out, copy)
    (copy / REPORT_FILE).unlink()
    assert main(["compare", "--data", str(data_root), "--classes", "car", "--methods",
                 *METHODS, "--max-iter", "10", "--C", f"{DEFAULT_C:g}", "--no-figures",
                 "--no-report", "--out", str(copy), *cache, *SMALL]) == 0
    assert (copy / "table.md").is_file() and not (copy / REPORT_FILE).exists()
