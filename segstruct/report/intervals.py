"""The comparison's table with its intervals and verdicts, as rows of cells
that the Markdown, CSV and HTML tables share.

``results`` is results.json's content; its ``intervals`` entry is
:func:`segstruct.compare.store.table_intervals`'s (absent from results made
before intervals were kept: the cells then carry none).
"""
from __future__ import annotations

import html
from dataclasses import dataclass

from segstruct.io.text import MISSING, fmt

__all__ = ["Cell", "Difference", "difference_text", "interval_note", "interval_rows",
           "interval_text", "table_html"]


@dataclass(frozen=True)
class Cell:
    """One method's IoU % on one row: the evaluation split's, its interval
    ([low, high] or None) and the training split's (or None)."""
    value: float | None
    interval: list | None
    train: float | None

    def text(self, brackets: bool = True) -> str:
        """e.g. "67.60 [54.6, 81.3] (71.9)"."""
        out = fmt(self.value) + interval_text(self.interval)
        if brackets and self.train is not None:
            out += f" ({fmt(self.train, '.1f')})"
        return out


@dataclass(frozen=True)
class Difference:
    """A method's IoU minus the reference's on one row, with its paired
    interval and verdict (all None where the counts are missing)."""
    value: float | None
    interval: list | None
    verdict: str | None

    def text(self) -> str:
        """e.g. "-8.2 [-23.9, -0.8], proposed better"."""
        if self.value is None:
            return MISSING
        return difference_text(self.value, self.interval) + f", {self.verdict}"


def interval_text(interval) -> str:
    """" [low, high]" in points with one decimal, or "" without an interval."""
    if interval is None:
        return ""
    return f" [{interval[0]:.1f}, {interval[1]:.1f}]"


def difference_text(value: float, interval) -> str:
    """A signed difference and its interval, e.g. "+0.8 [-0.3, +1.9]"; a
    bound that is not 0 but rounds to it keeps two decimals ("+0.02"), so
    that an interval that excludes 0 never reads as holding it."""
    text = f"{value:+.1f}"
    if interval is not None:
        text += f" [{_bound(interval[0])}, {_bound(interval[1])}]"
    return text


def _bound(v: float) -> str:
    return f"{v:+.2f}" if v != 0 and round(v, 1) == 0 else f"{v:+.1f}"


def _reference(results: dict) -> str | None:
    intervals = results.get("intervals")
    return None if not intervals else intervals["reference"]


def interval_rows(results: dict):
    """(row name, [Cell per method], {method: Difference}) for each class and
    then "mean"; the differences are every method's but the reference's."""
    table = results["table"]
    intervals = results.get("intervals") or {}
    reference = _reference(results)
    methods = results["methods"]
    others = [m for m in methods if m != reference] if reference else []
    rows = [(c, table["iou_percent"].get(c, {}), table.get("train_iou_percent", {}).get(c, {}),
             intervals.get("iou_percent", {}).get(c, {}),
             intervals.get("difference", {}).get(c, {})) for c in results["classes"]]
    rows.append(("mean", table.get("mean_iou_percent", {}),
                 table.get("mean_train_iou_percent", {}),
                 intervals.get("mean_iou_percent", {}), intervals.get("mean_difference", {})))
    for name, values, train, spans, differences in rows:
        cells = [Cell(values.get(m), spans.get(m), train.get(m)) for m in methods]
        diffs = {}
        for m in others:
            d = differences.get(m)
            diffs[m] = (Difference(None, None, None) if d is None else
                        Difference(d["difference"], d["interval"], d["verdict"]))
        yield name, cells, diffs


def interval_note(results: dict) -> str:
    """What the brackets and verdicts mean, for under a table."""
    intervals = results.get("intervals")
    if not intervals:
        return ("No intervals: these records were made before each image's counts were "
                "kept; train the pairs again (another --out) to get them.")
    reference = intervals["reference"]
    mean = intervals.get("mean_classes", [])
    text = (f"In square brackets: the {100 * intervals['confidence']:g} % interval of the "
            f"pooled VOC measure over {intervals['n_resamples']} bootstrap resamples of the "
            f"{results['eval_split']} images (seed {intervals['seed']}); the mean row's "
            f"resamples draw the images of each class (one draw for classes scored on the "
            f"same images) and average over {len(mean)} classes. Each difference from "
            f"{reference} is paired: the same resampled images for both methods. "
            f"\"No clear difference\": the interval holds 0; \"within the fit-path spread\": "
            f"the interval excludes 0 but the difference is under "
            f"{intervals['spread_points']:g} points, which refits of one method at one C "
            f"can move.")
    if intervals.get("without_counts"):
        text += (" No interval for " + ", ".join(intervals["without_counts"])
                 + ": their records were made before each image's counts were kept.")
    return text


def table_html(results: dict) -> str:
    """The table as an HTML fragment: a ``<table class="comparison">`` with a
    row per class and the mean, a column per method (val IoU %, interval,
    train IoU % in brackets) and per difference from the reference (with its
    verdict), then the note on the intervals in a ``<p>``."""
    reference = _reference(results)
    methods = results["methods"]
    others = [m for m in methods if m != reference] if reference else []
    e = html.escape
    head = "".join(f"<th>{e(m)}</th>" for m in methods) + "".join(
        f"<th>{e(m)} &minus; {e(str(reference))}</th>" for m in others)
    lines = ['<table class="comparison">', f"<thead><tr><th>class</th>{head}</tr></thead>",
             "<tbody>"]
    for name, cells, diffs in interval_rows(results):
        tds = "".join(f"<td>{e(c.text())}</td>" for c in cells)
        for m in others:
            d = diffs[m]
            verdict = (d.verdict or "").replace(" ", "-")
            tds += (f'<td class="verdict {e(verdict)}">'
                    f"{e(MISSING if d.value is None else difference_text(d.value, d.interval))}"
                    f"<br><small>{e(d.verdict or '')}</small></td>")
        row_class = ' class="mean"' if name == "mean" else ""
        lines.append(f"<tr{row_class}><th>{e(name)}</th>{tds}</tr>")
    lines += ["</tbody>", "</table>", f'<p class="note">{e(interval_note(results))}</p>']
    return "\n".join(lines)
