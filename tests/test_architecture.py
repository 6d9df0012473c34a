"""The import graph keeps the architecture: solvers alone, imports downwards only.

Read from the source (``ast``), so nothing is imported and a violation names
the file and line:

- ``inference/`` (installed as ``segstruct.inference``) imports only the
  standard library, numpy, scipy, highspy, PyMaxflow and itself: the solvers
  work on plain arrays and can be used and tested without the rest;
- ``datasets/`` likewise, with Pillow for images;
- no module imports a private name (``_x``) of another module, and a private
  module (``_mrf``) is imported only from inside its own package;
- every module of ``segstruct`` imports only from its own layer or a lower
  one (``LAYERS``, lowest first): data flows up from solvers and data sets to
  features, learning, storage and reports, and the command line sits on top.
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# (folder, the package it installs as)
PACKAGES = (("segstruct", "segstruct"), ("inference", "segstruct.inference"),
            ("datasets", "segstruct.datasets"))

THIRD_PARTY = {
    "segstruct.inference": {"numpy", "scipy", "highspy", "maxflow"},
    "segstruct.datasets": {"numpy", "scipy", "PIL"},
}

# Modules of segstruct by layer, lowest first, as paths below segstruct; a
# package name stands for all its modules. The package's __init__ (the public
# API) may import anything.
LAYERS = (
    ("inference", "datasets"),
    ("_version", "_build", "io.files", "io.provenance", "cluster"),
    ("features", "io.checkpoint"),
    ("model", "learn", "evaluate"),
    ("io.persistence", "report"),
    ("compare", "workflow", "predict"),
    ("cli", "__main__"),
)


def module_files():
    """(module name, package name, path) of every module of the three packages."""
    for folder, package in PACKAGES:
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = path.relative_to(ROOT / folder).with_suffix("").parts
            if parts[-1] == "__init__":
                name = ".".join((package, *parts[:-1]))
                yield name, name, path
            else:
                name = ".".join((package, *parts))
                yield name, name.rpartition(".")[0], path


def imports(source: str, package: str):
    """(line, imported module, imported names) of every import in ``source``.

    Relative imports are resolved against ``package``; ``from . import x``
    counts as importing module ``package.x``.
    """
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, ()
        elif isinstance(node, ast.ImportFrom):
            names = tuple(alias.name for alias in node.names)
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1])
                module = f"{base}.{node.module}" if node.module else base
                if not node.module:
                    for name in names:
                        yield node.lineno, f"{module}.{name}", ()
                    continue
            else:
                module = node.module
            yield node.lineno, module, names


def is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def layer_of(module: str) -> int | None:
    """Layer index of a segstruct module, None for the package itself."""
    if module == "segstruct":
        return None
    parts = module.split(".")[1:]
    for n in range(len(parts), 0, -1):       # the longest prefix LAYERS names decides
        for index, members in enumerate(LAYERS):
            if ".".join(parts[:n]) in members:
                return index
    raise AssertionError(f"module {module} is in no layer of LAYERS: add it")


def violations(name: str, package: str, source: str) -> list[str]:
    """Every rule that ``source`` (module ``name`` of ``package``) breaks."""
    found = []
    # the self-contained subpackage the module belongs to, if any
    own = next((p for p in THIRD_PARTY if name == p or name.startswith(p + ".")), None)
    for line, module, names in imports(source, package):
        top = module.split(".")[0]
        where = f"{name}:{line} imports {module}"
        if own is not None:
            inside = module == own or module.startswith(own + ".")
            allowed = (top in sys.stdlib_module_names or top in THIRD_PARTY[own] or inside)
            if not allowed:
                found.append(f"{where}: {own} may import only the standard library, "
                             f"{', '.join(sorted(THIRD_PARTY[own]))} and itself")
        for part_index, part in enumerate(module.split(".")):
            if is_private(part) and module.startswith("segstruct"):
                owner = ".".join(module.split(".")[:part_index])
                if not (package == owner or package.startswith(owner + ".")):
                    found.append(f"{where}: a private module of another package")
        for imported in names:
            if is_private(imported):
                found.append(f"{where}: private name {imported}")
        if top == "segstruct" and name.startswith("segstruct.") and own is None:
            mine, theirs = layer_of(name), layer_of(module)
            if theirs is None:
                found.append(f"{where}: the public API module from inside the package")
            elif mine is not None and theirs > mine:
                found.append(f"{where}: layer {theirs} from layer {mine} (see LAYERS)")
    return found


def test_every_module_keeps_the_rules():
    found = []
    for name, package, path in module_files():
        found += violations(name, package, path.read_text(encoding="utf-8"))
    assert not found, "\n".join(found)


def test_every_segstruct_module_has_a_layer():
    for name, package, _ in module_files():
        # a subpackage's __init__ (name == package) imports nothing
        if name != package and not name.startswith(tuple(THIRD_PARTY)):
            layer_of(name)


@pytest.mark.parametrize("name, package, source, rule", [
    ("segstruct.inference.bl2", "segstruct.inference",
     "from segstruct.losses import get_loss\n", "may import only"),
    ("segstruct.inference.bl2", "segstruct.inference", "import skimage\n", "may import only"),
    ("segstruct.datasets.voc", "segstruct.datasets", "from ..cache import ArrayCache\n",
     "may import only"),
    ("segstruct.inference.lp", "segstruct.inference",
     "from .graphcut import _min_cut\n", "private name"),
    ("segstruct.learn.qp", "segstruct.learn",
     "from segstruct.inference._mrf import raw_score\n", "private module"),
    ("segstruct.learn.ssvm", "segstruct.learn", "from ..compare import Comparison\n", "layer"),
    ("segstruct.features.cache", "segstruct.features", "from .. import cli\n", "layer"),
    ("segstruct.io.provenance", "segstruct.io", "from .persistence import load_model\n",
     "layer"),
])
def test_the_checker_finds_each_kind_of_violation(name, package, source, rule):
    found = violations(name, package, source)
    assert found and rule in found[0], found


def test_allowed_imports_pass_the_checker():
    assert violations("segstruct.inference.lp", "segstruct.inference",
                      "import numpy as np\nfrom ._mrf import exact_result\n"
                      "from .highs import run\nimport math\n") == []
    assert violations("segstruct.cli", "segstruct",
                      "from .compare import Comparison\nfrom segstruct.inference import bl2\n") == []
    assert violations("segstruct.io.provenance", "segstruct.io",
                      "from segstruct._version import __version__\n") == []


def test_every_package_folder_is_installed():
    """pyproject.toml lists the packages one by one (inference/ and datasets/
    install under segstruct.): a new folder left out of the list is missing
    from a regular install, though an editable one hides it."""
    import re
    text = (ROOT / "pyproject.toml").read_text()
    start = text.index("packages = [")
    listed = set(re.findall(r'"([\w.]+)"', text[start:text.index("]", start)]))
    found = set()
    for top, name in (("segstruct", "segstruct"), ("inference", "segstruct.inference"),
                      ("datasets", "segstruct.datasets")):
        for init in (ROOT / top).rglob("__init__.py"):
            parts = init.parent.relative_to(ROOT / top).parts
            found.add(".".join((name, *parts)))
    assert found == listed
