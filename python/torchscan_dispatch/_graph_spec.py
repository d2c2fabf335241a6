"""The spec of a compiled graph: the text its tally call carries.

The Inductor tally pass (_tally_pass.py) describes every operator of a
compiled graph in this format and puts the text into the graph as a string
constant, so that Inductor's FX-graph cache and AOTInductor keep it; the C++
reader (torchscan_dispatch/compiled_graph_tally.h, which defines the format)
reads it each time the graph runs. What is written here is the wire format:
a change to it is a change of SPEC_VERSION and of the reader.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import torch

SPEC_VERSION = 6  # CompiledGraphTally::kSpecVersion
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def dtype_name(dtype: torch.dtype) -> str:
    """"float32" for torch.float32: the spec's DTYPE (compiled_graph_tally.h)."""
    return str(dtype).removeprefix("torch.")


def _type_name(module_type: Any) -> str:
    if isinstance(module_type, type):
        return module_type.__name__
    return str(module_type).rsplit(".", 1)[-1]


_INDEX = re.compile(r"\[(\d+)\]")
_MODULES_ITEM = re.compile(r"\._modules\[['\"]([^'\"]+)['\"]\]")


def _split_module_path(path: str) -> tuple[str, str]:
    """("L['self']", "layers.0") for "L['self'].layers[0]": the compiled
    frame's name for the root object, and the attribute path below it."""
    path = _MODULES_ITEM.sub(r".\1", path)
    end = path.find("]")
    root, rest = (path[: end + 1], path[end + 1 :]) if end >= 0 else (path, "")
    rest = _INDEX.sub(r".\1", rest).lstrip(".")
    return root, rest


def _module_entries(node: torch.fx.Node) -> list[list[str]]:
    """[root, path, type] for each module of the node's module stack: the
    compiled frame's name for the root module ("L['self']", "G['model']"),
    the attribute path below it and the module's type."""
    stack = node.meta.get("nn_module_stack") or node.meta.get("fwd_nn_module_stack") or {}
    entries = []
    for path, module_type in stack.values():
        root, rest = _split_module_path(str(path))
        entries.append([root, rest, _type_name(module_type)])
    return entries


