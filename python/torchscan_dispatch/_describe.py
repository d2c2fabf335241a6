"""Plain descriptions of Python values and modules, for the C++ side.

Value metadata follows TorchScan 0.2's "describe" rules exactly (shapes,
dtypes, devices, container structure; never tensor contents, strings or
non-identifier keys). Module descriptions carry what the C++ module formulas
need (formulas/module_json.h): the class name, a family chosen with
isinstance in TorchScan 0.2's check order, and the hyper-parameters.
crawl_module reads them natively from the family table's attribute
declarations (python/operators/module_attributes.h) and calls describe_module
only for the modules that declines (an nn.Transformer root, an attribute
missing or of another type); tests/python/test_native_module_description.py
checks that both give the same description.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F
from torch.nn.modules.batchnorm import _BatchNorm
from torch.nn.modules.conv import _ConvNd, _ConvTransposeNd
from torch.nn.modules.pooling import _AdaptiveAvgPoolNd, _AdaptiveMaxPoolNd, _AvgPoolNd, _MaxPoolNd


def describe_value(value: Any) -> dict[str, Any]:
    if isinstance(value, torch.Tensor):
        return {
            "kind": "tensor",
            "shape": list(value.shape),
            "dtype": str(value.dtype),
            "device": str(value.device),
            "requires_grad": value.requires_grad,
        }
    if value is None:
        return {"kind": "none"}
    if isinstance(value, tuple):
        return {"kind": "tuple", "items": [describe_value(item) for item in value]}
    if isinstance(value, list):
        return {"kind": "list", "items": [describe_value(item) for item in value]}
    if isinstance(value, Mapping):
        return {
            "kind": "mapping",
            "type": type(value).__name__,
            "items": [
                {
                    **({"key": key} if isinstance(key, int) or (isinstance(key, str) and key.isidentifier()) else {}),
                    "key_type": type(key).__name__,
                    "value": describe_value(item),
                }
                for key, item in value.items()
            ],
        }
    if isinstance(value, (bool, int, float, complex, str, bytes)):
        return {"kind": "scalar", "type": type(value).__name__}
    return {"kind": "object", "type": type(value).__qualname__}


def describe_call(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "args": [describe_value(arg) for arg in args],
        "kwargs": {name: describe_value(value) for name, value in kwargs.items()},
    }


def _raw(value: Any) -> Any:
    """Keeps the stored form: an int stays an int, a tuple becomes a list."""
    if isinstance(value, (tuple, list)):
        return [int(v) for v in value]
    if isinstance(value, str):
        return value
    return int(value)


def _linear(m: nn.Linear) -> dict[str, Any]:
    return {"in_features": m.in_features, "out_features": m.out_features, "bias": m.bias is not None}


def _dropout(m: nn.Dropout) -> dict[str, Any]:
    return {"p": float(m.p), "inplace": bool(m.inplace), "training": bool(m.training)}


def _layer_norm(m: nn.LayerNorm) -> dict[str, Any]:
    return {
        "normalized_shape": [int(v) for v in m.normalized_shape],
        "weight": m.weight is not None,
        "bias": getattr(m, "bias", None) is not None,
    }


def _multihead_attention(m: nn.MultiheadAttention) -> dict[str, Any]:
    return {
        "embed_dim": m.embed_dim,
        "num_heads": m.num_heads,
        "head_dim": m.head_dim,
        "batch_first": bool(m.batch_first),
        "in_proj_bias": m.in_proj_bias is not None,
        "bias_k": m.bias_k is not None,
        "bias_v": m.bias_v is not None,
        "add_zero_attn": bool(m.add_zero_attn),
        "dropout": float(m.dropout),
        "training": bool(m.training),
        "out_proj": _linear(m.out_proj),
    }


def _encoder_layer(layer: nn.TransformerEncoderLayer) -> dict[str, Any]:
    return {
        "self_attn": _multihead_attention(layer.self_attn),
        "linear1": _linear(layer.linear1),
        "dropout": _dropout(layer.dropout),
        "linear2": _linear(layer.linear2),
        "norm1": _layer_norm(layer.norm1),
        "norm2": _layer_norm(layer.norm2),
        "dropout1": _dropout(layer.dropout1),
        "dropout2": _dropout(layer.dropout2),
        "activation_is_relu": layer.activation is F.relu,
    }


def _decoder_layer(layer: nn.TransformerDecoderLayer) -> dict[str, Any]:
    return {
        "self_attn": _multihead_attention(layer.self_attn),
        "multihead_attn": _multihead_attention(layer.multihead_attn),
        "linear1": _linear(layer.linear1),
        "dropout": _dropout(layer.dropout),
        "linear2": _linear(layer.linear2),
        "norm1": _layer_norm(layer.norm1),
        "norm2": _layer_norm(layer.norm2),
        "norm3": _layer_norm(layer.norm3),
        "dropout1": _dropout(layer.dropout1),
        "dropout2": _dropout(layer.dropout2),
        "dropout3": _dropout(layer.dropout3),
        "activation_is_relu": layer.activation is F.relu,
    }


def _stack(stack: nn.Module, describe_layer) -> dict[str, Any]:
    norm = stack.norm if isinstance(stack.norm, nn.LayerNorm) else None
    return {
        "layers": [describe_layer(layer) for layer in stack.layers],
        "norm": None if norm is None else _layer_norm(norm),
    }


def _transformer(m: nn.Transformer) -> dict[str, Any]:
    native = isinstance(m.encoder, nn.TransformerEncoder) and isinstance(m.decoder, nn.TransformerDecoder)
    description: dict[str, Any] = {"native_stacks": native}
    if native:
        description["encoder"] = _stack(m.encoder, _encoder_layer)
        description["decoder"] = _stack(m.decoder, _decoder_layer)
    return description


def _pool(m: nn.Module) -> dict[str, Any]:
    description = {"kernel_size": _raw(m.kernel_size), "stride": _raw(m.stride), "padding": _raw(m.padding)}
    if hasattr(m, "dilation"):
        description["dilation"] = _raw(m.dilation)
    return description


def _numel(tensor: torch.Tensor | None) -> int | None:
    return None if tensor is None else tensor.numel()


def _batch_norm(m: _BatchNorm) -> dict[str, Any]:
    return {
        "num_features": m.num_features,
        "affine": bool(m.affine),
        "track_running_stats": bool(m.track_running_stats),
        "training": bool(m.training),
        "momentum": None if m.momentum is None else float(m.momentum),
        "running_mean_numel": _numel(m.running_mean),
        "running_var_numel": _numel(m.running_var),
        "weight_numel": _numel(m.weight),
        "bias_numel": _numel(m.bias),
    }


def _conv(m: _ConvNd) -> dict[str, Any]:
    return {
        "in_channels": m.in_channels,
        "kernel_size": _raw(m.kernel_size),
        "stride": _raw(m.stride),
        "padding": _raw(m.padding),
        "dilation": _raw(m.dilation),
        "groups": m.groups,
        "bias": m.bias is not None,
    }


def _inplace(m: nn.Module) -> dict[str, Any]:
    return {"inplace": bool(m.inplace)}


# (class, family, reader) in TorchScan 0.2's FLOPs check order; the families
# are disjoint for torch's own classes, and subclasses match their base.
_FAMILIES = (
    (nn.Identity, "identity", None),
    (nn.Flatten, "flatten", None),
    (nn.Linear, "linear", _linear),
    (nn.ReLU, "relu", _inplace),
    (nn.ELU, "elu", _inplace),
    (nn.LeakyReLU, "leaky_relu", _inplace),
    (nn.ReLU6, "relu6", _inplace),
    (nn.Tanh, "tanh", None),
    (nn.Sigmoid, "sigmoid", None),
    (_ConvTransposeNd, "conv_transpose", _conv),
    (_ConvNd, "conv", _conv),
    (_BatchNorm, "batch_norm", _batch_norm),
    (_MaxPoolNd, "max_pool", _pool),
    (_AvgPoolNd, "avg_pool", _pool),
    (_AdaptiveMaxPoolNd, "adaptive_max_pool", None),
    (_AdaptiveAvgPoolNd, "adaptive_avg_pool", None),
    (nn.Dropout, "dropout", _dropout),
    (nn.MultiheadAttention, "multihead_attention", _multihead_attention),
    (nn.LayerNorm, "layer_norm", _layer_norm),
    (nn.Transformer, "transformer", _transformer),
)


def describe_module(module: nn.Module) -> dict[str, Any]:
    description: dict[str, Any] = {"type": type(module).__name__}
    for cls, family, reader in _FAMILIES:
        if isinstance(module, cls):
            description["family"] = family
            if reader is not None:
                description.update(reader(module))
            break
    else:
        description["family"] = "unsupported"
    description["parameter_count"] = sum(p.numel() for p in module.parameters())
    return description


def resolve_class(qualified_name: str) -> type | None:
    """The class a qualified name ("torch.nn.modules.conv.Conv2d",
    "__main__.Outer.Inner") names, looked up among the modules this process
    has already imported (nothing is imported for it); None when absent."""
    parts = qualified_name.split(".")
    for split in range(len(parts) - 1, 0, -1):
        owner = sys.modules.get(".".join(parts[:split]))
        if owner is None:
            continue
        value: Any = owner
        for name in parts[split:]:
            value = getattr(value, name, None)
        return value if isinstance(value, type) else None
    return None


def module_family(qualified_name: str) -> str:
    """The formula family of a module class given by name, chosen as
    describe_module chooses it (subclasses match their base); "unsupported"
    for a class that is no family's or cannot be found."""
    cls = resolve_class(qualified_name)
    if cls is None:
        return "unsupported"
    for base, family, _ in _FAMILIES:
        if issubclass(cls, base):
            return family
    return "unsupported"
