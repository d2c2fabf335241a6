"""The roofline of a report on a device: per operator, per module and for the
whole report, the arithmetic intensity, whether the work is compute- or
memory-bound, and the roofline's lower bound on its time.

::

    report = torchscan_dispatch.measure_flops(lambda: model(x).sum().backward())
    result = roofline(report, "H100 SXM")       # a device the user need not have
    result.total.seconds                         # no H100 runs this in less
    result.by_operator["aten.mm"].bound          # "compute" or "memory"
    roofline(report, measure_host_peak())        # this CPU, measured

The C++ library computes the same (report/roofline.h, for C++ callers and
``torchscan roofline``); tests/python/test_cpp_roofline.py checks the two
agree field for field.

For FLOPs ``F`` (``F_p`` of them in precision ``p``) and bytes ``B`` (read +
written, the report's ``bytes``) on a device with dense peak ``peak_p`` and
memory bandwidth ``W``:

- ``compute_seconds = sum over p of F_p / peak_p``; ``memory_seconds = B / W``;
- ``seconds = max(compute_seconds, memory_seconds)``: no device runs the work
  faster than its peak arithmetic or faster than it can move the bytes, so
  this is a lower bound on the time (docs/methodology.md, "Roofline");
- ``intensity = F / B`` FLOPs per byte (None when ``B`` is 0);
- ``ridge_point = (F / compute_seconds) / W``, the intensity at which the
  two terms are equal: ``peak_p / W`` for work in one precision;
- ``bound`` is "compute" when ``compute_seconds > memory_seconds``, else
  "memory" (equivalently: intensity above or below the ridge point).

Operators use the report's ``by_operator_precision`` (each operator's FLOPs
against the peak of the precision they ran in). Modules, and the total of a
report without ``by_precision``, are not split by precision: their FLOP
term uses the fastest peak among the precisions the report's FLOPs ran in,
which cannot overstate the term, so the time stays a lower bound.

Honesty:

- ``status`` "partial": the counts this row rests on are partial (the
  names say what is missing: the report's diagnostics). ``seconds`` is then
  still a lower bound (more work only takes longer), but ``intensity``,
  ``ridge_point`` and ``bound`` are of the known work only and may move
  either way once the missing work is added.
- ``status`` "unavailable": some FLOPs ran in a precision the device has no
  peak for (or the report does not say which precision): the FLOP term,
  ``seconds``, ``ridge_point`` and ``bound`` are None and ``unavailable``
  says why. Never 0, never another precision's peak.
"""

from __future__ import annotations

import datetime
import glob
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

from torchscan_dispatch.devices import DEVICES, DeviceSpec, device_spec

__all__ = [
    "Roofline",
    "RooflinePoint",
    "measure_host_peak",
    "resolve_device",
    "roofline",
    "roofline_point",
]

COMPUTE, MEMORY = "compute", "memory"
COMPLETE, PARTIAL, UNAVAILABLE = "complete", "partial", "unavailable"
TOTAL = "total"


@dataclass(frozen=True)
class RooflinePoint:
    """One operator, module or the whole report on the roofline."""

    name: str
    # The known FLOPs and bytes (lower bounds when ``status`` is partial).
    flops: int
    bytes: int
    # The FLOPs by precision the FLOP term used, or None when the row is not
    # split (``peak_precision`` names the fastest peak used instead).
    flops_by_precision: dict[str, int] | None
    peak_precision: str | None
    intensity: float | None
    ridge_point: float | None
    bound: str | None
    compute_seconds: float | None
    memory_seconds: float
    # The roofline lower bound on time: max(compute, memory seconds).
    seconds: float | None
    status: str
    # What the counts miss ("uncounted_operator: aten.relu"), when partial.
    partial: tuple[str, ...] = ()
    # Why the FLOP term is not known, when unavailable.
    unavailable: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "status": self.status,
            "flops": self.flops,
            "bytes": self.bytes,
            "flops_by_precision": self.flops_by_precision,
            "peak_precision": self.peak_precision,
            "intensity": self.intensity,
            "ridge_point": self.ridge_point,
            "bound": self.bound,
            "compute_seconds": self.compute_seconds,
            "memory_seconds": self.memory_seconds,
            "seconds": self.seconds,
            "partial": list(self.partial),
            "unavailable": self.unavailable,
        }


