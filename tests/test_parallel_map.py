"""segstruct.cluster.parallel_map on local workers: what it lets through to
the user (the Dask cluster's side is tests/test_cluster.py)."""
import threading
import warnings

import pytest

import segstruct.cluster as cluster

# loky's words when it replaces a worker whose memory grew (psutil installed)
LOKY_REPLACED = ("A worker stopped while some jobs were given to the executor. This can be "
                 "caused by a too short worker timeout or by a memory leak.")


class _WarningParallel:
    """Stands for joblib.Parallel: runs the tasks here, and midway warns from
    another thread of this process, as loky's executor manager thread does
    when it replaces a worker; then, unless ``other`` is None, a warning of
    another kind."""

    other: str | None = "some other trouble"

    def __init__(self, n_jobs, return_as):
        assert return_as == "generator"

    def __call__(self, calls):
        for k, (func, args, kwargs) in enumerate(calls):
            if k == 1:
                thread = threading.Thread(target=warnings.warn,
                                          args=(LOKY_REPLACED, UserWarning))
                thread.start()
                thread.join()
                if self.other is not None:
                    warnings.warn(self.other, UserWarning, stacklevel=2)
            yield func(*args, **kwargs)


def _square(x):
    return x * x


def test_a_replaced_worker_is_not_reported_and_other_warnings_are(monkeypatch):
    monkeypatch.setattr(cluster, "Parallel", _WarningParallel)
    with pytest.warns(UserWarning) as caught:
        out = cluster.parallel_map(_square, [(x,) for x in range(4)], n_jobs=2)
    assert out == [0, 1, 4, 9]
    messages = [str(w.message) for w in caught]
    assert messages == ["some other trouble"]


class _LokyOnlyParallel(_WarningParallel):
    """Loky's warning alone (nothing for a recorder to catch, so no recorder
    restores the filters for the map)."""

    other = None


def test_the_filter_ends_with_the_map(monkeypatch):
    monkeypatch.setattr(cluster, "Parallel", _LokyOnlyParallel)
    before = list(warnings.filters)
    assert cluster.parallel_map(_square, [(x,) for x in range(3)], n_jobs=2) == [0, 1, 4]
    # the process's filters are as they were: loky's message is reported
    # again once the map is over
    assert warnings.filters == before
