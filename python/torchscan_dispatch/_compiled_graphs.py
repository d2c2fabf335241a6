"""torch.compile: exact counts for compiled code, never for compilation.

docs/design.md ("torch.compile") explains the design; in short, three pieces
are installed once per process, as soon as torch._dynamo is imported (before
anything can be compiled) or when this package is imported after it:

1. Compiled calls hide the counting key. Dynamo's tensor guards record each
   input's dispatch-key set including the thread-local included keys, so a
   key switched on by a measurement would make every compiled function
   recompile, and Dynamo's tracing, AOTAutograd and Inductor would run
   through the counting fallback. Dynamo's compile wrapper snapshots the
   thread's key sets and forces them for the compiled call
   (torch._C._ForceDispatchKeyGuard); the wrapper sees our guard class
   instead, which forces the same sets without the counting key. While a
   measurement counts on the thread, the call is a hidden region: the eager
   code that runs in it (graph breaks, skipped frames, eager backends) is
   counted by the hidden-region observer (torchscan_dispatch/hidden_region.h).

2. Each compiled graph carries its tally. An Inductor post-grad pass (the
   first of them, after freezing and before Inductor's fusions replace
   operators by lowering functions) describes every operator of the graph (shapes, with symbols bound at run
   time for dynamic shapes, and module stacks) and appends a call of
   torchscan::compiled_graph_flops, which records the description each time
   the generated code runs, including after a compilation-cache hit, and
   counts matrix products that no dispatcher call shows (GEMM templates,
   Triton). The graph runs with counting off, so its extern kernels
   (aten.mm.out, ...) are not counted a second time. Branches of cond and
   bodies of while_loop carry their own tally, so what actually ran is
   counted. A graph that ran without a tally (compiled before this package
   was loaded, or replayed as a CUDA graph) is named in an unseen_work
   diagnostic.

3. Compilation is never counted. Dynamo's compilation-callback context
   (also entered for lazy backward compilation) marks the thread as
   compiling for as long as it is open.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.abc
import json
import math
import operator
import os
import re
import sys
import threading
from typing import Any

import torch

from torchscan_dispatch import _global_hooks
from torchscan_dispatch._library import compiled_region_calls, load_library
from torchscan_dispatch._version import __version__

_SPEC_VERSION = 5  # CompiledGraphTally::kSpecVersion
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
# Reentrant: importing Dynamo under it runs install() (the import hook).
_lock = threading.RLock()
_installed = False

_UNTALLIED_GRAPH = b"inductor.compiled_graph"
_UNTALLIED_REASON = (
    b"a compiled graph ran without its FLOP tally (it was compiled before "
    b"torchscan_dispatch was loaded, or the post-grad pass list was replaced), "
    b"so its FLOPs are missing"
)
_UNTALLIED_REASON_OFF = (
    b"a compiled graph ran without its FLOP tally: the torch.compile "
    b"integration is off (TORCHSCAN_DISPATCH_COMPILER=off), so its FLOPs "
    b"are missing"
)
_CUDA_GRAPH_REPLAY = b"torch.cuda.CUDAGraph.replay"
_CUDA_GRAPH_REASON = (
    b"a CUDA-graph replay launches recorded kernels without any operator call, "
    b"so their FLOPs are missing"
)

# Graph nodes that are bookkeeping of the graph, not operators that run.
_SKIPPED_TARGETS = {operator.getitem}


# ---------------------------------------------------------------------------
# Describing a graph.


def _dtype_name(dtype: torch.dtype) -> str:
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


class _GraphDescription:
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
        return {"tensor": dims, "dtype": _dtype_name(tensor.dtype)}

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


def _subgraph(graph: torch.fx.Graph, node: Any) -> torch.fx.Graph | None:
    if isinstance(node, torch.fx.Node) and node.op == "get_attr" and graph.owning_module is not None:
        target = getattr(graph.owning_module, node.target, None)
        if isinstance(target, torch.fx.GraphModule):
            return target.graph
    return None


# Higher-order operators whose subgraphs run (each carries its own tally),
# with the positions of their subgraph arguments.
_SUBGRAPH_OPERATORS = {"cond": (1, 2), "while_loop": (0, 1), "invoke_subgraph": (0,), "map_impl": (0,)}
# Higher-order operators that wrap one operator call: (position of the
# operator, position where its arguments start, or None for keyword arguments).
_WRAPPING_OPERATORS = {
    "auto_functionalized": (0, None),
    "auto_functionalized_v2": (0, None),
    "with_effects": (1, 2),
    "run_and_save_rng_state": (0, 1),
    "run_with_rng_state": (1, 2),
}
# Higher-order operators counted by a formula of their own, from their first
# tensors: flex attention (query, key, value) and its backward (query, key,
# value, out, logsumexp, grad_out).
_FORMULA_OPERATORS = {"flex_attention": 3, "flex_attention_backward": 6}


def _overload(packet: torch._ops.OpOverloadPacket) -> torch._ops.OpOverload:
    """The overload a graph node naming a packet calls (freezing's passes name
    mkl::_mkl_linear by its packet): its default, else its only one."""
    names = packet.overloads()
    return getattr(packet, "default" if "default" in names else names[0])


def _is_bookkeeping(target: Any) -> bool:
    """Python callables of a graph that do no tensor work: symbolic-size
    arithmetic and asserts."""
    module = getattr(target, "__module__", None) or ""
    name = getattr(target, "__name__", "")
    return module in ("_operator", "operator", "math", "builtins") or name.startswith(("sym_", "_sym_"))


# Matrix products that Inductor's decomposition table may rewrite into a
# broadcast multiply and a sum before any post-grad pass runs.
_DECOMPOSABLE_PRODUCTS = frozenset({
    "aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::addbmm",
    "aten::mv", "aten::addmv", "aten::dot", "aten::vdot",
})


# What those rewrites are made of: the broadcast multiply, the sum over K,
# the scaling by alpha and beta, views and dtype conversions. Any other
# operator with a product as its original (freezing's mkl::_mkl_linear, a
# product kept as a product) is described as itself.
_PRODUCT_REWRITE_PIECES = frozenset({
    "aten::mul", "aten::sum", "aten::add", "aten::squeeze", "aten::unsqueeze",
    "aten::permute", "aten::view", "aten::reshape", "aten::expand", "aten::t",
    "aten::transpose", "aten::clone", "aten::_to_copy", "prims::convert_element_type",
})


def _decomposed_from(node: torch.fx.Node, target: torch._ops.OpOverload) -> torch._ops.OpOverload | None:
    """The matrix product this node is a piece of the rewrite of, if any."""
    original = node.meta.get("original_aten")
    if not isinstance(original, torch._ops.OpOverload) or original is target:
        return None
    if original._schema.name not in _DECOMPOSABLE_PRODUCTS:
        return None
    if target._schema.name not in _PRODUCT_REWRITE_PIECES:
        return None
    return original


def _is_broadcast_product(node: torch.fx.Node) -> bool:
    """A multiply of two tensors of at least one dimension: the product of a
    rewritten matrix product (its scaling by alpha and beta multiplies by a
    number)."""
    if node.target is not torch.ops.aten.mul.Tensor or len(node.args) != 2:
        return False
    return all(
        isinstance(arg, torch.fx.Node)
        and isinstance(arg.meta.get("val"), torch.Tensor)
        and arg.meta["val"].dim() > 0
        for arg in node.args
    )


def _describe(description: _GraphDescription, node: torch.fx.Node) -> None:
    target = node.target
    if target in _SKIPPED_TARGETS or target is torch.ops.torchscan.compiled_graph_flops.default:
        return
    if isinstance(target, torch._ops.OpOverloadPacket):
        target = _overload(target)
    if isinstance(target, torch._ops.OpOverload):
        product = _decomposed_from(node, target)
        if product is not None:
            # The rest of the rewrite (views, the sum, the scaling) belongs to
            # the product, which FlopCounterMode counts as one call.
            if _is_broadcast_product(node):
                description.add_decomposed_product(node, product)
            return
        description.add_operator_call(node, target, node.args, node.kwargs)
        return
    if isinstance(target, torch._ops.HigherOrderOperator):
        name = target.name()
        if name in _SUBGRAPH_OPERATORS:
            for position in _SUBGRAPH_OPERATORS[name]:
                if position < len(node.args):
                    subgraph = _subgraph(description.graph, node.args[position])
                    if subgraph is not None:
                        _tally(subgraph)
            return
        # NOTE [Subgraphs that are not run as graphs]
        # Inductor runs the post-grad passes on every subgraph before its
        # parent, so a subgraph already has its own tally call here. Only the
        # subgraphs above run as graphs; others (flex attention's score and
        # mask modifications) are inlined into a kernel, where a call cannot
        # be, and their work is counted, or named, with the operator.
        for argument in torch.utils._pytree.tree_leaves((node.args, node.kwargs)):
            subgraph = _subgraph(description.graph, argument)
            if subgraph is not None:
                _strip_tallies(subgraph)
        if name in _WRAPPING_OPERATORS:
            op_position, args_start = _WRAPPING_OPERATORS[name]
            inner = node.args[op_position] if op_position < len(node.args) else node.kwargs.get("_mutable_op")
            if isinstance(inner, torch._ops.OpOverload):
                if args_start is None:
                    description.add_operator_call(node, inner, (), node.kwargs)
                else:
                    description.add_operator_call(node, inner, node.args[args_start:], node.kwargs)
                return
        if name in _FORMULA_OPERATORS:
            description.add_named_call(node, name, list(node.args[: _FORMULA_OPERATORS[name]]))
            return
        description.add_named_call(node, name, [])
        return
    if not _is_bookkeeping(target):
        # Some other Python callable: named, so that the count says it is
        # incomplete instead of silently leaving it out.
        description.add_named_call(node, getattr(target, "__qualname__", repr(target)), [], "python")


def _recomputed(node: torch.fx.Node) -> bool:
    """Whether `node` is forward work that a backward graph runs again.

    NOTE [Recomputed nodes of a compiled backward]
    AOTAutograd tags every node of the joint graph's forward
    ``partitioner_tag="is_forward"`` (the backward's "is_backward"), and its
    partitioner marks every node it copies into the backward graph
    ``autograd_backward``; node_copy keeps the tag. A node with both is a
    forward operator the partitioner recomputes in the backward instead of
    saving its result: activation checkpointing's regions (their
    ``recompute`` policies) and what the min-cut partitioner finds cheaper to
    recompute (all of it under ``activation_memory_budget`` < 1). Forward
    and inference graphs have no ``autograd_backward`` node."""
    return node.meta.get("autograd_backward") is True and node.meta.get("partitioner_tag") == "is_forward"


def _is_tally(node: torch.fx.Node) -> bool:
    return node.op == "call_function" and node.target is torch.ops.torchscan.compiled_graph_flops.default


def _strip_tallies(graph: torch.fx.Graph) -> None:
    """Removes the tally calls (and the size computations only they used)
    of `graph` and its subgraphs."""
    for node in list(graph.nodes):
        if _is_tally(node):
            graph.erase_node(node)
        elif node.op == "get_attr":
            subgraph = _subgraph(graph, node)
            if subgraph is not None:
                _strip_tallies(subgraph)
    graph.eliminate_dead_code()


def _unbacked(value: torch.SymInt) -> bool:
    from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols

    return bool(free_unbacked_symbols(value))


def _aot_compiling() -> bool:
    """Whether Inductor is compiling ahead of time (AOTInductor): a package
    that runs in other processes, which never load this library."""
    from torch._inductor.virtualized import V

    return bool(V.aot_compilation)


def _spec_text(document: dict[str, Any]) -> str:
    # allow_nan=False: a non-finite float that escaped _GraphDescription is
    # an error here (caught by the caller), never JSON the reader rejects.
    return json.dumps(document, separators=(",", ":"), allow_nan=False)


def _tally(graph: torch.fx.Graph) -> None:
    """Describes `graph` and inserts the call that records it."""
    if _aot_compiling():
        # NOTE [AOTInductor packages carry no tally]
        # A package outlives this process and runs where the library is
        # never loaded (and its C++ runner cannot call our operator), so it
        # is compiled exactly as without us; running one inside a
        # measurement is recorded as unseen work (_wrap_aot_compiled_models).
        return
    if any(_is_tally(node) for node in graph.nodes):
        return  # described already (Inductor runs the passes on subgraphs first)
    # NOTE [Where the tally call goes]
    # First, after the inputs: its only inputs are the graph's symbolic sizes,
    # which are known at the start, and its device anchor, the graph's first
    # tensor input (NOTE [The tally call's device anchor] in
    # compiled_region_calls.cc). A graph without tensor inputs anchors the
    # call to its first tensor and calls it right after that.
    anchor = next(
        (node for node in graph.nodes if node.op == "placeholder" and isinstance(node.meta.get("val"), torch.Tensor)),
        None,
    )
    if anchor is None:
        anchor = next(
            (node for node in graph.nodes if node.op != "output" and isinstance(node.meta.get("val"), torch.Tensor)),
            None,
        )
        first = anchor.next if anchor is not None else next(n for n in graph.nodes if n.op != "placeholder")
    else:
        first = next(node for node in graph.nodes if node.op != "placeholder")
    compile_id = str(torch._guards.CompileContext.current_compile_id())
    try:
        description = _GraphDescription(graph)
        for node in list(graph.nodes):
            if node.op == "call_function":
                described = len(description.calls)
                _describe(description, node)
                if _recomputed(node):
                    for call in description.calls[described:]:
                        call["recomputed"] = True
        spec = _spec_text({"version": _SPEC_VERSION, "family": compile_id, "calls": description.calls})
        with graph.inserting_before(first):
            symbols = graph.materialize_symints(description.symbols) if description.symbols else []
    except Exception as error:  # noqa: BLE001 - never break the user's compilation
        symbols = []
        spec = _spec_text({
            "version": _SPEC_VERSION,
            "family": compile_id,
            "calls": [],
            "unseen": f"torchscan_dispatch could not describe this compiled graph "
            f"({type(error).__name__}: {error}), so its FLOPs are missing",
        })
    key = int.from_bytes(hashlib.sha1(spec.encode()).digest()[:8], "little", signed=True)
    with graph.inserting_before(first):
        graph.call_function(torch.ops.torchscan.compiled_graph_flops.default, (key, spec, list(symbols), anchor))


def _make_tally_pass():
    from torch._inductor.custom_graph_pass import CustomGraphPass, get_hash_for_files

    class TallyPass(CustomGraphPass):
        """Inductor post-grad pass: every compiled graph records its tally."""

        def __call__(self, graph: torch.fx.Graph) -> None:
            _tally(graph)

        def uuid(self) -> bytes:
            # Part of the FX-graph cache key: a graph compiled by another
            # version of this pass is compiled again, not reused.
            return get_hash_for_files((__file__,), extra=f"torchscan_dispatch {__version__}")

    return TallyPass()


_tally_pass = None


def _pass_list() -> list[Any]:
    import torch._inductor.config as inductor_config

    current = inductor_config.post_grad_custom_pre_pass
    return [] if current is None else list(current) if isinstance(current, (list, tuple)) else [current]


def _ensure_tally_pass() -> None:
    """Appends our pass to Inductor's post-grad pre-pass list (the user's own
    pre-passes run first, Inductor's fusions after); again if the list was
    replaced since."""
    import torch._inductor.config as inductor_config

    global _tally_pass
    if _tally_pass is None:
        _tally_pass = _make_tally_pass()
    passes = _pass_list()
    if _tally_pass not in passes:
        inductor_config.post_grad_custom_pre_pass = [*passes, _tally_pass]


def _remove_tally_pass() -> None:
    """Takes our pass out again; the setting is None again when ours was the
    only pass, as it was before we added it."""
    if _tally_pass is None:
        return  # never added (and Inductor may not be imported: keep it so)
    import torch._inductor.config as inductor_config

    passes = _pass_list()
    if _tally_pass not in passes:
        return
    passes.remove(_tally_pass)
    inductor_config.post_grad_custom_pre_pass = passes or None


# ---------------------------------------------------------------------------
# Compiled calls hide the counting key.


class _ModuleProxy:
    """A module whose attributes are another module's, except `overrides`."""

    def __init__(self, module: Any, overrides: dict[str, Any]) -> None:
        self.__dict__.update(overrides)
        self._module = module

    def __getattr__(self, name: str) -> Any:
        return getattr(self._module, name)


