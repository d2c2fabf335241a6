"""Plain descriptions of Python values and modules, for the C++ side.

Value metadata follows TorchScan 0.2's "describe" rules exactly (shapes,
dtypes, devices, container structure; never tensor contents, strings or
non-identifier keys); the library makes it. Module descriptions carry what
the C++ module formulas need (formulas/module_json.h): the class name, a
family chosen with isinstance in TorchScan 0.2's check order, and the
hyper-parameters. The families, their classes and the attributes each reads
come from the library's family table (formulas/module_families.h), so a
family is declared once. crawl_module reads them natively from the same
table (python/operators/module_attributes.h) and calls describe_module only
for the modules that declines (an nn.Transformer root, an attribute missing
or of another type); tests/python/test_native_module_description.py checks
that both give the same description.
"""

from __future__ import annotations

import functools
import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import torch
from torch import nn
from torch.nn import functional as F

from torchscan_dispatch._library import hooks


def describe_value(value: Any) -> dict[str, Any]:
    """The value's metadata by TorchScan 0.2's "describe" rules, made by the
    library (python/operators/value_descriptions.h, the one implementation
    every front end uses)."""
    return hooks().describe_value(value)


def describe_call(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """{"args": [...], "kwargs": {...}}, each value as describe_value gives it."""
    return hooks().describe_call(args, kwargs)


def _raw(value: Any) -> Any:
    """Keeps the stored form: an int stays an int, a tuple becomes a list."""
    if isinstance(value, (tuple, list)):
        return [int(v) for v in value]
    if isinstance(value, str):
        return value
    return int(value)


def _numel(tensor: torch.Tensor | None) -> int | None:
    return None if tensor is None else tensor.numel()


_ABSENT = object()

# How each attribute kind of the family table (formulas/module_families.h's
# AttributeKind) reads module.<name>; _ABSENT leaves the key out.
_KIND_READERS: dict[str, Callable[[nn.Module, str], Any]] = {
    "int": getattr,
    "truth": lambda m, name: bool(getattr(m, name)),
    "is_not_none": lambda m, name: getattr(m, name) is not None,
    "set_and_not_none": lambda m, name: getattr(m, name, None) is not None,
    "number": lambda m, name: float(getattr(m, name)),
    "number_or_none": lambda m, name: None if getattr(m, name) is None else float(getattr(m, name)),
    "numel_or_none": lambda m, name: _numel(getattr(m, name)),
    "hyper": lambda m, name: _raw(getattr(m, name)),
    "hyper_or_string": lambda m, name: _raw(getattr(m, name)),
    "hyper_if_present": lambda m, name: _raw(getattr(m, name)) if hasattr(m, name) else _ABSENT,
    "int_tuple": lambda m, name: [int(v) for v in getattr(m, name)],
    "linear": lambda m, name: _attributes(getattr(m, name), "linear"),
}


class _Family(NamedTuple):
    name: str
    cls: type
    has_params: bool
    attributes: tuple[tuple[str, str, str], ...]  # (attribute, kind, JSON key)
    activation_operators: tuple[str, ...]


@functools.cache
def families() -> tuple[_Family, ...]:
    """The module family table (formulas/module_families.h), read once from
    the library, with each row's class resolved: TorchScan 0.2's isinstance
    check order, in which subclasses match their base."""
    found = []
    for row in hooks().module_family_rows():
        owner, _, name = row["torch_class"].rpartition(".")
        cls = getattr(importlib.import_module(owner), name)
        found.append(
            _Family(
                row["family"],
                cls,
                row["has_params"],
                tuple(tuple(attribute) for attribute in row["attributes"]),
                tuple(row["activation_operators"]),
            )
        )
    return tuple(found)


def _family_named(name: str) -> _Family:
    return next(family for family in families() if family.name == name)


def _attributes(module: nn.Module, family: str) -> dict[str, Any]:
    """The hyper-parameters the family's row declares, read from `module`."""
    description = {}
    for attribute, kind, key in _family_named(family).attributes:
        value = _KIND_READERS[kind](module, attribute)
        if value is not _ABSENT:
            description[key] = value
    return description


# A family whose hyper-parameters are no module attributes (its row declares
# none) is described by its own code.
def _encoder_layer(layer: nn.TransformerEncoderLayer) -> dict[str, Any]:
    return {
        "self_attn": _attributes(layer.self_attn, "multihead_attention"),
        "linear1": _attributes(layer.linear1, "linear"),
        "dropout": _attributes(layer.dropout, "dropout"),
        "linear2": _attributes(layer.linear2, "linear"),
        "norm1": _attributes(layer.norm1, "layer_norm"),
        "norm2": _attributes(layer.norm2, "layer_norm"),
        "dropout1": _attributes(layer.dropout1, "dropout"),
        "dropout2": _attributes(layer.dropout2, "dropout"),
        "activation_is_relu": layer.activation is F.relu,
    }


def _decoder_layer(layer: nn.TransformerDecoderLayer) -> dict[str, Any]:
    return {
        "self_attn": _attributes(layer.self_attn, "multihead_attention"),
        "multihead_attn": _attributes(layer.multihead_attn, "multihead_attention"),
        "linear1": _attributes(layer.linear1, "linear"),
        "dropout": _attributes(layer.dropout, "dropout"),
        "linear2": _attributes(layer.linear2, "linear"),
        "norm1": _attributes(layer.norm1, "layer_norm"),
        "norm2": _attributes(layer.norm2, "layer_norm"),
        "norm3": _attributes(layer.norm3, "layer_norm"),
        "dropout1": _attributes(layer.dropout1, "dropout"),
        "dropout2": _attributes(layer.dropout2, "dropout"),
        "dropout3": _attributes(layer.dropout3, "dropout"),
        "activation_is_relu": layer.activation is F.relu,
    }


def _stack(stack: nn.Module, describe_layer) -> dict[str, Any]:
    norm = stack.norm if isinstance(stack.norm, nn.LayerNorm) else None
    return {
        "layers": [describe_layer(layer) for layer in stack.layers],
        "norm": None if norm is None else _attributes(norm, "layer_norm"),
    }


def _transformer(m: nn.Transformer) -> dict[str, Any]:
    native = isinstance(m.encoder, nn.TransformerEncoder) and isinstance(m.decoder, nn.TransformerDecoder)
    description: dict[str, Any] = {"native_stacks": native}
    if native:
        description["encoder"] = _stack(m.encoder, _encoder_layer)
        description["decoder"] = _stack(m.decoder, _decoder_layer)
    return description


_OWN_READERS: dict[str, Callable[[Any], dict[str, Any]]] = {"transformer": _transformer}


def describe_module(module: nn.Module) -> dict[str, Any]:
    description: dict[str, Any] = {"type": type(module).__name__}
    for family in families():
        if isinstance(module, family.cls):
            description["family"] = family.name
            if family.attributes:
                description.update(_attributes(module, family.name))
            elif family.has_params:
                description.update(_OWN_READERS[family.name](module))
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
    for family in families():
        if issubclass(cls, family.cls):
            return family.name
    return "unsupported"
