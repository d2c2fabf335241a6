"""measure_flops and FlopCounter: operator FLOPs of a workload, counted in C++."""

from __future__ import annotations

import contextlib
import copy
import functools
from collections.abc import Callable, Mapping
from typing import Any

import torch
from torch.utils._pytree import tree_map

from torchscan_dispatch import _flex_attention, _recompute
from torchscan_dispatch._module_scopes import ModuleScopes
from torchscan_dispatch._native import MODULE_SCOPES, Measurement, has_formula
from torchscan_dispatch._threads import follow_threads, validate_threads
from torchscan_dispatch.distributed import rank_context

# The report's "formulas" field: what counted an operator that the built-in
# formula table did not.
CUSTOM_MAPPING = "custom_mapping"
REGISTER_FLOP_FORMULA = "register_flop_formula"

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


# Packet name -> whether the built-in table has a formula for it. The table
# is compiled in, so an answer never changes.
_builtin_formula: dict[str, bool] = {}


def _has_builtin_formula(name: str) -> bool:
    known = _builtin_formula.get(name)
    if known is None:
        known = _builtin_formula[name] = has_formula(name)
    return known


# NOTE [The registry read once per change]
# Every measurement reads the registry (a StepMeter: every step), and
# sorting its ~20 entries cost more than a small step's counting. The
# answer is kept with the registry's items it came from and reused while
# the registry holds the same keys and formulas (compared by identity) and
# no custom_mapping is given.
_registered_cache: tuple[list[Any], dict[str, Callable[..., Any]]] | None = None


@functools.cache
def _flop_counter() -> Any:
    """torch.utils.flop_counter, looked up once (NOTE [Looked up once per
    process] in _tally_pass.py); its registry is read from it every time."""
    from torch.utils import flop_counter

    return flop_counter


def _registered_formulas(custom: dict[str, Callable[..., Any]]) -> dict[str, Callable[..., Any]]:
    """The formulas of torch.utils.flop_counter.register_flop_formula for
    the operators that neither ``custom`` nor the built-in table counts, by
    packet name, as the registry holds them now (FlopCounterMode, too, reads
    it when a counter is made). Higher-order operators' entries (flex
    attention) are left out: the built-in table counts them."""
    global _registered_cache
    items = list(_flop_counter().flop_registry.items())
    cached = _registered_cache
    if not custom and cached is not None and cached[0] == items:
        return dict(cached[1])
    registered = {}
    for key, formula in items:
        name = _packet_name(key)
        if name is None or name in custom or _has_builtin_formula(name):
            continue
        registered[name] = formula
    if not custom:
        _registered_cache = (items, dict(registered))
    return registered


def _report_name(qualified: str) -> str:
    """'aten.sin' for 'aten::sin': the name reports give an operator."""
    return qualified.replace("::", ".", 1)


def _evaluate_registered(
    formula: Callable[..., Any], qualified: str, args: tuple, kwargs: dict, out: Any
) -> dict[str, Any]:
    """One call of a registered formula, as FlopCounterMode calls registry
    entries (raw values and ``out_val``; register_flop_formula wrapped the
    function to read shapes unless it asked for raw values).

    NOTE [A registered formula that fails]
    Unlike a custom_mapping formula (the caller's own, whose exception
    propagates, as in FlopCounterMode), a registered formula is process-wide
    state, often another library's, that the caller did not pass to this
    measurement: one that raises (also for a None standing for a value a
    compiled graph's description lacks) makes the total partial, with an
    operator_formula_error diagnostic naming the operator and the exception,
    instead of losing the whole measurement."""
    try:
        return {"flops": int(formula(*args, out_val=out, **kwargs))}
    except Exception as error:  # noqa: BLE001 - named in the report instead
        return {
            "error": f"the formula registered for {_report_name(qualified)} with "
            f"torch.utils.flop_counter.register_flop_formula raised "
            f"{type(error).__name__}: {error}"
        }


def _evaluate_deferred(
    measurement: Measurement, custom: dict[str, Callable], registered: dict[str, Callable]
) -> dict[str, str]:
    """Evaluates the deferred calls; returns the report's "formulas" field
    for them: {report name: CUSTOM_MAPPING or REGISTER_FLOP_FORMULA}."""
    results, sources = [], {}
    for qualified, overload, arguments, outputs in measurement.take_deferred_calls():
        args, kwargs = _dispatcher_args(qualified, overload, list(arguments))
        out = outputs[0] if len(outputs) == 1 else tuple(outputs)
        if qualified in custom:
            results.append({"flops": int(_evaluate(custom[qualified], args, kwargs, out))})
            sources[_report_name(qualified)] = CUSTOM_MAPPING
        else:
            results.append(_evaluate_registered(registered[qualified], qualified, args, kwargs, out))
            sources[_report_name(qualified)] = REGISTER_FLOP_FORMULA
    measurement.resolve_deferred(results)
    return dict(sorted(sources.items()))


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