def _root_label(frame) -> bytes | None:
    """The label (FlopCounterMode's name) of the module the compiled call
    belongs to, when module tracking is on for this thread (else None); b""
    when the call belongs to no module."""
    from torchscan_dispatch._module_scopes import ModuleScopes

    scopes = ModuleScopes.active()
    if scopes is None:
        return None
    function = frame.f_locals.get("fn") if frame is not None else None
    # A compiled module method (model.compile()) is bound to its module; a
    # compiled module (torch.compile(model)) is called through Dynamo's
    # wrap_inline, which keeps it as __wrapped__.
    for owner in (getattr(function, "__self__", None), getattr(function, "__wrapped__", None)):
        if isinstance(owner, torch.nn.Module):
            return scopes.name_of(owner).encode()
    return b""


def _make_guard_class(key_bits: int):
    force = torch._C._ForceDispatchKeyGuard
    from_raw = torch._C.DispatchKeySet.from_raw_repr
    calls = compiled_region_calls()
    hide_hooks, unhide_hooks = _global_hooks.hide, _global_hooks.unhide

    class CompiledCallGuard:
        """What Dynamo's compile wrapper gets for torch._C._ForceDispatchKeyGuard:
        the same guard, without the counting key; and a hidden region while a
        measurement counts on this thread."""

        __slots__ = ("_guard", "_entered", "_label", "_hid")

        def __init__(self, include, exclude) -> None:
            self._guard = force(from_raw(include.raw_repr() & ~key_bits), exclude)
            self._label = _root_label(sys._getframe(1))
            self._entered = 0
            self._hid = False

        def __enter__(self):
            self._guard.__enter__()
            # NOTE [Global hooks and Dynamo's guards] in _global_hooks.py.
            self._hid = hide_hooks(only_beside_program_hooks=True)
            self._entered = calls.enter_compiled_call(self._label)
            return self

        def __exit__(self, *exc_info):
            calls.exit_compiled_call(self._entered)
            unhide_hooks(self._hid)
            return self._guard.__exit__(*exc_info)

    return CompiledCallGuard


