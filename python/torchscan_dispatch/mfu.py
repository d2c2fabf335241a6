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
hardware FLOPs utilization.
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

from torchscan_dispatch import devices
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
    # Why ``mfu`` and ``hfu`` are None when the meter has no peak (an
    # unknown device, a precision its table row lacks, a CPU); None when it
    # has one.
    mfu_unavailable: str | None = None
    communication_payload_bytes: int = 0
    communication_bus_bytes: int = 0
    _counter: Any = field(default=None, repr=False)
    _phases: list[str] = field(default_factory=list, repr=False)
    # The counter's report as it came (the phases still in by_module) until
    # ``report`` is first read; then that report.
    _report: dict[str, Any] | None = field(default=None, repr=False, compare=False)
    _report_built: bool = field(default=False, repr=False, compare=False)

    @property
    def hardware_flops(self) -> int:
        """Everything that ran: ``flops``."""
        return self.flops

    @property
    def report(self) -> dict[str, Any]:
        """The step's full FlopReport (with ``communication`` and
        ``distributed``; the phases are in ``flops_by_phase``, not in
        ``by_module``), built when first read: a step whose report nobody
        reads never pays for it. Empty before the step ends."""
        report = self._report
        if report is None:
            return {}
        if not self._report_built:
            report["by_module"] = {
                label: value for label, value in report["by_module"].items() if not label.startswith("phase:")
            }
            self._report_built = True
        return report

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
        counter = self._counter
        if counter is None:
            raise RuntimeError("phase() is only valid inside its step's with-block")
        label = f"phase:{name}"
        counter._change_label(label, True)
        if name not in self._phases:
            self._phases.append(name)
        try:
            yield
        finally:
            counter._change_label(label, False)


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
            # (The argument hides the table's function of the same name.)
            self.peak = devices.peak_flops_per_second(self.device, dtype)
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
        # NOTE [What a step reads of its report]
        # Only the fields below: the report itself is the counter's (no copy)
        # and ``stats.report`` takes the phases out of by_module when read.
        report = counter._take_report()
        stats._report = report
        total = report["total"]
        stats.flops = _known(total)
        stats.complete = total["status"] == "complete"
        recomputed = report.get("recomputed")
        stats.recomputed_flops = int(recomputed["flops"]) if recomputed is not None else 0
        stats.model_flops = stats.flops - stats.recomputed_flops
        if stats._phases:
            by_module = report["by_module"]
            stats.flops_by_phase = {name: int(by_module.get(f"phase:{name}", 0)) for name in stats._phases}
        if stats.recomputed_flops:
            stats.flops_by_phase["recompute"] = stats.recomputed_flops
        communication = report.get("communication")
        if communication is not None:
            stats.communication_payload_bytes = int(communication["total"]["payload_bytes"])
            stats.communication_bus_bytes = int(communication["total"]["bus_bytes"])
        if stats.seconds > 0:
            stats.achieved_flops_per_second = stats.flops / stats.seconds
            if self.peak:
                stats.hfu = stats.achieved_flops_per_second / self.peak
                stats.mfu = stats.model_flops / stats.seconds / self.peak
        self.steps.append(stats)
