"""measure_flops: operator FLOPs of one workload call."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import torch

from torchscan_dispatch._library import load_library


def measure_flops(workload: Callable[[], Any]) -> dict[str, Any]:
    """Calls ``workload()`` exactly once and returns its FlopReport as a dict.

    Every ATen operator the calling thread runs during the call (and the
    backward pass the autograd engine runs for it) is counted in C++.
    Exceptions raised by the workload propagate unchanged; counting is
    switched off again either way.
    """
    if not callable(workload):
        raise TypeError(f"workload must be callable, got {type(workload).__name__}.")
    load_library()
    handle = torch.ops.torchscan._begin_counting()
    try:
        workload()
    finally:
        report_json = torch.ops.torchscan._end_counting(handle)
    return json.loads(report_json)
