"""segstruct.io.process_memo: arrays one process keeps between tasks, and
segstruct.cluster.parallel_map emptying it before the tasks that do not keep it."""
import ast
import subprocess
import sys

import numpy as np
import pytest

import segstruct.cluster as cluster
from segstruct.io import process_memo
from segstruct.io.process_memo import MEMO, ProcessMemo, release, sharing


@pytest.fixture(autouse=True)
def empty_memo():
    release()
    yield
    release()


def test_the_memo_is_read_and_filled_only_while_shared():
    memo = ProcessMemo(max_bytes=1000)
    a = np.arange(10.0)
    assert not memo.put("a", a) and memo.get("a") is None and len(memo) == 0
    memo.enter()
    assert memo.put("a", a) and memo.get("a") is a
    assert not memo.put("a", np.zeros(3))            # the first value stays
    assert not a.flags.writeable                     # no one changes what others read
    memo.leave()
    assert memo.get("a") is None and len(memo) == 1  # kept, but not read outside
    memo.enter()
    assert memo.get("a") is a
    memo.clear()
    assert memo.get("a") is None and memo.nbytes == 0


def test_a_full_memo_keeps_what_it_has_and_takes_no_more():
    memo = ProcessMemo(max_bytes=250)
    memo.enter()
    first, second, third = np.zeros(20), np.zeros(10), np.zeros(2)    # 160, 80, 16 bytes
    assert memo.put(1, first) and not memo.put(2, np.zeros(20)) and memo.put(3, second)
    assert memo.nbytes == 240
    assert not memo.put(4, third)                    # 256 > 250: not even a small one
    assert memo.get(1) is first and memo.get(2) is None and memo.get(3) is second


def test_sharing_nests():
    assert not MEMO.active
    with sharing():
        with sharing():
            assert MEMO.put("k", np.ones(2))
        assert MEMO.get("k") is not None
    assert not MEMO.active and MEMO.get("k") is None


# The tasks of the tests below. On workers they run from a fresh interpreter,
# where they are functions of __main__, which the workers receive by value:
# so the test holds for an installed (not editable) package too, whose
# workers cannot import this test module.
#
# Each task returns (its process, the memo's size there) and takes a moment,
# so that both workers get tasks of each map; which worker gets which is
# still the pool's choice, so the test compares each worker with itself.
_ON_WORKERS = """
import segstruct.cluster as cluster

def fill(key):
    import os, time
    import numpy as np
    from segstruct.io.process_memo import MEMO, sharing
    with sharing():
        MEMO.put(key, np.ones(4))
    time.sleep(0.05)
    return os.getpid(), len(MEMO)

def count():
    import os, time
    from segstruct.io.process_memo import MEMO
    time.sleep(0.05)
    return os.getpid(), len(MEMO)

if __name__ == "__main__":
    filled = cluster.parallel_map(fill, [(str(k),) for k in range(6)], n_jobs=2,
                                  keep_memo=True)
    kept = cluster.parallel_map(count, [()] * 6, n_jobs=2, keep_memo=True)
    emptied = cluster.parallel_map(count, [()] * 6, n_jobs=2)
    print(repr((filled, kept, emptied)))
"""


_TASKS: dict = {}
exec(_ON_WORKERS, _TASKS)              # not __main__: the maps at its end do not run
_fill, _count = _TASKS["fill"], _TASKS["count"]


def _sizes(results):
    return [n for _, n in results]


def test_parallel_map_empties_the_memo_unless_its_tasks_keep_it():
    assert _sizes(cluster.parallel_map(_fill, [("a",), ("b",)], keep_memo=True)) == [1, 2]
    assert _sizes(cluster.parallel_map(_count, [(), ()], keep_memo=True)) == [2, 2]
    # a task of other work finds it empty, and leaves it so
    assert _sizes(cluster.parallel_map(_count, [(), ()])) == [0, 0]
    assert len(process_memo.MEMO) == 0


def test_worker_tasks_that_do_not_keep_it_find_it_empty(tmp_path):
    script = tmp_path / "on_workers.py"
    script.write_text(_ON_WORKERS)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    filled, kept, emptied = ast.literal_eval(done.stdout.strip().splitlines()[-1])
    assert all(n >= 1 for n in _sizes(filled))
    held = {}                               # what each worker held after its fills
    for pid, n in filled:
        held[pid] = max(n, held.get(pid, 0))
    # the workers still hold their arrays: each the number it filled (a worker
    # that got no fill, new or late, holds none and proves nothing)
    again = [(pid, n) for pid, n in kept if pid in held]
    assert again and all(n == held[pid] for pid, n in again)
    assert _sizes(emptied) == [0] * 6
