"""A gallery of the figures the benchmark runner makes.

The figures are made by ``scripts/bench.py`` into ``results/`` (outside
``docs/``), and how many a benchmark draws depends on its data (one per
class, say), so the gallery names them by glob patterns rather than one by
one. Each entry of a ``gallery`` directive is a pattern, relative to the
page, and a caption; every file that matches becomes a figure. A pattern
that matches nothing is a warning, so the strict build fails when a figure
the page promises has gone. In MyST::

    ```{gallery}
    ../results/first_run/compare/figures/qualitative-*.png | Masks beside the ground truth ({stem})
    ```

``{stem}`` in a caption is replaced by the file's name without its suffix.
"""
from __future__ import annotations

import glob
import os
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

logger = logging.getLogger(__name__)


class GalleryDirective(SphinxDirective):
    """``gallery``: one figure per existing file of each ``pattern | caption`` line."""

    has_content = True
    option_spec = {"width": directives.unchanged}

    def run(self) -> list[nodes.Node]:
        # the files may appear or go between builds: read this page every time
        self.env.note_reread()
        page_dir = Path(self.env.doc2path(self.env.docname)).parent
        out: list[nodes.Node] = []
        for line in self.content:
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            pattern, _, caption = (part.strip() for part in line.partition("|"))
            paths = sorted(glob.glob(str(page_dir / pattern)))
            if not paths:
                logger.warning(f"gallery: no file matches {pattern!r} (run the benchmark "
                               "that makes it: python scripts/bench.py list)",
                               location=(self.env.docname, self.lineno))
            for path in paths:
                uri = Path(os.path.relpath(path, page_dir)).as_posix()
                stem = Path(path).stem
                image = nodes.image(uri=uri, alt=stem)
                if "width" in self.options:
                    image["width"] = self.options["width"]
                text = (caption or "{stem}").replace("{stem}", stem)
                figure = nodes.figure("", image, nodes.caption(text, text))
                figure += nodes.legend("", nodes.paragraph("", "", nodes.literal(uri, uri)))
                out.append(figure)
        return out


def setup(app):
    app.add_directive("gallery", GalleryDirective)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