# (owner, attribute, original value) of each patch in place, in order.
_patches: list[tuple[Any, str, Any]] = []


def _patch(owner: Any, name: str, replacement: Any) -> None:
    """Replaces owner.name, once; _unpatch_all puts the original back."""
    original = getattr(owner, name)
    if getattr(original, "_torchscan_wrapped", False):
        return
    replacement._torchscan_wrapped = True
    setattr(owner, name, replacement)
    _patches.append((owner, name, original))


def _unpatch_all() -> None:
    while _patches:
        owner, name, original = _patches.pop()
        setattr(owner, name, original)


_guard_class = None


def _hide_key_from_compiled_calls() -> None:
    import torch._dynamo.eval_frame as eval_frame

    global _guard_class
    if _guard_class is None:
        _guard_class = _make_guard_class(compiled_region_calls().counting_key_bits())
        _never_compiled.extend([_guard_class.__init__, _guard_class.__enter__, _guard_class.__exit__])
    c_module = _ModuleProxy(torch._C, {"_ForceDispatchKeyGuard": _guard_class})
    _patch(eval_frame, "torch", _ModuleProxy(torch, {"_C": c_module}))


# ---------------------------------------------------------------------------
# Compiled graphs run uncounted; a graph without a tally is named.


def _untallied_reason() -> bytes:
    if not integration_enabled():
        return _UNTALLIED_REASON_OFF
    return _UNTALLIED_REASON


