"""What torch prints while it loads a file, kept instead of printed.

Loaders report a bad file through several channels at once: an exception,
Python warnings, records on torch's loggers (with tracebacks), and C++
messages written straight to the process's standard error. The command
line owes the user one line naming the file and the cause; the rest is
kept here and shown with ``--verbose``.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import tempfile
import warnings
from collections.abc import Iterator


class CapturedOutput:
    """The lines captured by ``captured_torch_output`` (after it exits)."""

    def __init__(self) -> None:
        self.lines: list[str] = []


@contextlib.contextmanager
def _file_descriptor_captured(fd: int, into: list[str]) -> Iterator[None]:
    """Writes to ``fd`` (C++ messages, and log handlers holding the original
    stream) go to a temporary file, read back."""
    try:
        saved = os.dup(fd)
    except OSError:  # no such descriptor (an embedded interpreter): nothing to capture
        yield
        return
    with tempfile.TemporaryFile() as sink:
        if sys.__stderr__ is not None:
            sys.__stderr__.flush()
        os.dup2(sink.fileno(), fd)
        try:
            yield
        finally:
            if sys.__stderr__ is not None:
                sys.__stderr__.flush()
            os.dup2(saved, fd)
            os.close(saved)
            sink.seek(0)
            into.extend(sink.read().decode("utf-8", "replace").splitlines())


@contextlib.contextmanager
def captured_torch_output() -> Iterator[CapturedOutput]:
    """Captures warnings, Python's standard error and the process's file
    descriptor 2 for the block; all three are restored."""
    captured = CapturedOutput()
    python_stderr = io.StringIO()
    with contextlib.ExitStack() as stack:
        caught = stack.enter_context(warnings.catch_warnings(record=True))
        warnings.simplefilter("always")
        stack.enter_context(_file_descriptor_captured(2, captured.lines))
        stack.enter_context(contextlib.redirect_stderr(python_stderr))
        try:
            yield captured
        finally:
            stack.close()
            captured.lines[:0] = python_stderr.getvalue().splitlines()
            captured.lines.extend(f"{w.category.__name__}: {w.message}" for w in caught)
