"""Module descriptions (what the C++ module formulas read) of the modules of
an exported program, which keeps no module attributes: each is recovered
from what the module does in the graph, by the library's one graph recovery
(crawl/recover_from_graph.h, which TorchScript modules share). This module
only hands it the graph: each ATen operator node that ran in the module's
call, its arguments by schema name as the graph knows them before running
(tensors by their example values' sizes), and the module's parameters and
buffers by their sizes.

An attribute that cannot be recovered is ``None`` in the description.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import math

import torch
from torch import fx

from torchscan_dispatch._describe import module_family
from torchscan_dispatch._library import hooks

_UNKNOWN = {"unknown": True}


def _sizes(tensor: torch.Tensor) -> list[int] | None:
    try:
        return [int(size) for size in tensor.shape]
    except (TypeError, RuntimeError):  # a size without a hint
        return None


def _value(value: Any) -> Any:
    """An argument in the recovery's words (crawl/recover_from_graph.h):
    None, a bool, an int, a float, a str, a list of ints, {"tensor": sizes}
    or {"unknown": True}."""
    if isinstance(value, fx.Node):
        value = value.meta.get("val", _UNKNOWN)
    if value is None or isinstance(value, (bool, str)):
        return value
    # A fill value -inf (masked_fill), a clamp's inf, an int no 64 bits hold:
    # arguments no hyper-parameter is, passed over as unknown.
    if isinstance(value, int):
        return value if -(2**63) <= value < 2**63 else _UNKNOWN
    if isinstance(value, float):
        return value if math.isfinite(value) else _UNKNOWN
    if isinstance(value, torch.Tensor):
        return {"tensor": _sizes(value)}
    if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        try:
            return {torch.SymInt: int, torch.SymFloat: float, torch.SymBool: bool}[type(value)](value)
        except (TypeError, RuntimeError):  # no hint: computed while running
            return _UNKNOWN
    if isinstance(value, (list, tuple)):
        items = [_value(item) for item in value]
        if all(isinstance(item, int) and not isinstance(item, bool) for item in items):
            return items
    return _UNKNOWN


def _arguments(node: fx.Node) -> dict[str, Any]:
    """The operator's arguments by schema name, defaults filled in."""
    arguments: dict[str, Any] = {}
    schema = node.target._schema
    for position, argument in enumerate(schema.arguments):
        if not argument.kwarg_only and position < len(node.args):
            value = node.args[position]
        elif argument.name in node.kwargs:
            value = node.kwargs[argument.name]
        elif argument.has_default_value():
            value = argument.default_value
        else:
            value = None
        arguments[argument.name] = _value(value)
    return arguments


def _operators(nodes: list[fx.Node]) -> list[dict[str, Any]]:
    """Each ATen operator node, in order."""
    found = []
    for node in nodes:
        schema = getattr(node.target, "_schema", None)
        if node.op == "call_function" and schema is not None:
            found.append({"name": schema.name, "arguments": _arguments(node)})
    return found


def describe_from_graph(
    type_name: str, nodes: list[fx.Node], tensors: Mapping[str, torch.Tensor], parameter_count: int
) -> tuple[dict[str, Any], list[str]]:
    """The description of one module call and the attributes its graph does
    not show (None in the description; None is also a value, as a BatchNorm
    without weight has no weight numel). ``type_name`` is the qualified
    class the graph records, ``nodes`` the operators that ran in the call,
    ``tensors`` the module's parameters and buffers by their names inside it
    (``weight``, ``out_proj.bias``)."""
    family = module_family(type_name)
    description: dict[str, Any] = {"type": type_name.rpartition(".")[2], "family": family}
    graph = {
        "family": family,
        "operators": _operators(nodes),
        "tensors": {name: sizes for name, tensor in tensors.items() if (sizes := _sizes(tensor)) is not None},
    }
    recovered = hooks().recover_attributes(graph)
    for key, value in recovered["values"].items():
        # "out_proj.in_features": a member of a sub-description.
        *outer, name = key.split(".")
        place = description
        for part in outer:
            place = place.setdefault(part, {})
        place[name] = value
    description["parameter_count"] = parameter_count
    return description, recovered["unrecovered"]
