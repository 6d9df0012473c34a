"""One proposed call on a big problem in a worker process killed after a time
limit, so that a call that would run for hours costs only the limit (its
time is then a lower bound)."""
from __future__ import annotations

import numpy as np

from benchlib.cases import TARGET_M, prepare
from benchlib.timing import scalars, timed


def proposed_worker(conn, u, edges, p, t, a, loss, n_triangles):
    """Child process: build the oracle and triangulation, say so, then time one call.

    Messages: ("started", {"triangulation_s"}), then ("done", {...}) or
    ("error", traceback text).
    """
    import traceback
    try:
        from threadpoolctl import threadpool_limits
        with threadpool_limits(limits=1):
            from segstruct.inference.proposed import ProposedOracle
            # warm-up on a tiny problem: imports and first-call costs stay untimed
            ProposedOracle(4)(np.array([0.5, -0.5, 0.2]), np.array([[0, 1], [1, 2]]),
                              np.array([-0.1, -0.1]), np.array([1, 0, 1], np.uint8),
                              np.ones(3), loss)
            oracle = ProposedOracle(n_triangles)
            tri_s = prepare(oracle, loss, t, a)
            conn.send(("started", {"triangulation_s": tri_s}))
            seconds, res = timed(lambda: oracle(u, edges, p, t, a, loss))
            conn.send(("done", {"proposed_s": seconds, "objective": float(res.objective),
                                "bound": None if res.bound is None else float(res.bound),
                                "info": scalars(res.info)}))
    except Exception:
        conn.send(("error", traceback.format_exc()))
    finally:
        conn.close()


class _ListConn:
    """The worker's end of a pipe, in this process: it keeps what is sent."""

    def __init__(self):
        self.messages = []

    def send(self, msg):
        self.messages.append(msg)

    def close(self):
        pass


def _in_worker(args, name: str, timeout: float, setup_timeout: float) -> list:
    """The worker's messages: none if it did not start within ``setup_timeout``,
    only "started" if the call ran past ``timeout``."""
    import multiprocessing as mp
    ctx = mp.get_context("spawn")       # a fresh process: no inherited solver threads
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=proposed_worker, args=(send, *args), daemon=True)
    proc.start()
    send.close()
    messages = []
    try:
        for limit in (setup_timeout, timeout):
            if not recv.poll(limit):
                break
            try:
                messages.append(recv.recv())
            except EOFError:
                raise RuntimeError(f"the worker timing {name} died "
                                   f"(exit code {proc.exitcode})") from None
            if messages[-1][0] == "error":
                break
    finally:
        if proc.is_alive():
            proc.terminate()
        proc.join()
        recv.close()
    return messages


def proposed_with_time_limit(inst, timeout: float | None, n_triangles: int = TARGET_M,
                             loss: str = "iou", setup_timeout: float = 600.0) -> dict:
    """One proposed call on ``inst`` (an ``Instance``), in a spawned worker killed
    after ``timeout`` seconds of the timed call (None: no worker, no limit).

    Returns {"triangulation_s", "proposed_s", "timed_out", "objective", "bound",
    "info"}; on a time-out ``proposed_s`` is the limit (a lower bound) and the
    rest is None.
    """
    args = (inst.u, inst.edges, inst.p, inst.t, inst.a, loss, n_triangles)
    if timeout is None:
        conn = _ListConn()
        proposed_worker(conn, *args)
        messages = conn.messages
    else:
        messages = _in_worker(args, inst.name, timeout, setup_timeout)
    return _outcome(messages, inst.name, timeout, setup_timeout)


def _outcome(messages: list, name: str, timeout: float | None, setup_timeout: float) -> dict:
    """The result of a worker's ``messages`` (see :func:`proposed_worker`)."""
    if messages and messages[-1][0] == "error":
        raise RuntimeError(f"the proposed oracle failed on {name}:\n{messages[-1][1]}")
    if not messages:
        raise RuntimeError(f"the worker timing {name} did not start within "
                           f"{setup_timeout:g} s")
    out = {"triangulation_s": messages[0][1]["triangulation_s"], "timed_out": False}
    # a call that ran past the limit is a time-out even when its result reached
    # the pipe before the parent looked (a busy machine can delay the parent)
    if len(messages) == 1 or (timeout is not None and messages[1][1]["proposed_s"] > timeout):
        out.update(proposed_s=float(timeout), timed_out=True, objective=None, bound=None,
                   info={})
    else:
        out.update(messages[1][1])
    return out
