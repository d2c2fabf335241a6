"""crawl_module and summary: TorchScan 0.2's analysis at native speed.

Python does only what must be Python: it walks the module tree, installs
and removes the forward hooks, reads each module's signature, tensors and
hyper-parameters once, and calls the model. The hooks' bodies are native
(CrawlRecorder, python/operators/crawl_recorder.cc): every layer call is
recorded as a typed layer record from the moment it is seen, operator FLOPs
are counted in C++ during the same forward call, the module formulas run on
the recorded shapes, and the report is assembled by the C++ report library
and becomes Python data once, at the end.
"""

from __future__ import annotations

import inspect
import json
import platform
import weakref
from collections.abc import Callable, Iterable, Mapping
from contextlib import suppress
from types import MethodType
from typing import Any, Literal

import torch
from torch import nn
from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook

from torchscan_dispatch._crawl_support import crawl_context, module_totals, prepare_inputs
from torchscan_dispatch._describe import describe_module
from torchscan_dispatch._forward_hooks import ForwardHooks
from torchscan_dispatch._library import hooks, load_library
from torchscan_dispatch._native import Measurement
from torchscan_dispatch.exported import crawl_exported_program
from torchscan_dispatch.report import IncompleteAnalysisError

__all__ = ["crawl_module", "summary"]


def _ordered_inputs(signature: inspect.Signature | None, args: tuple, kwargs: Mapping[str, Any]) -> tuple:
    """The call's arguments in forward-signature order (TorchScan 0.2's argument ordering for formulas)."""
    if signature is None:
        return (*args, *kwargs.values())
    if (
        not kwargs
        and len(args) == len(signature.parameters)
        and all(
            p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
            for p in signature.parameters.values()
        )
    ):
        return args
    try:
        bound = signature.bind_partial(*args, **kwargs)
        bound.apply_defaults()
    except (TypeError, ValueError):
        return (*args, *kwargs.values())
    ordered: list[Any] = []
    for name, parameter in signature.parameters.items():
        if name not in bound.arguments:
            continue
        value = bound.arguments[name]
        if parameter.kind is inspect.Parameter.VAR_POSITIONAL:
            ordered.extend(value)
        else:
            ordered.append(value)
    return tuple(ordered)




# Signature shapes for CrawlRecorder.register (python/operators/crawl_recorder.cc).
_NO_SIGNATURE = -2  # the formulas get args, then kwargs' values
_BINDS_BY_NAME = -1  # _ordered_inputs binds each call


def _arity(signature: inspect.Signature | None) -> int:
    """How the native recorder orders a call's inputs: by position when the
    signature takes exactly that many positional parameters (and the call
    passes no kwargs), else through _ordered_inputs."""
    if signature is None:
        return _NO_SIGNATURE
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if all(p.kind in positional for p in signature.parameters.values()):
        return len(signature.parameters)
    return _BINDS_BY_NAME


# A forward function's signature and arity, kept while the function lives:
# a training loop crawls the same classes again and again, and
# inspect.signature costs about 15 us per class.
_SIGNATURES: weakref.WeakKeyDictionary[Callable[..., Any], tuple[inspect.Signature | None, int]] = (
    weakref.WeakKeyDictionary()
)


def _signature_and_arity(module: nn.Module) -> tuple[inspect.Signature | None, int]:
    forward = module.forward
    key = forward.__func__ if isinstance(forward, MethodType) else None
    if key is not None:
        try:
            known = _SIGNATURES.get(key)
        except TypeError:  # a function that takes no weak references
            key = known = None
        if known is not None:
            return known
    signature = None
    with suppress(TypeError, ValueError):
        signature = inspect.signature(forward)
    known = (signature, _arity(signature))
    if key is not None:
        with suppress(TypeError):
            _SIGNATURES[key] = known
    return known


def _restore_training(flags: list[tuple[nn.Module, bool]]) -> None:
    """Gives every module its training flag back.

    ``Module.__setattr__`` looks a name up in the parameter, module and
    buffer dicts before it stores a plain attribute; ``training`` can be
    none of those (registering one under an existing attribute's name is
    refused), so where the class keeps that method the flag is stored
    directly: about 3 us less per module, with the caches a forward leaves
    cold. A flag that did not change is not written.
    """
    for child, training in flags:
        if child.training is training:
            continue
        if type(child).__setattr__ is nn.Module.__setattr__:
            object.__setattr__(child, "training", training)
        else:
            child.training = training