@dataclass(frozen=True)
class Roofline:
    """A report's roofline on one device."""

    device: DeviceSpec
    total: RooflinePoint
    by_operator: dict[str, RooflinePoint] = field(default_factory=dict)
    by_module: dict[str, RooflinePoint] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "device": {
                "name": self.device.name,
                "peak_flops": dict(self.device.peak_flops),
                "memory_bandwidth": self.device.memory_bandwidth,
                "source": self.device.source,
            },
            "total": self.total.to_json(),
            "by_operator": {name: point.to_json() for name, point in self.by_operator.items()},
            "by_module": {label: point.to_json() for label, point in self.by_module.items()},
        }


def resolve_device(device: Any) -> DeviceSpec:
    """``device`` as a DeviceSpec: one itself (a table row, or
    ``measure_host_peak()``'s), or a name of the device table, looked up by
    its exact-name rules (``devices.device_spec``)."""
    if isinstance(device, DeviceSpec):
        return device
    if isinstance(device, str):
        spec = device_spec(device)
        if spec is None:
            known = ", ".join(spec.name for spec in DEVICES)
            raise ValueError(
                f"unknown device {device!r}: the device table (exact names only) has {known}; "
                "or pass a DeviceSpec, such as measure_host_peak()"
            )
        return spec
    raise TypeError(f"device must be a DeviceSpec or a device table name, got {type(device).__name__}")


def _compute_term(
    spec: DeviceSpec, flops: Mapping[str, int] | int, precisions: Iterable[str]
) -> tuple[float | None, float | None, str | None, str | None]:
    """(compute seconds, the peak those FLOPs ran at on average, the fastest
    precision used for an unsplit count, why unavailable)."""
    if isinstance(flops, Mapping):
        split = {p: int(n) for p, n in flops.items() if n}
        missing = sorted(p for p in split if not spec.peak_flops.get(p))
        if missing:
            named = ", ".join(f"{p} ({split[p]:,} FLOPs)" for p in missing)
            return None, None, None, f"{spec.name} has no peak for {named}"
        seconds = sum(n / spec.peak_flops[p] for p, n in split.items())
        total = sum(split.values())
        return seconds, (total / seconds if total else None), None, None
    total = int(flops)
    if not total:
        return 0.0, None, None, None
    present = sorted(set(precisions))
    if not present:
        return None, None, None, "the report does not split its FLOPs by precision (no by_precision)"
    missing = [p for p in present if not spec.peak_flops.get(p)]
    if missing:
        return None, None, None, (
            f"{spec.name} has no peak for {', '.join(missing)}, which the report's FLOPs ran in "
            "(this row is not split by precision)"
        )
    fastest = max(present, key=lambda p: spec.peak_flops[p])
    peak = spec.peak_flops[fastest]
    return total / peak, peak, fastest, None


def roofline_point(
    device: Any,
    flops: Mapping[str, int] | int,
    bytes: int,  # noqa: A002 - the report's name
    *,
    precisions: Iterable[str] = (),
    name: str = "",
    partial: Iterable[str] = (),
) -> RooflinePoint:
    """One point: ``flops`` by precision (a mapping), or a number not split
    by precision, measured against the fastest peak among ``precisions``
    (those it may have run in); ``bytes`` read + written; ``partial`` names
    what the counts miss (the point is then partial)."""
    spec = resolve_device(device)
    compute, average_peak, fastest, unavailable = _compute_term(spec, flops, precisions)
    split = {p: int(n) for p, n in flops.items() if n} if isinstance(flops, Mapping) else None
    total = sum(split.values()) if split is not None else int(flops)
    memory = bytes / spec.memory_bandwidth
    seconds = bound = ridge = None
    if compute is not None:
        seconds = max(compute, memory)
        if compute or memory:
            bound = COMPUTE if compute > memory else MEMORY
        if average_peak is not None:
            ridge = average_peak / spec.memory_bandwidth
    missing = tuple(partial)
    return RooflinePoint(
        name=name,
        flops=total,
        bytes=int(bytes),
        flops_by_precision=split,
        peak_precision=fastest,
        intensity=total / bytes if bytes else None,
        ridge_point=ridge,
        bound=bound,
        compute_seconds=compute,
        memory_seconds=memory,
        seconds=seconds,
        status=UNAVAILABLE if unavailable else PARTIAL if missing else COMPLETE,
        partial=missing,
        unavailable=unavailable,
    )


