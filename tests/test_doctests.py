"""The Examples sections of the public docstrings run as written.

Each module listed holds runnable examples (numpydoc "Examples"); doctest
runs them against the installed package, so an example that drifts from the
code fails here instead of misleading a reader.
"""
import doctest
import importlib

import numpy as np
import pytest

MODULES = (
    "segstruct.io.text",
    "segstruct.learn.estimators.structured_svm",
    "segstruct.learn.estimators.first_order_svm",
    "segstruct.learn.estimators.lovasz_svm",
    "segstruct.learn.estimators.projection_svm",
    "segstruct.learn.methods",
    "segstruct.learn.selection.choice",
    "segstruct.toy",
)


@pytest.mark.parametrize("name", MODULES)
def test_examples_run(name):
    module = importlib.import_module(name)
    # numpy prints scalars as np.float64(...) from 2.0 on: the examples are
    # written in the legacy form, so that they read the same on every numpy
    with np.printoptions(legacy="1.25") if np.lib.NumpyVersion(np.__version__) >= "2.0.0" \
            else np.printoptions():
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS
                                 | doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.attempted > 0, f"{name} has no examples"
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples of {name} failed"


def test_a_wrong_example_fails():
    """The check can fail: an example whose printed answer is wrong is counted."""
    import types
    module = types.ModuleType("wrong_example")
    module.__doc__ = ">>> 1 + 1\n3\n"
    result = doctest.testmod(module, verbose=False, report=False)
    assert (result.attempted, result.failed) == (1, 1)
