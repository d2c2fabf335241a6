"""measure_peak_memory: backend-specific PyTorch peak memory of one call."""

from __future__ import annotations

from collections.abc import Callable

import torch

from torchscan_dispatch._library import hooks

__all__ = ["measure_peak_memory"]


def measure_peak_memory(workload: Callable[[], object], *, device: str | torch.device) -> dict[str, str | int]:
    """Calls ``workload()`` exactly once and reports PyTorch's own memory.

    CPU: the bytes of PyTorch CPU tensors the calling thread (and threads
    PyTorch hands its state to, such as the autograd engine's) allocates
    during the call: ``baseline_bytes`` 0, ``peak_bytes`` the most alive at
    once. Observed through the allocator's reports, without running the
    profiler; unavailable while a profiler is active on the thread.

    CUDA and other accelerators: the caching allocator's device-wide
    statistics, ``pytorch_reserved_bytes`` plus ``allocated_peak_bytes``.

    Not process RSS or total device memory. Device errors are raised before
    the workload runs; exceptions from the workload propagate unchanged.
    Calls may nest.
    """
    normalized = torch.device(device)  # PyTorch's own error for a bad string
    library = hooks()
    handle = library.begin_peak_memory(str(normalized))
    try:
        workload()
    finally:
        result = library.end_peak_memory(handle)
    return result
