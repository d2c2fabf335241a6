"""Module descriptions (what the C++ module formulas read) of the modules of
an exported program, which keeps no module attributes: each is recovered
from what the module does in the graph. A ``Conv2d``'s channels and kernel
are its weight's shape, its stride, padding, dilation and groups the
arguments of the convolution operator inside its scope; a ``MaxPool2d``'s
kernel, stride, padding and dilation those of its pooling operator.

An attribute that cannot be recovered is ``None`` in the description.

Operator arguments come back as the operator's schema lists them (a pool
kernel ``[2, 2]``, never the int ``2`` a module may have been built with),
so a module built as ``MaxPool2d(2)`` is described as ``MaxPool2d((2, 2))``:
TorchScan 0.2 counts those two differently (its quirk 10), and the count of
the tuple form is the one that matches the work done.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch
from torch import fx

from torchscan_dispatch._describe import families, module_family

Arguments = dict[str, Any]


def _static(value: Any) -> Any:
    """A node argument as the graph knows it before running: tensors as their
    example values (shapes, dtypes), nested lists element-wise."""
    if isinstance(value, fx.Node):
        return value.meta.get("val", value)
    if isinstance(value, (list, tuple)):
        return [_static(item) for item in value]
    return value


def _arguments(node: fx.Node) -> Arguments:
    """The operator's arguments by schema name, defaults filled in."""
    arguments: Arguments = {}
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
        arguments[argument.name] = _static(value)
    return arguments


def _operators(nodes: list[fx.Node]) -> list[tuple[str, Arguments]]:
    """("aten::conv2d", arguments) of each ATen operator node, in order."""
    found = []
    for node in nodes:
        schema = getattr(node.target, "_schema", None)
        if node.op == "call_function" and schema is not None:
            found.append((schema.name, _arguments(node)))
    return found


def _first(operators: list[tuple[str, Arguments]], names: set[str]) -> tuple[str, Arguments] | None:
    return next(((name, arguments) for name, arguments in operators if name in names), None)


def _ints(value: Any, length: int) -> list[int] | None:
    """A list argument as ints, an int repeated to ``length`` (``padding=0``
    means zero on every side), an empty list (pool stride) as None."""
    if isinstance(value, (int, torch.SymInt)):
        return [int(value)] * length
    if isinstance(value, list) and value:
        return [int(item) for item in value]
    return None


def _shape(value: Any) -> list[int] | None:
    return [int(size) for size in value.shape] if isinstance(value, torch.Tensor) else None


def _present(value: Any) -> bool:
    return value is not None


_CONVOLUTIONS = {f"aten::conv{n}d" for n in (1, 2, 3)} | {"aten::convolution", "aten::_convolution"}
_TRANSPOSED = {f"aten::conv_transpose{n}d" for n in (1, 2, 3)}


def _conv(operators, tensors, transposed: bool) -> dict[str, Any]:
    found = _first(operators, _CONVOLUTIONS | _TRANSPOSED)
    arguments = found[1] if found else {}
    weight = _shape(arguments.get("weight", tensors.get("weight")))
    groups = arguments.get("groups")
    kernel = len(weight) - 2 if weight else 0
    in_channels = None
    if weight and groups is not None:
        in_channels = weight[0] if transposed else weight[1] * int(groups)
    padding = arguments.get("padding")
    return {
        "in_channels": in_channels,
        "kernel_size": weight[2:] if weight else None,
        "stride": _ints(arguments.get("stride"), kernel) if found else None,
        "padding": padding if isinstance(padding, str) else (_ints(padding, kernel) if found else None),
        "dilation": _ints(arguments.get("dilation"), kernel) if found else None,
        "groups": None if groups is None else int(groups),
        "bias": _present(arguments["bias"]) if found else "bias" in tensors,
    }