class _Crawl:
    """The hooks of one crawl; their bodies record natively."""

    def __init__(self, root: nn.Module, mode: str, measurement: Measurement | None) -> None:
        self.root = root
        self.full = mode == "full"
        self.recorder = hooks().CrawlRecorder(
            -1 if measurement is None else measurement.handle,
            describe_module,
            _ordered_inputs,
        )
        # The layer hooks (NOTE [Hooks written into the module's dicts]) and
        # the global ones of register_scope_only.
        self.hooks = ForwardHooks()
        self.handles: list[Any] = []
        # FlopCounterMode's module labels: the root's class name, then the
        # attribute path ("Net", "Net.blocks.0").
        self._root_label = type(root).__name__

    def is_metric_leaf(self, module: nn.Module) -> bool:
        return (
            not any(module.children())
            or isinstance(module, nn.MultiheadAttention)
            or (module is self.root and isinstance(module, nn.Transformer))
        )

    def module_label(self, path: str) -> str:
        return f"{self._root_label}.{path}" if path else self._root_label

    def register_scope_only(self, modules: dict[int, str]) -> None:
        """Attributes operators to modules that get no layer record (the
        internals of an nn.Transformer root), for ``by_module``. Global hooks,
        as FlopCounterMode's tracker uses: per-module hooks would turn off the
        Transformer's fused inference path."""
        if not self.full or not modules:
            return
        labels = {key: self.module_label(path) for key, path in modules.items()}
        scope = self.recorder.scope

        def pre_hook(module, args):
            label = labels.get(id(module))
            if label is not None:
                scope(label, True)

        def post_hook(module, args, output):
            label = labels.get(id(module))
            if label is not None:
                scope(label, False)

        self.handles.append(register_module_forward_pre_hook(pre_hook))
        self.handles.append(register_module_forward_hook(post_hook))

    def register(self, module: nn.Module, path: str) -> None:
        metric_leaf = self.is_metric_leaf(module)
        signature, arity = _signature_and_arity(module) if metric_leaf and self.full else (None, _NO_SIGNATURE)
        recurse = isinstance(module, nn.MultiheadAttention) or (
            module is self.root and isinstance(module, nn.Transformer)
        )
        self.recorder.register(
            module, path, self.module_label(path), metric_leaf, recurse, signature, arity
        )
        self.hooks.add(module, self.recorder.pre_hook, self.recorder.post_hook)

    def remove_hooks(self) -> None:
        self.hooks.remove_all()
        for handle in self.handles:
            handle.remove()


def crawl_module(
    module: nn.Module | torch.export.ExportedProgram,
    input_shape: list[tuple[int, ...]] | tuple[int, ...] | None = None,
    dtype: torch.dtype | Iterable[torch.dtype] | None = None,
    *,
    args: tuple[Any, ...] | None = None,
    kwargs: Mapping[str, Any] | None = None,
    device: str | torch.device | None = None,
    strict: bool = False,
    mode: Literal["full", "structure"] = "full",
) -> dict[str, Any]:
    """Analyses one forward call of ``module`` and returns the AnalysisReport.

    The same contract as TorchScan 0.2's ``crawl_module``: evaluation mode and
    no gradients during the call, every module's training flag restored and
    every hook removed even when the forward raises (the exception reaches the
    caller unchanged), shared modules and parameters counted once, input
    metadata only. ``mode="structure"`` skips operator dispatch and module
    formulas. ``strict=True`` raises IncompleteAnalysisError (carrying the
    report) when anything requested is incomplete.

    Beyond TorchScan 0.2, ``layer_operator_flops`` gives every layer call its
    own operator FLOPs, measured during the same call, and ``module`` may
    also be a TorchScript module (``torch.jit.script``, ``torch.jit.trace``,
    ``torch.jit.load``: analysed by the C++ TorchScript front end, its
    inputs passed positionally) or a ``torch.export.ExportedProgram`` (see
    ``torchscan_dispatch.exported``; ``input_shape`` may then be omitted to
    use the shapes it was exported with).
    """
    if mode not in ("full", "structure"):
        raise ValueError("mode must be 'full' or 'structure'.")
    if isinstance(module, torch.export.ExportedProgram):
        return crawl_exported_program(
            module, input_shape, dtype, args=args, kwargs=kwargs, device=device, strict=strict, mode=mode
        )
    call_args, call_kwargs, input_metadata = prepare_inputs(module, input_shape, dtype, args, kwargs, device)
    load_library()
    if isinstance(module, torch.jit.ScriptModule):
        return _crawl_script_module(module, call_args, call_kwargs, input_metadata, strict, mode)
    named = list(module.named_modules())
    training_flags = [(child, child.training) for _, child in named]
    targets = [("", module)] if isinstance(module, nn.Transformer) else named
    measurement = Measurement() if mode == "full" else None
    crawl = _Crawl(module, mode, measurement)
    try:
        try:
            module.eval()
            for path, current in targets:
                crawl.register(current, path)
            if isinstance(module, nn.Transformer):
                crawl.register_scope_only({id(m): path for path, m in named if path})
            with torch.no_grad():
                if measurement is None:
                    module(*call_args, **call_kwargs)
                else:
                    try:
                        module(*call_args, **call_kwargs)
                    finally:
                        measurement.stop()
        finally:
            crawl.remove_hooks()
            _restore_training(training_flags)

        totals, devices, dtypes = module_totals(module, list(module.modules()))
        context = crawl_context(
            f"{type(module).__module__}.{type(module).__qualname__}",
            "evaluation_no_grad",
            training_flags[0][1],
            devices,
            dtypes,
        )
        report, incomplete = crawl.recorder.report(tuple(totals.values()), context, input_metadata)
        if strict and incomplete is not None:
            raise IncompleteAnalysisError(report, incomplete)
        return report
    finally:
        if measurement is not None:
            measurement.finish()


