"""Flex attention's block mask in eager code: the mask-aware count of the
dense kernel's calls (docs/methodology.md, "Executed and mask-aware
attention FLOPs").

Eager ``flex_attention`` runs the higher-order operator's dense kernel
(its CompositeExplicitAutograd kernel, forward and backward): the scores
and the output are plain matrix products (``bmm``), which the counter counts
as executed, every (query, key) pair. The mask is a Python function, the
block mask's ``mask_mod``, that no operator argument shows. So while a
FlopCounter is open, this module wraps those two kernels: after each call
that ran on a counting thread it evaluates ``mask_mod`` over the call's
(batch, query head, query, key) grid, as the kernel does, and records the
pairs it excludes for the operator ``higher_order::flex_attention`` (or its
backward) in the measurement counting there, in the current module scope.
Where the mask cannot be read, the call's whole products are recorded as
not read: the mask-aware count is ``partial`` with an
``attention_mask_not_read`` diagnostic.

NOTE [Where the dense kernel is hooked]
``HigherOrderOperator.dispatch`` finds a kernel in the operator's
``_dispatch_cache`` (by the dispatch key it was called with: CPU, CUDA,
Meta) and otherwise resolves the key against ``py_kernels`` and caches the
result. The wrap replaces the ``py_kernels`` entry of
CompositeExplicitAutograd and, in the cache, exactly the entries that hold
the original kernel; closing the last counter puts the original back in
both places. Nothing else changes: the autograd, functionalization, fake
and proxy (tracing) kernels are other entries, so a compiled graph (whose
flex attention Inductor lowers to its own kernel, counted by the graph's
tally) and its compilation never reach the wrap. An unmeasured program runs
PyTorch's own kernel.

NOTE [The counting key and a direct call of the operator]
A higher-order operator takes its dispatch key from its tensors and the
thread-local included keys, less the keys it falls through. The counting
key is included on a counting thread and is no key the operator has a
kernel for, so a direct call failed with "could not find kernel ... at
dispatch key DispatchKey.???" (the eager entry point calls the forward
operator inside a compiled frame, which takes the key out; the backward
operator is called by its autograd Function from the autograd engine,
outside that frame). While the wrap is in place, both operators fall through
the counting key (removed from their ``non_fallthrough_keys``, put back on
close): the call reaches the device's kernel, whose operators the key
still counts.

NOTE [What the evaluation sees]
The evaluation is our work, not the workload's: it runs with the counting
key excluded and RecordFunction observers off (the library's NotCounted),
without gradients, so neither its operators nor their FLOPs appear in any
report. It calls ``mask_mod`` with the call's ``mask_mod_other_buffers``
(document ids and other captured tensors) exactly as the kernel does, so a
mask_mod must be a pure function of its arguments, as flex attention
requires. ``score_mod`` is not a mask: a score_mod returning -inf is counted
as allowed.
"""

from __future__ import annotations

import functools
import importlib
import inspect
from typing import Any

import torch

from torchscan_dispatch._while_counting import WhileCounting

_FORWARD = "higher_order::flex_attention"
_BACKWARD = "higher_order::flex_attention_backward"

# (operator, its original kernel, the wrap, whether it fell through the
# counting key already) while installed.
_patches: list[tuple[Any, Any, Any, bool]] = []


_DENSE = torch._C.DispatchKey.CompositeExplicitAutograd


@functools.cache
def _counting_key() -> Any:
    from torchscan_dispatch._library import compiled_region_calls

    return torch._C.DispatchKeySet.from_raw_repr(compiled_region_calls().counting_key_bits())


@functools.cache
def _operators() -> tuple[tuple[Any, str, Any], ...]:
    """(operator, its name, its products) of the two dense kernels; none
    in a torch without flex attention."""
    try:
        # (The package's attribute of this name is the operator, not the module.)
        module = importlib.import_module("torch._higher_order_ops.flex_attention")
    except ImportError:
        return ()
    return (
        (module.flex_attention, _FORWARD, _forward_products),
        (module.flex_attention_backward, _BACKWARD, _backward_products),
    )


