"""Independent tasks on local worker processes or on a Dask cluster.

Three kinds of work split into independent tasks: feature extraction (one
image each), cross-validation of C (one fold each) and ``compare`` (one
(class, method) pair each). :func:`parallel_map` runs such tasks in order of
their arguments, with a progress bar:

- by default on ``n_jobs`` local processes (joblib's loky backend, whose
  worker pool persists between calls), or in this process for ``n_jobs=1``;
- inside :func:`use_scheduler` on the Dask cluster it names (joblib's dask
  backend): every task goes to the cluster's workers, whatever ``n_jobs``.

A Dask scheduler re-runs the tasks of a worker that dies on another worker,
and the tasks here are deterministic, so a killed worker changes no result;
``compare`` also keeps each pair's checkpoint, so a pair's rerun resumes.

The workers read the data and write the feature cache at the paths this
process gives them: on several machines, those must be on a shared file
system (the same paths everywhere).
"""
from __future__ import annotations

import os
import warnings
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Sequence

from joblib import Parallel, cpu_count, delayed, parallel_config
from segstruct.io.process_memo import release as release_memo
from segstruct.io.memory import available_memory
from segstruct.io.progress import progress_bar
from segstruct.io.stopping import watch_parent

#: What installs Dask's distributed scheduler (``pip install "segstruct[dask]"``).
DASK_EXTRA = 'pip install "segstruct[dask]"'

#: Seconds :func:`use_scheduler` waits for a scheduler to answer, by default.
CONNECT_TIMEOUT = 30.0

# The client of the active use_scheduler() (None: local work).
_client = None

#: loky's words when it replaces a worker whose memory grew past loky's leak
#: threshold since the end of its first task (only with psutil installed, e.g.
#: by the dask extra): training a detector can leave that much in the worker's
#: heap, and the new worker takes the next task, so nothing is lost and no task
#: is rerun.
#: The warning blames "a too short worker timeout or a memory leak" and would
#: only alarm the user of the first run.
_WORKER_REPLACED = "A worker stopped while some jobs were given to the executor"


#: The share of the available memory (:func:`segstruct.io.memory.available_memory`)
#: that :func:`workers_for` lets the workers of large tasks take; the rest is
#: for this process's growth and everything else on the machine.
MEMORY_SHARE = 0.8

GiB = 2 ** 30


