"""Exact per-step FLOPs, achieved FLOP/s and MFU for a training loop.

::

    meter = torchscan_dispatch.StepMeter(dtype=torch.bfloat16)
    for batch in loader:
        with meter.step() as step:
            with step.phase("forward"):
                loss = model(batch)
            with step.phase("backward"):
                loss.backward()
            with step.phase("optimizer"):
                optimizer.step()
                optimizer.zero_grad()
        print(step.flops, step.mfu)

Each step is one ``FlopCounter(track_modules=False)``: the counts are this
rank's exact operator FLOPs (FlopCounterMode's conventions), compiled steps
included (their graphs carry a FLOP tally), and the step's collectives.
docs/distributed.md ("MFU") explains the peak table and its sources.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import torch

from torchscan_dispatch._native import MODULE_SCOPES
from torchscan_dispatch.flops import FlopCounter

# Dense (not 2:4 sparse) tensor-core peak FLOP/s per device and dtype, from
# the vendors' datasheets (docs/distributed.md cites each one).
_T = 1e12
PEAK_FLOPS: dict[str, dict[torch.dtype, float]] = {
    "H100 SXM": {
        torch.float64: 67 * _T,
        torch.float32: 494.5 * _T,  # TF32 tensor core
        torch.bfloat16: 989.5 * _T,
        torch.float16: 989.5 * _T,
        torch.float8_e4m3fn: 1979 * _T,
    },
    "H100 PCIe": {
        torch.float64: 51 * _T,
        torch.float32: 378 * _T,
        torch.bfloat16: 756 * _T,
        torch.float16: 756 * _T,
        torch.float8_e4m3fn: 1513 * _T,
    },
    "H200": {
        torch.float64: 67 * _T,
        torch.float32: 494.5 * _T,
        torch.bfloat16: 989.5 * _T,
        torch.float16: 989.5 * _T,
        torch.float8_e4m3fn: 1979 * _T,
    },
    "B200": {
        torch.float32: 1125 * _T,
        torch.bfloat16: 2250 * _T,
        torch.float16: 2250 * _T,
        torch.float8_e4m3fn: 4500 * _T,
    },
    "A100": {
        torch.float64: 19.5 * _T,
        torch.float32: 156 * _T,
        torch.bfloat16: 312 * _T,
        torch.float16: 312 * _T,
    },
    "MI300X": {
        torch.float64: 163.4 * _T,
        torch.float32: 653.7 * _T,  # TF32 matrix (not the 163.4 of FP32 matrix)
        torch.bfloat16: 1307.4 * _T,
        torch.float16: 1307.4 * _T,
        torch.float8_e4m3fnuz: 2614.9 * _T,
    },
    "L4": {
        torch.float32: 60 * _T,  # TF32 tensor core
        torch.bfloat16: 121 * _T,
        torch.float16: 121 * _T,
        torch.float8_e4m3fn: 242.5 * _T,
    },
}
# Matched against torch.cuda.get_device_name(), first match wins.
_DEVICE_PATTERNS = [
    ("H100", "PCIe", "H100 PCIe"),
    ("H100", "", "H100 SXM"),
    ("H200", "", "H200"),
    ("B200", "", "B200"),
    ("A100", "", "A100"),
    ("MI300X", "", "MI300X"),
    ("L4", "", "L4"),
]


def device_table_name(device_name: str) -> str | None:
    """The PEAK_FLOPS entry for a device name, or None."""
    for marker, qualifier, entry in _DEVICE_PATTERNS:
        if marker in device_name and qualifier in device_name:
            return entry
    return None


def peak_flops_per_second(device: Any = None, dtype: torch.dtype = torch.bfloat16) -> float | None:
    """The dense peak of ``device`` (a CUDA device, or a name such as
    "NVIDIA H100 80GB HBM3") for ``dtype``, or None when the table has none
    (CPUs, unknown devices, dtypes without a tensor-core rate)."""
    if isinstance(device, str) and not device.startswith(("cuda", "cpu")):
        name = device
    else:
        device = torch.device(device) if device is not None else None
        if device is None or device.type != "cuda" or not torch.cuda.is_available():
            return None
        name = torch.cuda.get_device_name(device)
    entry = device_table_name(name)
    if entry is None:
        return None
    return PEAK_FLOPS[entry].get(dtype)


def _known(total: dict[str, Any]) -> int:
    value = total.get("value")
    return int(value if value is not None else total.get("known_value") or 0)


@dataclass
class StepStats:
    """One step on this rank."""

    index: int
    # The step's operator FLOPs (a lower bound unless ``complete``).
    flops: int = 0
    complete: bool = True
    # FLOPs inside each phase() (a call in nested phases counts for each).
    flops_by_phase: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    achieved_flops_per_second: float = 0.0
    peak_flops_per_second: float | None = None
    mfu: float | None = None
    communication_payload_bytes: int = 0
    communication_bus_bytes: int = 0
    # The step's full FlopReport (with ``communication`` and ``distributed``).
    report: dict[str, Any] = field(default_factory=dict)
    _counter: Any = field(default=None, repr=False)
    _phases: list[str] = field(default_factory=list, repr=False)

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Attributes the FLOPs of the block to phase ``name`` (forward,
        backward, optimizer, recomputation, ... : any label)."""
        measurement = self._counter._measurement if self._counter is not None else None
        if measurement is None:
            raise RuntimeError("phase() is only valid inside its step's with-block")
        label = f"phase:{name}"
        if name not in self._phases:
            self._phases.append(name)
        ops = measurement._ops
        ops._change_scope_label(measurement.handle, MODULE_SCOPES, label, True)
        try:
            yield
        finally:
            ops._change_scope_label(measurement.handle, MODULE_SCOPES, label, False)