def _finished_report(
    build: Callable[..., dict[str, Any]], held: Any, sources: dict[str, str], context: Any
) -> dict[str, Any]:
    """The FlopReport a counter gives: ``build()`` (``build(held)`` for a
    held report), with ``recomputed``, ``formulas`` and ``distributed``."""
    report = build() if held is None else build(held)
    _recompute.take_recomputed(report)
    if sources:
        report["formulas"] = sources
    if context is not None:
        report["distributed"] = context
    return report


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
    options (``threads`` included), formulas (``custom_mapping`` and the
    ``register_flop_formula`` registry, read at ``__enter__``) and report as
    ``measure_flops``. Counters nest: an inner
    counter's work also counts for the enclosing one. ``report()`` is
    available once the block has exited; an exception inside the block
    propagates unchanged and leaves no report.

    ``record_calls=True`` also keeps the per-call record that
    ``torchscan_dispatch.achieved`` joins with torch.profiler's events
    (``calls()``); off by default, when it costs nothing.

    ``elementwise=True`` counts elementwise work too, as ``measure_flops``
    does with it.
    """

    def __init__(
        self,
        *,
        custom_mapping: Mapping[Any, Callable[..., Any]] | None = None,
        track_modules: bool = True,
        threads: str = "report",
        record_calls: bool = False,
        elementwise: bool = False,
    ) -> None:
        self._formulas = _validate_options(custom_mapping, track_modules)
        if not isinstance(record_calls, bool):
            raise TypeError(f"record_calls must be a bool, got {type(record_calls).__name__}.")
        if not isinstance(elementwise, bool):
            raise TypeError(f"elementwise must be a bool, got {type(elementwise).__name__}.")
        self._record_calls = record_calls
        self._elementwise = elementwise
        self._calls: dict[str, Any] | None = None
        self._track_modules = track_modules
        self._threads = validate_threads(threads)
        self._registered: dict[str, Callable[..., Any]] = {}
        self._measurement: Measurement | None = None
        self._scopes: Any = None
        self._module_scopes: ModuleScopes | None = None
        self._report: dict[str, Any] | None = None
        # StepMeter's counters (NOTE [What a step reads of its report]):
        # __exit__ keeps the summary and a function building the full report.
        self._summary_only = False
        self._summary: tuple[dict[str, Any], Callable[[], dict[str, Any]]] | None = None

    def __enter__(self) -> FlopCounter:
        if self._measurement is not None:
            raise RuntimeError("this FlopCounter is already counting")
        self._report = self._calls = self._summary = None
        self._registered = _registered_formulas(self._formulas)
        measurement = Measurement(
            deferred_packets=[*self._formulas, *self._registered],
            record_calls=self._record_calls,
            elementwise=self._elementwise,
        )
        module_scopes = ModuleScopes(measurement) if self._track_modules else None
        scopes = module_scopes if module_scopes is not None else contextlib.nullcontext()
        if self._threads == "follow":
            scopes = _FollowingScopes(scopes, follow_threads(measurement.handle))
        try:
            scopes.__enter__()
            try:
                _recompute.opened(measurement, module_scopes)
                try:
                    _flex_attention.opened(measurement)
                except BaseException:
                    _recompute.closed(measurement)
                    raise
            except BaseException:
                scopes.__exit__(None, None, None)
                raise
        except BaseException:
            measurement.stop()
            measurement.finish()
            raise
        self._measurement, self._scopes, self._module_scopes = measurement, scopes, module_scopes
        return self

    def __exit__(self, exc_type: Any, exc: Any, traceback: Any) -> None:
        measurement, scopes = self._measurement, self._scopes
        self._measurement = self._scopes = self._module_scopes = None
        if measurement is None:
            return
        try:
            try:
                try:
                    try:
                        _flex_attention.closed(measurement)
                    finally:
                        _recompute.closed(measurement)
                finally:
                    scopes.__exit__(exc_type, exc, traceback)
            finally:
                measurement.stop()
            if exc_type is None:
                sources = {}
                if self._formulas or self._registered:
                    sources = _evaluate_deferred(measurement, self._formulas, self._registered)
                context = rank_context()
                if self._summary_only:
                    summary, held = measurement.step_report()
                    _recompute.take_recomputed(summary)
                    self._summary = (
                        summary,
                        functools.partial(_finished_report, measurement.held_report, held, sources, context),
                    )
                else:
                    self._report = _finished_report(measurement.flop_report, None, sources, context)
                if self._record_calls:
                    self._calls = measurement.call_log()
        finally:
            measurement.finish()

    def report(self) -> dict[str, Any]:
        """The FlopReport of the ``with`` block (a fresh copy each call)."""
        if self._report is None:
            raise RuntimeError(
                "no report: the counter's with-block has not finished (or raised)"
            )
        return copy.deepcopy(self._report)

    def calls(self) -> dict[str, Any]:
        """The per-call record of the ``with`` block (``record_calls=True``):
        every recorded call in order, as ``Measurement.call_log`` gives it."""
        if not self._record_calls:
            raise RuntimeError("no per-call record: this FlopCounter has record_calls=False")
        if self._calls is None:
            raise RuntimeError(
                "no per-call record: the counter's with-block has not finished (or raised)"
            )
        return copy.deepcopy(self._calls)

    def _take_summary(self) -> tuple[dict[str, Any], Callable[[], dict[str, Any]]]:
        """For a counter made with ``_summary_only``: what StepMeter reads
        of the report (``Measurement.step_report``'s summary, ``recomputed``
        taken out of by_module) and a function that builds the full report,
        equal to the one ``report()`` gives without ``_summary_only``, handed
        over (no copy: StepMeter's counter is seen by nobody else)."""
        summary = self._summary
        if summary is None:
            raise RuntimeError("no report: the counter's with-block has not finished (or raised)")
        self._summary = None
        return summary

    def _change_label(self, label: str, present: bool) -> None:
        """Adds ``label`` to (``present``) or removes it from the scope of the
        open measurement: StepMeter's phases. With module tracking, through
        the tracker (NOTE [The label and module tracking] in _recompute.py)."""
        measurement = self._measurement
        if measurement is None:
            raise RuntimeError("phase() is only valid inside its step's with-block")
        if self._module_scopes is not None:
            self._module_scopes._change(label, present)
        else:
            measurement.change_scope_label(MODULE_SCOPES, label, present)

    def get_total_flops(self) -> int:
        """The known total FLOPs, as FlopCounterMode.get_total_flops() names it
        (a lower bound when the report's total is partial)."""
        total = self.report()["total"]
        value = total.get("value")
        return int(value if value is not None else total.get("known_value") or 0)


    def get_total_bytes(self) -> int:
        """The known bytes moved, read plus written (the report's ``bytes``;
        a lower bound when its status is partial)."""
        moved = self.report().get("bytes")
        return 0 if moved is None else int(moved["read"]) + int(moved["written"])


def measure_flops(
    workload: Callable[[], Any],
    *,
    modules: Any = None,
    custom_mapping: Mapping[Any, Callable[..., Any]] | None = None,
    track_modules: bool = True,
    threads: str = "report",
    elementwise: bool = False,
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
    the workload, so tensor operators inside them are never counted; an
    exception a formula raises propagates out of ``measure_flops`` (as in
    FlopCounterMode). They apply inside torch.compile'd code too, where the
    values are rebuilt from the compiled graph's description: meta tensors
    of the run's shapes and the graph's dtypes (contiguous), and ``None`` for
    a value the description does not hold (a string, a device, a tensor of
    unknown shape). A custom formula wins over a built-in one.

    Formulas registered with ``torch.utils.flop_counter.register_flop_formula``
    count the operators that the built-in table does not (custom operators
    of ``torch.library``, say), eagerly and compiled, as FlopCounterMode
    calls them; the registry is read when the measurement starts. The
    built-in formula wins over a registered one, and ``custom_mapping`` over
    both. A registered formula that raises makes the total partial with an
    ``operator_formula_error`` diagnostic naming the operator.

    The report's ``formulas`` member (present only when one applied) names
    each operator that such a formula counted, and which:
    ``{"aten.sin": "custom_mapping", "mylib.scaled_sum":
    "register_flop_formula"}``; every other operator was counted by the
    built-in table.

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

    ``elementwise=True`` opts into the elementwise convention
    (docs/methodology.md, "Elementwise work"): operators FlopCounterMode
    does not count and that are not ignored are counted by fixed rules where
    one applies (1 FLOP per result element of a pointwise operator, 1 per
    input element of a reduction, 5 per element for softmax, 7 for a
    normalisation, ...), and the report's method says so. A formula always
    wins; an operator with neither stays named and the total ``partial``.
    Off by default: the report is then FlopCounterMode's method exactly.

    Collectives (c10d and functional collectives) are reported under
    ``communication``; inside a process group the report carries this rank's
    ``distributed`` context (docs/distributed.md).

    Exceptions raised by the workload propagate unchanged; counting and
    module tracking are switched off again either way.
    """
    if not callable(workload):
        raise TypeError(f"workload must be callable, got {type(workload).__name__}.")
    counter = FlopCounter(
        custom_mapping=custom_mapping,
        track_modules=track_modules,
        threads=threads,
        elementwise=elementwise,
    )
    with counter:
        workload()
    assert counter._report is not None
    return counter._report
