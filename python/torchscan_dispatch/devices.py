"""The device table: what each accelerator can do at best, and where that
figure comes from.

One row per device model: its dense peak FLOP/s for each precision, its
memory bandwidth and its interconnect bandwidth, each from the vendor's
datasheet named in the row. MFU (``mfu.py``) divides achieved FLOP/s by a
peak from here; a roofline divides FLOPs by peak FLOP/s and bytes by memory
bandwidth.

The rows are data, declared once: ``device_table.json`` beside this module
(a row: name, reported_names, peak_flops by precision, memory_bandwidth,
interconnect_bandwidth or null, source, an optional note). This module
builds ``DEVICES`` from it; the C++ library embeds the same file when it is
built (report/device_table.h), so ``torchscan roofline --device-model`` and
C++ callers find the same rows by the same names.

Names. A row lists the names it answers to: the names
``torch.cuda.get_device_name()`` reports for that model and a short
canonical name ("H100 SXM"). A name is looked up after normalisation
(``normalize_device_name``: Unicode case folding, runs of whitespace made
one space, ends stripped) and must then equal one of those names exactly. A
name that is only *like* a known one (an "L40S" is not an "L4", an "H100
NVL" is not an "H100 SXM") finds nothing: an unknown device gets no peak,
and MFU says why instead of guessing.

Figures.
- Peak FLOP/s are dense (not the 2:4-sparse figures datasheets headline),
  per device, for matrix (tensor-core) work where the precision has it.
- ``fp32`` is plain FP32 arithmetic; ``tf32`` the TF32 tensor-core rate,
  which PyTorch uses for float32 matrix products only when
  ``torch.get_float32_matmul_precision()`` is not "highest"
  (``precision_of`` follows that setting).
- ``memory_bandwidth``: bytes per second of the device's own memory.
- ``interconnect_bandwidth``: bytes per second between devices of one node
  over the fastest link the product has (NVLink, Infinity Fabric; PCIe for
  cards without one), both directions together, as datasheets state it.
- A precision a row does not list has no peak (``None``): never 0.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import torch

__all__ = [
    "DEVICES",
    "DeviceSpec",
    "device_spec",
    "normalize_device_name",
    "peak_flops_per_second",
    "precision_of",
]

# The precisions a peak is given for.
PRECISIONS = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8")


@dataclass(frozen=True)
class DeviceSpec:
    """One device model of the table."""

    name: str  # canonical: "H100 SXM"
    reported_names: tuple[str, ...]  # what torch.cuda.get_device_name() says
    peak_flops: Mapping[str, float]  # precision -> dense FLOP/s
    memory_bandwidth: float  # bytes/s
    interconnect_bandwidth: float | None  # bytes/s, both directions
    source: str  # the datasheet the figures come from
    note: str = field(default="")

    def names(self) -> tuple[str, ...]:
        return (self.name, *self.reported_names)


TABLE_FILE = "device_table.json"
_ROW_KEYS = (
    "name", "reported_names", "peak_flops", "memory_bandwidth", "interconnect_bandwidth", "source", "note",
)  # fmt: skip


def _positive(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 or value == float("inf"):
        raise ValueError(f"{where}: is not a positive number")
    return float(value)


def _row(row: Any, where: str) -> DeviceSpec:
    if not isinstance(row, dict):
        raise ValueError(f"{where}: expected an object")
    unknown = [key for key in row if key not in _ROW_KEYS]
    if unknown:
        raise ValueError(f"{where}.{unknown[0]}: unknown field")
    for key in ("name", "reported_names", "peak_flops", "memory_bandwidth", "interconnect_bandwidth", "source"):
        if key not in row:
            raise ValueError(f"{where}.{key}: is missing")
    peaks = row["peak_flops"]
    if not isinstance(peaks, dict) or not peaks:
        raise ValueError(f"{where}.peak_flops: expected a non-empty object")
    for precision in peaks:
        if precision not in PRECISIONS:
            raise ValueError(f"{where}.peak_flops.{precision}: unknown precision ({', '.join(PRECISIONS)})")
    interconnect = row["interconnect_bandwidth"]
    return DeviceSpec(
        str(row["name"]),
        tuple(str(name) for name in row["reported_names"]),
        {precision: _positive(peak, f"{where}.peak_flops.{precision}") for precision, peak in peaks.items()},
        _positive(row["memory_bandwidth"], f"{where}.memory_bandwidth"),
        None if interconnect is None else _positive(interconnect, f"{where}.interconnect_bandwidth"),
        str(row["source"]),
        str(row.get("note", "")),
    )


def _load_table() -> tuple[DeviceSpec, ...]:
    """The rows of device_table.json, the one declaration of the table (the
    C++ library embeds the same file: report/device_table.h)."""
    text = resources.files(__package__).joinpath(TABLE_FILE).read_text(encoding="utf-8")
    document = json.loads(text)
    if not isinstance(document, dict) or not isinstance(document.get("devices"), list):
        raise ValueError(f"{TABLE_FILE}: expected an object with a list of devices")
    return tuple(_row(row, f"{TABLE_FILE}: devices[{index}]") for index, row in enumerate(document["devices"]))


# The table, in the file's order.
DEVICES: tuple[DeviceSpec, ...] = _load_table()


def normalize_device_name(name: str) -> str:
    """The form names are compared in: Unicode-normalised (NFKC), case-folded,
    whitespace runs made one space, ends stripped. Nothing else: no
    substrings, no dropped words."""
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", name).casefold()).strip()


def _index() -> dict[str, DeviceSpec]:
    index: dict[str, DeviceSpec] = {}
    for spec in DEVICES:
        for name in spec.names():
            key = normalize_device_name(name)
            if key in index:  # the table is wrong, not the caller: fail loudly
                raise AssertionError(f"device name {name!r} names two rows")
            index[key] = spec
    return index


_BY_NAME = _index()


def device_spec(name: str) -> DeviceSpec | None:
    """The row whose names include ``name`` after normalisation, or None."""
    return _BY_NAME.get(normalize_device_name(name))


_FP8 = {
    getattr(torch, attribute)
    for attribute in ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz")
    if hasattr(torch, attribute)
}


def precision_of(dtype: torch.dtype) -> str | None:
    """The table's precision for matrix products in ``dtype``: float32 is
    ``tf32`` when PyTorch's float32 matmul precision allows TF32, else
    ``fp32``."""
    if dtype == torch.float32:
        return "fp32" if torch.get_float32_matmul_precision() == "highest" else "tf32"
    if dtype in _FP8:
        return "fp8"
    return {torch.float64: "fp64", torch.bfloat16: "bf16", torch.float16: "fp16", torch.int8: "int8"}.get(dtype)


def device_name(device: Any) -> str | None:
    """The name to look a device up by: the string itself for a name, the
    CUDA device's reported name for a CUDA device, None otherwise (a CPU)."""
    if isinstance(device, str) and not re.fullmatch(r"(cuda|cpu|meta|mps|xpu)(:\d+)?", device):
        return device
    if device is None:
        return None
    device = torch.device(device)
    if device.type != "cuda" or not torch.cuda.is_available():
        return None
    return torch.cuda.get_device_name(device)


def peak_flops_per_second(device: Any = None, dtype: torch.dtype = torch.bfloat16) -> float | None:
    """The dense peak FLOP/s of ``device`` (a CUDA device, or a name such as
    "NVIDIA H100 80GB HBM3" or "H100 SXM") for matrix products in ``dtype``,
    or None when the table has none (CPUs, unknown devices, precisions the
    device's row does not list). ``peak_unknown_reason`` says why."""
    name = device_name(device)
    spec = device_spec(name) if name is not None else None
    precision = precision_of(dtype)
    if spec is None or precision is None:
        return None
    return spec.peak_flops.get(precision)


def peak_unknown_reason(device: Any, dtype: torch.dtype) -> str | None:
    """Why ``peak_flops_per_second(device, dtype)`` is None (None if it is not)."""
    name = device_name(device)
    if name is None:
        return f"the device table has no peak for {torch.device(device) if device is not None else 'this device'}"
    spec = device_spec(name)
    if spec is None:
        return f"{name!r} is not in the device table (exact names only: torchscan_dispatch.devices.DEVICES)"
    precision = precision_of(dtype)
    if precision is None or precision not in spec.peak_flops:
        return f"the device table gives {spec.name} no peak for {dtype} ({precision or 'no matrix precision'})"
    return None
