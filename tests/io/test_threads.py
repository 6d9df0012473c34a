"""segstruct.io.threads: thread caps of the native libraries, set often and cheaply."""
import sys
import types

import numpy as np  # noqa: F401  (its BLAS is the library limited)
import pytest
from threadpoolctl import ThreadpoolController, threadpool_info, threadpool_limits

import segstruct.io.threads as threads


def blas_threads():
    return {lib["filepath"]: lib["num_threads"] for lib in threadpool_info()
            if lib["user_api"] == "blas"}


def test_thread_limits_caps_and_restores_the_blas_threads():
    # from two threads, so that the cap is seen where the environment set one
    with threadpool_limits(2, "blas"):
        before = blas_threads()
        if 2 not in before.values():
            pytest.skip("this BLAS does not take two threads")
        with threads.thread_limits(1, "blas"):
            assert set(blas_threads().values()) == {1}
        assert blas_threads() == before
        with threads.thread_limits(1):
            assert set(blas_threads().values()) == {1}
        assert blas_threads() == before


def test_the_libraries_are_looked_up_again_only_after_an_import(monkeypatch):
    made = []

    class Counted(ThreadpoolController):
        def __init__(self):
            made.append(1)
            super().__init__()

    monkeypatch.setattr(threads, "ThreadpoolController", Counted)
    monkeypatch.setattr(threads, "_controller", None)
    for _ in range(3):
        with threads.thread_limits(1):
            pass
    assert len(made) == 1
    monkeypatch.setitem(sys.modules, "segstruct_test_new_module", types.ModuleType("x"))
    with threads.thread_limits(1):
        pass
    assert len(made) == 2
