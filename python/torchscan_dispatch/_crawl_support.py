"""What every Python crawl front end shares (nn.Module hooks, exported
programs, TorchScript modules): TorchScan 0.2's input preparation, the model
totals, the report context, and the last step that hands the crawl record
to C++ and assembles the report around the layer records.
"""

from __future__ import annotations

import platform
from collections.abc import Iterable, Mapping
from itertools import starmap
from typing import Any

import torch
from torch import nn

from torchscan_dispatch import _version
from torchscan_dispatch._describe import describe_call
from torchscan_dispatch._library import hooks
from torchscan_dispatch._native import Measurement
from torchscan_dispatch.report import IncompleteAnalysisError


def model_defaults(module: nn.Module) -> tuple[torch.device, torch.dtype]:
    tensor = next(module.parameters(), None)
    if tensor is None:
        tensor = next(module.buffers(), None)
    if tensor is None:
        return torch.device("cpu"), torch.float32
    return tensor.device, tensor.dtype


def prepare_inputs(module, input_shape, dtype, args, kwargs, device):
    """(args, kwargs, input metadata) of one crawl, with TorchScan 0.2's
    checks and messages; generated tensors default to the device and dtype
    of ``module``'s first parameter (else buffer)."""
    provided = args is not None or kwargs is not None
    generated = input_shape is not None
    if provided == generated:
        raise ValueError("Exactly one of input_shape or args/kwargs must be provided.")
    if provided:
        if dtype is not None or device is not None:
            raise ValueError("dtype and device apply only to generated input_shape tensors.")
        if args is not None and not isinstance(args, tuple):
            raise TypeError(f"args must be a tuple, got {type(args).__name__}.")
        if kwargs is not None and not isinstance(kwargs, Mapping):
            raise TypeError(f"kwargs must be a mapping, got {type(kwargs).__name__}.")
        call_args = () if args is None else args
        call_kwargs = {} if kwargs is None else dict(kwargs)
        if any(not isinstance(name, str) for name in call_kwargs):
            raise TypeError("kwargs keys must be strings.")
        return call_args, call_kwargs, {"source": "provided", **describe_call(call_args, call_kwargs)}

    shapes = input_shape if isinstance(input_shape, list) else [input_shape]
    if not shapes or any(not isinstance(shape, tuple) for shape in shapes):
        raise TypeError("input_shape must be a tuple or a non-empty list of tuples.")
    if any(any(not isinstance(dimension, int) for dimension in shape) for shape in shapes):
        raise TypeError("Every input_shape dimension must be an integer.")
    default_device, default_dtype = model_defaults(module)
    target_device = default_device if device is None else torch.device(device)
    if dtype is None:
        dtypes = [default_dtype] * len(shapes)
    elif isinstance(dtype, torch.dtype):
        dtypes = [dtype] * len(shapes)
    else:
        dtypes = list(dtype)
        if len(dtypes) != len(shapes):
            raise ValueError("dtype length must match the number of input shapes.")
        if any(not isinstance(item, torch.dtype) for item in dtypes):
            raise TypeError("Every dtype value must be a torch.dtype.")

    def generate(shape: tuple[int, ...], current: torch.dtype) -> torch.Tensor:
        return generated_tensor((1, *shape), current, target_device)

    call_args = tuple(starmap(generate, zip(shapes, dtypes, strict=True)))
    return call_args, {}, {"source": "generated", **describe_call(call_args, {})}