def _linear(operators, tensors) -> dict[str, Any]:
    found = _first(operators, {"aten::linear"})
    weight = _shape(found[1]["weight"] if found else tensors.get("weight"))
    return {
        "in_features": weight[1] if weight and len(weight) == 2 else None,
        "out_features": weight[0] if weight and len(weight) == 2 else None,
        "bias": _present(found[1]["bias"]) if found else "bias" in tensors,
    }


_POOLS = {
    "max_pool": {f"aten::max_pool{n}d" for n in (1, 2, 3)} | {f"aten::max_pool{n}d_with_indices" for n in (2, 3)},
    "avg_pool": {f"aten::avg_pool{n}d" for n in (1, 2, 3)},
}


def _pool(operators, tensors, family: str) -> dict[str, Any]:
    found = _first(operators, _POOLS[family])
    arguments = found[1] if found else {}
    kernel = _ints(arguments.get("kernel_size"), 1)
    length = len(kernel) if kernel else 0
    description = {
        "kernel_size": kernel,
        "stride": (_ints(arguments.get("stride"), length) or kernel) if found else None,
        "padding": _ints(arguments.get("padding"), length) if found else None,
    }
    if family == "max_pool":
        description["dilation"] = _ints(arguments.get("dilation"), length) if found else None
    return description


_BATCH_NORMS = {
    "aten::batch_norm",
    "aten::native_batch_norm",
    "aten::_native_batch_norm_legit",
    "aten::_native_batch_norm_legit_no_training",
    "aten::_native_batch_norm_legit_functional",
    "aten::_batch_norm_with_update",
    "aten::_batch_norm_with_update_functional",
    "aten::_batch_norm_no_update",
    "aten::cudnn_batch_norm",
    "aten::miopen_batch_norm",
}


def _numel(shape: list[int] | None) -> int | None:
    if shape is None:
        return None
    count = 1
    for size in shape:
        count *= size
    return count


def _batch_norm(operators, tensors) -> dict[str, Any]:
    found = _first(operators, _BATCH_NORMS)
    if found is None:
        return dict.fromkeys(
            ("num_features", "affine", "track_running_stats", "training", "momentum", "running_mean_numel",
             "running_var_numel", "weight_numel", "bias_numel")
        )
    name, arguments = found
    shapes = {key: _shape(arguments.get(key)) for key in ("weight", "bias", "running_mean", "running_var")}
    features = next((shape[0] for shape in shapes.values() if shape), None)
    if features is None:
        source = _shape(arguments.get("input"))
        features = source[1] if source and len(source) > 1 else None
    training = arguments.get("training")
    if training is None:  # the overloads named after their mode
        training = name in ("aten::_batch_norm_with_update", "aten::_batch_norm_with_update_functional")
    momentum = arguments.get("momentum")
    return {
        "num_features": features,
        "affine": shapes["weight"] is not None,
        "track_running_stats": shapes["running_mean"] is not None,
        "training": bool(training),
        "momentum": None if momentum is None else float(momentum),
        "running_mean_numel": _numel(shapes["running_mean"]),
        "running_var_numel": _numel(shapes["running_var"]),
        "weight_numel": _numel(shapes["weight"]),
        "bias_numel": _numel(shapes["bias"]),
    }


def _layer_norm(operators, tensors) -> dict[str, Any]:
    found = _first(operators, {"aten::layer_norm", "aten::native_layer_norm"})
    if found is None:
        return {"normalized_shape": None, "weight": "weight" in tensors, "bias": "bias" in tensors}
    arguments = found[1]
    return {
        "normalized_shape": [int(size) for size in arguments["normalized_shape"]],
        "weight": _present(arguments["weight"]),
        "bias": _present(arguments["bias"]),
    }


_DROPOUTS = {"aten::dropout", "aten::dropout_", "aten::native_dropout"}


def _dropout(operators, tensors) -> dict[str, Any]:
    found = _first(operators, _DROPOUTS)
    if found is None:
        return {"p": None, "inplace": None, "training": None}
    name, arguments = found
    return {"p": float(arguments["p"]), "inplace": name.endswith("_"), "training": bool(arguments["train"])}