def workers_for(n_jobs: int, worker_bytes: float, n_tasks: int,
                available: int | None = None) -> tuple[int, str | None]:
    """The local worker processes for ``n_tasks`` tasks whose workers each
    hold about ``worker_bytes``, and a note when memory, not the cores,
    set their number.

    ``n_jobs`` as joblib counts it: a positive number is the user's and is
    kept; so is -1 (every core, the command line's default) or -k (all but
    k - 1) while that many workers (or one per task, if fewer) fit in
    :data:`MEMORY_SHARE` of the ``available`` memory (default: measured
    now). Otherwise it becomes as many as fit, at least 1. Where the
    available memory is unknown, it is kept.

    Returns
    -------
    n_jobs : int, ``n_jobs`` or the number of workers that fit (1: this
        process alone).
    note : str or None, why fewer workers than the cores allow.
    """
    if n_jobs >= 1:
        return n_jobs, None
    wanted = max(1, min(cpu_count() + 1 + n_jobs, n_tasks))
    if available is None:
        available = available_memory()
    if available is None or worker_bytes <= 0:
        return n_jobs, None
    fit = max(1, int(MEMORY_SHARE * available // worker_bytes))
    if fit >= wanted:
        return n_jobs, None
    return fit, (f"{fit} worker process{'es' if fit > 1 else ''} instead of {wanted}: each "
                 f"holds about {worker_bytes / GiB:.1f} GiB and {available / GiB:.1f} GiB of "
                 "memory is available; -j N sets the number")


def on_cluster() -> bool:
    """Whether :func:`use_scheduler` is active (tasks go to a Dask cluster)."""
    return _client is not None


@contextmanager
def use_scheduler(address: str | None, timeout: float | None = None) -> Iterator[object]:
    """Send :func:`parallel_map`'s tasks to the Dask scheduler at ``address``.

    Parameters
    ----------
    address : "tcp://host:8786" (what ``dask scheduler`` prints), or None to
        run locally (the context then does nothing and yields None).
    timeout : seconds to wait for the scheduler (default ``CONNECT_TIMEOUT``).

    Yields
    ------
    dask.distributed.Client, or None.

    Raises
    ------
    ImportError
        Dask's distributed scheduler is not installed.
    OSError
        No scheduler answered at ``address`` within ``timeout``.
    """
    global _client
    if address is None:
        yield None
        return
    if _client is not None:
        raise RuntimeError("a Dask scheduler is in use already")
    try:
        from dask.distributed import Client
    except ImportError as err:
        raise ImportError(f"--scheduler needs Dask's distributed scheduler: {DASK_EXTRA}") \
            from err
    timeout = CONNECT_TIMEOUT if timeout is None else timeout
    try:
        client = Client(address, timeout=timeout)
    except (OSError, TimeoutError) as err:
        raise OSError(f"no Dask scheduler answered at {address} within {timeout:g} s "
                      f"({err}); start one with `dask scheduler` and workers with "
                      "`dask worker ADDRESS`") from err
    _client = client
    try:
        with parallel_config(backend="dask"):
            yield client
    finally:
        _client = None
        client.close()


def parallel_map(func: Callable, arg_lists: Sequence[tuple], n_jobs: int = 1,
                 progress: bool = False, desc: str = "", unit: str = "task",
                 on_result: Callable[[int, Any], None] | None = None,
                 keep_memo: bool = False) -> list:
    """``[func(*args) for args in arg_lists]``, on workers, in order.

    Parameters
    ----------
    func : a function picklable by joblib (cloudpickle) with picklable results.
    arg_lists : sequence of argument tuples, one per task.
    n_jobs : local worker processes (joblib convention, -1 = every core); 1
        runs in this process. Ignored on a cluster (:func:`use_scheduler`):
        there every task goes to the cluster.
    progress, desc, unit : progress over the tasks (:func:`segstruct.io.progress.progress_bar`).
    on_result : callable (index, result), optional; called in this process with
        each task's result as it arrives, in order of ``arg_lists`` (e.g. to
        save it, so that an interruption loses only the tasks still running).
    keep_memo : bool
        Leave the arrays that earlier tasks kept in their process's memo
        (:mod:`segstruct.io.process_memo`) for these tasks; by default each
        task empties it first.

    Returns
    -------
    list, the results in the order of ``arg_lists``.
    """
    total = len(arg_lists)
    bar = progress_bar(total, desc, progress, unit)
    # loky warns from its manager thread in this process, so the filter is
    # the process's; catch_warnings restores the filters after the map
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=_WORKER_REPLACED, category=UserWarning)
        try:
            out: list = []
            here = os.getpid()
            if not on_cluster() and (n_jobs == 1 or total <= 1):
                results: Iterator = (_task(func, keep_memo, here, *args) for args in arg_lists)
            else:
                # the dask backend spreads over the whole cluster; n_jobs is local
                runner = Parallel(n_jobs=-1 if on_cluster() else n_jobs, return_as="generator")
                results = runner(delayed(_task)(func, keep_memo, here, *args)
                                 for args in arg_lists)
            try:
                for result in results:
                    if on_result is not None:
                        on_result(len(out), result)
                    out.append(result)
                    bar.update()
            except KeyboardInterrupt:
                # Ctrl-C or SIGTERM (segstruct.io.stopping.Stopped), also while
                # on_result saves: closing joblib's generator kills the workers
                # now rather than when it is collected
                close = getattr(results, "close", None)
                if close is not None:
                    close()
                raise
            return out
        finally:
            bar.close()


def _task(func: Callable, keep_memo: bool, parent: int, *args):
    """One task of :func:`parallel_map`, on whichever process runs it; a
    local worker exits if ``parent`` (the pid of the process that mapped)
    ends, even killed (:func:`segstruct.io.stopping.watch_parent`)."""
    watch_parent(parent)
    if not keep_memo:
        release_memo()
    return func(*args)
