"""Module attribution for ``by_module``, with FlopCounterMode's labels.

FlopCounterMode learns which modules are running from PyTorch's
ModuleTracker. We follow ModuleTracker's rules exactly (the same names, the
same set of running modules in forward and in backward), but the hooks run
for every module call, so they do as little as possible: the native session
keeps the set, interned as scope ids, and the hooks replay cached
transitions (scope id, label, entering) -> scope id with one native call.
Backward follows ModuleTracker's gradient hooks, registered natively
(python/operators/gradient_watches.h) rather than through
register_multi_grad_hook.
"""

from __future__ import annotations

import threading
import weakref

import torch
from torch.autograd.graph import register_multi_grad_hook
from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook
from torch.utils._pytree import tree_flatten

from torchscan_dispatch._compiled_graphs import never_compile
from torchscan_dispatch._library import scope_calls
from torchscan_dispatch._native import MODULE_SCOPES, Measurement

# The ModuleScopes open on each thread (the compiled-call guard asks for it).
_active = threading.local()

# Plain tensors are pytree leaves; anything else goes through tree_flatten.
_LEAF_TENSOR_TYPES = (torch.Tensor, torch.nn.Parameter)


def _plain_tensors(tensors: list) -> bool:
    """Whether the native gradient watches take these tensors: plain tensors
    outside functorch transforms (a wrapper's hooks are Python's business)."""
    if not all(type(t) in _LEAF_TENSOR_TYPES for t in tensors):
        return False
    return torch._C._functorch.peek_interpreter_stack() is None


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
        self._calls = scope_calls()
        self._scope = 0  # the empty set: only "Global" is running
        self._transitions: dict[tuple[int, str, bool], int] = {}
        self._handle = measurement.handle
        self._thread = threading.get_ident()
        # id(module) -> (weak reference, name, children named)
        self._names: dict[int, tuple[weakref.ref, str, bool]] = {}
        self._engine_callback_queued = False
        # Native gradient watches change the scope behind our cached view.
        self._epoch = self._calls.gradient_scope_epoch
        self._seen_epoch = self._epoch.value
        self._watching = False
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

    @staticmethod
    def active() -> ModuleScopes | None:
        """The ModuleScopes open on the calling thread, if any."""
        return getattr(_active, "scopes", None)

    def _entry(self, module) -> tuple[weakref.ref, str, bool] | None:
        entry = self._names.get(id(module))
        return entry if entry is not None and entry[0]() is module else None

    def _name_and_children(self, module) -> str:
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
        epoch = self._epoch.value
        if epoch != self._seen_epoch:
            # A gradient watch changed the scope: take the native one's.
            self._seen_epoch = epoch
            self._scope = self._calls.change_scope_label(self._handle, MODULE_SCOPES, name.encode(), entering)
            if self._scope < 0:
                self._scope = self._measurement._ops._change_scope_label(self._handle, MODULE_SCOPES, name, entering)
            return
        key = (self._scope, name, entering)
        scope = self._transitions.get(key)
        if scope is None:
            scope = self._calls.change_scope_label(self._handle, MODULE_SCOPES, name.encode(), entering)
            if scope < 0:
                scope = self._measurement._ops._change_scope_label(self._handle, MODULE_SCOPES, name, entering)
            self._transitions[key] = scope
        elif scope != self._scope:
            self._set_scope_id(scope)
        self._scope = scope

    def _set_scope_id(self, scope: int) -> None:
        if self._calls.set_scope_id(self._handle, MODULE_SCOPES, scope) < 0:
            self._measurement._ops._set_scope_id(self._handle, MODULE_SCOPES, scope)

    def _watch(self, tensors: list, name: str, entering: bool) -> None:
        """ModuleTracker's register_multi_grad_hook(tensors, ...): `name`
        enters (outputs) or leaves (inputs) the backward scope once every
        gradient of `tensors` is computed."""
        if _plain_tensors(tensors):
            self._watching = True
            if len(tensors) == 1:
                impls = (tensors[0]._cdata, None, None, None)
            else:
                impls = (*(t._cdata for t in tensors[:4]), None, None, None)[:4]
            if (
                len(tensors) > 4
                or self._calls.watch_gradients(self._handle, name.encode(), entering, len(tensors), *impls) < 0
            ):
                self._measurement._ops._watch_gradients(self._handle, tensors, name, entering)
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
            self._scope = 0
            self._engine_callback_queued = False

        torch.autograd.Variable._execution_engine.queue_callback(reset)
        self._engine_callback_queued = True

    # NOTE [Hooks under torch.compile]
    # Dynamo traces global module hooks into compiled code. is_compiling()
    # is a constant to Dynamo, so the traced hook is empty: no graph break,
    # nothing of ours in the graph. Compiled code is attributed to modules
    # from its graph's module stacks instead (_compiled_graphs.py).
    @never_compile
    def _pre_hook(self, module, args) -> None:
        if torch.compiler.is_compiling() or threading.get_ident() != self._thread:
            return
        name = self._name(module)
        self._change(name, True)
        # Without grad mode nothing computed here can be differentiated (and
        # a hook could not be attached: inside an autograd.Function's forward,
        # say); ModuleTracker would fail on such calls.
        tensors = _tensors_requiring_grad(args) if torch.is_grad_enabled() else None
        if tensors:
            self._watch(tensors, name, False)

    @never_compile
    def _post_hook(self, module, args, output) -> None:
        if torch.compiler.is_compiling() or threading.get_ident() != self._thread:
            return
        name = self._name(module)
        self._change(name, False)
        tensors = _tensors_requiring_grad(output) if torch.is_grad_enabled() else None
        if tensors:
            self._watch(tensors, name, True)

    def __enter__(self) -> ModuleScopes:
        self._previous = getattr(_active, "scopes", None)
        _active.scopes = self
        self._handles = [
            register_module_forward_pre_hook(self._pre_hook),
            register_module_forward_hook(self._post_hook),
        ]
        return self

    def __exit__(self, *exc_info) -> None:
        try:
            for handle in (*self._handles, *self._grad_hooks):
                handle.remove()
            self._handles.clear()
            self._grad_hooks.clear()
            if self._watching:
                self._measurement._ops._end_gradient_watches(self._handle)
        finally:
            _active.scopes = self._previous