def _forward_products(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor) -> int:
    """scores = query @ key^T and out = scores @ value, over every batch
    and query head (grouped key/value heads are repeated)."""
    b, hq, l, e = query.shape
    return 2 * b * hq * l * key.shape[-2] * (e + value.shape[-1])


def _backward_products(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor) -> int:
    """The scores again, the value gradient, the score gradient and the
    query and key gradients: three products over E and two over Ev."""
    b, hq, l, e = query.shape
    return 2 * b * hq * l * key.shape[-2] * (3 * e + 2 * value.shape[-1])


def _unread_reason(calls: Any, tensors: list[tuple[str, torch.Tensor]]) -> str | None:
    """Why the mask of a call over `tensors` cannot be read, or None.
    Mirrors attention_masks.cc's NOTE [Reading a mask]."""
    python_key = torch._C.DispatchKey.Python
    for name, tensor in tensors:
        if tensor.is_meta:
            return f"the {name} is a meta tensor"
        if torch._C._dispatch_keys(tensor).has(python_key):
            return f"the {name} is a fake tensor or a tensor subclass"
        if tensor.is_nested or tensor.layout != torch.strided:
            return f"the {name} is not a strided tensor"
        if tensor.device.type != "cpu":
            capturing = calls.stream_capturing(str(tensor.device).encode())
            if capturing == 1:
                return f"the {name}'s stream is being captured into a graph (reading it would break the capture)"
            if capturing != 0:
                return f"whether the {name}'s stream is being captured is unknown"
    return None


def _over_grid(mask_mod: Any, buffers: tuple[Any, ...]) -> Any:
    """mask_mod as a function of four index vectors (batch, head, query,
    key) giving the whole grid: one vmap per index, the key innermost."""

    def at(b: torch.Tensor, h: torch.Tensor, q: torch.Tensor, kv: torch.Tensor) -> torch.Tensor:
        return mask_mod(b, h, q, kv, *buffers)

    function = at
    for in_dims in ((None, None, None, 0), (None, None, 0, None), (None, 0, None, None), (0, None, None, None)):
        function = torch.vmap(function, in_dims=in_dims, out_dims=0)
    return function


def _allowed_pairs(
    calls: Any, mask_mod: Any, buffers: tuple[Any, ...], grid: tuple[int, int, int, int], device: torch.device
) -> int:
    """The (batch, head, query, key) entries of `grid` that mask_mod allows,
    evaluated where nothing counts it (NOTE [What the evaluation sees]), one
    batch element at a time: the kernel evaluated the whole grid at once,
    and the evaluation again needs no more than a batch element's share of
    that memory. One device-to-host read at the end."""
    from torch._dynamo._trace_wrapped_higher_order_op import TransformGetItemToIndex

    token = calls.enter_not_counted()
    if not token:
        raise RuntimeError("counting could not be suspended")
    try:
        with torch.no_grad(), TransformGetItemToIndex():
            batches, heads, queries, keys = (torch.arange(size, device=device) for size in grid)
            over_grid = _over_grid(mask_mod, buffers)
            total = torch.zeros((), dtype=torch.int64, device=device)
            for batch in range(grid[0]):
                allowed = over_grid(batches[batch : batch + 1], heads, queries, keys)
                if not isinstance(allowed, torch.Tensor) or allowed.dtype != torch.bool:
                    what = getattr(allowed, "dtype", type(allowed).__name__)
                    raise TypeError(f"mask_mod returned {what}, not a boolean tensor")
                total += allowed.expand(1, *grid[1:]).sum()
            return int(total.item())
    finally:
        calls.exit_not_counted(token)


