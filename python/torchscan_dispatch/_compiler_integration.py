"""torch.compile: exact counts for compiled code, never for compilation.

docs/design.md ("torch.compile") explains the design; in short, three pieces
are installed once per process, as soon as torch._dynamo is imported (before
anything can be compiled) or when this package is imported after it:

1. Compiled calls hide the counting key (_compiled_calls.py): Dynamo's
   guards and compilation never see it, and the eager code inside a
   measured compiled call is a hidden region.
2. Each compiled graph carries its tally (_tally_pass.py, describing the
   graph in the spec of _graph_spec.py): an Inductor post-grad pass puts a
   call into the graph that records its operators whenever it runs.
3. Compilation is never counted (_compilation_marks.py), and our own Python
   code is never compiled.

This module is the switch: it installs the pieces, takes them out, and is
the escape hatch that keeps the library out of the compiler.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import os
import sys
import threading

import torch
from torch.nn.modules import module as _nn_module

from torchscan_dispatch import _compilation_marks, _compiled_calls, _global_hooks, _tally_pass
from torchscan_dispatch._compiler_patches import patch, unpatch_all
from torchscan_dispatch._library import load_library

# Reentrant: importing Dynamo under it runs install() (the import hook).
_lock = threading.RLock()
_installed = False

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
    _compiled_calls.hide_key_from_compiled_calls()
    _compiled_calls.wrap_compiled_graphs(integration_enabled)
    _compiled_calls.wrap_cuda_graph_replay()
    _compiled_calls.wrap_aot_compiled_models()
    _compilation_marks.mark_compilation()
    _compilation_marks.watch_hook_guards()
    # NOTE [The compiled-module warning] in _global_hooks.py.
    patch(_nn_module, "_has_any_global_hook", _global_hooks.leaving_ours_out(_nn_module._has_any_global_hook))
    _compilation_marks.mark_never_compiled()


def install() -> None:
    """Installs the three pieces (idempotent). Needs torch._dynamo imported.
    With the integration off, installs nothing."""
    global _installed
    with _lock:
        if not _enabled:
            return
        _tally_pass.ensure_tally_pass()
        if _installed:
            # torch._dynamo.reset() forgets code strategies.
            _compilation_marks.mark_never_compiled()
            return
        _install_patches()
        _installed = True
        _compilation_marks.mark_at_once(True)


def _uninstall() -> None:
    global _installed
    _tally_pass.remove_tally_pass()
    unpatch_all()
    _installed = False
    _compilation_marks.mark_at_once(False)


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