class StepMeter:
    """Measures each training step of this rank: exact FLOPs, time, MFU.

    ``peak_flops_per_second`` overrides the table (the only way to get an
    MFU on a CPU or a device the table lacks); otherwise the peak of
    ``device`` (default: the current CUDA device, if any) for ``dtype``.
    ``synchronize`` waits for the device before reading the clock, so the
    step time covers its kernels (CUDA).
    """

    def __init__(
        self,
        *,
        peak_flops_per_second: float | None = None,
        device: Any = None,
        dtype: torch.dtype = torch.bfloat16,
        synchronize: bool = True,
    ) -> None:
        if peak_flops_per_second is not None and not peak_flops_per_second > 0:
            raise ValueError(f"peak_flops_per_second must be positive, got {peak_flops_per_second!r}")
        if device is None and torch.cuda.is_available():
            device = torch.device("cuda", torch.cuda.current_device())
        self.device = torch.device(device) if device is not None else torch.device("cpu")
        self.peak = (
            peak_flops_per_second
            if peak_flops_per_second is not None
            else peak_flops_per_second_of(self.device, dtype)
        )
        self.synchronize = synchronize
        self.steps: list[StepStats] = []

    def _sync(self) -> None:
        if self.synchronize and self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    @contextlib.contextmanager
    def step(self) -> Iterator[StepStats]:
        """Measures the block as one step; the StepStats fill in at its end."""
        stats = StepStats(index=len(self.steps), peak_flops_per_second=self.peak)
        counter = FlopCounter(track_modules=False)
        stats._counter = counter
        self._sync()
        with counter:
            start = time.perf_counter()
            yield stats
            self._sync()
            stats.seconds = time.perf_counter() - start
        stats._counter = None
        report = counter.report()
        stats.report = report
        stats.flops = _known(report["total"])
        stats.complete = report["total"]["status"] == "complete"
        stats.flops_by_phase = {name: int(report["by_module"].get(f"phase:{name}", 0)) for name in stats._phases}
        report["by_module"] = {
            label: value for label, value in report["by_module"].items() if not label.startswith("phase:")
        }
        communication = report.get("communication")
        if communication is not None:
            stats.communication_payload_bytes = int(communication["total"]["payload_bytes"])
            stats.communication_bus_bytes = int(communication["total"]["bus_bytes"])
        if stats.seconds > 0:
            stats.achieved_flops_per_second = stats.flops / stats.seconds
            if self.peak:
                stats.mfu = stats.achieved_flops_per_second / self.peak
        self.steps.append(stats)


def peak_flops_per_second_of(device: torch.device, dtype: torch.dtype) -> float | None:
    return peak_flops_per_second(device, dtype)