def _wrap_compiled_graphs() -> None:
    from torch._inductor.output_code import CompiledFxGraph

    original = CompiledFxGraph.__call__
    calls = compiled_region_calls()

    def __call__(self, inputs):
        before = calls.enter_compiled_graph()
        try:
            return original(self, inputs)
        finally:
            if calls.exit_compiled_graph(before):
                calls.record_unseen(_UNTALLIED_GRAPH, _untallied_reason())

    _patch(CompiledFxGraph, "__call__", __call__)


_AOT_COMPILED_MODEL = b"inductor.aot_compiled_model"
_AOT_COMPILED_REASON = (
    b"an AOTInductor package runs its kernels outside the dispatcher and "
    b"without a FLOP tally, so its FLOPs are missing"
)


def _wrap_aot_compiled_models() -> None:
    try:
        from torch._inductor.package.package import AOTICompiledModel
    except ImportError:  # pragma: no cover - a torch without AOTInductor
        return
    original = AOTICompiledModel.__call__
    calls = compiled_region_calls()

    def __call__(self, *args, **kwargs):
        calls.record_unseen(_AOT_COMPILED_MODEL, _AOT_COMPILED_REASON)
        return original(self, *args, **kwargs)

    _patch(AOTICompiledModel, "__call__", __call__)


