"""Our global module hooks, and hiding them from Dynamo.

NOTE [Global hooks and Dynamo's guards]
by_module follows module calls through torch.nn's global forward hooks (as
ModuleTracker does). Dynamo reads the global hook dicts whenever it traces a
module call. An empty dict gets no guard (skip_nnmodule_hook_guards), but a
non-empty one gets a length guard (``len(G[...]._global_forward_hooks) ==
1``) and its hooks are traced into the frame. So a frame compiled during a
measurement would recompile on the next unmeasured call, as the hooks
exist only while a measurement is open.

Compiled graphs never need the hooks (they are attributed to modules from
their own module stacks, _tally_pass.py), so our hooks are hidden from
the dicts while Dynamo compiles: every frame is traced against exactly the
hooks the program has without us, measured or not. Eager code inside a
compiled call (graph breaks, skipped frames) still runs our hooks. When the
program has global hooks of its own, Dynamo guards on the dicts' length
even at run time, so then our hooks are also hidden for the whole compiled
call, and the eager module calls inside it are attributed to the compiled
call's module rather than to themselves.

The program's global hooks are not the only reason for such a guard: a
module with hooks of its own (``module.register_forward_pre_hook``) makes
Dynamo trace ``Module._call_impl``'s slow path, which iterates the global
dicts, and that iteration guards on their keys even when they are empty.
So the guards Dynamo builds for each frame are watched
(_compilation_marks.watch_hook_guards): once any frame guards on more than
the type of a dict our hooks live in, our hooks are hidden for every
compiled call from then on, as beside the program's own hooks. Frames
compiled before the watch was installed were not seen, so they count as
guarded (note_hook_dicts_guarded).

The dicts are global, so hiding is process-wide and counted: our hooks come
back, in their places, when the last compilation or compiled call that hid
them ends. Module calls that other threads make meanwhile are not seen by
their own measurements' by_module (docs/design.md, "torch.compile").
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Callable

from torch.nn.modules import module as _nn_module
from torch.utils.hooks import RemovableHandle

_lock = threading.Lock()
# Our registered hooks: handle id -> (the dict it lives in, the hook).
_ours: dict[int, tuple[OrderedDict, Callable[..., Any]]] = {}
# Compiled calls in progress that hide our hooks, on any thread.
_hiding = 0
# While hidden: each dict's key order before hiding.
_orders: list[tuple[OrderedDict, list[Any]]] = []
# Whether a compiled frame may guard on the contents of a dict our hooks
# live in (NOTE [Global hooks and Dynamo's guards]); never reset.
_contents_guarded = False
# The dicts our hooks live in.
HOOK_DICTS = ("_global_forward_pre_hooks", "_global_forward_hooks")


def _dict(name: str) -> OrderedDict:
    return getattr(_nn_module, name)


def register(pre_hook: Callable[..., Any], post_hook: Callable[..., Any]) -> list[RemovableHandle]:
    """Registers a global forward pre-hook and forward hook; returns their
    handles (pass them to remove). Registered hidden while a compiled call
    is in progress anywhere."""
    handles = [
        _nn_module.register_module_forward_pre_hook(pre_hook),
        _nn_module.register_module_forward_hook(post_hook),
    ]
    with _lock:
        for handle, (name, hook) in zip(
            handles, (("_global_forward_pre_hooks", pre_hook), ("_global_forward_hooks", post_hook))
        ):
            hooks = _dict(name)
            _ours[handle.id] = (hooks, hook)
            if _hiding:
                hooks.pop(handle.id, None)
    return handles


def remove(handles: list[RemovableHandle]) -> None:
    """Removes hooks that register returned, hidden or not."""
    with _lock:
        for handle in handles:
            _ours.pop(handle.id, None)
            handle.remove()


def _program_has_own_hooks() -> bool:
    return any(
        key not in _ours
        for name in HOOK_DICTS
        for key in _dict(name)
    )


def _program_has_any_global_hook() -> bool:
    return _program_has_own_hooks() or any(
        _dict(name) for name in ("_global_backward_pre_hooks", "_global_backward_hooks")
    )


# NOTE [The compiled-module warning]
# torch.compile(module)'s OptimizedModule warns at every call while any
# global module hook exists (torch.nn's _has_any_global_hook; nothing else
# calls it), so a measurement with track_modules made a compiled module warn,
# and raise under warnings-as-errors (`-W error`, pytest's filterwarnings),
# as FlopCounterMode's module tracker does. The warning is about the
# program's hooks: the check is replaced by one that leaves ours out.
def leaving_ours_out(has_any_global_hook: Callable[[], Any]) -> Callable[[], bool]:
    """torch.nn's _has_any_global_hook, seeing only the program's hooks; the
    compiler integration puts it in place (_compiler_integration.py).
    NOTE [The compiled-module warning]."""

    def _has_any_global_hook():
        return bool(has_any_global_hook()) and (not _ours or _program_has_any_global_hook())

    return _has_any_global_hook


def installed() -> bool:
    """Whether any of our module hooks is installed now."""
    return bool(_ours)


def hook_dicts_guarded() -> bool:
    """Whether note_hook_dicts_guarded was called."""
    return _contents_guarded


def note_hook_dicts_guarded() -> None:
    """A compiled frame guards on the contents of a dict our hooks live in
    (or may: it was compiled unwatched). From now on every compiled call
    hides our hooks."""
    global _contents_guarded
    _contents_guarded = True


def hide(*, only_beside_program_hooks: bool = False) -> bool:
    """Dynamo starts compiling, or (with only_beside_program_hooks) a
    compiled call starts while compiled frames may guard on the hook dicts'
    contents (the program has global hooks of its own, or
    note_hook_dicts_guarded was called): hides our hooks (the first such
    caller does). Returns whether it counted; pass that to unhide."""
    global _hiding
    if not _ours:  # nothing measured with module tracking: free
        return False
    if only_beside_program_hooks and not _hiding and not _contents_guarded and not _program_has_own_hooks():
        return False
    with _lock:
        _hiding += 1
        if _hiding == 1:
            dicts = {id(hooks): hooks for hooks, _ in _ours.values()}
            _orders[:] = [(hooks, list(hooks)) for hooks in dicts.values()]
            for key, (hooks, _) in _ours.items():
                hooks.pop(key, None)
    return True


def unhide(counted: bool) -> None:
    """A compilation or compiled call that hid our hooks ended: the last one
    puts them back, each in its place among the program's own hooks."""
    if not counted:
        return
    global _hiding
    with _lock:
        _hiding -= 1
        if _hiding:
            return
        for key, (hooks, hook) in _ours.items():
            hooks[key] = hook
        for hooks, order in _orders:
            rank = {key: index for index, key in enumerate(order)}
            # Keys added meanwhile keep their order, after the old ones.
            for key in sorted(hooks, key=lambda k: rank.get(k, len(rank))):
                hooks.move_to_end(key)
        _orders.clear()
