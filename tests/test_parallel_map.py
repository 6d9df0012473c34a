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


def test_workers_for_keeps_the_cores_while_memory_suffices(monkeypatch):
    from segstruct import cluster
    monkeypatch.setattr(cluster, "cpu_count", lambda: 16)
    gib = 2 ** 30
    # a number of workers given is the user's, whatever the memory
    assert cluster.workers_for(4, 10 * gib, 27, available=gib) == (4, None)
    # enough memory for every core's worker: -1 stays -1 (joblib's every core)
    assert cluster.workers_for(-1, gib, 27, available=64 * gib) == (-1, None)
    # 3 tasks need 3 workers only, which fit
    assert cluster.workers_for(-1, gib, 3, available=4 * gib) == (-1, None)
    # unknown memory: the cores alone
    monkeypatch.setattr(cluster, "available_memory", lambda: None)
    assert cluster.workers_for(-1, 100 * gib, 27) == (-1, None)


def test_workers_for_bounds_the_workers_by_the_memory_and_says_so(monkeypatch):
    from segstruct import cluster
    monkeypatch.setattr(cluster, "cpu_count", lambda: 16)
    gib = 2 ** 30
    # 0.8 x 10 GiB holds 4 workers of 2 GiB (and 4.5 of 1.75: 4)
    n, note = cluster.workers_for(-1, 2 * gib, 27, available=10 * gib)
    assert n == 4 and "4 worker processes instead of 16" in note and "-j N" in note
    assert "2.0 GiB" in note and "10.0 GiB" in note
    assert cluster.workers_for(-2, 1.75 * gib, 27, available=10 * gib)[0] == 4
    # never fewer than one: this process alone
    n, note = cluster.workers_for(-1, 8 * gib, 27, available=gib)
    assert n == 1 and "1 worker process instead of 16" in note
    # measured when not given
    monkeypatch.setattr(cluster, "available_memory", lambda: 10 * gib)
    assert cluster.workers_for(-1, 2 * gib, 27)[0] == 4