class GraphDescription:
    """The spec of one graph (compiled_graph_tally.h) and the graph values
    its symbols are read from at run time."""

    def __init__(self, graph: torch.fx.Graph) -> None:
        self.graph = graph
        self.calls: list[dict[str, Any]] = []
        self.symbols: list[Any] = []
        self._symbol_index: dict[Any, int] = {}

    def _symbol(self, size: Any) -> dict[str, int]:
        """A run-time value: a SymInt (passed as such; Inductor computes its
        expression from the graph's inputs) or a graph node giving one."""
        key = size.node.expr if isinstance(size, torch.SymInt) else size
        index = self._symbol_index.get(key)
        if index is None:
            index = len(self.symbols)
            self.symbols.append(size)
            self._symbol_index[key] = index
        return {"symbol": index}

    def _int(self, value: Any) -> Any:
        if isinstance(value, torch.fx.Node):
            meta = value.meta.get("val")
            if isinstance(meta, bool) or not isinstance(meta, (int, torch.SymInt)):
                return None
            value = meta
        if isinstance(value, torch.SymInt):
            constant = value.node.maybe_as_int()
            if constant is not None:
                return constant
            # A data-dependent size is only known once the graph has run
            # past its producer: the formula cannot have it.
            return None if _unbacked(value) else self._symbol(value)
        # The spec's integers are int64 (compiled_graph_tally.h); a larger
        # Python int is a value no formula can read, not a wrapped size.
        if isinstance(value, int) and _INT64_MIN <= value <= _INT64_MAX:
            return value
        return None

    def _tensor(self, tensor: torch.Tensor) -> dict[str, Any]:
        if tensor.is_nested or getattr(tensor, "layout", torch.strided) not in (torch.strided,):
            return {"unknown_tensor": None}
        dims = [self._int(size) for size in tensor.shape]
        if any(d is None for d in dims):
            return {"unknown_tensor": None}
        # The dtype is for deferred formulas (custom_mapping, registered
        # formulas), which get meta tensors rebuilt from the spec.
        return {"tensor": dims, "dtype": dtype_name(tensor.dtype)}

    def _tensors(self, tensors: list[torch.Tensor]) -> dict[str, Any]:
        """A tensor list: each tensor's sizes (None when unknown) and dtype."""
        described = [self._tensor(tensor) for tensor in tensors]
        return {
            "tensors": [item.get("tensor") for item in described],
            "dtypes": [item.get("dtype") for item in described],
        }

    @staticmethod
    def _float(value: float) -> dict[str, Any]:
        # JSON has no infinities or NaN (json.dumps would write the
        # non-standard Infinity and NaN): they are written as strings.
        if math.isfinite(value):
            return {"float": value}
        return {"float": "nan" if math.isnan(value) else "inf" if value > 0 else "-inf"}

    def _scalar(self, value: Any) -> dict[str, Any] | None:
        """A plain or symbolic scalar, or None when `value` is none."""
        if isinstance(value, (bool, torch.SymBool)):
            constant = value if isinstance(value, bool) else value.node.maybe_as_bool()
            return {"bool": constant} if constant is not None else {"other": None}
        if isinstance(value, (int, torch.SymInt)):
            described = self._int(value)
            return {"int": described} if described is not None else {"other": None}
        if isinstance(value, (float, torch.SymFloat)):
            if isinstance(value, torch.SymFloat):
                constant = value.node.maybe_as_float()
                return self._float(constant) if constant is not None else {"other": None}
            return self._float(value)
        return None

    def value(self, value: Any) -> dict[str, Any]:
        """An argument (a graph node or a constant) or a result (the node's
        fake value) as the spec describes it. A string is kept as text (a
        collective's group name); anything else no formula reads (complex
        numbers, devices, dtypes, layouts, memory formats, symbolic
        expressions, opaque objects) is "other"."""
        if isinstance(value, torch.fx.Node):
            meta = value.meta.get("val")
            if isinstance(meta, torch.Tensor):
                return self._tensor(meta)
            if isinstance(meta, (list, tuple)) and meta and all(isinstance(m, torch.Tensor) for m in meta):
                return self._tensors(list(meta))
            return self._scalar(meta) or {"other": None}
        if isinstance(value, torch.Tensor):
            return self._tensor(value)
        if value is None:
            return {"none": None}
        if isinstance(value, str):
            return {"str": value}
        scalar = self._scalar(value)
        if scalar is not None:
            return scalar
        if isinstance(value, (list, tuple)) and value:
            if all(isinstance(item, bool) for item in value):
                return {"bools": list(value)}
            if all(isinstance(item, (int, torch.SymInt, torch.fx.Node)) and not isinstance(item, bool) for item in value):
                if all(
                    not isinstance(item, torch.fx.Node)
                    or isinstance(item.meta.get("val"), (int, torch.SymInt))
                    and not isinstance(item.meta.get("val"), bool)
                    for item in value
                ):
                    items = [self._int(item) for item in value]
                    if all(item is not None for item in items):
                        return {"ints": items}
                tensors = []
                for item in value:
                    meta = item.meta.get("val") if isinstance(item, torch.fx.Node) else None
                    if not isinstance(meta, torch.Tensor):
                        tensors = None
                        break
                    tensors.append(meta)
                if tensors is not None:
                    return self._tensors(tensors)
        if isinstance(value, (list, tuple)) and not value:
            return {"ints": []}
        return {"other": None}

    def add_operator_call(self, node: torch.fx.Node, op: torch._ops.OpOverload, args, kwargs) -> None:
        schema = op._schema
        arguments = []
        for index, argument in enumerate(schema.arguments):
            if argument.kwarg_only or index >= len(args):
                if argument.name in kwargs:
                    value = kwargs[argument.name]
                elif argument.has_default_value():
                    value = argument.default_value
                else:
                    value = None
            else:
                value = args[index]
            arguments.append(self.value(value))
        results = node.meta.get("val")
        if not isinstance(results, (list, tuple)):
            results = [] if results is None and not schema.returns else [results]
        described = [self.value(result) for result in results]
        self.calls.append({
            "op": schema.name,
            "overload": op._overloadname,
            "modules": _module_entries(node),
            "arguments": arguments,
            "results": described,
        })

    def add_decomposed_product(self, node: torch.fx.Node, product: torch._ops.OpOverload) -> None:
        """The broadcast multiply Inductor's decomposition made of `product`
        (NOTE [Products that Inductor decomposed] in compiled_graph_tally.cc)."""
        self.calls.append({
            "op": product._schema.name,
            "overload": product._overloadname,
            "form": "decomposed_product",
            "modules": _module_entries(node),
            "arguments": [self.value(argument) for argument in node.args],
            "results": [self.value(node)],
        })

    def add_named_call(
        self, node: torch.fx.Node, name: str, tensors: list[Any], namespace: str = "higher_order"
    ) -> None:
        """A higher-order operator (or another callable): described by the
        tensors its formula reads (flex attention: query, key, value, ...)."""
        results = node.meta.get("val")
        results = list(results) if isinstance(results, (list, tuple)) else [results]
        self.calls.append({
            "op": f"{namespace}::{name}",
            "overload": "",
            "modules": _module_entries(node),
            "arguments": [self.value(tensor) for tensor in tensors],
            "results": [
                self.value(result) if isinstance(result, torch.Tensor) else {"other": None}
                for result in results
            ],
        })


    def graph_inputs(self) -> list[dict[str, Any]]:
        """The graph's tensor inputs that an operator reads: what its compiled
        code reads at least once (NOTE [Bytes of compiled graphs] in
        compiled_graph_tally.cc)."""
        return [
            self.value(node)
            for node in self.graph.nodes
            if node.op == "placeholder" and isinstance(node.meta.get("val"), torch.Tensor) and _is_read(node)
        ]

    def graph_outputs(self) -> list[dict[str, Any]]:
        """The graph's tensor outputs that it computes, each once: not its
        inputs, nor views of them (a forward graph returns the parameters it
        saves for the backward), and a tensor returned twice, or two views of
        one, counted once."""
        output = next((node for node in reversed(self.graph.nodes) if node.op == "output"), None)
        if output is None:
            return []
        described, roots = [], set()
        for item in torch.utils._pytree.tree_leaves(output.args):
            if not isinstance(item, torch.fx.Node) or not isinstance(item.meta.get("val"), torch.Tensor):
                continue
            root = _view_root(item)
            if root.op == "placeholder" or root in roots:
                continue
            roots.add(root)
            described.append(self.value(item))
        return described