def _known(metric: Mapping[str, Any]) -> int:
    value = metric.get("value")
    return int(value if value is not None else metric.get("known_value") or 0)


def _diagnostic_name(diagnostic: Mapping[str, Any]) -> str:
    where = diagnostic.get("operator") or diagnostic.get("path")
    return f"{diagnostic['code']}: {where}" if where else str(diagnostic["code"])


def roofline(report: Mapping[str, Any], device: Any) -> Roofline:
    """The roofline of a FlopReport (``measure_flops``, ``FlopCounter.report()``,
    a ``StepMeter`` step's ``report``) on ``device``: a DeviceSpec (a table
    row, or ``measure_host_peak()``) or a device table name ("H100 SXM",
    "NVIDIA H100 80GB HBM3"; an unknown name is a ValueError naming the
    known ones). Every operator, every module label and the total."""
    spec = resolve_device(device)
    if report.get("kind") == "job_report":
        raise ValueError("roofline: a job report sums ranks that run side by side; pass one rank's FlopReport")
    if "total" not in report or "by_operator" not in report:
        raise ValueError(
            "roofline: not a FlopReport (measure_flops, FlopCounter.report(), a StepMeter step's report): "
            "it has no total and by_operator"
        )
    moved = report.get("bytes")
    by_precision = {p: int(n) for p, n in report.get("by_precision", {}).items() if n}
    present = tuple(by_precision)
    split = report.get("by_operator_precision", {})

    flop_missing = [_diagnostic_name(d) for d in report.get("diagnostics", [])]
    if report["total"]["status"] != COMPLETE and not flop_missing:
        flop_missing = [f"flops: the total is {report['total']['status']}"]
    if moved is None:
        byte_missing = ["bytes: the report has no bytes (written before they existed)"]
        moved = {"read": 0, "written": 0, "by_operator": {}, "by_module": {}, "diagnostics": []}
    else:
        byte_missing = [f"bytes {_diagnostic_name(d)}" for d in moved.get("diagnostics", [])]
        if moved["status"] != COMPLETE and not byte_missing:
            byte_missing = [f"bytes: {moved['status']}"]
    everything_missing = tuple(flop_missing + byte_missing)

    # Operators: a diagnostic that names an operator makes its row partial;
    # one that names none (work on unseen threads) only the modules' and the
    # total (the operator's own calls are all counted).
    named: dict[str, list[str]] = {}
    for diagnostic in report.get("diagnostics", []):
        if diagnostic.get("operator"):
            named.setdefault(diagnostic["operator"], []).append(_diagnostic_name(diagnostic))
    for diagnostic in moved.get("diagnostics", []):
        if diagnostic.get("operator"):
            named.setdefault(diagnostic["operator"], []).append(f"bytes {_diagnostic_name(diagnostic)}")
    if "bytes" not in report:
        for operator in report["by_operator"]:
            named.setdefault(operator, []).extend(byte_missing)
    # A compiled graph's calls count FLOPs under their operators but move
    # bytes only as the graph (its bounds, under inductor.compiled_graph):
    # any counted operator may have run in one, so none has all its bytes.
    compiled = [_diagnostic_name(d) for d in moved.get("diagnostics", []) if d.get("code") == "compiled_region_bytes"]
    if compiled:
        for operator in report["by_operator"]:
            named.setdefault(operator, []).append(f"bytes {compiled[0]}")
    operators = sorted({*report["by_operator"], *moved["by_operator"], *named})
    by_operator = {}
    for operator in operators:
        flops = int(report["by_operator"].get(operator, 0))
        op_bytes = moved["by_operator"].get(operator, {"read": 0, "written": 0})
        by_operator[operator] = roofline_point(
            spec,
            split[operator] if operator in split else flops,
            int(op_bytes["read"]) + int(op_bytes["written"]),
            precisions=present,
            name=operator,
            partial=named.get(operator, ()),
        )

    # Modules: the report does not say which module ran a missing call, so
    # every module row is partial when the report is.
    labels = sorted({*report.get("by_module", {}), *moved.get("by_module", {})})
    by_module = {
        label: roofline_point(
            spec,
            int(report.get("by_module", {}).get(label, 0)),
            int(moved.get("by_module", {}).get(label, 0)),
            precisions=present,
            name=label,
            partial=everything_missing,
        )
        for label in labels
    }
    known = _known(report["total"])
    total = roofline_point(
        spec,
        by_precision if by_precision else known,
        int(moved["read"]) + int(moved["written"]),
        precisions=present,
        name=TOTAL,
        partial=everything_missing,
    )
    return Roofline(device=spec, total=total, by_operator=by_operator, by_module=by_module)


