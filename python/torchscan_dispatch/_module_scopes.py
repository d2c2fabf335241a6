"""Module attribution for ``by_module``, with FlopCounterMode's labels.

FlopCounterMode learns which modules are running from PyTorch's
ModuleTracker. We follow ModuleTracker's rules exactly (the same names, the
same set of running modules in forward and in backward), but the hooks run
for every module call, so their bodies are native: a ModuleScopeTracker
(python/operators/module_scope_hooks.cc) keeps each module's label and the
transitions between scopes, and registers ModuleTracker's gradient hooks as
native gradient watches (python/operators/gradient_watches.h) rather than
through register_multi_grad_hook. Python keeps what only Python can do:
naming a module the first time it runs, and the values the native path
declines (tensor subclasses, pytrees; their plain tensors still get native
watches).
"""

from __future__ import annotations

import weakref

import torch
from torch.autograd.graph import register_multi_grad_hook
from torch.utils._pytree import tree_flatten

from torchscan_dispatch import _compiled_calls, _global_hooks
from torchscan_dispatch._compilation_marks import never_compile
from torchscan_dispatch._library import hooks
from torchscan_dispatch._native import Measurement

# Plain tensors are pytree leaves; anything else goes through tree_flatten.
_LEAF_TENSOR_TYPES = (torch.Tensor, torch.nn.Parameter)


def _plain_tensors(tensors: list) -> bool:
    """Whether the native gradient watches take these tensors: plain tensors,
    also inside functorch transforms (NOTE [Gradient watches inside functorch
    transforms] in python/operators/module_scope_hooks.cc: Python's
    register_multi_grad_hook raises there for a leaf)."""
    return all(type(t) in _LEAF_TENSOR_TYPES for t in tensors)


def _tensors_requiring_grad(value) -> list:
    if type(value) in _LEAF_TENSOR_TYPES:
        return [value] if value.requires_grad else []
    if type(value) is tuple and all(type(item) in _LEAF_TENSOR_TYPES for item in value):
        return [item for item in value if item.requires_grad]
    leaves, _ = tree_flatten(value)
    return [leaf for leaf in leaves if isinstance(leaf, torch.Tensor) and leaf.requires_grad]