def _activation(operators, tensors, operator_names: tuple[str, ...]) -> dict[str, Any]:
    """An activation's `inplace`: whether its call ran the operators' `_`
    variants (the family table names the operators)."""
    found = _first(operators, {*operator_names, *(f"{name}_" for name in operator_names)})
    return {"inplace": None if found is None else found[0].endswith("_")}


def _multihead_attention(operators, tensors) -> dict[str, Any]:
    in_proj = _shape(tensors.get("in_proj_weight"))
    query_proj = _shape(tensors.get("q_proj_weight"))
    embed_dim = in_proj[1] if in_proj else (query_proj[0] if query_proj else None)
    heads = None
    fused = _first(operators, {"aten::_native_multi_head_attention"})
    attention = _first(operators, {"aten::scaled_dot_product_attention"})
    if fused is not None:
        heads = int(fused[1]["num_head"])
    elif attention is not None:
        query = _shape(attention[1]["query"])
        heads = query[-3] if query and len(query) == 4 else None
    out_proj = _shape(tensors.get("out_proj.weight"))
    return {
        "embed_dim": embed_dim,
        "num_heads": heads,
        "head_dim": embed_dim // heads if embed_dim and heads else None,
        # The graph keeps neither the layout of the module's inputs nor the
        # option: nothing here tells them apart.
        "batch_first": None,
        "in_proj_bias": "in_proj_bias" in tensors,
        "bias_k": "bias_k" in tensors,
        "bias_v": "bias_v" in tensors,
        "add_zero_attn": None,
        "dropout": float(attention[1]["dropout_p"]) if attention is not None else None,
        "training": None,
        "out_proj": {
            "in_features": out_proj[1] if out_proj else None,
            "out_features": out_proj[0] if out_proj else None,
            "bias": "out_proj.bias" in tensors,
        },
    }


_READERS: dict[str, Callable[[list, Mapping[str, torch.Tensor]], dict[str, Any]]] = {
    "linear": _linear,
    "conv": lambda operators, tensors: _conv(operators, tensors, transposed=False),
    "conv_transpose": lambda operators, tensors: _conv(operators, tensors, transposed=True),
    "batch_norm": _batch_norm,
    "max_pool": lambda operators, tensors: _pool(operators, tensors, "max_pool"),
    "avg_pool": lambda operators, tensors: _pool(operators, tensors, "avg_pool"),
    "dropout": _dropout,
    "layer_norm": _layer_norm,
    "multihead_attention": _multihead_attention,
}


def _reader(family: str) -> Callable[[list, Mapping[str, torch.Tensor]], dict[str, Any]] | None:
    for row in families():
        if row.name == family and row.activation_operators:
            return lambda operators, tensors: _activation(operators, tensors, row.activation_operators)
    return _READERS.get(family)


def describe_from_graph(
    type_name: str, nodes: list[fx.Node], tensors: Mapping[str, torch.Tensor], parameter_count: int
) -> dict[str, Any]:
    """The description of one module call: ``type_name`` is the qualified
    class the graph records, ``nodes`` the operators that ran in the call,
    ``tensors`` the module's parameters and buffers by their names inside it
    (``weight``, ``out_proj.bias``)."""
    family = module_family(type_name)
    description: dict[str, Any] = {"type": type_name.rpartition(".")[2], "family": family}
    reader = _reader(family)
    if reader is not None:
        description.update(reader(_operators(nodes), tensors))
    description["parameter_count"] = parameter_count
    return description


def unrecovered(description: Mapping[str, Any], prefix: str = "") -> list[str]:
    """The attributes of a description that could not be recovered."""
    missing = []
    for key, value in description.items():
        if value is None:
            missing.append(f"{prefix}{key}")
        elif isinstance(value, Mapping):
            missing.extend(unrecovered(value, f"{prefix}{key}."))
    return missing
