"""A gallery of figures that exist when the site is built.

The figures are made by the benchmark runner into ``results/`` (outside
``docs/``), which is remade from time to time, so the gallery cannot name
fixed files: a missing image would break the strict build. Each entry of a
``gallery`` directive is a glob pattern, relative to the page, and a caption;
every file that matches when the site is built becomes a figure, and a
pattern that matches nothing is left out. In MyST::

    ```{gallery}
    ../results/first_run/figures/qualitative-*.png | Predicted masks beside the ground truth
    ../results/first_run/figures/training-*.png | Training curves
    ```

``{stem}`` in a caption is replaced by the file's name without its suffix.
With no file at all, the directive writes the ``:empty:`` option's text.
The page is read again on every build, so new figures appear without a
clean build.
"""
from __future__ import annotations

import glob
import os
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.util.docutils import SphinxDirective


class GalleryDirective(SphinxDirective):
    """``gallery``: one figure per existing file of each ``pattern | caption`` line."""

    has_content = True
    option_spec = {"empty": directives.unchanged, "width": directives.unchanged}

    def run(self) -> list[nodes.Node]:
        # the files may appear or go between builds: read this page every time
        self.env.note_reread()
        page_dir = Path(self.env.doc2path(self.env.docname)).parent
        out: list[nodes.Node] = []
        for line in self.content:
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            pattern, _, caption = (part.strip() for part in line.partition("|"))
            for path in sorted(glob.glob(str(page_dir / pattern))):
                uri = Path(os.path.relpath(path, page_dir)).as_posix()
                stem = Path(path).stem
                image = nodes.image(uri=uri, alt=stem)
                if "width" in self.options:
                    image["width"] = self.options["width"]
                text = (caption or "{stem}").replace("{stem}", stem)
                figure = nodes.figure("", image, nodes.caption(text, text))
                figure += nodes.legend("", nodes.paragraph("", "", nodes.literal(uri, uri)))
                out.append(figure)
        if not out:
            text = self.options.get("empty", "No figure has been made yet.")
            out.append(nodes.paragraph(text, text))
        return out


def setup(app):
    app.add_directive("gallery", GalleryDirective)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
