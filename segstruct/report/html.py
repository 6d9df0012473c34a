"""``report.html``: a comparison as one self-contained page.

The page holds everything itself: every picture is an inline PNG (a
``data:image/png;base64`` URI), the style is inline, and the only script is
a few lines of inline JavaScript that count the pictures the browser could
decode and the gallery rows it shows (the ``data-images-ok``,
``data-images-broken`` and ``data-rows-shown`` attributes of ``<body>``,
read by the browser test). No address outside the file is named,
so it opens from a disk, a mail or an archive, with no server and no
network. Showing all gallery images or only the disagreements is a pair of
radio buttons and a CSS rule: it works with scripts switched off.

Sections: the table of VOC IoU with its intervals and verdicts, then per
class its training curves, cross-validation curve of C and loss surface
(the PNGs compare drew) and its gallery (:mod:`segstruct.report.gallery`),
then the settings, features and code version that made it.
"""
from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from html import escape

from segstruct.report.gallery import DISAGREEMENT_POINTS, GalleryRow
from segstruct.report.intervals import table_html

__all__ = ["FIGURE_TITLES", "ClassSection", "data_uri", "report_html"]

#: The figures of a class, in the page's order, and their headings.
FIGURE_TITLES = {"training": "Training curves", "cv": "Cross-validation curve of C",
                 "loss-surface": "Loss surface"}

_STYLE = """
body { font-family: sans-serif; margin: 1.5em; color: #222; background: #fff; }
table.scores { border-collapse: collapse; margin: 0.5em 0 1em; }
table.scores th, table.scores td { border: 1px solid #bbb; padding: 0.25em 0.6em;
  text-align: right; }
table.scores th:first-child, table.scores td:first-child { text-align: left; }
.figures img { max-width: 100%; border: 1px solid #ddd; margin: 0.3em 0; }
.gallery .row { display: flex; flex-wrap: wrap; gap: 4px; margin: 6px 0;
  padding: 4px; border-top: 1px solid #ddd; }
.gallery .row > .id { width: 9em; font-size: 0.85em; align-self: center; }
.gallery figure { margin: 0; text-align: center; font-size: 0.8em; }
.gallery img { display: block; }
.note { color: #555; font-size: 0.9em; }
input.only:checked ~ .gallery .agree { display: none; }
input.only:checked ~ .gallery .none-disagree { display: block; }
.gallery .none-disagree { display: none; }
pre { background: #f6f6f6; padding: 0.6em; overflow-x: auto; font-size: 0.85em; }
"""

#: Counts the pictures the browser decoded and the gallery rows it shows
#: once the page has loaded: what the browser test reads from the dumped DOM.
_CHECK_SCRIPT = """
window.addEventListener("load", function () {
  var ok = 0, broken = 0, shown = 0;
  document.querySelectorAll("img").forEach(function (img) {
    if (img.complete && img.naturalWidth > 0) { ok += 1; } else { broken += 1; }
  });
  document.querySelectorAll(".gallery .row").forEach(function (row) {
    if (row.offsetParent !== null) { shown += 1; }
  });
  document.body.dataset.imagesOk = String(ok);
  document.body.dataset.imagesBroken = String(broken);
  document.body.dataset.rowsShown = String(shown);
});
"""


@dataclass
class ClassSection:
    """What the page shows of one class.

    Attributes
    ----------
    class_name : str
    rows : list of GalleryRow, in the order shown (most disagreement first).
    n_images : int, the class's evaluation images (``rows`` may hold fewer).
    figures : dict, key of :data:`FIGURE_TITLES` -> PNG bytes (a key absent:
        no such figure, said on the page).
    notes : list of str, lines shown under the class's heading.
    """

    class_name: str
    rows: list[GalleryRow] = field(default_factory=list)
    n_images: int = 0
    figures: dict[str, bytes] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def data_uri(png: bytes) -> str:
    """PNG bytes as a ``data:image/png;base64,...`` URI."""
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def _gallery_html(section: ClassSection, methods) -> str:
    """A class's gallery with its "all / only the disagreements" switch."""
    name = escape(section.class_name)
    if not section.rows:
        return '<p class="note">No gallery: no evaluation image was labelled.</p>'
    n_disagree = sum(r.disagree for r in section.rows)
    shown = (f"the {len(section.rows)} of {section.n_images} evaluation images where the "
             "methods disagree most" if len(section.rows) < section.n_images
             else f"all {section.n_images} evaluation images")
    parts = [f'<p class="note">Ground truth and every method\'s mask on {shown}, most '
             "disagreement first; under each mask its per-image IoU (- where undefined: no "
             "foreground in truth nor mask). An image counts as a disagreement when the "
             f"methods' per-image IoU span at least {DISAGREEMENT_POINTS:g} points.</p>",
             f'<input type="radio" class="all" name="show-{name}" id="all-{name}" checked>'
             f'<label for="all-{name}">all {len(section.rows)} images</label> '
             f'<input type="radio" class="only" name="show-{name}" id="only-{name}">'
             f'<label for="only-{name}">only the {n_disagree} disagreement(s)</label>',
             f'<div class="gallery" id="gallery-{name}">',
             '<p class="note none-disagree">The methods agree on every image shown.</p>'
             if n_disagree == 0 else ""]
    for row in section.rows:
        cells = []
        for title, png in row.cells:
            value = row.iou.get(title)
            score = ("" if title not in row.iou else
                     "<br>IoU -" if value is None else f"<br>IoU {value:.1f} %")
            cells.append(f'<figure><img src="{data_uri(png)}" alt="{escape(row.image_id)}: '
                         f'{escape(title)}"><figcaption>{escape(title)}{score}</figcaption>'
                         "</figure>")
        kind = "disagree" if row.disagree else "agree"
        parts.append(f'<div class="row {kind}" data-image="{escape(row.image_id)}">'
                     f'<div class="id">{escape(row.image_id)}<br>spread '
                     f"{row.spread:.1f} points</div>{''.join(cells)}</div>")
    parts.append("</div>")
    return "\n".join(parts)


