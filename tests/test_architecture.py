"""The import graph keeps the architecture: solvers alone, imports downwards only.

Read from the source (``ast``), so nothing is imported and a violation names
the file and line:

- ``inference/`` (installed as ``segstruct.inference``) imports only the
  standard library, numpy, scipy, highspy, PyMaxflow and itself: the solvers
  work on plain arrays and can be used and tested without the rest;
- ``datasets/`` likewise, with Pillow for images;
- no module imports or uses (``module._x``) a private name of another module,
  and a private module (``_mrf``) is imported only from inside its own package;
- every module of ``segstruct`` imports only from its own layer or a lower
  one (``LAYERS``, lowest first): data flows up from solvers and data sets to
  features, learning, storage and reports, and the command line sits on top;
- no modules import each other in a circle, not even inside one layer or
  through an import inside a function;
- the parsed options of the command line stay in it: no module outside
  ``segstruct/cli/`` imports argparse or has a function reading the
  attributes of a parameter named ``args`` (the mark of an argparse
  namespace; ``*args`` is fine), so that the library takes plain values;
- scripts (``scripts/`` and its packages) use the library, never the command
  line: none imports ``segstruct.cli``, at the top or inside a function.
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
    ("_version", "_build", "_source_tree", "io.stopping", "io.files", "io.provenance", "io.text", "io.progress", "io.memory",
     "io.threads", "io.process_memo", "cluster"),
    ("features", "io.checkpoint"),
    ("feature_map", "learn", "evaluate", "toy"),
    ("io.persistence", "report", "decisions", "ensemble"),
    ("compare", "workflow", "predict", "segmentation_model"),
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


def private_uses(name: str, package: str, source: str, modules: set) -> list[str]:
    """Uses of another module's private name through the module (``mod._name``):
    ``from pkg import mod`` or ``import pkg.mod as mod``, then ``mod._x``."""
    aliases = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in modules:
                    aliases[alias.asname or alias.name] = alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1] + ([base] if base else []))
            for alias in node.names:
                if f"{base}.{alias.name}" in modules:
                    aliases[alias.asname or alias.name] = f"{base}.{alias.name}"
    found = []
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in aliases and is_private(node.attr)
                and aliases[node.value.id] != name):
            found.append(f"{name}:{node.lineno} uses {aliases[node.value.id]}.{node.attr}: "
                         "a private name of another module")
    return found


def import_cycles(graph: dict) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def import_graph(sources: dict) -> dict:
    """module -> the modules of ``sources`` it imports (anywhere in its code:
    an import inside a function closes a circle too). ``sources``: name ->
    (package, source)."""
    graph = {}
    for name, (package, source) in sources.items():
        targets = set()
        for _, module, names in imports(source, package):
            for candidate in [module, *(f"{module}.{n}" for n in names)]:
                if candidate in sources and candidate != name:
                    targets.add(candidate)
        graph[name] = targets
    return graph


def _sources() -> dict:
    return {name: (package, path.read_text(encoding="utf-8"))
            for name, package, path in module_files()}


def test_every_module_keeps_the_rules():
    found = []
    sources = _sources()
    for name, (package, source) in sources.items():
        found += violations(name, package, source)
        found += private_uses(name, package, source, set(sources))
    # package __init__ files re-export their modules: a circle through them is not one
    graph = import_graph({n: v for n, v in sources.items() if not _is_package(n, v[0])})
    found += [f"import circle: {' -> '.join(cycle)}" for cycle in import_cycles(graph)]
    assert not found, "\n".join(found)


def _is_package(name: str, package: str) -> bool:
    return name == package


def test_a_circle_of_imports_inside_a_layer_is_found():
    sources = {"segstruct.learn.a": ("segstruct.learn", "from segstruct.learn import b\n"),
               "segstruct.learn.b": ("segstruct.learn",
                                     "def f():\n    from segstruct.learn.a import x\n"),
               "segstruct.learn.c": ("segstruct.learn", "from segstruct.learn import a\n")}
    assert import_cycles(import_graph(sources)) == [["segstruct.learn.a",
                                                     "segstruct.learn.b"]]


def test_a_private_name_used_through_its_module_is_found():
    modules = {"segstruct.learn.ssvm", "segstruct.learn.stochastic"}
    source = "from segstruct.learn import stochastic\nstochastic._bcfw(1)\nstochastic.bcfw(2)\n"
    found = private_uses("segstruct.learn.ssvm", "segstruct.learn", source, modules)
    assert len(found) == 1 and "stochastic._bcfw" in found[0]
    relative = "from . import stochastic as s\ns._sgd()\n"
    assert private_uses("segstruct.learn.ssvm", "segstruct.learn", relative, modules)


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


# ------------------------------------------------- the command line's own values
def namespace_uses(name: str, source: str) -> list[str]:
    """Where module ``name`` (outside ``segstruct.cli``) takes parsed options:
    an import of argparse, or a function with a parameter named ``args``
    whose attributes it reads (``args.x``). ``*args`` is no namespace."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "argparse"
                                                for a in node.names):
            found.append(f"{name}:{node.lineno} imports argparse")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == \
                "argparse" and not node.level:
            found.append(f"{name}:{node.lineno} imports from argparse")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            a = node.args
            if "args" not in {p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)}:
                continue
            body = node.body if isinstance(node.body, list) else [node.body]
            reads = sorted({f"args.{n.attr}" for stmt in body for n in ast.walk(stmt)
                            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
                            and n.value.id == "args"})
            if reads:
                what = getattr(node, "name", "a lambda")
                found.append(f"{name}:{node.lineno} {what}(args) reads {', '.join(reads)}: "
                             "a parsed namespace outside segstruct.cli; take plain values")
    return found