# --- the host's measured peak


def _largest_cache_bytes() -> int | None:
    """The largest CPU cache sysfs lists for cpu0, or None where it lists
    none (read, never assumed)."""
    largest = None
    for path in glob.glob("/sys/devices/system/cpu/cpu0/cache/index*/size"):
        try:
            text = open(path).read().strip()
        except OSError:
            continue
        scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:].upper(), 1)
        digits = text.rstrip("KkMmGg")
        if digits.isdigit():
            size = int(digits) * scale
            largest = size if largest is None else max(largest, size)
    return largest


def _best_seconds(run, repeats: int) -> float:
    run()  # warm: allocation, first-touch, thread pool start
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best


def measure_host_peak(*, matrix_size: int = 1024, repeats: int = 3, copy_bytes: int | None = None) -> DeviceSpec:
    """This CPU's float32 FLOP/s and memory bandwidth, measured, as a
    DeviceSpec for ``roofline`` (about a third of a second).

    - fp32: the best of ``repeats`` ``torch.mm`` of two ``matrix_size``
      square float32 matrices (2 n^3 FLOPs each);
    - memory bandwidth: the best of ``repeats`` copies of a float32 buffer
      of ``copy_bytes`` (default: four times the largest cache sysfs lists,
      at least 64 MiB) into another, counting its bytes read plus written,
      as the report's bytes count a copy (the source is filled first: an
      untouched buffer would read the kernel's shared zero page).

    Both use ``torch.get_num_threads()`` intra-op threads, named in the
    result's ``source`` with how and when it was measured. These are rates
    this host reached, not datasheet peaks: a roofline against them is a
    lower bound for work as fast as ``torch.mm`` and a copy
    (docs/methodology.md, "Roofline"). Only fp32 has a peak: work in other
    precisions is unavailable, named.
    """
    if matrix_size < 1 or repeats < 1:
        raise ValueError(f"matrix_size and repeats must be positive, got {matrix_size} and {repeats}")
    if copy_bytes is None:
        cache = _largest_cache_bytes()
        copy_bytes = max(64 << 20, 4 * cache) if cache else 256 << 20
    elements = max(1, copy_bytes // 4)
    threads = torch.get_num_threads()
    with torch.no_grad():
        a = torch.randn(matrix_size, matrix_size)
        b = torch.randn(matrix_size, matrix_size)
        out = torch.empty(matrix_size, matrix_size)
        gemm = _best_seconds(lambda: torch.mm(a, b, out=out), repeats)
        del a, b, out
        source = torch.ones(elements)
        destination = torch.empty(elements)
        copy = _best_seconds(lambda: destination.copy_(source), repeats)
        del source, destination
    flops = 2 * matrix_size**3 / gemm
    bandwidth = 2 * elements * 4 / copy
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    return DeviceSpec(
        "measured host",
        (),
        {"fp32": flops},
        bandwidth,
        None,
        f"measured on this host at {when} with torch {torch.__version__}, {threads} intra-op thread(s): "
        f"fp32 = best of {repeats} torch.mm of {matrix_size}x{matrix_size} float32 "
        f"({2 * matrix_size**3:,} FLOPs each, best {gemm * 1e3:.3f} ms); memory bandwidth = best of "
        f"{repeats} copies of a {elements * 4 / (1 << 20):.0f} MiB float32 buffer, read + written "
        f"(best {copy * 1e3:.3f} ms)",
        note="rates this host reached, not datasheet peaks; fp32 only",
    )