def _section_html(section: ClassSection, methods) -> str:
    name = escape(section.class_name)
    parts = [f'<section class="class" id="class-{name}">', f"<h2>{name}</h2>"]
    parts += [f'<p class="note">{escape(n)}</p>' for n in section.notes]
    parts.append('<div class="figures">')
    for key, title in FIGURE_TITLES.items():
        parts.append(f"<h3>{escape(title)}</h3>")
        png = section.figures.get(key)
        parts.append(f'<img src="{data_uri(png)}" alt="{name}: {escape(title)}">' if png else
                     f'<p class="note">No {escape(title.lower())} figure in this comparison '
                     "(compare draws it unless --no-figures; the cross-validation curve "
                     "only with --C auto, the loss surface only for a method with the "
                     "true loss).</p>")
    parts.append("</div>")
    parts.append(f"<h3>Gallery</h3>\n{_gallery_html(section, methods)}")
    parts.append("</section>")
    return "\n".join(parts)


def _provenance_html(results: dict) -> str:
    """Settings, features, splits, seed, code version and machine."""
    keys = ("dataset", "data_root", "train_split", "eval_split", "seed", "code_version")
    items = "".join(f"<li>{escape(k.replace('_', ' '))}: {escape(str(results.get(k)))}</li>"
                    for k in keys)
    blocks = "".join(
        f"<h3>{escape(title)}</h3><pre>{escape(json.dumps(results.get(key), indent=2))}</pre>"
        for title, key in (("Training settings", "settings"), ("Features", "features"),
                           ("Machine", "machine")))
    return f'<section id="provenance"><h2>What made it</h2><ul>{items}</ul>{blocks}</section>'


def report_html(results: dict, sections) -> str:
    """The page of a comparison.

    Parameters
    ----------
    results : dict, the content of the comparison's results.json.
    sections : list of ClassSection, one per compared class, in the table's order.

    Returns
    -------
    str, a whole HTML document.
    """
    methods = results["methods"]
    title = (f"segstruct comparison: {results['dataset']}, "
             f"{results['train_split']} / {results['eval_split']}")
    skipped = "".join(f"<li>{escape(c)}: {escape(why)}</li>"
                      for c, why in (results.get("skipped") or {}).items())
    warnings = "".join(f"<li>{escape(c)}: {escape(w)}</li>"
                       for c, w in (results.get("detector_warnings") or {}).items())
    contents = "".join(f'<li><a href="#class-{escape(s.class_name)}">{escape(s.class_name)}'
                       "</a></li>" for s in sections)
    body = [f"<h1>{escape(title)}</h1>",
            f'<p class="note">Methods {escape(", ".join(methods))}; code '
            f"{escape(str(results.get('code_version')))}.</p>",
            '<section id="table"><h2>VOC IoU (%) on the evaluation split</h2>',
            table_html(results),
            f"<p>Left out:</p><ul>{skipped}</ul>" if skipped else "",
            f"<p>Detector warnings:</p><ul>{warnings}</ul>" if warnings else "",
            "</section>",
            f'<nav><h2>Classes</h2><ul>{contents}</ul><a href="#provenance">What made it</a>'
            "</nav>",
            *(_section_html(s, methods) for s in sections),
            _provenance_html(results)]
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<title>{escape(title)}</title>\n<style>{_STYLE}</style>\n"
            f"<script>{_CHECK_SCRIPT}</script>\n</head>\n<body>\n" + "\n".join(body)
            + "\n</body>\n</html>\n")
