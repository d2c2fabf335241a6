"""What is compilation and what is never compiled.

Compilation is never counted: Dynamo's compilation-callback context (also
entered for lazy backward compilation) marks the thread as compiling for as
long as it is open. And our own Python code is never compiled: the functions
given to never_compile run as plain Python inside compiled calls.
"""

from __future__ import annotations

import contextlib
import functools
from typing import Any

from torchscan_dispatch import _global_hooks
from torchscan_dispatch._compiler_patches import patch
from torchscan_dispatch._library import compiled_region_calls

# ---------------------------------------------------------------------------
# Compilation is never counted.


def mark_compilation() -> None:
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

    patch(callback_handler, "install_callbacks", install_callbacks)


def _guards_hook_dicts(output_graph: Any, suffixes: tuple[str, ...]) -> bool:
    """Whether a frame's guards read more than the type of a hook dict; True
    when they cannot be read (this must never fail a compilation)."""
    try:
        return any(
            guard.name.endswith(suffixes) and guard.create_fn_name() != "TYPE_MATCH"
            for guard in getattr(output_graph, "guards", None) or ()
        )
    except Exception:  # noqa: BLE001 - an unknown guard: assume the worst
        return True


def watch_hook_guards() -> None:
    """Notes (_global_hooks.note_hook_dicts_guarded) every compiled frame
    whose guards read more than the type of a global hook dict our hooks
    live in. Frames compiled before this is installed count as guarded.
    NOTE [Global hooks and Dynamo's guards] in _global_hooks.py."""
    import torch._dynamo.guards as guards
    from torch._dynamo.utils import counters

    if counters["frames"]["total"]:
        _global_hooks.note_hook_dicts_guarded()
    original = guards.CheckFunctionManager.__init__
    suffixes = tuple("." + name for name in _global_hooks.HOOK_DICTS)

    @functools.wraps(original)
    def __init__(self, code, output_graph, *args, **kwargs):
        original(self, code, output_graph, *args, **kwargs)
        if not _global_hooks.hook_dicts_guarded() and _guards_hook_dicts(output_graph, suffixes):
            _global_hooks.note_hook_dicts_guarded()

    patch(guards.CheckFunctionManager, "__init__", __init__)


# ---------------------------------------------------------------------------
# Our own Python code is never compiled.

# NOTE [Frames Dynamo must not compile]
# Inside a compiled call, every Python frame that starts (while the frame
# that calls it runs eagerly: a graph break, a skipped frame) goes to Dynamo
# to be compiled, our own module hooks and the compiled-call guard's methods
# (_compiled_calls.py) included. Compiled, a hook would be traced with
# torch.compiler.is_compiling() true (empty), and a frame that calls the
# library's functions (C functions Dynamo cannot trace) would be compiled,
# fail and run anyway. They are marked to run as plain
# Python, with everything they call. This does not stop Dynamo from inlining
# a hook into a module call it traces (there the hook is traced as empty, so
# no graph break).
_never_compiled: list[Any] = []
# Whether never_compile marks a function at once: while the integration is
# installed (_compiler_integration.py).
_mark_at_once = False


def never_compile(function: Any) -> Any:
    """Marks `function` (and what it calls) to run uncompiled inside
    compiled calls; returns it. Effective once Dynamo is imported."""
    _never_compiled.append(function)
    if _mark_at_once:
        _mark([function])
    return function


def mark_never_compiled() -> None:
    """Marks every function given to never_compile so far (again after
    torch._dynamo.reset(), which forgets code strategies). Needs Dynamo."""
    _mark(_never_compiled)


def mark_at_once(enabled: bool) -> None:
    """Whether never_compile marks the functions given to it from now on at
    once (else only at the next mark_never_compiled)."""
    global _mark_at_once
    _mark_at_once = enabled


@functools.cache
def _skip_strategy() -> tuple[Any, Any]:
    """Dynamo's set_code_exec_strategy and the strategy that skips a frame
    and what it calls, looked up once (mark_never_compiled runs at the
    start of every measurement: NOTE [Looked up once per process] in
    _tally_pass.py)."""
    from torch._C._dynamo.eval_frame import set_code_exec_strategy
    from torch._dynamo.types import FrameAction, FrameExecStrategy

    return set_code_exec_strategy, FrameExecStrategy(FrameAction.SKIP, FrameAction.SKIP)


def _mark(functions: list[Any]) -> None:
    set_code_exec_strategy, skip = _skip_strategy()
    for function in functions:
        code = getattr(getattr(function, "__func__", function), "__code__", None)
        if code is not None:
            set_code_exec_strategy(code, skip)
