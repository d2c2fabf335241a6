"""crawl_module for ``torch.export`` programs (an ``ExportedProgram`` in
memory, or a ``.pt2`` file from ``torch.export.save``).

An exported program has no modules to hook: its graph is flat. What it keeps
of the modules is in each operator node's ``nn_module_stack`` metadata: the
path, class and call of every module the operator ran inside. From that the
crawl finds where each module call begins and ends in the graph, and inserts
two bookkeeping nodes there into a private copy of the program's module
(the way the TorchScript front end instruments a clone's graph): on entry
they receive the values the call consumes, on exit the values it produces,
and they open and close the call's layer scope of the native counter. The
copy then runs once, under ``torch.no_grad``, with the graph exactly as
exported (training or evaluation behaviour, whichever was captured).

What the graph cannot tell, and how the report says so (docs/python.md):

- A module that runs no operator (``nn.Identity``, a dropout removed by
  decomposition) leaves no node, so it is not a layer.
- A layer's input is the values its operators take from outside the call,
  in first-use order (the graph keeps no argument names or keyword
  arguments); its output is what it produces for later operators.
- A leaf module's hyper-parameters are read from its parameters' shapes and
  from the arguments of its operators in the graph (a ``Conv2d``'s stride
  is the stride its convolution runs with). A class that is not importable
  in this process (a user class in a ``.pt2`` read by another program) has
  no formula.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import torch
from torch import fx, nn

from torchscan_dispatch._crawl_support import (
    crawl_context,
    finish_report,
    generated_tensor,
    layer_record,
    model_totals,
    prepare_inputs,
    tensor_identity,
)
from torchscan_dispatch._describe import describe_call, describe_value, module_family
from torchscan_dispatch._library import load_library
from torchscan_dispatch._native import Measurement
from torchscan_dispatch._pt2_reader import MissingPytreeTypeError, UntrustedFileError, read_exported_program
from torchscan_dispatch._recover_from_graph import describe_from_graph

__all__ = ["MissingPytreeTypeError", "UntrustedFileError", "crawl_exported_program", "load_exported_program"]

# context.execution_mode of an exported program's crawl: its graph runs as
# captured (a training-mode export keeps its training behaviour), without
# gradients. crawl_module's nn.Module crawls say "evaluation_no_grad".
EXECUTION_MODE = "exported_graph_no_grad"

# The diagnostic of a leaf module whose hyper-parameters the graph does not
# show (docs/report-schema.md).
UNRECOVERED_ATTRIBUTE = "unrecovered_module_attribute"


def load_exported_program(
    path: str | os.PathLike[str], *, trust_file: bool = False
) -> torch.export.ExportedProgram:
    """The program of a ``torch.export.save`` file, read as data.

    Nothing in the file runs (``_pt2_reader``: no unpickling, no packaged
    libraries, no evaluated expressions); a file that only its own code could
    load raises ``UntrustedFileError`` naming what it holds. With
    ``trust_file=True`` the file goes to ``torch.export.load``, which runs
    whatever the file asks for: only for files you would run as code. Errors
    are ValueError (FileNotFoundError when there is no file), one line naming
    the file.
    """
    if not os.path.isfile(path):
        raise FileNotFoundError(f"no such file: {os.fspath(path)}")
    if not trust_file:
        return read_exported_program(path)
    try:
        return torch.export.load(path)
    except Exception as error:  # noqa: BLE001 - any loader failure means the same to the caller
        first = str(error).strip().splitlines()
        raise ValueError(
            f"{os.fspath(path)} is not a torch.export program file (.pt2): {first[0] if first else type(error).__name__}"
        ) from None


@dataclass
class _Call:
    """One module call as the graph records it."""

    path: str
    type_name: str  # qualified class name, as nn_module_stack writes it
    call_index: int
    nodes: list[fx.Node] = field(default_factory=list)  # its operators, nested calls' included
    layer: int = -1  # index of its layer record once entered


def _stack(node: fx.Node) -> list[tuple[str, str, str]]:
    """(key, path, class) of the modules an operator node ran inside,
    outermost first, without the root."""
    stack = node.meta.get("nn_module_stack") or {}
    entries = []
    for key, value in stack.items():
        path, type_name = value[0], value[1]
        if not isinstance(type_name, str):
            type_name = f"{type_name.__module__}.{type_name.__qualname__}"
        if path:
            entries.append((key, path, type_name))
    return entries


def _root_type(graph: fx.Graph) -> str | None:
    """The root module's class: non-strict exports record it under the path
    ''; strict (Dynamo) exports do not."""
    for node in graph.nodes:
        for path, type_name in (node.meta.get("nn_module_stack") or {}).values():
            if path == "":
                return type_name if isinstance(type_name, str) else f"{type_name.__module__}.{type_name.__qualname__}"
    return None


class _Layout:
    """Where every module call begins and ends in a graph: before each
    operator node, the calls that close and the calls that open there."""

    def __init__(self, graph: fx.Graph) -> None:
        self.calls: dict[str, _Call] = {}
        self.transitions: list[tuple[fx.Node, list[_Call], list[_Call]]] = []
        self.final_exit: dict[str, int] = {}  # key -> transition where it closes for the last time
        call_counts: dict[str, int] = {}
        open_keys: list[str] = []
        for node in graph.nodes:
            if node.op == "output":
                if open_keys:
                    self._transition(node, open_keys, [])
                break
            if node.op != "call_function":
                continue
            stack = _stack(node)
            keys = [key for key, _, _ in stack]
            for key, path, type_name in stack:
                if key not in self.calls:
                    # The n-th distinct call key of a path is its n-th call.
                    self.calls[key] = _Call(path, type_name, call_counts.get(path, 0))
                    call_counts[path] = self.calls[key].call_index + 1
                self.calls[key].nodes.append(node)
            if keys != open_keys:
                self._transition(node, open_keys, keys)
                open_keys = keys

    def _transition(self, node: fx.Node, old: list[str], new: list[str]) -> None:
        common = 0
        while common < min(len(old), len(new)) and old[common] == new[common]:
            common += 1
        exits = [self.calls[key] for key in reversed(old[common:])]
        enters = [self.calls[key] for key in new[common:]]
        for call in exits:
            self.final_exit[id(call)] = len(self.transitions)
        self.transitions.append((node, exits, enters))


def _inputs_of(call: _Call, before: int, position: Mapping[fx.Node, int]) -> list[fx.Node]:
    """The values a call takes from outside, in first-use order: the nodes
    its operators read that it did not compute, except parameters, buffers
    and constants (get_attr), and only those computed before position
    ``before``."""
    inside = set(call.nodes)
    ordered: dict[fx.Node, None] = {}
    for node in call.nodes:
        for value in node.all_input_nodes:
            if value not in inside and value.op != "get_attr" and position[value] < before:
                ordered.setdefault(value)
    return list(ordered)


def _outputs_of(call: _Call, upto: int, position: Mapping[fx.Node, int]) -> list[fx.Node]:
    """The values a call computed before position ``upto`` that later
    operators (or the program's output) read; its last value when none is
    read."""
    inside = set(call.nodes)
    done = [node for node in call.nodes if position[node] < upto]
    outputs = [node for node in done if any(user not in inside for user in node.users)]
    return outputs or done[-1:]


# The crawl whose bookkeeping nodes run on this thread; other threads that
# run the instrumented copy (none should) see no crawl.
_active = threading.local()


def _enter_call(number: int, *values: Any) -> None:
    crawl = getattr(_active, "crawl", None)
    if crawl is not None:
        crawl.enter(number, values)


def _exit_call(number: int, *values: Any) -> None:
    crawl = getattr(_active, "crawl", None)
    if crawl is not None:
        crawl.exit(number, values)


def _tensors_by_module(named: Iterable[tuple[str, torch.Tensor]]) -> dict[str, list[tuple[str, torch.Tensor]]]:
    grouped: dict[str, list[tuple[str, torch.Tensor]]] = {}
    for name, tensor in named:
        owner, _, attribute = name.rpartition(".")
        grouped.setdefault(owner, []).append((attribute, tensor))
    return grouped


def _retarget(module: fx.GraphModule, device: torch.device) -> None:
    """Places the copy's parameters, buffers and constants on ``device``
    (empty tensors on ``meta``) and makes the operators that create tensors
    create them there. The program's own tensors are not touched: the copy's
    entries are replaced, not moved in place. Tensors that are one weight
    (``tensor_identity``) stay one tensor."""
    moved_by_identity: dict[Any, torch.Tensor] = {}
    for node in module.graph.nodes:
        if node.op == "get_attr":
            owner_name, _, name = node.target.rpartition(".")
            owner = module.get_submodule(owner_name)
            value = getattr(owner, name)
            if not isinstance(value, torch.Tensor) or value.device == device:
                continue
            is_parameter = name in owner._parameters
            key = (tensor_identity(value), is_parameter)
            moved = moved_by_identity.get(key)
            if moved is None:
                moved = torch.empty_like(value, device=device) if device.type == "meta" else value.to(device)
                if is_parameter:
                    moved = nn.Parameter(moved, requires_grad=value.requires_grad)
                moved_by_identity[key] = moved
            if is_parameter:
                owner._parameters[name] = moved
            elif name in owner._buffers:
                owner._buffers[name] = moved
            else:
                setattr(owner, name, moved)
        elif node.op == "call_function" and isinstance(node.kwargs.get("device"), torch.device):
            node.kwargs = {**node.kwargs, "device": device}
    module.recompile()


def _example_inputs(program: torch.export.ExportedProgram, device: torch.device | None):
    """Generated inputs of the shapes and dtypes the program was exported
    with (TorchScan's generation rules: floats uniform in [0, 1), integers
    zero, booleans one)."""
    placeholders = {node.name: node for node in program.graph.nodes if node.op == "placeholder"}
    values = []
    for name in program.graph_signature.user_inputs:
        value = placeholders[name].meta.get("val")
        if not isinstance(value, torch.Tensor):
            raise ValueError(
                f"the program's input {name!r} is not a tensor ({type(value).__name__}); pass args/kwargs"
            )
        shape = tuple(int(dimension) for dimension in value.shape)
        values.append(generated_tensor(shape, value.dtype, device or value.device))
    return torch.utils._pytree.tree_unflatten(values, program.call_spec.in_spec)


class _ProgramCrawl:
    """One crawl of an instrumented program copy: the bookkeeping nodes'
    state and the layer records they make."""

    def __init__(self, module: fx.GraphModule, root_type: str, full: bool) -> None:
        self.module = module
        self.full = full
        self.measurement: Measurement | None = None
        self.layers: list[dict[str, Any]] = []
        self.leaf_calls: list[dict[str, Any]] = []
        self.diagnostics: list[dict[str, Any]] = []
        self.parameters = _tensors_by_module(module.named_parameters(remove_duplicate=False))
        self.buffers = _tensors_by_module(module.named_buffers(remove_duplicate=False))
        self._layout = _Layout(module.graph)
        self._root = _Call("", root_type, 0, [node for node in module.graph.nodes if node.op == "call_function"])
        self._root_label = root_type.rpartition(".")[2]
        # A module is a metric leaf when no other module is known under it.
        known = {*self.parameters, *self.buffers, *(call.path for call in self._layout.calls.values())}
        known.add("")
        self._leaves = {
            path
            for path in known
            if not any(other != path and (not path or other.startswith(f"{path}.")) for other in known)
        }
        self._bookkeeping: list[tuple[_Call, bool]] = []  # by number: (call, its last exit)
        self._inputs: dict[int, list[dict[str, Any]]] = {}  # layer -> described input values
        self._seen_tensors: set[Any] = set()

    def instrument(self) -> None:
        """Inserts the bookkeeping nodes into the copy's graph."""
        graph = self.module.graph
        position = {node: index for index, node in enumerate(graph.nodes)}
        # Each call's values, found before any bookkeeping node is a user.
        planned = [
            (
                node,
                [(call, self._layout.final_exit[id(call)] == index, _outputs_of(call, position[node], position))
                 for call in exits],
                [(call, _inputs_of(call, position[node], position)) for call in enters],
            )
            for index, (node, exits, enters) in enumerate(self._layout.transitions)
        ]
        for node, exits, enters in planned:
            with graph.inserting_before(node):
                for call, last, outputs in exits:
                    self._bookkeeping.append((call, last))
                    graph.call_function(_exit_call, (len(self._bookkeeping) - 1, *outputs))
                for call, inputs in enters:
                    self._bookkeeping.append((call, False))
                    graph.call_function(_enter_call, (len(self._bookkeeping) - 1, *inputs))
        self.module.recompile()

    def run(self, args: tuple, kwargs: dict[str, Any], measurement: Measurement | None) -> None:
        """Runs the copy once without gradients, the root call open around
        it, and stops the measurement (counting since its creation)."""
        self.measurement = measurement
        previous = getattr(_active, "crawl", None)
        _active.crawl = self
        try:
            self._open(self._root, (*args, *kwargs.values()), describe_call(args, kwargs))
            with torch.no_grad():
                output = self.module(*args, **kwargs)
            self._close(self._root, output, last=True)
        finally:
            _active.crawl = previous
            if self.measurement is not None:
                self.measurement.stop()

    def enter(self, number: int, values: tuple) -> None:
        call, _ = self._bookkeeping[number]
        self._open(call, values)

    def exit(self, number: int, values: tuple) -> None:
        call, last = self._bookkeeping[number]
        self._close(call, values[0] if len(values) == 1 else tuple(values), last)

    def _label(self, path: str) -> str:
        # FlopCounterMode's module labels: the root's class name, then the path.
        return f"{self._root_label}.{path}" if path else self._root_label

    def _is_metric_leaf(self, call: _Call) -> bool:
        return call.path in self._leaves or module_family(call.type_name) == "multihead_attention"

    def _owned(self, grouped: dict[str, list[tuple[str, torch.Tensor]]], path: str, recurse: bool):
        """(name inside the module, tensor) of a module's own tensors, or of
        its whole subtree."""
        if not recurse:
            return list(grouped.get(path, []))
        return [
            (f"{owner[len(path) + 1:] if path else owner}.{name}".lstrip("."), tensor)
            for owner, tensors in grouped.items()
            if owner == path or not path or owner.startswith(f"{path}.")
            for name, tensor in tensors
        ]

    def _claim(self, tensors) -> tuple[int, int, int, bool]:
        """(trainable or element count, frozen count, bytes, shared) of the
        tensors no earlier layer claimed."""
        counts = [0, 0, 0]
        shared = False
        for _, tensor in tensors:
            identity = tensor_identity(tensor)
            if identity in self._seen_tensors:
                shared = True
                continue
            self._seen_tensors.add(identity)
            counts[0 if not isinstance(tensor, nn.Parameter) or tensor.requires_grad else 1] += tensor.numel()
            counts[2] += tensor.numel() * tensor.element_size()
        return counts[0], counts[1], counts[2], shared

    def _open(self, call: _Call, values: tuple, call_input: dict[str, Any] | None = None) -> None:
        if call.layer < 0:
            # Parameters as crawl_module attributes them: a module's own,
            # an nn.MultiheadAttention's (or a leaf root's) whole subtree.
            recurse = module_family(call.type_name) == "multihead_attention" or (
                call is self._root and self._is_metric_leaf(call)
            )
            trainable, frozen, parameter_bytes, parameter_shared = self._claim(
                self._owned(self.parameters, call.path, recurse)
            )
            buffer_elements, _, buffer_bytes, buffer_shared = self._claim(self._owned(self.buffers, call.path, recurse))
            short_type = call.type_name.rpartition(".")[2]
            self.layers.append(
                layer_record(
                    call.path,
                    call.call_index,
                    short_type,
                    call_input or describe_call(values, {}),
                    (trainable, frozen, parameter_bytes, parameter_shared),
                    (buffer_elements, buffer_bytes, buffer_shared),
                )
            )
            call.layer = len(self.layers) - 1
            self._inputs[call.layer] = [describe_value(value) for value in values]
        # A call interrupted by its caller's operators enters its scope again.
        if self.measurement is not None:
            self.measurement.enter_layer(call.layer, self._label(call.path))

    def _close(self, call: _Call, output: Any, last: bool) -> None:
        if self.measurement is not None:
            self.measurement.exit_layer(call.layer, self._label(call.path))
        described = describe_value(output)
        self.layers[call.layer]["output"] = described
        if last and self.full and self._is_metric_leaf(call):
            self.leaf_calls.append({
                "layer": call.layer,
                "path": call.path,
                "module": self._describe(call),
                "call": {"inputs": self._inputs[call.layer], "output": described},
            })

    def _describe(self, call: _Call) -> dict[str, Any]:
        subtree = self._owned(self.parameters, call.path, recurse=True)
        tensors = {**dict(subtree), **dict(self._owned(self.buffers, call.path, recurse=False))}
        description, missing = describe_from_graph(
            call.type_name,
            call.nodes,
            tensors,
            parameter_count=sum(t.numel() for t in {id(t): t for _, t in subtree}.values()),
        )
        if not missing:
            return description
        self.diagnostics.append({
            "code": UNRECOVERED_ATTRIBUTE,
            "severity": "warning",
            "metric": "module_flops",
            "path": call.path,
            "message": (
                f"{description['type']}: {', '.join(missing)} cannot be recovered from the exported program, "
                "so its module formulas are not evaluated."
            ),
        })
        return {"type": description["type"], "family": "unsupported", "parameter_count": description["parameter_count"]}


def crawl_exported_program(
    program: torch.export.ExportedProgram,
    input_shape: list[tuple[int, ...]] | tuple[int, ...] | None = None,
    dtype: torch.dtype | Iterable[torch.dtype] | None = None,
    *,
    args: tuple[Any, ...] | None = None,
    kwargs: Mapping[str, Any] | None = None,
    device: str | torch.device | None = None,
    strict: bool = False,
    mode: Literal["full", "structure"] = "full",
) -> dict[str, Any]:
    """The AnalysisReport of one run of an exported program, as
    ``crawl_module`` gives it for a module (``crawl_module(program, ...)``
    calls this).

    Inputs: ``input_shape`` (without the batch dimension) or ``args`` /
    ``kwargs`` as for ``crawl_module``; with neither, tensors of the shapes
    and dtypes the program was exported with. ``device`` places the
    generated inputs and the program's tensors there (``"meta"``: no memory
    and no arithmetic, the operators are still counted); the program
    itself is never modified. A shape the program's guards reject raises
    its own error.
    """
    if not isinstance(program, torch.export.ExportedProgram):
        raise TypeError(f"program must be a torch.export.ExportedProgram, got {type(program).__name__}")
    if mode not in ("full", "structure"):
        raise ValueError("mode must be 'full' or 'structure'.")
    load_library()
    module = program.module()
    target = None if device is None else torch.device(device)
    if target is not None:
        _retarget(module, target)
    if input_shape is None and args is None and kwargs is None:
        if dtype is not None:
            raise ValueError("dtype applies only to generated input_shape tensors.")
        call_args, call_kwargs = _example_inputs(program, target)
        input_metadata = {"source": "generated", **describe_call(call_args, call_kwargs)}
    else:
        call_args, call_kwargs, input_metadata = prepare_inputs(module, input_shape, dtype, args, kwargs, device)

    root_type = _root_type(module.graph) or "torch.export.ExportedProgram"
    crawl = _ProgramCrawl(module, root_type, mode == "full")
    crawl.instrument()
    measurement = Measurement() if mode == "full" else None
    try:
        crawl.run(call_args, call_kwargs, measurement)
        totals, devices, dtypes = model_totals(
            (tensor for tensors in crawl.parameters.values() for _, tensor in tensors),
            (tensor for tensors in crawl.buffers.values() for _, tensor in tensors),
        )
        record: dict[str, Any] = {
            "mode": mode,
            "layer_count": len(crawl.layers),
            "torch_version": torch.__version__,
            "model": totals,
            "diagnostics": crawl.diagnostics,
        }
        if measurement is not None:
            # The operator FLOPs stay in C++: the measurement hands them to
            # the evaluation directly.
            record["leaf_calls"] = crawl.leaf_calls
        context = crawl_context(root_type, EXECUTION_MODE, False, devices, dtypes)
        return finish_report(record, crawl.layers, context, input_metadata, strict, measurement)
    finally:
        if measurement is not None:
            measurement.finish()

