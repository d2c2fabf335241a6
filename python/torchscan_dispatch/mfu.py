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
``flops`` is everything that ran (hardware FLOPs); ``model_flops`` leaves
out what activation checkpointing recomputed (``recomputed_flops``, also
the phase "recompute"): ``mfu`` is model FLOPs utilization, ``hfu``
hardware FLOPs utilization. ``mask_aware_flops`` counts attention calls
over the (query, key) pairs their masks allow (docs/methodology.md):
``mask_aware_mfu`` is ``mfu`` on that count.
docs/distributed.md ("MFU") explains the peak table (devices.py) and its
sources.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import torch

from torchscan_dispatch._native import MODULE_SCOPES
from torchscan_dispatch.devices import peak_flops_per_second, peak_unknown_reason
from torchscan_dispatch.flops import FlopCounter


def _known(total: dict[str, Any]) -> int:
    value = total.get("value")
    return int(value if value is not None else total.get("known_value") or 0)


@dataclass
class StepStats:
    """One step on this rank."""

    index: int
    # The step's operator FLOPs (a lower bound unless ``complete``):
    # everything that ran, recomputation included (``hardware_flops``).
    flops: int = 0
    complete: bool = True
    # The part of ``flops`` that activation checkpointing (eager or in a
    # compiled backward) ran a second time; also flops_by_phase["recompute"]
    # when nonzero.
    recomputed_flops: int = 0
    # ``flops`` without the recomputation: the work the model needs.
    model_flops: int = 0
    # FLOPs inside each phase() (a call in nested phases counts for each).
    flops_by_phase: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    achieved_flops_per_second: float = 0.0
    peak_flops_per_second: float | None = None
    # model_flops / seconds / peak: model FLOPs utilization.
    mfu: float | None = None
    # flops (hardware FLOPs) / seconds / peak: hardware FLOPs utilization;
    # equal to ``mfu`` when nothing was recomputed.
    hfu: float | None = None
    # ``flops`` with each attention call charged only for the (query, key)
    # pairs its mask allows (the report's ``mask_aware``; a lower bound
    # unless ``mask_aware_complete``), recomputation included; equal to
    # ``flops`` when no attention call was masked or causal.
    mask_aware_flops: int = 0
    mask_aware_complete: bool = True
    # ``mask_aware_flops`` without the recomputation, and its utilization.
    mask_aware_model_flops: int = 0
    mask_aware_mfu: float | None = None
    # Why ``mfu`` and ``hfu`` are None when the meter has no peak (an
    # unknown device, a precision its table row lacks, a CPU); None when it
    # has one.
    mfu_unavailable: str | None = None
    communication_payload_bytes: int = 0
    communication_bus_bytes: int = 0
    # The step's full FlopReport (with ``communication`` and ``distributed``).
    report: dict[str, Any] = field(default_factory=dict)
    _counter: Any = field(default=None, repr=False)
    _phases: list[str] = field(default_factory=list, repr=False)

    @property
    def hardware_flops(self) -> int:
        """Everything that ran: ``flops``."""
        return self.flops

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Attributes the FLOPs of the block to phase ``name`` (forward,
        backward, optimizer, ... : any label but "recompute", the phase that
        activation checkpointing's recomputation is measured in by itself)."""
        if name == "recompute":
            raise ValueError(
                'the phase "recompute" is measured by itself (activation checkpointing\'s '
                "recomputation, eager and compiled): read flops_by_phase['recompute']"
            )
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
        if peak_flops_per_second is not None:
            self.peak, self.peak_unknown = peak_flops_per_second, None
        else:
            # A name from the table's point of view: the CUDA device's reported
            # name, or None for a CPU.
            self.peak = peak_flops_per_second_of(self.device, dtype)
            self.peak_unknown = (
                peak_unknown_reason(self.device, dtype) + "; pass peak_flops_per_second"
                if self.peak is None
                else None
            )
        self.synchronize = synchronize
        self.steps: list[StepStats] = []

    def _sync(self) -> None:
        if self.synchronize and self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    @contextlib.contextmanager
    def step(self) -> Iterator[StepStats]:
        """Measures the block as one step; the StepStats fill in at its end."""
        stats = StepStats(index=len(self.steps), peak_flops_per_second=self.peak, mfu_unavailable=self.peak_unknown)
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
        stats.recomputed_flops = int(report.get("recomputed", {}).get("flops", 0))
        stats.model_flops = stats.flops - stats.recomputed_flops
        mask_aware = report.get("mask_aware", report["total"])
        stats.mask_aware_flops = _known(mask_aware)
        stats.mask_aware_complete = mask_aware["status"] == "complete"
        recomputed = report.get("recomputed", {})
        stats.mask_aware_model_flops = stats.mask_aware_flops - int(
            recomputed.get("mask_aware_flops", recomputed.get("flops", 0))
        )
        stats.flops_by_phase = {name: int(report["by_module"].get(f"phase:{name}", 0)) for name in stats._phases}
        if stats.recomputed_flops:
            stats.flops_by_phase["recompute"] = stats.recomputed_flops
        report["by_module"] = {
            label: value for label, value in report["by_module"].items() if not label.startswith("phase:")
        }
        if "mask_aware" in report:
            report["mask_aware"]["by_module"] = {
                label: value
                for label, value in report["mask_aware"]["by_module"].items()
                if not label.startswith("phase:")
            }
        communication = report.get("communication")
        if communication is not None:
            stats.communication_payload_bytes = int(communication["total"]["payload_bytes"])
            stats.communication_bus_bytes = int(communication["total"]["bus_bytes"])
        if stats.seconds > 0:
            stats.achieved_flops_per_second = stats.flops / stats.seconds
            if self.peak:
                stats.hfu = stats.achieved_flops_per_second / self.peak
                stats.mfu = stats.model_flops / stats.seconds / self.peak
                stats.mask_aware_mfu = stats.mask_aware_model_flops / stats.seconds / self.peak
        self.steps.append(stats)


def peak_flops_per_second_of(device: torch.device, dtype: torch.dtype) -> float | None:
    return peak_flops_per_second(device, dtype)
