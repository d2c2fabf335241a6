"""Compiled calls hide the counting key; compiled code that runs without a
tally is named.

Dynamo's tensor guards record each input's dispatch-key set including the
thread-local included keys, so a key switched on by a measurement would make
every compiled function recompile, and Dynamo's tracing, AOTAutograd and
Inductor would run through the counting fallback. Dynamo's compile wrapper
snapshots the thread's key sets and forces them for the compiled call
(torch._C._ForceDispatchKeyGuard); the wrapper sees our guard class instead,
which forces the same sets without the counting key. While a measurement
counts on the thread, the call is a hidden region: the eager code that runs
in it (graph breaks, skipped frames, eager backends) is counted by the
hidden-region observer (torchscan_dispatch/hidden_region.h).

Compiled graphs run with counting off, so their extern kernels (aten.mm.out,
...) are not counted a second time; each graph's own tally call
(_tally_pass.py) counts it. A graph that ran without a tally (compiled before
this package was loaded, or replayed as a CUDA graph) and an AOTInductor
package are named in an unseen_work diagnostic.
"""

from __future__ import annotations

import sys
import threading
from typing import Any, Callable

import torch

from torchscan_dispatch import _global_hooks
from torchscan_dispatch._compilation_marks import never_compile
from torchscan_dispatch._compiler_patches import patch
from torchscan_dispatch._library import compiled_region_calls

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
_AOT_COMPILED_MODEL = b"inductor.aot_compiled_model"
_AOT_COMPILED_REASON = (
    b"an AOTInductor package runs its kernels outside the dispatcher and "
    b"without a FLOP tally, so its FLOPs are missing"
)


# ---------------------------------------------------------------------------
# Compiled calls hide the counting key.

# The module namer open on each thread: the ModuleScopes of a measurement
# that tracks modules (_module_scopes.py sets it), which names the module a
# compiled call belongs to.
_namers = threading.local()


def swap_module_namer(namer: Any) -> Any:
    """Makes `namer` (an object with name_of(module) -> str, or None) the
    calling thread's module namer; returns the one it replaces."""
    previous = getattr(_namers, "namer", None)
    _namers.namer = namer
    return previous


def _root_label(frame) -> bytes | None:
    """The label (FlopCounterMode's name) of the module the compiled call
    belongs to, when module tracking is on for this thread (else None); b""
    when the call belongs to no module."""
    namer = getattr(_namers, "namer", None)
    if namer is None:
        return None
    function = frame.f_locals.get("fn") if frame is not None else None
    # A compiled module method (model.compile()) is bound to its module; a
    # compiled module (torch.compile(model)) is called through Dynamo's
    # wrap_inline, which keeps it as __wrapped__.
    for owner in (getattr(function, "__self__", None), getattr(function, "__wrapped__", None)):
        if isinstance(owner, torch.nn.Module):
            return namer.name_of(owner).encode()
    return b""


# NOTE [Idle compiled calls]
# The library is loaded into training processes that measure now and then,
# or never, so a compiled call made while nothing of ours is active must
# cost what it costs without us. The guard class is only reached through
# the module view (ModuleView, python/operators/module_view.h: Dynamo reads
# about ten `torch.*` attributes per compiled call, each a dict probe more
# than on `torch` itself), and when no session is current on the calling
# thread and none of our module hooks is installed, __new__ returns
# PyTorch's own _ForceDispatchKeyGuard for Dynamo's sets, unchanged: without
# a session the counting key is not in the included set, there is no hidden
# region to open and no module to name, and without our hooks there is
# nothing to hide from Dynamo's guards. A measurement cannot begin inside
# the call on this thread before the guard is entered, and one begun inside
# it is confined by PyTorch's guard as any other key change is. Compiled
# graphs take the same test (wrap_compiled_graphs).


def _make_guard_class(key_bits: int):
    force = torch._C._ForceDispatchKeyGuard
    from_raw = torch._C.DispatchKeySet.from_raw_repr
    calls = compiled_region_calls()
    counting_here = calls.counting_here
    hide_hooks, unhide_hooks = _global_hooks.hide, _global_hooks.unhide
    hooks_installed = _global_hooks.installed

    class CompiledCallGuard:
        """What Dynamo's compile wrapper gets for torch._C._ForceDispatchKeyGuard:
        the same guard, without the counting key; and a hidden region while a
        measurement counts on this thread. Idle, PyTorch's own guard (NOTE
        [Idle compiled calls])."""

        __slots__ = ("_guard", "_entered", "_label", "_hid")

        def __new__(cls, include, exclude):
            if not counting_here() and not hooks_installed():
                return force(include, exclude)
            return object.__new__(cls)

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


_guard_class = None


def hide_key_from_compiled_calls() -> None:
    import torch._dynamo.eval_frame as eval_frame

    global _guard_class
    if _guard_class is None:
        _guard_class = _make_guard_class(compiled_region_calls().counting_key_bits())
        for method in (_guard_class.__new__, _guard_class.__init__, _guard_class.__enter__, _guard_class.__exit__):
            never_compile(method)
    view = compiled_region_calls().ModuleView
    c_module = view(torch._C, {"_ForceDispatchKeyGuard": _guard_class})
    patch(eval_frame, "torch", view(torch, {"_C": c_module}))


# ---------------------------------------------------------------------------
# Compiled graphs run uncounted; a graph without a tally is named.


def wrap_compiled_graphs(integration_enabled: Callable[[], bool]) -> None:
    """Runs every compiled graph uncounted; a graph that ran without its
    tally is unseen work, its reason naming the escape hatch while
    `integration_enabled()` is false."""
    from torch._inductor.output_code import CompiledFxGraph

    original = CompiledFxGraph.__call__
    calls = compiled_region_calls()
    counting_here = calls.counting_here

    def __call__(self, inputs):
        if not counting_here():  # NOTE [Idle compiled calls]
            return original(self, inputs)
        before = calls.enter_compiled_graph()
        try:
            return original(self, inputs)
        finally:
            if calls.exit_compiled_graph(before):
                reason = _UNTALLIED_REASON if integration_enabled() else _UNTALLIED_REASON_OFF
                calls.record_unseen(_UNTALLIED_GRAPH, reason)

    patch(CompiledFxGraph, "__call__", __call__)


def wrap_aot_compiled_models() -> None:
    try:
        from torch._inductor.package.package import AOTICompiledModel
    except ImportError:  # pragma: no cover - a torch without AOTInductor
        return
    original = AOTICompiledModel.__call__
    calls = compiled_region_calls()

    def __call__(self, *args, **kwargs):
        calls.record_unseen(_AOT_COMPILED_MODEL, _AOT_COMPILED_REASON)
        return original(self, *args, **kwargs)

    patch(AOTICompiledModel, "__call__", __call__)


def wrap_cuda_graph_replay() -> None:
    graph_class = getattr(getattr(torch, "cuda", None), "CUDAGraph", None)
    if graph_class is None:
        return
    original = graph_class.replay
    calls = compiled_region_calls()

    def replay(self, *args, **kwargs):
        calls.record_unseen(_CUDA_GRAPH_REPLAY, _CUDA_GRAPH_REASON)
        return original(self, *args, **kwargs)

    patch(graph_class, "replay", replay)
