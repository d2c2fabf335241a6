"""Thin wrappers over the extension module's counting functions
(python/operators/counting_functions.h) and measurement functions
(measurement_functions.h), and the one control operator that stays an
operator, _take_deferred_calls (NOTE [Deferred calls cross as IValues] in
python/operators/counting_ops.cc)."""

from __future__ import annotations

from typing import Any

import torch

from torchscan_dispatch import _compiler_integration
from torchscan_dispatch._library import hooks, load_library

MODULE_SCOPES = 0
LAYER_CALL_SCOPES = 1


def _ops():
    load_library()
    return torch.ops.torchscan


class Measurement:
    """One native counting session, driven by handle.

    ``begin`` switches counting on for the calling thread; ``stop`` switches
    it off and restores the thread's state; the session stays readable until
    ``finish``.
    """

    def __init__(
        self,
        deferred_packets: list[str] | None = None,
        *,
        record_calls: bool = False,
        elementwise: bool = False,
    ) -> None:
        options: dict[str, Any] = {"deferred_packets": deferred_packets or []}
        if record_calls:
            options["record_calls"] = True
        if elementwise:
            options["elementwise"] = True
        self._native = native = hooks()
        _compiler_integration.begin_measurement()
        try:
            self.handle = native.begin_counting(options)
        except BaseException:
            _compiler_integration.end_measurement()
            raise
        self._counting = True
        self._finished = False

    def enter_layer(self, layer: int, module_label: str) -> None:
        self._native.enter_layer(self.handle, layer, module_label)

    def exit_layer(self, layer: int, module_label: str) -> None:
        self._native.exit_layer(self.handle, layer, module_label)

    def change_scope_label(self, channel: int, label: str, present: bool) -> None:
        """Adds ``label`` to (``present``) or removes it from the scope of
        ``channel`` (MODULE_SCOPES, LAYER_CALL_SCOPES)."""
        self._native.change_scope_label(self.handle, channel, label, present)

    def stop(self) -> None:
        try:
            self._native.stop_counting(self.handle)
        finally:
            self._end_measurement()

    def _end_measurement(self) -> None:
        if self._counting:
            self._counting = False
            _compiler_integration.end_measurement()

    def take_deferred_calls(self) -> list[tuple[str, str, list[Any], list[Any]]]:
        return list(_ops()._take_deferred_calls(self.handle))

    def resolve_deferred(self, results: list[dict[str, Any]]) -> None:
        """The FLOPs of the calls take_deferred_calls gave, in order:
        {"flops": int} or {"error": str} each."""
        self._native.resolve_deferred(self.handle, results)

    def end_gradient_watches(self) -> None:
        """Ends the measurement's native gradient watches (module tracking)."""
        self._native.end_gradient_watches(self.handle)

    def flop_report(self) -> dict[str, Any]:
        return self._native.flop_report(self.handle)

    def step_report(self) -> tuple[dict[str, Any], Any]:
        """What StepMeter reads of ``flop_report()`` (its members but
        by_operator, by_operator_precision, ignored_operators, diagnostics and
        the bytes' per-operator counts and diagnostics, each equal to
        flop_report's), and the built report, held for ``held_report`` (valid
        after ``finish``)."""
        return self._native.step_report(self.handle)

    def held_report(self, held: Any) -> dict[str, Any]:
        """The full report ``step_report`` held: ``flop_report()`` as it was
        when ``step_report`` was called."""
        return self._native.held_report(held)

    def call_log(self) -> dict[str, Any]:
        """The per-call record (only with ``record_calls``): {"calls": [[
        record_function, thread, operator, kind, flops, bytes_read,
        bytes_written, bytes_known, module_scope, seen_instead], ...],
        "module_scopes": {"<id>": [labels]}} (torchscan_dispatch/call_log.h)."""
        return self._native.call_log(self.handle)

    def finish(self) -> None:
        if not self._finished:
            self._finished = True
            try:
                self._native.finish_counting(self.handle)
            finally:
                self._end_measurement()


def join_counting(handle: int) -> int:
    """The calling thread counts into measurement ``handle`` until
    ``leave_counting`` of the returned token (on this thread)."""
    return hooks().join_counting(handle)


def leave_counting(token: int) -> None:
    hooks().leave_counting(token)


def unseen_thread_watches() -> int:
    """How many measurements watch for unseen threads (0: nothing installed)."""
    return hooks().unseen_thread_watches()


def has_formula(packet: str) -> bool:
    """Whether the built-in formula table counts ``packet`` ("aten::mm")."""
    return hooks().has_formula(packet)