def _wrap_cuda_graph_replay() -> None:
    graph_class = getattr(getattr(torch, "cuda", None), "CUDAGraph", None)
    if graph_class is None:
        return
    original = graph_class.replay
    calls = compiled_region_calls()

    def replay(self, *args, **kwargs):
        calls.record_unseen(_CUDA_GRAPH_REPLAY, _CUDA_GRAPH_REASON)
        return original(self, *args, **kwargs)

    _patch(graph_class, "replay", replay)


# ---------------------------------------------------------------------------
# Compilation is never counted.


def _mark_compilation() -> None:
    from torch._dynamo.callback import callback_handler

    original = callback_handler.install_callbacks
    calls = compiled_region_calls()

    @contextlib.contextmanager
    def install_callbacks(*args, **kwargs):
        calls.change_compiling(1)
        # NOTE [Global hooks and Dynamo's guards] in _global_hooks.py.
        hid = _global_hooks.hide()
        try:
            with original(*args, **kwargs):
                yield
        finally:
            _global_hooks.unhide(hid)
            calls.change_compiling(-1)

    _patch(callback_handler, "install_callbacks", install_callbacks)


# ---------------------------------------------------------------------------
# Our own Python code is never compiled.

# NOTE [Frames Dynamo must not compile]
# Inside a compiled call, every Python frame that starts (while the frame
# that calls it runs eagerly: a graph break, a skipped frame) goes to Dynamo
# to be compiled, our own module hooks and this guard's methods included.
# Compiled, a hook would be traced with torch.compiler.is_compiling() true
# (empty), and a frame that calls ctypes would be compiled, fail and run
# anyway. They are marked to run as plain Python, with everything they call.
# This does not stop Dynamo from inlining a hook into a module call it traces
# (there the hook is traced as empty, so no graph break).
_never_compiled: list[Any] = []