def _crawl_script_module(
    module: torch.jit.ScriptModule,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    input_metadata: dict[str, Any],
    strict: bool,
    mode: str,
) -> dict[str, Any]:
    """Python's forward hooks never run inside TorchScript: the C++
    TorchScript front end (what the ``torchscan`` command runs on a .pt file)
    crawls the module instead, on a clone, so the caller's module is left
    as it was."""
    if kwargs:
        raise ValueError("A TorchScript module takes its inputs positionally: pass args, not kwargs.")
    result = json.loads(torch.ops.torchscan._crawl_script_module(module, args, mode))
    report = result["report"]
    report["context"]["python_version"] = platform.python_version()
    report["inputs"] = input_metadata
    if strict and result["incomplete"] is not None:
        raise IncompleteAnalysisError(report, result["incomplete"])
    return report


def summary(
    module: nn.Module,
    input_shape: list[tuple[int, ...]] | tuple[int, ...] | None = None,
    wrap_mode: str | None = "mid",
    max_depth: int | None = None,
    receptive_field: bool = False,
    effective_rf_stats: bool = False,
    *,
    dtype: torch.dtype | Iterable[torch.dtype] | None = None,
    args: tuple[Any, ...] | None = None,
    kwargs: Mapping[str, Any] | None = None,
    device: str | torch.device | None = None,
    strict: bool = False,
    mode: Literal["full", "structure"] = "full",
) -> dict[str, Any]:
    """Prints the summary table (rendered in C++) and returns the same report
    crawl_module returns."""
    report = crawl_module(
        module, input_shape, dtype, args=args, kwargs=kwargs, device=device, strict=strict, mode=mode
    )
    print(format_summary(report, wrap_mode, max_depth if isinstance(max_depth, int) else None,
                         receptive_field, effective_rf_stats))  # noqa: T201
    return report


def format_summary(
    report: Mapping[str, Any],
    wrap_mode: str | None = "mid",
    max_depth: int | None = None,
    receptive_field: bool = False,
    effective_rf_stats: bool = False,
) -> str:
    """The summary table of a report, as ``summary`` prints it."""
    if wrap_mode is not None and not isinstance(wrap_mode, str):
        raise TypeError(f"wrap_mode must be a string or None, got {type(wrap_mode).__name__}: {wrap_mode!r}")
    if max_depth is not None and (isinstance(max_depth, bool) or not isinstance(max_depth, int)):
        raise TypeError(f"max_depth must be an int or None, got {type(max_depth).__name__}: {max_depth!r}")
    options = {
        "wrap_mode": wrap_mode,
        "max_depth": None if max_depth is None else int(max_depth),
        "receptive_field": bool(receptive_field),
        "effective_rf_stats": bool(effective_rf_stats),
    }
    # The renderer returns what summary prints, newline included.
    return hooks().render_summary(report, options).removesuffix("\n")
