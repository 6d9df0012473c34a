"""Sphinx configuration of segstruct's documentation site.

Build it, strictly (every warning an error), from the repository root with

    pip install -e ".[docs]"
    sphinx-build -W --keep-going -b html docs docs/_build/html

The build needs no network: no intersphinx, no remote images.
"""
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))  # the local extension of the gallery

import segstruct  # noqa: E402  (the installed package; its version names the site)

project = "segstruct"
author = "the segstruct authors"
copyright = "the segstruct authors; GPL-3.0-or-later"
release = segstruct.__version__
version = release

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
    "gallery",
]

# The pages are Markdown (MyST); the API pages that autosummary writes are reST.
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store", "studies"]
templates_path = ["_templates"]

# -- MyST ------------------------------------------------------------------
# `page.md#heading-slug` links resolve to headings of levels 1-3 (GitHub's slugs)
myst_heading_anchors = 3
# no `$...$` maths: `$DATA` and `$SEGSTRUCT_CACHE` are shell variables here
myst_enable_extensions = ["colon_fence"]

# -- autodoc / autosummary -------------------------------------------------
autosummary_generate = True  # writes docs/api/generated/ at build time (.gitignore'd)
# written afresh at every build: a page of a name that has since moved or gone
# would otherwise stay and fail the strict build
shutil.rmtree(Path(__file__).parent / "api" / "generated", ignore_errors=True)
# a module's listing follows its __all__ where it has one
autosummary_ignore_module_all = False
autosummary_imported_members = False
autodoc_default_options = {"member-order": "bysource"}
# the signatures carry the type hints; the numpydoc sections describe them
autodoc_typehints = "signature"
autodoc_preserve_defaults = True

# -- numpydoc --------------------------------------------------------------
# autosummary's templates list the members; numpydoc would list them again
numpydoc_show_class_members = False
numpydoc_show_inherited_class_members = False
numpydoc_class_members_toctree = False
# the docstrings are read, not validated (no GL01/SS05/... style checks)
numpydoc_validation_checks = set()
# `Returns` names like "ndarray" stay plain text: no intersphinx to resolve them
numpydoc_xref_param_type = False

# -- HTML ------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"segstruct {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "header_links_before_dropdown": 8,
}
html_static_path = []
html_show_sourcelink = False