class ModuleScopes:
    """Context manager: while open, the measurement's module scope is the set
    of modules running on the measuring thread (forward) or whose backward is
    running (autograd engine), named as ModuleTracker names them.

    The forward hooks are global, so they fire for module calls on every
    thread; only the measuring thread's calls change its scope (other
    threads' operators are not counted either), so concurrent measurements
    never attribute FLOPs to each other's modules.
    """

    def __init__(self, measurement: Measurement) -> None:
        self._measurement = measurement
        # id(module) -> (weak reference, name, children named)
        self._names: dict[int, tuple[weakref.ref, str, bool]] = {}
        self._tracker = hooks().ModuleScopeTracker(
            measurement.handle, self._name, self._watch_value, torch.Tensor, torch.nn.Parameter, torch.compiler
        )
        self._engine_callback_queued = False
        self._grad_hooks: list = []
        self._handles: list = []

    # ModuleTracker's naming: a module first seen unnamed is called by its
    # type; each module names its children after itself the first time it
    # runs. Entries are keyed by id() and hold a weak reference that confirms
    # the id still belongs to the same module (cheaper than a
    # WeakKeyDictionary lookup on every hook call).
    def _name(self, module) -> str:
        entry = self._names.get(id(module))
        if entry is not None and entry[2] and entry[0]() is module:
            return entry[1]
        return self._name_and_children(module)

    def name_of(self, module) -> str:
        """The module's label, named by ModuleTracker's rules."""
        return self._name(module)

    def _entry(self, module) -> tuple[weakref.ref, str, bool] | None:
        entry = self._names.get(id(module))
        return entry if entry is not None and entry[0]() is module else None

    def _name_and_children(self, module) -> str:
        # Names change here only; the tracker's cached labels go with them.
        self._tracker.forget_names()
        entry = self._entry(module)
        name = entry[1] if entry is not None else type(module).__name__
        self._names[id(module)] = (weakref.ref(module), name, False)
        for child_name, child in module.named_children():
            # A child named before keeps its own children's names.
            previous = self._entry(child)
            named_children = previous is not None and previous[2]
            self._names[id(child)] = (weakref.ref(child), f"{name}.{child_name}", named_children)
            if not named_children:
                self._name_and_children(child)
        self._names[id(module)] = (weakref.ref(module), name, True)
        return name

    def _change(self, name: str, entering: bool) -> None:
        self._tracker.change(name, entering)

    def _set_scope_id(self, scope: int) -> None:
        self._tracker.set_scope(scope)

    def _watch_value(self, value, name: str, entering: bool) -> None:
        """The gradient watch of a module call's arguments or output that the
        tracker's native path declined."""
        tensors = _tensors_requiring_grad(value)
        if tensors:
            self._watch(tensors, name, entering)

    def _watch(self, tensors: list, name: str, entering: bool) -> None:
        """ModuleTracker's register_multi_grad_hook(tensors, ...): `name`
        enters (outputs) or leaves (inputs) the backward scope once every
        gradient of `tensors` is computed."""
        if _plain_tensors(tensors):
            self._tracker.watch(tensors, name, entering)
        else:
            hook = self._enter_in_backward(name) if entering else self._exit_in_backward(name)
            self._grad_hooks.append(register_multi_grad_hook(tensors, hook))

    def _enter_in_backward(self, name: str):
        def enter(*_) -> None:
            self._reset_after_backward()
            self._change(name, True)

        return enter

    def _exit_in_backward(self, name: str):
        return lambda *_: self._change(name, False)

    def _reset_after_backward(self) -> None:
        # As ModuleTracker: when the engine finishes, no module is running.
        if self._engine_callback_queued:
            return

        def reset() -> None:
            self._set_scope_id(0)
            self._engine_callback_queued = False

        torch.autograd.Variable._execution_engine.queue_callback(reset)
        self._engine_callback_queued = True

    def __enter__(self) -> ModuleScopes:
        # The compiled calls of this thread ask it for their module's label.
        self._previous = _compiled_calls.swap_module_namer(self)
        self._handles = _global_hooks.register(*_hooks(self._tracker))
        return self

    def __exit__(self, *exc_info) -> None:
        try:
            _global_hooks.remove(self._handles)
            for handle in self._grad_hooks:
                handle.remove()
            self._handles.clear()
            self._grad_hooks.clear()
            if self._tracker.watching():
                self._measurement._ops._end_gradient_watches(self._measurement.handle)
        finally:
            _compiled_calls.swap_module_namer(self._previous)


# NOTE [Hooks under torch.compile]
# Dynamo traces global module hooks into compiled code.
# is_dynamo_compiling() is a constant to Dynamo, so the traced hook is
# empty: no graph break, nothing of ours in the graph (the tracker's methods
# are C functions Dynamo could not trace). Compiled code is attributed to
# modules from its graph's module stacks instead (_tally_pass.py).
# Outside Dynamo's traces the tracker checks the rest of is_compiling()
# itself (torch.export and Inductor tracing modules in Python), a quarter of
# is_compiling()'s cost per call. Dynamo must not compile the hooks' frames
# either (never_compile).
def _hooks(tracker):
    """The global forward pre-hook and forward hook around `tracker`."""
    enter, leave = tracker.enter, tracker.leave
    is_dynamo_compiling = torch.compiler.is_dynamo_compiling

    def pre_hook(module, args) -> None:
        if not is_dynamo_compiling():
            enter(module, args)

    def post_hook(module, args, output) -> None:
        if not is_dynamo_compiling():
            leave(module, output)

    return pre_hook, post_hook


# Frames are marked by code object: marking one pair marks every pair.
for _hook in _hooks(type("_Unused", (), {"enter": None, "leave": None})):
    never_compile(_hook)