def never_compile(function: Any) -> Any:
    """Marks `function` (and what it calls) to run uncompiled inside
    compiled calls; returns it. Effective once Dynamo is imported."""
    _never_compiled.append(function)
    if _installed:
        _mark_never_compiled([function])
    return function


def _mark_never_compiled(functions: list[Any]) -> None:
    from torch._C._dynamo.eval_frame import set_code_exec_strategy
    from torch._dynamo.types import FrameAction, FrameExecStrategy

    skip = FrameExecStrategy(FrameAction.SKIP, FrameAction.SKIP)
    for function in functions:
        code = getattr(getattr(function, "__func__", function), "__code__", None)
        if code is not None:
            set_code_exec_strategy(code, skip)


# ---------------------------------------------------------------------------
# Installation, and the escape hatch.

# NOTE [The escape hatch]
# TORCHSCAN_DISPATCH_COMPILER=off (or set_integration(False)) keeps the
# library out of Dynamo and Inductor: no graph pass (so no tally call, no
# change to any cache key or generated code) and no patch while nothing is
# measured, so a compiler problem can be ruled ours or not in one step.
# A measurement still needs compiled calls to hide the counting key (else
# every measured compiled call would recompile, and compilation would run
# through the fallback), so the patches are put in place while a
# measurement is open and taken out when the last one ends; the graphs that
# run meanwhile carry no tally and are reported as unseen work.
ENVIRONMENT_VARIABLE = "TORCHSCAN_DISPATCH_COMPILER"
_enabled = os.environ.get(ENVIRONMENT_VARIABLE, "on").strip().lower() not in ("off", "0", "false", "no")
_open_measurements = 0


