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

MFU is precision-aware wherever the meter has a peak per precision (the
device table's row of the device, or ``peak_flops_per_second={"bf16": ...,
"fp8": ...}``): each FLOP is measured against the peak of the precision it
ran in (the report's ``by_precision``), so ``mfu`` is the time the step's
FLOPs take at peak over the measured time (``precision_utilization``). A
single ``peak_flops_per_second=`` number measures every FLOP against it, as
before. docs/mfu.md explains both; docs/distributed.md ("MFU") the peak
table (devices.py) and its sources.

``mask_aware_flops`` counts attention calls over the (query, key) pairs
their masks allow (docs/methodology.md): ``mask_aware_mfu`` is ``mfu`` on
that count, for a single peak only (the mask-aware count has no split by
precision yet, so with peaks per precision it is None).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

from torchscan_dispatch import devices
from torchscan_dispatch.devices import (
    PRECISIONS,
    device_name,
    device_spec,
    peak_flops_per_second,
    peak_unknown_reason,
)
from torchscan_dispatch.flops import FlopCounter
from torchscan_dispatch.roofline import Roofline, roofline


def _known(total: dict[str, Any]) -> int:
    value = total.get("value")
    return int(value if value is not None else total.get("known_value") or 0)


def precision_utilization(
    flops_by_precision: Mapping[str, int], seconds: float, peaks: Mapping[str, float]
) -> tuple[float | None, str | None]:
    """Precision-aware utilization: ``(sum over precisions p of flops[p] /
    peaks[p]) / seconds``, the time the FLOPs take at the peak of the
    precision each ran in, over the measured time. Returns ``(value, None)``,
    or ``(None, reason)`` when a precision that has FLOPs has no peak (the
    "unknown" precision never has one) or ``seconds`` is not positive:
    precisions are never silently mixed."""
    missing = sorted(p for p, flops in flops_by_precision.items() if flops and not peaks.get(p))
    if missing:
        named = ", ".join(f"{p} ({flops_by_precision[p]:,} FLOPs)" for p in missing)
        return None, f"no peak for {named}"
    if not seconds > 0:
        return None, f"the step took {seconds!r} s"
    at_peak = sum(flops / peaks[p] for p, flops in flops_by_precision.items() if flops)
    return at_peak / seconds, None


def _model_flops_by_precision(
    by_precision: Mapping[str, int], recomputed: int
) -> tuple[dict[str, int] | None, str | None]:
    """``by_precision`` without the recomputed FLOPs, or None and why: the
    report does not split the recomputation by precision, so that is known
    only when every FLOP ran in one precision."""
    flops = {p: int(n) for p, n in by_precision.items() if n}
    if not recomputed:
        return flops, None
    if len(flops) == 1:
        ((precision, n),) = flops.items()
        return {precision: n - recomputed}, None
    return None, (
        f"{recomputed:,} recomputed FLOPs are not split by precision and the step ran "
        f"in {len(flops)} precisions ({', '.join(sorted(flops))}): only hfu is precision-aware"
    )


def _validate_peaks(peaks: Mapping[str, float]) -> dict[str, float]:
    for precision, peak in peaks.items():
        if precision not in PRECISIONS:
            raise ValueError(
                f"peak_flops_per_second: unknown precision {precision!r} (one of {', '.join(PRECISIONS)})"
            )
        if not isinstance(peak, (int, float)) or not peak > 0:
            raise ValueError(f"peak_flops_per_second[{precision!r}] must be a positive number, got {peak!r}")
    return {precision: float(peak) for precision, peak in peaks.items()}


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
    # ``mask_aware_flops`` without the recomputation, and its utilization
    # (single peak only: None with peaks per precision, see the module doc).
    mask_aware_model_flops: int = 0
    mask_aware_mfu: float | None = None
    # Why ``mfu`` and ``hfu`` are None when the meter has no peak (an
    # unknown device, a precision its table row lacks, a CPU, a precision
    # with FLOPs that has no peak); None when it has one. ``hfu`` can be
    # known while ``mfu`` is not (recomputation in a mixed-precision step).
    mfu_unavailable: str | None = None
    # The step's FLOPs by compute precision (the report's by_precision:
    # "bf16", "fp8", ..., "unknown"); they sum to ``flops``.
    flops_by_precision: dict[str, int] = field(default_factory=dict)
    # The per-precision peaks ``mfu`` and ``hfu`` were measured against
    # (precision-aware), or None for a single peak (peak_flops_per_second).
    peak_flops_by_precision: dict[str, float] | None = None
    communication_payload_bytes: int = 0
    communication_bus_bytes: int = 0
    #: Bytes the step's operator calls read and wrote (the report's
    #: ``bytes``, docs/methodology.md "Bytes moved"); ``bytes_complete`` is
    #: False when some call's bytes were not known (a lower bound then).
    bytes_read: int = 0
    bytes_written: int = 0
    bytes_complete: bool = False
    #: Bytes read + written per phase (as ``flops_by_phase``).
    bytes_by_phase: dict[str, int] = field(default_factory=dict)
    #: The unfused upper bound on the bytes (the report's
    #: ``bytes.upper_bound``): None unless a compiled graph ran, whose fused
    #: kernels move between its own inputs and outputs (in ``bytes_read``
    #: and ``bytes_written``, a lower bound) and this; a lower bound itself
    #: unless ``bytes_upper_bound_complete``.
    bytes_upper_bound: int | None = None
    bytes_upper_bound_complete: bool = False
    _counter: Any = field(default=None, repr=False)
    _phases: list[str] = field(default_factory=list, repr=False)
    # What the step read of the counter's report (its summary, the phases
    # still in by_module) until ``report`` is first read; then that report.
    _report: dict[str, Any] | None = field(default=None, repr=False, compare=False)
    _report_built: bool = field(default=False, repr=False, compare=False)
    # Builds the full report (the counter's, phases in) when first read.
    _build_report: Any = field(default=None, repr=False, compare=False)

    @property
    def hardware_flops(self) -> int:
        """Everything that ran: ``flops``."""
        return self.flops

    @property
    def bytes_moved(self) -> int:
        """``bytes_read + bytes_written``: the report's known bytes (a lower
        bound unless ``bytes_complete``)."""
        return self.bytes_read + self.bytes_written

    @property
    def arithmetic_intensity(self) -> float | None:
        """``flops / bytes_moved`` FLOPs per byte, None when no bytes were
        counted. Of the known work when ``complete`` or ``bytes_complete`` is
        False: it may then move either way once the missing work is added
        (``intensity_complete``)."""
        return self.flops / self.bytes_moved if self.bytes_moved else None

    @property
    def intensity_complete(self) -> bool:
        """Whether ``arithmetic_intensity`` rests on complete counts."""
        return self.complete and self.bytes_complete

    @property
    def achieved_bytes_per_second(self) -> float:
        """``bytes_moved / seconds`` (0.0 before the step ends)."""
        return self.bytes_moved / self.seconds if self.seconds > 0 else 0.0

    @property
    def report(self) -> dict[str, Any]:
        """The step's full FlopReport (with ``communication`` and
        ``distributed``; the phases are in ``flops_by_phase``, not in
        ``by_module``), built when first read: a step whose report nobody
        reads never pays for it. Empty before the step ends."""
        if self._report is None:
            return {}
        if not self._report_built:
            report = self._report = self._build_report()
            self._build_report = None
            report["by_module"] = {
                label: value for label, value in report["by_module"].items() if not label.startswith("phase:")
            }
            for member in ("mask_aware", "bytes"):
                if member in report:
                    report[member]["by_module"] = {
                        label: value
                        for label, value in report[member]["by_module"].items()
                        if not label.startswith("phase:")
                    }
            self._report_built = True
        return self._report

    def roofline(self, device_model: Any) -> Roofline:
        """The roofline of this step's report on ``device_model``: a device
        table name ("H100 SXM": the lower bound on this step's time on a
        device you do not have) or a DeviceSpec (``measure_host_peak()``
        for this CPU). torchscan_dispatch.roofline.roofline says what each
        row holds; docs/methodology.md ("Roofline") the formulas."""
        if self._report is None:
            raise RuntimeError("roofline() needs the step's report: call it after the step's with-block")
        return roofline(self.report, device_model)

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
    MFU on a CPU or a device the table lacks): a number measures every FLOP
    against that one peak; a mapping from precision ("bf16", "fp8", "tf32",
    ... : devices.PRECISIONS) to peak measures each FLOP against the peak of
    the precision it ran in. Otherwise MFU is precision-aware with the table
    row of ``device`` (default: the current CUDA device, if any), and
    ``dtype`` only picks the row's peak that ``peak_flops_per_second`` of
    each step shows.
    ``synchronize`` waits for the device before reading the clock, so the
    step time covers its kernels (CUDA).
    """

    def __init__(
        self,
        *,
        peak_flops_per_second: float | Mapping[str, float] | None = None,
        device: Any = None,
        dtype: torch.dtype = torch.bfloat16,
        synchronize: bool = True,
    ) -> None:
        # Per-precision peaks (precision-aware MFU), or None for one peak.
        self.peaks: dict[str, float] | None = None
        if isinstance(peak_flops_per_second, Mapping):
            self.peaks = _validate_peaks(peak_flops_per_second)
        elif peak_flops_per_second is not None and not peak_flops_per_second > 0:
            raise ValueError(f"peak_flops_per_second must be positive, got {peak_flops_per_second!r}")
        if device is None and torch.cuda.is_available():
            device = torch.device("cuda", torch.cuda.current_device())
        self.device = torch.device(device) if device is not None else torch.device("cpu")
        if self.peaks is not None:
            self.peak, self.peak_unknown = None, None
        elif peak_flops_per_second is not None:
            self.peak, self.peak_unknown = peak_flops_per_second, None
        else:
            name = device_name(self.device)
            spec = device_spec(name) if name is not None else None
            if spec is not None:
                self.peaks = dict(spec.peak_flops)
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
        stats = StepStats(
            index=len(self.steps),
            peak_flops_per_second=self.peak,
            mfu_unavailable=self.peak_unknown,
            peak_flops_by_precision=self.peaks,
        )
        counter = FlopCounter(track_modules=False)
        counter._summary_only = True
        stats._counter = counter
        self._sync()
        with counter:
            start = time.perf_counter()
            yield stats
            self._sync()
            stats.seconds = time.perf_counter() - start
        stats._counter = None
        # NOTE [What a step reads of its report]
        # Only the fields below, from the counter's summary of its report
        # (Measurement.step_report: the members read here, each equal to the
        # full report's). The full report (by_operator, diagnostics, ...;
        # most of its size) is made into Python data only when
        # ``stats.report`` is first read, which also takes the phases out of
        # by_module: a step whose report nobody reads never pays for it.
        report, stats._build_report = counter._take_summary()
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
        mask_aware = report.get("mask_aware", total)
        stats.mask_aware_flops = _known(mask_aware)
        stats.mask_aware_complete = mask_aware["status"] == "complete"
        stats.mask_aware_model_flops = stats.mask_aware_flops - (
            int(recomputed.get("mask_aware_flops", recomputed["flops"])) if recomputed is not None else 0
        )
        communication = report.get("communication")
        if communication is not None:
            stats.communication_payload_bytes = int(communication["total"]["payload_bytes"])
            stats.communication_bus_bytes = int(communication["total"]["bus_bytes"])
        stats.flops_by_precision = {p: int(n) for p, n in report.get("by_precision", {}).items()}
        moved = report.get("bytes")
        if moved is not None:
            stats.bytes_read, stats.bytes_written = int(moved["read"]), int(moved["written"])
            stats.bytes_complete = moved["status"] == "complete"
            upper = moved.get("upper_bound")
            if upper is not None:
                stats.bytes_upper_bound = _known(upper)
                stats.bytes_upper_bound_complete = upper["status"] == "complete"
            if stats._phases:
                stats.bytes_by_phase = {
                    name: int(moved["by_module"].get(f"phase:{name}", 0)) for name in stats._phases
                }
        if stats.seconds > 0:
            stats.achieved_flops_per_second = stats.flops / stats.seconds
            if self.peaks is not None:
                _precision_aware(stats, self.peaks)
            elif self.peak:
                stats.hfu = stats.achieved_flops_per_second / self.peak
                stats.mfu = stats.model_flops / stats.seconds / self.peak
                stats.mask_aware_mfu = stats.mask_aware_model_flops / stats.seconds / self.peak
        self.steps.append(stats)


def _precision_aware(stats: StepStats, peaks: Mapping[str, float]) -> None:
    """Fills ``stats``' hfu and mfu (or mfu_unavailable) from its FLOPs by
    precision and ``peaks``."""
    stats.mfu_unavailable = None
    stats.hfu, reason = precision_utilization(stats.flops_by_precision, stats.seconds, peaks)
    model, model_reason = _model_flops_by_precision(stats.flops_by_precision, stats.recomputed_flops)
    if model is not None and reason is None:
        stats.mfu, reason = precision_utilization(model, stats.seconds, peaks)
    if stats.mfu is None:
        stats.mfu_unavailable = reason or model_reason
        if reason is not None:
            stats.mfu_unavailable += " (pass peak_flops_per_second={precision: FLOP/s})"

