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

import threading
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


class _NamedTree:
    """ModuleTracker's names for a module tree named from its root in a
    fresh measurement, and the structure they were derived from.

    NOTE [Names kept per model]
    A training loop measures the same model every step, and naming walks
    every module's children (named_children, a weak reference, a label per
    module): the same answer each time as long as the tree is the same. The
    names depend only on the tree when the walk starts from a root in a
    measurement that has named nothing yet (ModuleTracker's first module
    call), so they are kept per root and reused while every module of the
    tree has the same children under the same attribute names. The check
    reads each module's ``_modules`` (what named_children iterates) against
    the children's ids and weak references; the cache holds no strong
    reference to any module.

    With the names, the tree keeps the native labels and module scopes of its
    measurements (a ModuleScopeCache, NOTE [Scopes kept per model] in
    torchscan_dispatch/scope_table.h): the next measurement's session adopts
    them, so a model measured again allocates nothing per module call."""

    __slots__ = ("names", "structure", "cache")

    def __init__(self, names: dict[int, tuple[weakref.ref, str, bool]]) -> None:
        self.names = dict(names)
        self.cache = hooks().ModuleScopeCache()
        structure = []
        for ref, _, _ in names.values():
            module = ref()
            structure.append((ref, [(key, id(child)) for key, child in module._modules.items()]))
        self.structure = structure

    def valid(self) -> bool:
        names = self.names
        for ref, children in self.structure:
            module = ref()
            if module is None:
                return False
            known = module._modules
            if len(known) != len(children):
                return False
            for (key, child), (known_key, known_child) in zip(children, known.items()):
                if key != known_key or child != id(known_child):
                    return False
                if known_child is not None:
                    # The id is still the module it was (not a new one at a
                    # reused address): its own entry's weak reference says so.
                    entry = names.get(child)
                    if entry is None or entry[0]() is not known_child:
                        return False
        return True


# id(root) -> (weak reference to the root, its _NamedTree), most recently
# used last; a few roots (a training loop measures one or two models).
_named_trees: dict[int, tuple[weakref.ref, _NamedTree]] = {}
_NAMED_TREES_KEPT = 8
# How many times a tree was walked to name it, and how many measurements
# took the labels and scopes kept for a tree (tests read them).
walks = 0
adoptions = 0


# Measurements on several threads may name trees at once.
_named_trees_lock = threading.Lock()


def _kept_names(root) -> _NamedTree | None:
    with _named_trees_lock:
        entry = _named_trees.get(id(root))
        if entry is None or entry[0]() is not root:
            return None
        if entry[1].names[id(root)][1] != type(root).__name__ or not entry[1].valid():
            del _named_trees[id(root)]
            return None
        return entry[1]


def _keep_names(root, tree: _NamedTree) -> None:
    with _named_trees_lock:
        _named_trees.pop(id(root), None)
        _named_trees[id(root)] = (weakref.ref(root), tree)
        while len(_named_trees) > _NAMED_TREES_KEPT:
            del _named_trees[next(iter(_named_trees))]


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
        if not self._names:
            return self._name_tree(module)
        return self._walk(module)

    def _name_tree(self, root) -> str:
        """Names a root in a measurement that has named nothing yet: from the
        names kept for it when its tree is unchanged (NOTE [Names kept per
        model])."""
        global walks, adoptions
        tree = _kept_names(root)
        if tree is None:
            walks += 1
            name = self._walk(root)
            tree = _NamedTree(self._names)
            _keep_names(root, tree)
        else:
            self._names = dict(tree.names)
            name = self._names[id(root)][1]
        # Names and labels are the tree's until the next renaming
        # (forget_names): its kept labels and scopes are this measurement's.
        if self._tracker.adopt(tree.cache):
            adoptions += 1
        return name

    def _walk(self, module) -> str:
        entry = self._entry(module)
        name = entry[1] if entry is not None else type(module).__name__
        self._names[id(module)] = (weakref.ref(module), name, False)
        for child_name, child in module.named_children():
            # A child named before keeps its own children's names.
            previous = self._entry(child)
            named_children = previous is not None and previous[2]
            self._names[id(child)] = (weakref.ref(child), f"{name}.{child_name}", named_children)
            if not named_children:
                self._tracker.forget_names()
                self._walk(child)
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
                self._measurement.end_gradient_watches()
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