def integration_enabled() -> bool:
    """Whether the torch.compile integration is on (docs/python.md)."""
    return _enabled


def _dynamo_imported() -> bool:
    return "torch._dynamo" in sys.modules and hasattr(sys.modules["torch._dynamo"], "callback_handler")


def _install_patches() -> None:
    load_library()
    torch.fx.node.has_side_effect(torch.ops.torchscan.compiled_graph_flops.default)
    _hide_key_from_compiled_calls()
    _wrap_compiled_graphs()
    _wrap_cuda_graph_replay()
    _wrap_aot_compiled_models()
    _mark_compilation()
    _mark_never_compiled(_never_compiled)


def install() -> None:
    """Installs the three pieces (idempotent). Needs torch._dynamo imported.
    With the integration off, installs nothing."""
    global _installed
    with _lock:
        if not _enabled:
            return
        _ensure_tally_pass()
        if _installed:
            # torch._dynamo.reset() forgets code strategies.
            _mark_never_compiled(_never_compiled)
            return
        _install_patches()
        _installed = True


def _uninstall() -> None:
    global _installed
    _remove_tally_pass()
    _unpatch_all()
    _installed = False


def set_integration(enabled: bool) -> None:
    """Turns the torch.compile integration on or off for this process (the
    API form of TORCHSCAN_DISPATCH_COMPILER; NOTE [The escape hatch]).
    Off takes the graph pass and every patch out at once; graphs compiled
    while it was on keep their tally call, which records nothing while no
    measurement is open."""
    global _enabled
    if not isinstance(enabled, bool):
        raise TypeError(f"enabled must be a bool, got {type(enabled).__name__}.")
    with _lock:
        _enabled = enabled
        if not enabled and _open_measurements == 0:
            _uninstall()
    if enabled:
        install_on_import()


def begin_measurement() -> None:
    """At the start of a measurement: installs if Dynamo was imported in the
    meantime, and puts our pass back if the pass list was replaced. With the
    integration off, puts the patches (never the pass) in place for the
    measurement."""
    global _open_measurements
    if not _dynamo_imported():
        with _lock:
            _open_measurements += 1
        return
    if _enabled:
        install()
    with _lock:
        _open_measurements += 1
        if not _enabled:
            _install_patches()


def end_measurement() -> None:
    """When a measurement stops counting: with the integration off, the last
    one takes the patches out."""
    global _open_measurements
    with _lock:
        _open_measurements -= 1
        if not _enabled and _open_measurements == 0:
            _uninstall()


class _InstallAfterImport(importlib.abc.MetaPathFinder):
    """Installs the pieces right after the torch._dynamo package finishes
    importing, before anything can be compiled, without importing Dynamo
    (seconds) in processes that never compile."""

    _TRIGGER = "torch._dynamo"

    def find_spec(self, name, path, target=None):
        if name != self._TRIGGER:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
                continue
            exec_module = spec.loader.exec_module

            def exec_and_install(module, exec_module=exec_module):
                exec_module(module)
                _remove_finder()
                # A failure here (an import cycle of an unusual import order)
                # only delays installation to the next measurement.
                with contextlib.suppress(Exception):
                    install()

            spec.loader.exec_module = exec_and_install
            return spec
        return None


def _remove_finder() -> None:
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _InstallAfterImport)]


def install_on_import() -> None:
    """Called when this package is imported."""
    if not _enabled:
        return
    if "torch._dynamo" in sys.modules:
        install()
    elif not any(isinstance(finder, _InstallAfterImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, _InstallAfterImport())
