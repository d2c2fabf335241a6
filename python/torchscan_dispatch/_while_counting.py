"""Patches to PyTorch that are in place only while a FlopCounter is open.

Some measurements need a piece of PyTorch changed for as long as they count:
recomputation is labelled by wrapping activation checkpointing's entry
points (``_recompute.py``), flex attention's masks are read by wrapping its
dense kernels (``_flex_attention.py``). A process that loaded the library but
measures nothing must run PyTorch's own code, so each such patch set lives
in a ``WhileCounting``:

- the first measurement to open installs the patches, the last to close
  removes them; measurements may nest and may run on several threads;
- an install that fails halfway is undone before the error propagates, so a
  failed open leaves PyTorch as it found it;
- the registry keeps one entry per open measurement (by its handle), which
  the patches may read under ``lock``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

__all__ = ["WhileCounting"]


class WhileCounting:
    """The open measurements of one patch set, and the patches' switch."""

    def __init__(self, install: Callable[[], None], uninstall: Callable[[], None]) -> None:
        self._install = install
        self._uninstall = uninstall
        # Guards `open` and the install state; the patches take it too when
        # they read the entries.
        self.lock = threading.Lock()
        # Measurement handle -> the entry its opener gave.
        self.open: dict[int, Any] = {}

    def opened(self, handle: int, entry: Any = None) -> None:
        """A measurement starts counting: with the first, the patches go in."""
        with self.lock:
            if not self.open:
                try:
                    self._install()
                except BaseException:
                    self._uninstall()  # what was installed before the failure
                    raise
            self.open[handle] = entry

    def closed(self, handle: int, finish: Callable[[Any], None] | None = None) -> None:
        """A measurement stops counting: `finish` (if given) sees its entry
        under the lock, and with the last the patches come out."""
        with self.lock:
            entry = self.open.pop(handle, None)
            try:
                if finish is not None and entry is not None:
                    finish(entry)
            finally:
                if not self.open:
                    self._uninstall()
