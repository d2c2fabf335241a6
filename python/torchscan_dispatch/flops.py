"""measure_flops and FlopCounter: operator FLOPs of a workload, counted in C++."""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable, Mapping
from typing import Any

import torch
from torch.utils._pytree import tree_map

from torchscan_dispatch._module_scopes import ModuleScopes
from torchscan_dispatch._native import Measurement
from torchscan_dispatch._threads import follow_threads, validate_threads
from torchscan_dispatch.distributed import rank_context

_OVERLOAD_KEY_ERROR = (
    "custom_mapping keys must be operator packets such as torch.ops.aten.sin, "
    "not overloads such as torch.ops.aten.sin.default."
)


def _packet_name(key: Any) -> str | None:
    """'aten::sin' for torch.ops.aten.sin; None for keys that name no operator."""
    name = getattr(key, "_qualified_op_name", None)
    return name if isinstance(name, str) else None


def _validate_custom_mapping(custom_mapping: Mapping[Any, Any] | None) -> dict[Any, Any]:
    mapping = dict(custom_mapping or {})
    for key in mapping:
        packet = getattr(key, "_overloadpacket", None)
        if packet is not None and packet is not key:
            raise TypeError(_OVERLOAD_KEY_ERROR)
    return mapping


def _dispatcher_args(qualified: str, overload: str, values: list[Any]):
    """Splits schema-ordered values into (args, kwargs) the way PyTorch's
    Python dispatch presents them: keyword-only arguments as kwargs, and
    arguments equal to their defaults left out."""
    namespace, name = qualified.split("::", 1)
    packet = getattr(getattr(torch.ops, namespace), name)
    schema = getattr(packet, overload or "default")._schema

    def is_default(argument, value) -> bool:
        if not argument.has_default_value() or isinstance(value, torch.Tensor):
            return False
        try:
            return bool(argument.default_value == value)
        except Exception:  # noqa: BLE001 - incomparable values are not defaults
            return False

    positional, kwargs = [], {}
    for argument, value in zip(schema.arguments, values, strict=True):
        if argument.kwarg_only:
            if not is_default(argument, value):
                kwargs[argument.name] = value
        else:
            positional.append((argument, value))
    while positional and is_default(*positional[-1]):
        positional.pop()
    return tuple(value for _, value in positional), kwargs


def _shape(value: Any) -> Any:
    return value.shape if isinstance(value, torch.Tensor) else value


def _evaluate(formula: Callable[..., Any], args: tuple, kwargs: dict, out: Any) -> Any:
    if getattr(formula, "_get_raw", False):
        return formula(*args, out_val=out, **kwargs)
    args, kwargs, out_shape = tree_map(_shape, (args, kwargs, out))
    return formula(*args, out_shape=out_shape, **kwargs)


def _evaluate_deferred(measurement: Measurement, formulas: dict[str, Callable]) -> None:
    results = []
    for qualified, overload, arguments, outputs in measurement.take_deferred_calls():
        args, kwargs = _dispatcher_args(qualified, overload, list(arguments))
        out = outputs[0] if len(outputs) == 1 else tuple(outputs)
        flops = _evaluate(formulas[qualified], args, kwargs, out)
        results.append({"flops": int(flops)})
    measurement.resolve_deferred(results)


def _validate_options(custom_mapping: Any, track_modules: Any) -> dict[str, Callable[..., Any]]:
    if not isinstance(track_modules, bool):
        raise TypeError(f"track_modules must be a bool, got {type(track_modules).__name__}.")
    mapping = _validate_custom_mapping(custom_mapping)
    formulas = {}
    for key, formula in mapping.items():
        name = _packet_name(key)
        if name is not None:
            formulas[name] = formula
    return formulas


class _FollowingScopes:
    """Module scopes and thread following, entered and exited as one."""

    def __init__(self, scopes: Any, following: Any) -> None:
        self._stack = contextlib.ExitStack()
        self._scopes, self._following = scopes, following

    def __enter__(self) -> None:
        with contextlib.ExitStack() as stack:
            stack.enter_context(self._scopes)
            stack.enter_context(self._following)
            self._stack = stack.pop_all()

    def __exit__(self, *exc_info: Any) -> Any:
        return self._stack.__exit__(*exc_info)


