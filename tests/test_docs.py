"""The documentation site (docs/): its API reference names every public name, and
the strict Sphinx build succeeds."""
import re
import subprocess
import sys
from pathlib import Path

import pytest

import segstruct

DOCS = Path(__file__).resolve().parents[1] / "docs"
API = DOCS / "api" / "index.md"


def test_api_reference_lists_every_public_name():
    source = API.read_text(encoding="utf-8")
    listed = set(re.findall(r"^\s+segstruct\.([A-Za-z_][A-Za-z0-9_]*)\s*$", source, re.M))
    missing = [name for name in segstruct.__all__ if name not in listed]
    assert not missing, f"segstruct.__all__ names missing from {API}: {missing}"


@pytest.mark.slow
def test_strict_sphinx_build(tmp_path):
    pytest.importorskip("sphinx", reason="sphinx is not installed: pip install -e '.[docs]'")
    for module in ("myst_parser", "numpydoc", "pydata_sphinx_theme"):
        pytest.importorskip(module, reason=f"{module} is not installed: pip install -e '.[docs]'")
    build = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
         "-d", str(tmp_path / "doctrees"), str(DOCS), str(tmp_path / "html")],
        capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stdout + build.stderr
    assert (tmp_path / "html" / "index.html").is_file()
    assert (tmp_path / "html" / "api" / "generated" / "segstruct.VOCDataset.html").is_file()
