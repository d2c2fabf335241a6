"""A module's forward pre-hook and forward hook, both taking kwargs, added
and removed as ``register_forward_pre_hook(..., with_kwargs=True)`` and
``register_forward_hook(..., with_kwargs=True)`` would add and remove them.

NOTE [Hooks written into the module's dicts]
A crawl adds two hooks to every module and removes them after the forward.
Through PyTorch's methods each one builds a ``RemovableHandle`` (weak
references to the hook dicts, a fresh id) and each removal walks them:
about 4.4 us per hook, added and removed, 0.6 ms for the 138 hooks of a
ResNet-18 crawl and more with the caches a forward leaves cold. What the
methods do is two dict entries per hook under an id taken from
``RemovableHandle.next_id``; ``Module._call_impl`` reads nothing else. So
where a module's class keeps PyTorch's own registration methods and its
hook dicts are PyTorch's (``OrderedDict``s in its ``__dict__``), the same
entries are written here under ids taken from the same counter (ids stay
unique across everyone's hooks), appended as the methods append them, and
deleted the same way. A class that overrides either method (to wrap or
track its hooks) gets the method call, and so the handle, as before. Removal
pops the entries from the dicts they were written to, as a handle's weak
references do.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from torch import nn
from torch.utils.hooks import RemovableHandle

_PRE_HOOKS = "_forward_pre_hooks"
_PRE_HOOKS_WITH_KWARGS = "_forward_pre_hooks_with_kwargs"
_HOOKS = "_forward_hooks"
_HOOKS_WITH_KWARGS = "_forward_hooks_with_kwargs"


_HOOK_DICT_TYPES = (OrderedDict, dict)


def _hook_dicts(module: nn.Module) -> tuple[dict[int, Any], ...] | None:
    """The module's four hook dicts (pre-hooks, which of them take kwargs,
    hooks, which of them take kwargs) where registering on it is only their
    entries (NOTE); else None."""
    cls = type(module)
    if (
        cls.register_forward_pre_hook is not nn.Module.register_forward_pre_hook
        or cls.register_forward_hook is not nn.Module.register_forward_hook
    ):
        return None
    state = module.__dict__
    dicts = (state.get(_PRE_HOOKS), state.get(_PRE_HOOKS_WITH_KWARGS), state.get(_HOOKS),
             state.get(_HOOKS_WITH_KWARGS))
    for hooks in dicts:
        if type(hooks) not in _HOOK_DICT_TYPES:
            return None
    return dicts


class ForwardHooks:
    """The pre-hooks and hooks added to modules, removed together by
    ``remove_all``."""

    def __init__(self) -> None:
        # (a module's four hook dicts, the pre-hook's id) for hooks written
        # into the dicts; the forward hook's id is the next one.
        self._written: list[tuple[tuple[dict[int, Any], ...], int]] = []
        self._handles: list[RemovableHandle] = []

    def add(self, module: nn.Module, pre_hook: Callable[..., Any], hook: Callable[..., Any]) -> None:
        """Adds ``pre_hook`` and ``hook`` (both with kwargs) to ``module``,
        after its own."""
        dicts = _hook_dicts(module)
        if dicts is None:
            self._handles.append(module.register_forward_pre_hook(pre_hook, with_kwargs=True))
            self._handles.append(module.register_forward_hook(hook, with_kwargs=True))
            return
        first = RemovableHandle.next_id
        RemovableHandle.next_id = first + 2
        pre_hooks, pre_hooks_with_kwargs, hooks, hooks_with_kwargs = dicts
        pre_hooks[first] = pre_hook
        pre_hooks_with_kwargs[first] = True
        hooks[first + 1] = hook
        hooks_with_kwargs[first + 1] = True
        self._written.append((dicts, first))

    def remove_all(self) -> None:
        """Removes every hook added, from the dicts it was added to (as a
        RemovableHandle does: a dict the forward replaced is left alone)."""
        written, self._written = self._written, []
        for (pre_hooks, pre_hooks_with_kwargs, hooks, hooks_with_kwargs), first in written:
            pre_hooks.pop(first, None)
            pre_hooks_with_kwargs.pop(first, None)
            hooks.pop(first + 1, None)
            hooks_with_kwargs.pop(first + 1, None)
        handles, self._handles = self._handles, []
        for handle in handles:
            handle.remove()