def _record(calls: Any, packet: str, products: Any, arguments: inspect.BoundArguments) -> None:
    """Records the mask of one finished call (a failure to read the mask is
    the record's reason)."""
    values = arguments.arguments
    query, key, value = values.get("query"), values.get("key"), values.get("value")
    if not all(isinstance(t, torch.Tensor) and t.dim() == 4 for t in (query, key, value)):
        return  # not a call the dense kernel could have run
    executed = products(query, key, value)
    grid = (query.shape[0], query.shape[1], query.shape[2], key.shape[2])
    all_pairs = grid[0] * grid[1] * grid[2] * grid[3]
    allowed, reason = 0, None
    block_mask = values.get("block_mask")
    buffers = tuple(values.get("mask_mod_other_buffers") or ())
    readable = [("query", query), ("key", key), ("value", value)]
    readable += [("mask_mod's buffer", t) for t in buffers if isinstance(t, torch.Tensor)]
    try:
        reason = _unread_reason(calls, readable)
        if reason is None:
            if not isinstance(block_mask, tuple) or not block_mask or not callable(block_mask[-1]):
                reason = "the block mask has no mask_mod"
            else:
                allowed = _allowed_pairs(calls, block_mask[-1], buffers, grid, query.device)
    except Exception as error:  # the workload's call succeeded: never fail it
        message = str(error).strip().splitlines()
        reason = f"evaluating mask_mod failed: {type(error).__name__}: {message[0] if message else ''}"
    if executed >= 2**63:
        allowed, reason = 0, "the call's FLOPs exceed 64 bits"
    calls.record_flex_attention_mask(packet.encode(), executed, all_pairs, allowed, None if reason is None else reason.encode())


# The wrap of each original kernel, made once: a counter opened per
# training step installs them again each step.
_wraps: dict[Any, Any] = {}


def _wrap(original: Any, packet: str, products: Any) -> Any:
    wrapped = _wraps.get(original)
    if wrapped is None:
        wrapped = _wraps[original] = _make_wrap(original, packet, products)
    return wrapped


def _make_wrap(original: Any, packet: str, products: Any) -> Any:
    from torchscan_dispatch._library import flex_attention_calls

    calls = flex_attention_calls()
    signature = inspect.signature(original)

    def kernel(*args: Any, **kwargs: Any) -> Any:
        if not calls.counting_here():
            return original(*args, **kwargs)
        result = original(*args, **kwargs)
        try:
            arguments = signature.bind(*args, **kwargs)
        except TypeError:
            return result  # the original accepted them; nothing to read
        try:
            _record(calls, packet, products, arguments)
        except Exception as error:  # the workload's call succeeded: never fail it
            reason = f"recording the call failed: {type(error).__name__}"
            calls.record_flex_attention_mask(packet.encode(), 0, 0, 0, reason.encode())
        return result

    kernel.__wrapped__ = original
    return kernel


def _swap_cached(operator: Any, old: Any, new: Any) -> None:
    cache = operator._dispatch_cache
    for dispatch_key, kernel in list(cache.items()):
        if kernel is old:
            cache[dispatch_key] = new


def _install() -> None:
    counting = _counting_key()
    for operator, packet, products in _operators():
        original = operator.py_kernels.get(_DENSE)
        if original is None:
            continue
        wrapped = _wrap(original, packet, products)
        fell_through = (operator.non_fallthrough_keys & counting).raw_repr() == 0
        operator.py_kernels[_DENSE] = wrapped
        _swap_cached(operator, original, wrapped)
        operator.non_fallthrough_keys = operator.non_fallthrough_keys - counting
        _patches.append((operator, original, wrapped, fell_through))


def _uninstall() -> None:
    while _patches:
        operator, original, wrapped, fell_through = _patches.pop()
        if operator.py_kernels.get(_DENSE) is wrapped:
            operator.py_kernels[_DENSE] = original
        _swap_cached(operator, wrapped, original)
        if not fell_through:
            operator.non_fallthrough_keys = operator.non_fallthrough_keys | _counting_key()


def installed() -> bool:
    """Whether the wrap is in place (a FlopCounter is open)."""
    return bool(_patches)


_patched = WhileCounting(_install, _uninstall)


def opened(measurement: Any) -> None:
    """A FlopCounter starts counting with `measurement`: with the first,
    the dense kernels are wrapped."""
    _patched.opened(measurement.handle)


def closed(measurement: Any) -> None:
    """Its counting ends: with the last open measurement the wrap goes."""
    _patched.closed(measurement.handle)