def test_parsed_options_stay_in_the_command_line():
    found = []
    for name, _, path in module_files():
        if name == "segstruct.cli" or name.startswith("segstruct.cli."):
            continue
        found += namespace_uses(name, path.read_text(encoding="utf-8"))
    assert not found, "\n".join(found)


@pytest.mark.parametrize("source, rule", [
    ("import argparse\n", "imports argparse"),
    ("from argparse import Namespace\n", "from argparse"),
    ("def report(args):\n    return args.split\n", "reads args.split"),
    ("def run(x, *, args=None):\n    return [args.out, args.n_jobs]\n",
     "reads args.n_jobs, args.out"),
    ("class C:\n    def go(self, args):\n        def f():\n            return args.data\n"
     "        return f\n", "go(args) reads args.data"),
])
def test_the_checker_finds_a_parsed_namespace_outside_the_command_line(source, rule):
    found = namespace_uses("segstruct.evaluate.inspection", source)
    assert len(found) == 1 and rule in found[0], found


def test_star_args_and_unread_args_are_no_namespace():
    assert namespace_uses("segstruct.cluster",
                          "def f(*args, **kwargs):\n    return args.count(1)\n"
                          "def g(args):\n    return list(args)\n") == []


# ------------------------------------------------------- scripts and the command line
def cli_imports(name: str, source: str) -> list[str]:
    """Every import of ``segstruct.cli`` in ``source`` (a script, ``name``):
    ``import segstruct.cli...``, ``from segstruct.cli... import``, ``from
    segstruct import cli``, at the top or inside a function."""
    found = []
    for node in ast.walk(ast.parse(source)):
        modules = []
        if isinstance(node, ast.Import):
            modules = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            modules = [node.module]
            if node.module == "segstruct":
                modules += [f"segstruct.{a.name}" for a in node.names]
        for module in modules:
            if module == "segstruct.cli" or module.startswith("segstruct.cli."):
                found.append(f"{name}:{node.lineno} imports {module}: scripts use the "
                             "library (the objects the command builds from its options), "
                             "or run the command as a user does "
                             "([sys.executable, '-m', 'segstruct', ...])")
    return found


def test_no_script_imports_the_command_line():
    found = []
    for path in sorted((ROOT / "scripts").rglob("*.py")):
        found += cli_imports(str(path.relative_to(ROOT)), path.read_text(encoding="utf-8"))
    assert not found, "\n".join(found)


@pytest.mark.parametrize("source", [
    "import segstruct.cli\n",
    "import segstruct.cli.main as m\n",
    "from segstruct.cli import main\n",
    "from segstruct.cli.inspect import run\n",
    "from segstruct import cli\n",
    "from segstruct import io, cli as command_line\n",
    "def f():\n    from segstruct.cli.main import main\n    return main([])\n",
])
def test_the_checker_finds_a_script_importing_the_command_line(source):
    assert len(cli_imports("scripts/x.py", source)) == 1


def test_a_script_may_import_the_library_and_its_own_packages():
    assert cli_imports("scripts/x.py", "import segstruct.compare\nfrom segstruct import io\n"
                       "from .cli import main\nimport cli\nfrom segstruct.client import x\n"
                       ) == []
