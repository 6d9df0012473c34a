"""Imports from a source checkout: ``inference/`` and ``datasets/`` beside ``segstruct/``.

An install maps the repository's top-level folders ``inference/`` and
``datasets/`` to ``segstruct.inference`` and ``segstruct.datasets`` (a bare
``import inference`` would shadow other packages of those names). When Python
imports ``segstruct`` from the checkout itself instead (its root is on
``sys.path``: ``python -c``, ``python -m segstruct`` or a script run from the
root, where the folder ``segstruct/`` shadows an installed copy), those two
names are not inside ``segstruct/``. :func:`map_sibling_packages` then makes
them resolve to the sibling folders, as an editable install does, so the
checkout imports the same way wherever it is run from.
"""
from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
from pathlib import Path

# the subpackages that live beside segstruct/ in a checkout
SIBLINGS = ("inference", "datasets")


class SiblingFinder(importlib.abc.MetaPathFinder):
    """Finds ``segstruct.<name>`` in ``<root>/<name>/`` for the names of ``folders``.

    Parameters
    ----------
    folders : dict of str to Path
        Full module name (``"segstruct.inference"``) -> its package folder.
    """

    def __init__(self, folders: dict[str, Path]):
        self.folders = folders

    def find_spec(self, fullname, path=None, target=None):
        folder = self.folders.get(fullname)
        if folder is None:
            return None
        # the package's own submodules (segstruct.inference.triangulation)
        # are then found through its __path__ as usual
        return importlib.util.spec_from_file_location(
            fullname, folder / "__init__.py", submodule_search_locations=[str(folder)])


def map_sibling_packages(package_dir: Path) -> bool:
    """Make ``segstruct.inference`` / ``segstruct.datasets`` importable from a checkout.

    Parameters
    ----------
    package_dir : Path
        The folder ``segstruct`` was imported from.

    Returns
    -------
    bool
        True when ``package_dir`` is a checkout's ``segstruct/`` and the finder
        is in place (added now or earlier); False for an installed copy, which
        holds the two subpackages itself.
    """
    if all((package_dir / name).is_dir() for name in SIBLINGS):
        return False                      # an installed copy
    root = package_dir.parent
    folders = {f"segstruct.{name}": root / name for name in SIBLINGS}
    if not all((folder / "__init__.py").is_file() for folder in folders.values()):
        return False                      # not this project's checkout
    if not any(isinstance(f, SiblingFinder) for f in sys.meta_path):
        # after the path finders: an editable install's own finder, if any,
        # maps the same names to the same folders first
        sys.meta_path.append(SiblingFinder(folders))
    return True