def generated_tensor(shape: tuple[int, ...], dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """An input as TorchScan 0.2.0 generates it: booleans are ones, other
    integers zeros (what a random [0, 1) tensor truncates to), floats
    uniform in [0, 1)."""
    if dtype == torch.bool:
        return torch.ones(*shape, device=device, dtype=dtype)
    if not dtype.is_floating_point and not dtype.is_complex:
        return torch.zeros(*shape, device=device, dtype=dtype)
    return torch.rand(*shape, device=device).to(dtype=dtype)


def layer_record(
    path: str,
    call_index: int,
    type_name: str,
    call_input: dict[str, Any],
    parameters: tuple[int, int, int, bool],
    buffers: tuple[int, int, bool],
) -> dict[str, Any]:
    """A layer call's record as crawl_module starts it: its output pending.

    `parameters` is (trainable, frozen, bytes, shared) and `buffers`
    (elements, bytes, shared), each counting only tensors no earlier layer
    claimed."""
    trainable, frozen, parameter_bytes, parameter_shared = parameters
    buffer_elements, buffer_bytes, buffer_shared = buffers
    return {
        "path": path,
        "call_index": call_index,
        "name": path.rpartition(".")[-1] or type_name.lower(),
        "depth": 0 if not path else path.count(".") + 1,
        "type": type_name,
        "input": call_input,
        "output": {"kind": "pending"},
        "parameters": {
            "trainable": trainable,
            "frozen": frozen,
            "bytes": parameter_bytes,
            "shared": parameter_shared,
        },
        "buffers": {"elements": buffer_elements, "bytes": buffer_bytes, "shared": buffer_shared},
        "metrics": {
            "calls": {
                "status": "complete",
                "value": 1,
                "known_value": 1,
                "unit": "calls",
                "scope": "module_call",
                "method": "pytorch_hook",
            }
        },
    }


def tensor_identity(tensor: torch.Tensor) -> Any:
    """What makes two tensors one model weight (torchscan/tensor_identity.h
    says why): the same view of the same storage data, or, for tensors
    without storage data (meta, empty, subclasses), the same object."""
    try:
        if tensor.device.type != "meta" and type(tensor) in (torch.Tensor, torch.nn.Parameter):
            data = tensor.untyped_storage().data_ptr()
            if data:
                return (data, str(tensor.device), tensor.storage_offset(), tuple(tensor.shape),
                        tuple(tensor.stride()), tensor.dtype)  # fmt: skip
    except (RuntimeError, NotImplementedError):  # no storage to read
        pass
    return id(tensor)


_MODEL_TOTALS = ("trainable_parameters", "frozen_parameters", "parameter_bytes", "buffer_elements", "buffer_bytes")


def model_totals(
    parameters: Iterable[torch.Tensor], buffers: Iterable[torch.Tensor]
) -> tuple[dict[str, int], list[str], list[str]]:
    """The model's parameter and buffer totals, each tensor counted once
    (torchscan/tensor_identity.h's rule, read natively:
    python/operators/model_tensors.h), and the sorted devices and dtypes of
    the tensors counted."""
    totals, devices, dtypes = hooks().model_tensor_totals(parameters, buffers)
    return dict(zip(_MODEL_TOTALS, totals)), devices, dtypes


def module_totals(root: nn.Module, modules: list[nn.Module]) -> tuple[dict[str, int], list[str], list[str]]:
    """model_totals(root.parameters(), root.buffers()), where ``modules`` is
    list(root.modules()): read from each module's own dicts unless root's
    class overrides how they are walked (python/operators/model_tensors.h)."""
    totals, devices, dtypes = hooks().module_tensor_totals(root, modules)
    return dict(zip(_MODEL_TOTALS, totals)), devices, dtypes


def crawl_context(
    model_type: str, execution_mode: str, training_before: bool, devices: list[str], dtypes: list[str]
) -> dict[str, Any]:
    return {
        "torchscan_version": _version.__version__,
        "torch_version": torch.__version__,
        "python_version": platform.python_version(),
        "model_type": model_type,
        "execution_mode": execution_mode,
        "training_before": training_before,
        "devices": devices,
        "dtypes": dtypes,
    }


def finish_report(
    record: dict[str, Any],
    layers: list[dict[str, Any]],
    context: dict[str, Any],
    input_metadata: dict[str, Any],
    strict: bool,
    measurement: Measurement | None = None,
) -> dict[str, Any]:
    """The AnalysisReport of a crawl, built in C++ from the crawl record
    and the front end's ``layers`` (each with its ``calls`` metric),
    ``context`` and ``input_metadata``, as every front end's report is
    (crawl::BuildAnalysisReport: module formulas, totals, diagnostics).

    With ``measurement`` (stopped, not finished), a full-mode record leaves
    out ``operator_flops`` and ``layer_call_flops``: C++ reads them from the
    measurement itself.
    """
    if measurement is None:
        report, incomplete = hooks().crawl_report(record, context, input_metadata, layers)
    else:
        report, incomplete = hooks().measured_crawl_report(
            measurement.handle, record, context, input_metadata, layers
        )
    if strict and incomplete is not None:
        raise IncompleteAnalysisError(report, incomplete)
    return report
