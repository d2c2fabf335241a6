"""The device table: what each accelerator can do at best, and where that
figure comes from.

One row per device model: its dense peak FLOP/s for each precision, its
memory bandwidth and its interconnect bandwidth, each from the vendor's
datasheet named in the row. MFU (``mfu.py``) divides achieved FLOP/s by a
peak from here; a roofline divides FLOPs by peak FLOP/s and bytes by memory
bandwidth.

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

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
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

_T = 1e12
_G = 1e9


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


_NVIDIA_H100 = "NVIDIA H100 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h100), sparse figures halved"
_NVIDIA_H200 = "NVIDIA H200 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h200), sparse figures halved"

DEVICES: tuple[DeviceSpec, ...] = (
    DeviceSpec(
        "H100 SXM",
        ("NVIDIA H100 80GB HBM3",),
        {"fp64": 67 * _T, "fp32": 67 * _T, "tf32": 494.5 * _T, "bf16": 989.5 * _T, "fp16": 989.5 * _T,
         "fp8": 1979 * _T, "int8": 1979 * _T},
        3.35 * _T,
        900 * _G,
        _NVIDIA_H100 + ", SXM column",
    ),
    DeviceSpec(
        "H100 PCIe",
        ("NVIDIA H100 PCIe",),
        {"fp64": 51 * _T, "fp32": 51 * _T, "tf32": 378 * _T, "bf16": 756.5 * _T, "fp16": 756.5 * _T,
         "fp8": 1513 * _T, "int8": 1513 * _T},
        2.0 * _T,
        600 * _G,
        _NVIDIA_H100 + ", PCIe column (NVLink bridge)",
    ),
    DeviceSpec(
        "H100 NVL",
        ("NVIDIA H100 NVL",),
        {"fp64": 60 * _T, "fp32": 60 * _T, "tf32": 417.5 * _T, "bf16": 835.5 * _T, "fp16": 835.5 * _T,
         "fp8": 1670.5 * _T, "int8": 1670.5 * _T},
        3.9 * _T,
        600 * _G,
        _NVIDIA_H100 + ", NVL column",
    ),
    DeviceSpec(
        "H200",
        ("NVIDIA H200",),
        {"fp64": 67 * _T, "fp32": 67 * _T, "tf32": 494.5 * _T, "bf16": 989.5 * _T, "fp16": 989.5 * _T,
         "fp8": 1979 * _T, "int8": 1979 * _T},
        4.8 * _T,
        900 * _G,
        _NVIDIA_H200 + ", SXM column",
    ),
    DeviceSpec(
        "H200 NVL",
        ("NVIDIA H200 NVL",),
        {"fp64": 60 * _T, "fp32": 60 * _T, "tf32": 417.5 * _T, "bf16": 835.5 * _T, "fp16": 835.5 * _T,
         "fp8": 1670.5 * _T, "int8": 1670.5 * _T},
        4.8 * _T,
        900 * _G,
        _NVIDIA_H200 + ", NVL column",
    ),
    DeviceSpec(
        "B200",
        ("NVIDIA B200",),
        {"tf32": 1125 * _T, "bf16": 2250 * _T, "fp16": 2250 * _T, "fp8": 4500 * _T, "int8": 4500 * _T},
        8.0 * _T,
        1800 * _G,
        "NVIDIA HGX B200 datasheet (nvidia.com/en-us/data-center/hgx), per GPU: 8-GPU sparse figures / 8 / 2",
        note="no FP64 or plain FP32 figure per GPU in the source",
    ),
    DeviceSpec(
        "A100 SXM 80GB",
        ("NVIDIA A100-SXM4-80GB",),
        {"fp64": 19.5 * _T, "fp32": 19.5 * _T, "tf32": 156 * _T, "bf16": 312 * _T, "fp16": 312 * _T,
         "int8": 624 * _T},
        2.039 * _T,
        600 * _G,
        "NVIDIA A100 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/a100), 80GB SXM column",
    ),
    DeviceSpec(
        "A100 SXM 40GB",
        ("NVIDIA A100-SXM4-40GB",),
        {"fp64": 19.5 * _T, "fp32": 19.5 * _T, "tf32": 156 * _T, "bf16": 312 * _T, "fp16": 312 * _T,
         "int8": 624 * _T},
        1.555 * _T,
        600 * _G,
        "NVIDIA A100 Tensor Core GPU datasheet, 40GB SXM column",
    ),
    DeviceSpec(
        "A100 PCIe 80GB",
        ("NVIDIA A100 80GB PCIe",),
        {"fp64": 19.5 * _T, "fp32": 19.5 * _T, "tf32": 156 * _T, "bf16": 312 * _T, "fp16": 312 * _T,
         "int8": 624 * _T},
        1.935 * _T,
        600 * _G,
        "NVIDIA A100 Tensor Core GPU datasheet, 80GB PCIe column (NVLink bridge)",
    ),
    DeviceSpec(
        "A100 PCIe 40GB",
        ("NVIDIA A100-PCIE-40GB",),
        {"fp64": 19.5 * _T, "fp32": 19.5 * _T, "tf32": 156 * _T, "bf16": 312 * _T, "fp16": 312 * _T,
         "int8": 624 * _T},
        1.555 * _T,
        600 * _G,
        "NVIDIA A100 Tensor Core GPU datasheet, 40GB PCIe column (NVLink bridge)",
    ),
    DeviceSpec(
        "L4",
        ("NVIDIA L4",),
        {"fp32": 30.3 * _T, "tf32": 60 * _T, "bf16": 121 * _T, "fp16": 121 * _T, "fp8": 242.5 * _T,
         "int8": 242.5 * _T},
        300 * _G,
        64 * _G,
        "NVIDIA L4 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/l4), sparse figures halved; PCIe Gen4 x16",
    ),
    DeviceSpec(
        "L40S",
        ("NVIDIA L40S",),
        {"fp32": 91.6 * _T, "tf32": 183 * _T, "bf16": 362.05 * _T, "fp16": 362.05 * _T, "fp8": 733 * _T,
         "int8": 733 * _T},
        864 * _G,
        64 * _G,
        "NVIDIA L40S GPU datasheet (nvidia.com/en-us/data-center/l40s), dense figures; PCIe Gen4 x16",
    ),
    DeviceSpec(
        "MI300X",
        ("AMD Instinct MI300X",),
        {"fp64": 163.4 * _T, "fp32": 163.4 * _T, "tf32": 653.7 * _T, "bf16": 1307.4 * _T, "fp16": 1307.4 * _T,
         "fp8": 2614.9 * _T, "int8": 2614.9 * _T},
        5.3 * _T,
        896 * _G,
        "AMD Instinct MI300X data sheet (amd.com/en/products/accelerators/instinct/mi300/mi300x), dense matrix "
        "figures; Infinity Fabric 7 links x 128 GB/s",
    ),
)  # fmt: skip


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