def _is_view(node: torch.fx.Node) -> bool:
    target = node.target
    return node.op == "call_function" and isinstance(target, torch._ops.OpOverload) and target.is_view


def _view_root(node: torch.fx.Node) -> torch.fx.Node:
    """The tensor `node` is a view of (through a chain of views), or itself."""
    while _is_view(node) and node.args and isinstance(node.args[0], torch.fx.Node):
        node = node.args[0]
    return node


def _is_read(node: torch.fx.Node) -> bool:
    """Whether an operator reads `node`'s data: a user other than the
    graph's output, our tally call, a view only passed on, and the
    destination of a copy_ (written, not read)."""
    for user in node.users:
        if user.op != "call_function" or user.target is torch.ops.torchscan.compiled_graph_flops.default:
            continue
        if _is_view(user):
            if _is_read(user):
                return True
            continue
        if user.target is torch.ops.aten.copy_.default and user.args[0] is node and node not in user.args[1:]:
            continue
        return True
    return False


def graph_kind(graph: torch.fx.Graph, is_inference: bool | None) -> str:
    """"inference", "forward" or "backward": which of AOTAutograd's graphs
    `graph` is ("" when it cannot tell). A backward graph takes the
    gradients of the forward's outputs (tangents), and its nodes carry the
    joint graph's partitioner tag "is_backward"."""
    if is_inference:
        return "inference"
    nodes = list(graph.nodes)
    if any(node.op == "placeholder" and str(node.target).startswith("tangents") for node in nodes) or any(
        node.meta.get("partitioner_tag") == "is_backward" for node in nodes
    ):
        return "backward"
    if is_inference is False or any(node.op == "placeholder" and str(node.target).startswith("primals") for node in nodes):
        return "forward"
    return ""


def _unbacked(value: torch.SymInt) -> bool:
    from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols

    return bool(free_unbacked_symbols(value))


def spec_text(document: dict[str, Any]) -> str:
    # allow_nan=False: a non-finite float that escaped GraphDescription is
    # an error here (caught by the caller), never JSON the reader rejects.
    return json.dumps(document, separators=(",", ":"), allow_nan=False)