class FlopCounter:
    """The context-manager form of ``measure_flops`` (what FlopCounterMode
    users reach for), and Python's ``torchscan::FlopCountingGuard``::

        with torchscan_dispatch.FlopCounter() as counter:
            model(x).sum().backward()
        report = counter.report()

    Everything the calling thread runs inside the ``with`` block (and the
    backward pass the autograd engine runs for it) is counted, with the same
    options (``threads`` included) and report as ``measure_flops``. Counters nest: an inner
    counter's work also counts for the enclosing one. ``report()`` is
    available once the block has exited; an exception inside the block
    propagates unchanged and leaves no report.
    """

    def __init__(
        self,
        *,
        custom_mapping: Mapping[Any, Callable[..., Any]] | None = None,
        track_modules: bool = True,
        threads: str = "report",
    ) -> None:
        self._formulas = _validate_options(custom_mapping, track_modules)
        self._track_modules = track_modules
        self._threads = validate_threads(threads)
        self._measurement: Measurement | None = None
        self._scopes: Any = None
        self._report: dict[str, Any] | None = None

    def __enter__(self) -> FlopCounter:
        if self._measurement is not None:
            raise RuntimeError("this FlopCounter is already counting")
        self._report = None
        measurement = Measurement(deferred_packets=list(self._formulas))
        scopes = ModuleScopes(measurement) if self._track_modules else contextlib.nullcontext()
        if self._threads == "follow":
            scopes = _FollowingScopes(scopes, follow_threads(measurement.handle))
        try:
            scopes.__enter__()
        except BaseException:
            measurement.stop()
            measurement.finish()
            raise
        self._measurement, self._scopes = measurement, scopes
        return self

    def __exit__(self, exc_type: Any, exc: Any, traceback: Any) -> None:
        measurement, scopes = self._measurement, self._scopes
        self._measurement = self._scopes = None
        if measurement is None:
            return
        try:
            try:
                scopes.__exit__(exc_type, exc, traceback)
            finally:
                measurement.stop()
            if exc_type is None:
                if self._formulas:
                    _evaluate_deferred(measurement, self._formulas)
                report = measurement.flop_report()
                context = rank_context()
                if context is not None:
                    report["distributed"] = context
                self._report = report
        finally:
            measurement.finish()

    def report(self) -> dict[str, Any]:
        """The FlopReport of the ``with`` block (a fresh copy each call)."""
        if self._report is None:
            raise RuntimeError(
                "no report: the counter's with-block has not finished (or raised)"
            )
        return copy.deepcopy(self._report)

    def get_total_flops(self) -> int:
        """The known total FLOPs, as FlopCounterMode.get_total_flops() names it
        (a lower bound when the report's total is partial)."""
        total = self.report()["total"]
        value = total.get("value")
        return int(value if value is not None else total.get("known_value") or 0)


def measure_flops(
    workload: Callable[[], Any],
    *,
    modules: Any = None,
    custom_mapping: Mapping[Any, Callable[..., Any]] | None = None,
    track_modules: bool = True,
    threads: str = "report",
) -> dict[str, Any]:
    """Calls ``workload()`` exactly once and returns its FlopReport.

    Every ATen operator the calling thread runs during the call (and the
    backward pass the autograd engine runs for it) is counted in C++, with
    FlopCounterMode's conventions. ``by_module`` attributes FLOPs to every
    module that ran, with FlopCounterMode's labels (``modules`` is accepted
    for compatibility and not needed: tracking is automatic).

    ``custom_mapping`` maps operator packets (``torch.ops.aten.sin``) to
    formulas with FlopCounterMode's contract: called with the operator's
    arguments, tensors replaced by their shapes, and ``out_shape``; a
    callable with a truthy ``_get_raw`` attribute gets the arguments as meta
    tensors of the same shapes and dtypes, and ``out_val``. Formulas run after
    the workload, so tensor operators inside them are never counted.

    ``track_modules=False`` skips the module hooks that ``by_module`` needs
    (it is then ``{}``; totals, ``by_operator`` and diagnostics are
    unchanged): every module call then runs PyTorch's hook-free fast path,
    which is what makes the counter cheap enough to leave on in a training
    loop (docs/performance.md).

    ``threads`` says what happens to operators other threads run meanwhile.
    ``"report"`` (the default): they are not counted, and any that carry
    FLOPs (or have no formula; views and other ignored operators do not
    count) make the total ``partial`` with an ``unseen_work`` diagnostic
    naming the thread and the operator; threads with a measurement of their
    own, and the autograd engine's threads, are not other threads.
    ``"follow"``: threads the workload starts (``threading.Thread``) and
    tasks it submits to a ``concurrent.futures.ThreadPoolExecutor`` (also
    one created before the measurement) are counted into this measurement
    (docs/design.md, "Threads and the autograd engine").

    Collectives (c10d and functional collectives) are reported under
    ``communication``; inside a process group the report carries this rank's
    ``distributed`` context (docs/distributed.md).

    Exceptions raised by the workload propagate unchanged; counting and
    module tracking are switched off again either way.
    """
    if not callable(workload):
        raise TypeError(f"workload must be callable, got {type(workload).__name__}.")
    counter = FlopCounter(
        custom_mapping=custom_mapping, track_modules=track_modules, threads=threads
    )
    with counter:
        workload()
    assert counter._report is not None
    return counter._report
