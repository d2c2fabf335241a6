"""The Inductor tally pass: each compiled graph carries its tally.

An Inductor post-grad pass (the first of them, after freezing and before
Inductor's fusions replace operators by lowering functions) describes every
operator of the graph (_graph_spec.py: shapes, with symbols bound at run time
for dynamic shapes, and module stacks) and appends a call of
torchscan::compiled_graph_flops, which records the description each time the
generated code runs, including after a compilation-cache hit, and counts
matrix products that no dispatcher call shows (GEMM templates, Triton).
Branches of cond and bodies of while_loop carry their own tally, so what
actually ran is counted. _compiler_integration.py adds the pass to
Inductor's pass list and takes it out.
"""

from __future__ import annotations

import functools
import hashlib
import operator
from typing import Any

import torch

from torchscan_dispatch import _graph_spec
from torchscan_dispatch._graph_spec import SPEC_VERSION, GraphDescription, graph_kind, spec_text
from torchscan_dispatch._version import __version__


# Graph nodes that are bookkeeping of the graph, not operators that run.
_SKIPPED_TARGETS = {operator.getitem}


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


def _describe(description: GraphDescription, node: torch.fx.Node) -> None:
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
                        tally(subgraph)
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


def is_tally(node: torch.fx.Node) -> bool:
    return node.op == "call_function" and node.target is torch.ops.torchscan.compiled_graph_flops.default


def _strip_tallies(graph: torch.fx.Graph) -> None:
    """Removes the tally calls (and the size computations only they used)
    of `graph` and its subgraphs."""
    for node in list(graph.nodes):
        if is_tally(node):
            graph.erase_node(node)
        elif node.op == "get_attr":
            subgraph = _subgraph(graph, node)
            if subgraph is not None:
                _strip_tallies(subgraph)
    graph.eliminate_dead_code()


def _aot_compiling() -> bool:
    """Whether Inductor is compiling ahead of time (AOTInductor): a package
    that runs in other processes, which never load this library."""
    from torch._inductor.virtualized import V

    return bool(V.aot_compilation)


def tally(graph: torch.fx.Graph, is_inference: bool | None = None) -> None:
    """Describes `graph` and inserts the call that records it; `is_inference`
    is Inductor's word on whether it is an inference graph (None: not
    known)."""
    if _aot_compiling():
        # NOTE [AOTInductor packages carry no tally]
        # A package outlives this process and runs where the library is
        # never loaded (and its C++ runner cannot call our operator), so it
        # is compiled exactly as without us; running one inside a
        # measurement is recorded as unseen work (_compiled_calls.py,
        # wrap_aot_compiled_models).
        return
    if any(is_tally(node) for node in graph.nodes):
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
        description = GraphDescription(graph)
        for node in list(graph.nodes):
            if node.op == "call_function":
                described = len(description.calls)
                _describe(description, node)
                if _recomputed(node):
                    for call in description.calls[described:]:
                        call["recomputed"] = True
        spec = spec_text({
            "version": SPEC_VERSION,
            "family": compile_id,
            "graph": graph_kind(graph, is_inference),
            "calls": description.calls,
            "inputs": description.graph_inputs(),
            "outputs": description.graph_outputs(),
        })
        with graph.inserting_before(first):
            symbols = graph.materialize_symints(description.symbols) if description.symbols else []
    except Exception as error:  # noqa: BLE001 - never break the user's compilation
        symbols = []
        spec = spec_text({
            "version": SPEC_VERSION,
            "family": compile_id,
            "calls": [],
            "unseen": f"torchscan_dispatch could not describe this compiled graph "
            f"({type(error).__name__}: {error}), so its FLOPs are missing",
        })
    key = int.from_bytes(hashlib.sha1(spec.encode()).digest()[:8], "little", signed=True)
    with graph.inserting_before(first):
        graph.call_function(torch.ops.torchscan.compiled_graph_flops.default, (key, spec, list(symbols), anchor))


def _make_tally_pass():
    from torch._inductor.custom_graph_pass import CustomInferenceAwareGraphPass, get_hash_for_files

    class TallyPass(CustomInferenceAwareGraphPass):
        """Inductor post-grad pass: every compiled graph records its tally
        (Inductor tells an inference-aware pass which graphs are inference
        graphs, which the spec names)."""

        def __call__(self, graph: torch.fx.Graph, is_inference: bool = False) -> None:
            tally(graph, is_inference)

        def uuid(self) -> bytes:
            # Part of the FX-graph cache key: a graph compiled by another
            # version of this pass, or described in another spec, is
            # compiled again, not reused.
            return get_hash_for_files((__file__, _graph_spec.__file__), extra=f"torchscan_dispatch {__version__}")

    return TallyPass()


_tally_pass = None


# NOTE [Looked up once per process]
# ensure_tally_pass runs at the start of every measurement (a StepMeter:
# every step), after the step's own work has evicted our code and data from
# the caches; an import statement of a loaded module still runs the import
# machinery. The config module is looked up once and kept.
@functools.cache
def _inductor_config() -> Any:
    import torch._inductor.config as inductor_config

    return inductor_config


def _pass_list() -> list[Any]:
    current = _inductor_config().post_grad_custom_pre_pass
    return [] if current is None else list(current) if isinstance(current, (list, tuple)) else [current]


def ensure_tally_pass() -> None:
    """Appends our pass to Inductor's post-grad pre-pass list (the user's own
    pre-passes run first, Inductor's fusions after); again if the list was
    replaced since."""
    global _tally_pass
    if _tally_pass is None:
        _tally_pass = _make_tally_pass()
    passes = _pass_list()
    if _tally_pass not in passes:
        _inductor_config().post_grad_custom_pre_pass = [*passes, _tally_pass]


def remove_tally_pass() -> None:
    """Takes our pass out again; the setting is None again when ours was the
    only pass, as it was before we added it."""
    if _tally_pass is None:
        return  # never added (and Inductor may not be imported: keep it so)
    passes = _pass_list()
    if _tally_pass not in passes:
        return
    passes.remove(_tally_pass)
    _inductor_config().post_grad_custom_pre_pass = passes or None
