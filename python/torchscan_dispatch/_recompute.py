"""The recompute phase: FLOPs that activation checkpointing executes again.

Hardware FLOPs are everything that ran; model FLOPs leave out the forward
work that activation checkpointing runs a second time in the backward pass.
The recomputed work is attributed to the scope label ``phase:recompute``
(the label StepMeter's phases use, mfu.py), which the counter takes out of
``by_module`` into the report's ``recomputed`` member (docs/python.md,
"Recomputed FLOPs").

NOTE [Where a recomputation is recognised]
No operator name or module name tells a recomputed call from the original
one. The signals are the places in PyTorch that run the recomputation, and
only them:

- ``torch.utils.checkpoint`` with ``use_reentrant=False`` (also selective
  checkpointing and nested checkpoints): the unpack hook runs the frame's
  ``recompute_fn`` through ``_run_fn_with_dynamo_disabled``, the one caller
  of that function. Operators that selective checkpointing serves from its
  cache inside the recomputation (``_CachedTorchDispatchMode``) never reach
  the dispatcher below the Python key, so they are not counted again.
- ``use_reentrant=True``: ``CheckpointFunction.backward`` calls
  ``ctx.run_function`` once, to recompute; the backward of the recomputed
  outputs that it runs next is the region's real backward. The patched
  backward wraps ``ctx.run_function`` for that one call.
- A compiled backward: AOTAutograd tags every node of the joint graph's
  forward ``partitioner_tag="is_forward"`` and the partitioner marks every
  node it puts into the backward graph ``autograd_backward``; a node with
  both is forward work that the backward recomputes. The graph's tally
  (_tally_pass.py) marks such calls "recomputed" and the C++ tally
  attributes them to the same label.

The patches are in place only while a FlopCounter is open (counted, like
the escape hatch of _compiler_integration.py): an unmeasured program runs
PyTorch's own functions.

NOTE [Which measurements a recomputation belongs to]
A recomputation marks the measurements the calling thread opened. CPU
backward passes run on that thread; a device's backward runs on the
autograd engine's thread for that device, which opened no measurement, so
there it marks every open measurement (one measurement at a time is the
usual case; two measurements of different threads whose backward passes
overlap on one device would each see the other's recomputation label while
it lasts). The label is a set member of the session's scope, so nested
recomputations (a checkpoint inside a recomputed checkpoint) keep it until
the outermost one ends, by a depth per measurement.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Iterator
from typing import Any

import torch

from torchscan_dispatch._while_counting import WhileCounting

RECOMPUTE_LABEL = "phase:recompute"


class _Open:
    """A measurement a FlopCounter has open."""

    __slots__ = ("measurement", "thread", "scopes", "depth")

    def __init__(self, measurement: Any, scopes: Any) -> None:
        self.measurement = measurement
        self.thread = threading.get_ident()
        self.scopes = scopes  # its ModuleScopes, or None without module tracking
        self.depth = 0  # recomputations open for it (the label is on while > 0)


# (owner, attribute, the attribute as the owner's __dict__ held it, or
# _ABSENT when it was inherited).
_patches: list[tuple[Any, str, Any]] = []
_ABSENT = object()


def _change(entry: _Open, present: bool) -> None:
    measurement, scopes = entry.measurement, entry.scopes
    if scopes is not None:
        # NOTE [The label and module tracking]
        # With module tracking the label goes through the tracker, into the
        # session's module table that the tracker's labels live in (the same
        # table kept per model, NOTE [Scopes kept per model] in
        # torchscan_dispatch/scope_table.h).
        scopes._change(RECOMPUTE_LABEL, present)
        return
    from torchscan_dispatch._native import MODULE_SCOPES

    measurement.change_scope_label(MODULE_SCOPES, RECOMPUTE_LABEL, present)


def _targets() -> list[_Open]:
    """The measurements this thread's recomputation belongs to (NOTE [Which
    measurements a recomputation belongs to])."""
    thread = threading.get_ident()
    own = [entry for entry in _patched.open.values() if entry.thread == thread]
    return own if own else list(_patched.open.values())


@contextlib.contextmanager
def recomputing() -> Iterator[None]:
    """Attributes the calls of the block to the recompute phase."""
    with _patched.lock:
        entries = _targets()
        for entry in entries:
            entry.depth += 1
            if entry.depth == 1:
                _change(entry, True)
    try:
        yield
    finally:
        with _patched.lock:
            for entry in entries:
                if _patched.open.get(entry.measurement.handle) is not entry:
                    continue  # its measurement ended meanwhile
                entry.depth -= 1
                if entry.depth == 0:
                    _change(entry, False)


def _run_recomputing(function: Any, *args: Any, **kwargs: Any) -> Any:
    with recomputing():
        return function(*args, **kwargs)


def _patch_non_reentrant(checkpoint: Any) -> None:
    original = checkpoint._run_fn_with_dynamo_disabled

    def _run_fn_with_dynamo_disabled(fn, *args, **kwargs):
        return original(_run_recomputing, fn, *args, **kwargs)

    _patches.append((checkpoint, "_run_fn_with_dynamo_disabled", checkpoint.__dict__["_run_fn_with_dynamo_disabled"]))
    checkpoint._run_fn_with_dynamo_disabled = _run_fn_with_dynamo_disabled


def _patch_reentrant(checkpoint: Any) -> None:
    function_class = checkpoint.CheckpointFunction
    stored = function_class.__dict__["backward"]
    original = function_class.backward

    def backward(ctx, *grads):
        run_function = ctx.run_function
        ctx.run_function = functools.partial(_run_recomputing, run_function)
        try:
            return original(ctx, *grads)
        finally:
            ctx.run_function = run_function

    _patches.append((function_class, "backward", stored))
    function_class.backward = staticmethod(backward)


def _patch_selective(checkpoint: Any) -> None:
    """NOTE [Calls selective checkpointing serves from its cache]
    Our key is above the Python key, so a call that SAC's recompute mode
    answers from its cache (no kernel runs) would be counted like one that
    runs. While the recompute mode is open on a counting thread the key is
    excluded; the mode's calls that do run (the cache says _RECOMPUTE, or
    an operator SAC ignores) are counted by calling them with the key back
    in place. The cache's decision is read as the mode reads it, before the
    mode does."""
    mode_class = checkpoint._CachedTorchDispatchMode
    stored = {name: mode_class.__dict__.get(name, _ABSENT) for name in ("__enter__", "__exit__", "__torch_dispatch__")}
    enter, exit_, dispatch = (getattr(mode_class, name) for name in stored)
    from torchscan_dispatch._library import compiled_region_calls

    bits = compiled_region_calls().counting_key_bits()
    from_raw = torch._C.DispatchKeySet.from_raw_repr

    def __enter__(self):
        result = enter(self)
        self._torchscan_excluded = None
        if torch._C._dispatch_tls_local_include_set().raw_repr() & bits:
            guard = torch._C._ExcludeDispatchKeyGuard(from_raw(bits))
            guard.__enter__()
            self._torchscan_excluded = guard
        return result

    def __exit__(self, *exc_info):
        guard, self._torchscan_excluded = getattr(self, "_torchscan_excluded", None), None
        if guard is not None:
            guard.__exit__(*exc_info)
        return exit_(self, *exc_info)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if getattr(self, "_torchscan_excluded", None) is None:
            return dispatch(self, func, types, args, kwargs)
        runs = func in checkpoint.SAC_IGNORED_OPS
        if not runs:
            sac_key = checkpoint._sac_storage_key(func, args)
            entries = self.storage.get(sac_key) or {}
            runs = entries.get(self.func_counter[sac_key]) is checkpoint._RECOMPUTE
        if not runs:
            return dispatch(self, func, types, args, kwargs)
        include = from_raw(torch._C._dispatch_tls_local_include_set().raw_repr() | bits)
        exclude = from_raw(torch._C._dispatch_tls_local_exclude_set().raw_repr() & ~bits)
        with torch._C._ForceDispatchKeyGuard(include, exclude):
            return dispatch(self, func, types, args, kwargs)

    for name, replacement in (("__enter__", __enter__), ("__exit__", __exit__), ("__torch_dispatch__", __torch_dispatch__)):
        _patches.append((mode_class, name, stored[name]))
        setattr(mode_class, name, replacement)


_marked = False


def _install() -> None:
    import torch.utils.checkpoint as checkpoint

    global _marked
    if not _marked:
        from torchscan_dispatch._compilation_marks import never_compile

        # NOTE [Frames Dynamo must not compile] in _compilation_marks.py.
        never_compile(_run_recomputing)
        _marked = True
    _patch_non_reentrant(checkpoint)
    _patch_reentrant(checkpoint)
    _patch_selective(checkpoint)


def _uninstall() -> None:
    while _patches:
        owner, name, stored = _patches.pop()
        if stored is _ABSENT:
            delattr(owner, name)
        else:
            setattr(owner, name, stored)


_patched = WhileCounting(_install, _uninstall)


def opened(measurement: Any, scopes: Any) -> None:
    """A FlopCounter starts counting with `measurement` on this thread, with
    module tracking `scopes` (a ModuleScopes) or none (None)."""
    _patched.opened(measurement.handle, _Open(measurement, scopes))


def _end_recomputation(entry: _Open) -> None:
    if entry.depth > 0:
        _change(entry, False)


def closed(measurement: Any) -> None:
    """Its counting ends: its recompute label goes, and with the last
    measurement the patches."""
    _patched.closed(measurement.handle, _end_recomputation)


def take_recomputed(report: dict[str, Any]) -> None:
    """Moves the recompute label's FLOPs out of ``by_module`` into the
    report's ``recomputed`` member (absent when nothing counted was
    recomputed)."""
    by_module = report.get("by_module")
    if not isinstance(by_module, dict) or RECOMPUTE_LABEL not in by_module:
        return
    report["recomputed"] = {"flops": int(by_module.pop(RECOMPUTE_LABEL))}
    mask_aware = report.get("mask_aware")
    if isinstance(mask_aware, dict) and RECOMPUTE_LABEL in mask_aware.get("by_module", {}):
        report["recomputed"]["mask_aware_flops"] = int(mask_aware["by_module"].pop(RECOMPUTE_LABEL))
