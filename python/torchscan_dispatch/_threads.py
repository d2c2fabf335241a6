"""threads="follow": the threads a measured workload starts count into it.

While at least one measurement follows its threads, two entry points are
wrapped, for calls made by a thread that follows a measurement (the
measuring thread, or a thread that joined it):

- ``threading.Thread.start``: the new thread's ``run`` joins the measurement
  until it returns (a thread started inside the workload; DataLoader's
  pin-memory thread);
- ``concurrent.futures.ThreadPoolExecutor.submit`` (and so ``map``): the
  submitted callable joins the measurement for the length of the task,
  whether the pool's worker threads existed before the measurement or not.
  The pool's own worker threads are not followed for their life: they
  outlive the measurement.

Calls from any other thread are passed through unchanged, so concurrent
measurements on other threads never pick up each other's work. DataLoader
worker processes are other processes: nothing here reaches them.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import threading
from collections.abc import Callable, Iterator
from typing import Any

from torchscan_dispatch._native import join_counting, leave_counting

THREAD_MODES = ("report", "follow")

_lock = threading.Lock()
_following = 0
_originals: dict[str, Any] = {}
# Per thread: the handles of the measurements it follows, innermost last.
_local = threading.local()


def validate_threads(threads: Any) -> str:
    if threads not in THREAD_MODES:
        raise ValueError(f"threads must be one of {THREAD_MODES}, got {threads!r}.")
    return threads


def _handles() -> list[int]:
    handles = getattr(_local, "handles", None)
    if handles is None:
        handles = _local.handles = []
    return handles


def _joined(handle: int, function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` run with its operator calls counted into ``handle``."""

    @functools.wraps(function)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            token = join_counting(handle)
        except RuntimeError:  # the measurement is over: run as any thread
            return function(*args, **kwargs)
        handles = _handles()
        handles.append(handle)
        try:
            return function(*args, **kwargs)
        finally:
            handles.pop()
            leave_counting(token)

    return run


def _is_pool_worker(thread: threading.Thread) -> bool:
    return getattr(thread, "_target", None) is concurrent.futures.thread._worker


def _start(self: threading.Thread) -> None:
    handles = _handles()
    if handles and not _is_pool_worker(self):
        self.run = _joined(handles[-1], self.run)  # type: ignore[method-assign]
    _originals["start"](self)


def _submit(self: Any, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    handles = _handles()
    if handles:
        fn = _joined(handles[-1], fn)
    return _originals["submit"](self, fn, *args, **kwargs)


def _install() -> None:
    _originals["start"] = threading.Thread.start
    _originals["submit"] = concurrent.futures.ThreadPoolExecutor.submit
    threading.Thread.start = _start  # type: ignore[method-assign]
    concurrent.futures.ThreadPoolExecutor.submit = _submit  # type: ignore[method-assign]


def _uninstall() -> None:
    threading.Thread.start = _originals.pop("start")  # type: ignore[method-assign]
    concurrent.futures.ThreadPoolExecutor.submit = _originals.pop("submit")  # type: ignore[method-assign]


@contextlib.contextmanager
def follow_threads(handle: int) -> Iterator[None]:
    """The calling thread's measurement ``handle`` follows the threads it
    starts and the tasks it submits, until the block exits."""
    global _following
    with _lock:
        if _following == 0:
            _install()
        _following += 1
    handles = _handles()
    handles.append(handle)
    try:
        yield
    finally:
        handles.pop()
        with _lock:
            _following -= 1
            if _following == 0:
                _uninstall()
