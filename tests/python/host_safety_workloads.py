"""Workloads of the host-safety suite (test_host_safety.py), and the child
process that runs them.

Each builder returns a `Workload`: `step()` is one call of the compiled (or
exported, or AOTInductor) workload and returns its outputs; `eager()` is the
same work uncompiled, for FlopCounterMode's count. Builders seed everything,
so two processes build identical models and inputs.

Run as a program (one process per mode, all workloads in it, results as JSON
and outputs saved with torch.save under --out):

  run      [--library]  step() once, then three more times under
                        error_on_recompile; outputs, the exception if one is
                        raised, and Dynamo's compile counters.
  measure  --track ...  with the library: each workload in both orders
                        (measured first, unmeasured first), each call after
                        the first under error_on_recompile; the reports, the
                        FlopCounterMode truth and the outputs.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import json
import os
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

import torch
import torch._dynamo
from torch import nn
from torch.nn import functional as F
from torch.utils.checkpoint import checkpoint


@dataclasses.dataclass
class Workload:
    step: Callable[[], Any]
    # The same work uncompiled (FlopCounterMode's truth). None: `truth` is a
    # hand count, because FlopCounterMode cannot give the right number.
    eager: Callable[[], Any] | None = None
    truth: int | None = None
    # Why outputs are compared with allclose instead of torch.equal (None:
    # bit for bit).
    inexact: str | None = None
    # Work the compiled program does beyond the eager one, by hand (added to
    # FlopCounterMode's count of `eager`).
    compiled_extra: int = 0


def mm(m: int, k: int, n: int) -> int:
    return 2 * m * k * n


def _seed() -> None:
    torch.manual_seed(0)


def _mlp() -> nn.Module:
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 8))


def _cnn() -> nn.Module:
    return nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU())


def _grads(module: nn.Module) -> list[torch.Tensor]:
    return [p.grad for p in module.parameters()]


def _zero(module: nn.Module) -> None:
    for p in module.parameters():
        p.grad = None


def _training(model: nn.Module, x: torch.Tensor, **compile_options) -> Workload:
    """Forward and backward through the compiled model; returns the loss and
    every parameter's gradient."""
    compiled = torch.compile(model, **compile_options)

    def run(m):
        _zero(model)
        loss = m(x).square().mean()
        loss.backward()
        return [loss.detach(), *_grads(model)]

    return Workload(lambda: run(compiled), lambda: run(model))


def _inference(model: nn.Module, *inputs, **compile_options) -> Workload:
    compiled = torch.compile(model, **compile_options)

    def run(m):
        with torch.no_grad():
            return m(*inputs)

    return Workload(lambda: run(compiled), lambda: run(model))


def _function(f: Callable, *inputs, **compile_options) -> Workload:
    compiled = torch.compile(f, **compile_options)
    return Workload(lambda: compiled(*inputs), lambda: f(*inputs))


# --- the workloads --------------------------------------------------------


def mlp_inference(_):
    return _inference(_mlp().eval(), torch.randn(4, 16))


def mlp_training(_):
    return _training(_mlp(), torch.randn(4, 16))


def conv_inference(_):
    return _inference(_cnn().eval(), torch.randn(2, 3, 8, 8))


def conv_training(_):
    return _training(_cnn(), torch.randn(2, 3, 8, 8))


def hooked_module_training(_):
    """Submodules with hooks of their own: Dynamo traces Module._call_impl's
    slow path, which guards on the keys of the (empty) global hook dicts."""
    model = _mlp()
    model[0].register_forward_pre_hook(lambda module, args: None)
    model[2].register_forward_hook(lambda module, args, out: None)
    return _training(model, torch.randn(4, 16))


def cnn_batchnorm_training(_):
    model = nn.Sequential(
        nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(64, 5)
    )
    work = _training(model, torch.randn(2, 3, 8, 8))
    bn = model[1]
    step, eager = work.step, work.eager
    # The running statistics are outputs too (a compiled graph mutates them).
    work.step = lambda: [*step(), bn.running_mean.clone(), bn.running_var.clone()]
    work.eager = lambda: [*eager(), bn.running_mean.clone(), bn.running_var.clone()]
    return work


def _two_sizes(model, compiled, sizes, mark=False):
    xs = [torch.randn(n, 16) for n in sizes]

    def run(m):
        outs = []
        for x in xs:
            if mark:
                torch._dynamo.mark_dynamic(x, 0)
            with torch.no_grad():
                outs.append(m(x))
        return outs

    return Workload(lambda: run(compiled), lambda: run(model))


def dynamic_true(_):
    model = _mlp()
    return _two_sizes(model, torch.compile(model, dynamic=True), (3, 7))


def mark_dynamic(_):
    model = _mlp()
    return _two_sizes(model, torch.compile(model), (4, 9), mark=True)


def automatic_dynamic(_):
    # The second size compiles a dynamic graph (automatic dynamic shapes),
    # in both processes alike; later steps never recompile.
    model = _mlp()
    return _two_sizes(model, torch.compile(model), (5, 6))


def _inductor_patch(**options):
    import torch._inductor.config as inductor_config

    return inductor_config.patch(**options)


def _frozen(model, x) -> Workload:
    model = model.eval()
    compiled = torch.compile(model)

    def run(m):
        with _inductor_patch(freezing=True), torch.no_grad():
            return m(x)

    return Workload(lambda: run(compiled), lambda: run(model))


def freezing_linear(_):
    return _frozen(_mlp(), torch.randn(4, 16))


def freezing_conv(_):
    return _frozen(_cnn(), torch.randn(2, 3, 8, 8))


def max_autotune_no_cudagraphs(_):
    work = _inference(_mlp().eval(), torch.randn(4, 16), mode="max-autotune-no-cudagraphs")
    work.inexact = "autotuning picks each GEMM's kernel by timing, which may differ between processes"
    return work


def reduce_overhead(_):
    return _inference(_mlp().eval(), torch.randn(4, 16), mode="reduce-overhead")


def _compiled_optimizer(make) -> Workload:
    model, x = _mlp(), torch.randn(4, 16)
    optimizer = make(model.parameters())
    # One eager step first: the optimizer creates its state (momentum
    # buffers) in its first step, which would make the compiled step
    # recompile once by design.
    model(x).square().mean().backward()
    optimizer.step()
    compiled_step = torch.compile(optimizer.step)

    def run(opt_step):
        _zero(model)
        loss = model(x).square().mean()
        loss.backward()
        opt_step()
        return [loss.detach(), *(p.detach().clone() for p in model.parameters())]

    # The truth runs on an identical copy, so the compiled run's state is
    # untouched by it.
    _seed()
    twin, twin_x = _mlp(), x
    twin.load_state_dict(model.state_dict())
    twin_optimizer = make(twin.parameters())
    twin(twin_x).square().mean().backward()
    twin_optimizer.step()

    def eager():
        _zero(twin)
        twin(twin_x).square().mean().backward()
        twin_optimizer.step()

    return Workload(lambda: run(compiled_step), eager)


def compiled_sgd_step(_):
    return _compiled_optimizer(lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9))


def compiled_adam_step(_):
    return _compiled_optimizer(lambda p: torch.optim.Adam(p, lr=0.01))


def graph_break(_):
    model, w = _mlp(), torch.randn(8, 8)

    def f(x):
        y = model(x)
        torch._dynamo.graph_break()
        return (y @ w).relu()

    return _function(f, torch.randn(4, 16))


def fullgraph(_):
    return _training(_mlp(), torch.randn(4, 16), fullgraph=True)


def torch_cond(_):
    a, b = nn.Linear(16, 16), nn.Linear(16, 8)

    def f(x):
        return torch.cond(x.sum() > 0, lambda x: a(x)[:, :8].contiguous(), lambda x: b(x), (x,))

    x = torch.randn(4, 16).abs()
    work = _function(lambda: [f(x), f(-x)])
    # FlopCounterMode counts both branches of an eager cond; by hand: the
    # true branch's 16x16 product, then the false branch's 16x8 product.
    return dataclasses.replace(work, eager=None, truth=mm(4, 16, 16) + mm(4, 16, 8))


def while_loop(_):
    from torch._higher_order_ops.while_loop import while_loop as loop

    w = torch.randn(8, 8)

    def f(i, x):
        return loop(lambda i, x: i < 3, lambda i, x: (i + 1, x @ w), (i, x))

    work = _function(f, torch.tensor(0), torch.randn(4, 8))
    # By hand: three iterations of a 4x8 @ 8x8 product.
    return dataclasses.replace(work, eager=None, truth=3 * mm(4, 8, 8))


def masked_fill_neg_inf(_):
    q, k = torch.randn(2, 6, 8), torch.randn(2, 6, 8)
    mask = torch.ones(6, 6, dtype=torch.bool).triu(1)

    def f(q, k):
        scores = (q @ k.transpose(1, 2)).masked_fill(mask, float("-inf"))
        return scores.softmax(-1), scores

    return _function(f, q, k)


def clamp_inf_nan_to_num(_):
    w = torch.randn(8, 8)

    def f(x):
        y = (x @ w).clamp(max=float("inf"), min=float("-inf"))
        z = torch.log(y)  # NaN for negative entries, -inf for zeros
        return torch.nan_to_num(z, nan=0.0, posinf=float("inf"), neginf=-1e4), y.clamp(max=float("inf"))

    return _function(f, torch.randn(4, 8))


def sdpa_training(_):
    q, k, v = (torch.randn(1, 2, 8, 4, requires_grad=True) for _ in range(3))

    def run(attention):
        for t in (q, k, v):
            t.grad = None
        out = attention(q, k, v)
        out.sum().backward()
        return [out.detach(), q.grad, k.grad, v.grad]

    attention = lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True)  # noqa: E731
    compiled = torch.compile(attention)
    return Workload(lambda: run(compiled), lambda: run(attention))


def eager_flex_attention(_):
    """Eager flex attention with a document mask: the dense kernel runs
    inside the entry point's own compiled frame, and a measurement wraps it
    (_flex_attention.py). FlopCounterMode raises on it: the truth is the
    kernel's two bmm products, by hand."""
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    q, k, v = (torch.randn(2, 2, 64, 8) for _ in range(3))
    document = torch.tensor([0] * 24 + [1] * 40)

    def same_document(b, h, q_idx, kv_idx):
        return document[q_idx] == document[kv_idx]

    block_mask = create_block_mask(same_document, 2, 2, 64, 64, device="cpu")
    truth = 2 * 2 * (mm(64, 8, 64) + mm(64, 64, 8))
    return Workload(lambda: flex_attention(q, k, v, block_mask=block_mask), None, truth=truth)


def multihead_attention(_):
    mha = nn.MultiheadAttention(16, 2, batch_first=True).eval()
    x = torch.randn(2, 5, 16)
    compiled = torch.compile(mha)

    def run(m):
        with torch.no_grad():
            return m(x, x, x, need_weights=True)

    # By hand: eval and no_grad take nn.MultiheadAttention's fused fast path
    # (_native_multi_head_attention), which FlopCounterMode counts as 0;
    # compiled, it is the plain products. In-projection [10,16] @ [16,48],
    # scores and weighted values per (batch, head) [5,8] @ [8,5] and
    # [5,5] @ [5,8], out-projection [10,16] @ [16,16].
    truth = mm(10, 16, 48) + 2 * 2 * (mm(5, 8, 5) + mm(5, 5, 8)) + mm(10, 16, 16)
    return Workload(lambda: run(compiled), None, truth=truth)


def transformer_encoder_training(_):
    layer = nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, dropout=0.0, batch_first=True)
    return _training(layer, torch.randn(2, 5, 16))


_torchvision_schemas: list = []


def _transformers():
    """transformers imports torchvision, whose CUDA-built extension cannot
    load beside a CPU torch ("operator torchvision::nms does not exist"):
    declare the two schemas its import needs, as the package's own
    prepare_torchvision does (not imported here: the plain process must
    never import torchscan_dispatch)."""
    if not _torchvision_schemas and "torchvision" not in sys.modules:
        library = torch.library.Library("torchvision", "FRAGMENT")
        for name in ("nms", "qnms"):
            library.define(f"{name}(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
        _torchvision_schemas.append(library)
    import transformers

    return transformers


def _bert():
    BertConfig, BertModel = _transformers().BertConfig, _transformers().BertModel

    config = BertConfig(
        vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
        max_position_embeddings=64, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
    )  # fmt: skip
    return BertModel(config), torch.randint(0, 100, (2, 8))


def _gpt2():
    GPT2Config, GPT2LMHeadModel = _transformers().GPT2Config, _transformers().GPT2LMHeadModel

    config = GPT2Config(
        vocab_size=100, n_embd=32, n_layer=2, n_head=2, n_positions=64, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0
    )
    return GPT2LMHeadModel(config), torch.randint(0, 100, (2, 8))


def bert_training(_):
    model, ids = _bert()
    compiled = torch.compile(model)

    def run(m):
        _zero(model)
        loss = m(input_ids=ids).last_hidden_state.square().mean()
        loss.backward()
        return [loss.detach(), *_grads(model)]

    # The compiled backward also differentiates the pooler (AOTAutograd
    # gives its unused output a zero gradient; eager autograd skips it): its
    # input and weight gradients, [2,32] @ [32,32] and [32,2] @ [2,32].
    return Workload(lambda: run(compiled), lambda: run(model), compiled_extra=mm(2, 32, 32) + mm(32, 2, 32))


def gpt2_inference(_):
    model, ids = _gpt2()
    model.eval()
    compiled = torch.compile(model)

    def run(m):
        with torch.no_grad():
            return m(input_ids=ids, use_cache=False).logits

    return Workload(lambda: run(compiled), lambda: run(model))


def export_run_decompositions(_):
    model, x = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(144, 5)).eval(), torch.randn(2, 3, 8, 8)
    exported = torch.export.export(model, (x,)).run_decompositions()
    module = exported.module()
    return Workload(lambda: module(x), lambda: model(x))


_AOTI_PACKAGES: dict[str, str] = {}


def aoti_mlp(context):
    model, x = _mlp().eval(), torch.randn(4, 16)
    if "mlp" not in _AOTI_PACKAGES:  # compiled once per process (slow)
        exported = torch.export.export(model, (x,))
        path = os.path.join(context["out"], "aoti_mlp.pt2")
        _AOTI_PACKAGES["mlp"] = torch._inductor.aoti_compile_and_package(exported, package_path=path)
    runner = torch._inductor.aoti_load_package(_AOTI_PACKAGES["mlp"])
    return Workload(lambda: runner(x), lambda: model(x))


def _opaque_product():
    namespace = "hostsafety::opaque_product"
    if not hasattr(torch.ops.hostsafety, "opaque_product"):

        @torch.library.custom_op(namespace, mutates_args=())
        def opaque_product(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
            return a @ b

        @opaque_product.register_fake
        def _(a, b):
            return a.new_empty(a.shape[0], b.shape[1])

    return torch.ops.hostsafety.opaque_product


def custom_op(_):
    op, w = _opaque_product(), torch.randn(16, 8)
    work = _function(lambda x: op(x, w).relu() @ w.T, torch.randn(4, 16))
    # FlopCounterMode sees the custom operator as one call with no formula
    # (0); by hand: its 4x16 @ 16x8 product and the 4x8 @ 8x16 after it.
    return dataclasses.replace(work, eager=None, truth=mm(4, 16, 8) + mm(4, 8, 16))


def checkpoint_backward(_):
    model, x = _mlp(), torch.randn(4, 16, requires_grad=True)
    f = lambda x: checkpoint(model, x, use_reentrant=False).square().mean()  # noqa: E731
    compiled = torch.compile(f)

    def run(g):
        _zero(model)
        x.grad = None
        loss = g(x)
        loss.backward()
        return [loss.detach(), x.grad, *_grads(model)]

    # By hand, not FlopCounterMode on the eager step: AOTAutograd's
    # partitioner recomputes both linear layers in the compiled backward,
    # where eager non-reentrant checkpointing recomputes only the first (the
    # second's output is not needed), so the compiled step does more work.
    # Forward and recomputed forward: 2 x (4x16 @ 16x32 + 4x32 @ 32x8);
    # backward: the input and weight gradients of both layers.
    forward = mm(4, 16, 32) + mm(4, 32, 8)
    backward = mm(4, 8, 32) + mm(8, 4, 32) + mm(4, 32, 16) + mm(32, 4, 16)
    return Workload(lambda: run(compiled), None, truth=2 * forward + backward)


def _save_products(ctx, op, *args, **kwargs):
    from torch.utils.checkpoint import CheckpointPolicy

    products = (torch.ops.aten.mm.default, torch.ops.aten.addmm.default)
    return CheckpointPolicy.MUST_SAVE if op in products else CheckpointPolicy.PREFER_RECOMPUTE


def _checkpointed_step(model, x, f):
    def run():
        _zero(model)
        x.grad = None
        loss = f(x)
        loss.backward()
        return [loss.detach(), x.grad, *_grads(model)]

    return run


def eager_checkpoints(_):
    # Uncompiled: every kind of activation checkpointing whose recomputation
    # the library recognises while measuring (reentrant, non-reentrant,
    # selective), which the program must never notice.
    from torch.utils.checkpoint import create_selective_checkpoint_contexts

    model, x = _mlp(), torch.randn(4, 16, requires_grad=True)
    context_fn = functools.partial(create_selective_checkpoint_contexts, _save_products)

    def f(x):
        h = checkpoint(model, x, use_reentrant=True)
        h = h + checkpoint(model, x, use_reentrant=False)
        return (h + checkpoint(model, x, use_reentrant=False, context_fn=context_fn)).square().mean()

    run = _checkpointed_step(model, x, f)
    return Workload(run, run)


def selective_checkpoint_backward(_):
    from torch.utils.checkpoint import create_selective_checkpoint_contexts

    model, x = _mlp(), torch.randn(4, 16, requires_grad=True)
    context_fn = functools.partial(create_selective_checkpoint_contexts, _save_products)
    f = lambda x: checkpoint(model, x, use_reentrant=False, context_fn=context_fn).square().mean()  # noqa: E731
    compiled = torch.compile(f)
    # The policy saves both products, so nothing with FLOPs is recomputed
    # (compiled or eager): FlopCounterMode on the eager step is the truth.
    return Workload(_checkpointed_step(model, x, compiled), _checkpointed_step(model, x, f))


def raises_value_error(_):
    w = torch.randn(16, 8)

    def f(x):
        y = x @ w
        if y.shape[0] == 4:
            raise ValueError(f"host-safety: rejected a batch of {y.shape[0]}")
        return y

    return _function(f, torch.randn(4, 16))


def raises_shape_mismatch(_):
    w = torch.randn(15, 8)  # 16 columns @ 15 rows: an error while tracing
    return _function(lambda x: (x @ w).relu(), torch.randn(4, 16))


def aot_eager_training(_):
    return _training(_mlp(), torch.randn(4, 16), backend="aot_eager")


def autocast_bf16(_):
    model, x = _mlp().eval(), torch.randn(4, 16)

    def f(x):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return model(x)

    return _function(f, x)


def inference_mode(_):
    model, x = _mlp().eval(), torch.randn(4, 16)
    compiled = torch.compile(model)

    def run(m):
        with torch.inference_mode():
            return m(x)

    return Workload(lambda: run(compiled), lambda: run(model))


WORKLOADS: dict[str, Callable[[dict], Workload]] = {
    f.__name__: f
    for f in (
        mlp_inference, mlp_training, conv_inference, conv_training, hooked_module_training, cnn_batchnorm_training,
        dynamic_true, mark_dynamic, automatic_dynamic, freezing_linear, freezing_conv,
        max_autotune_no_cudagraphs, reduce_overhead, compiled_sgd_step, compiled_adam_step,
        graph_break, fullgraph, torch_cond, while_loop, masked_fill_neg_inf, clamp_inf_nan_to_num,
        sdpa_training, eager_flex_attention, multihead_attention, transformer_encoder_training,
        bert_training, gpt2_inference,
        export_run_decompositions, aoti_mlp, custom_op, checkpoint_backward,
        eager_checkpoints, selective_checkpoint_backward,
        raises_value_error, raises_shape_mismatch, aot_eager_training, autocast_bf16, inference_mode,
    )
}  # fmt: skip

# Workloads that must raise (the same exception with and without the library).
RAISING = {"raises_value_error", "raises_shape_mismatch"}
# Workloads whose first step recompiles by design (automatic dynamic shapes).


def build(name: str, context: dict) -> Workload:
    _seed()
    torch._dynamo.reset()
    return WORKLOADS[name](context)


# --- the child process -------------------------------------------------------


def _compile_counters() -> dict[str, int]:
    from torch._dynamo.utils import counters

    return {
        "unique_graphs": counters["stats"]["unique_graphs"],
        "calls_captured": counters["stats"]["calls_captured"],
        "frames_ok": counters["frames"]["ok"],
        "frames_total": counters["frames"]["total"],
        "recompiles": sum(counters["recompiles"].values()),
        "graph_breaks": sum(counters["graph_break"].values()),
    }


def _cache_counters() -> dict[str, int]:
    from torch._dynamo.utils import counters

    return {"hit": counters["inductor"]["fxgraph_cache_hit"], "miss": counters["inductor"]["fxgraph_cache_miss"]}


def _error(error: BaseException) -> dict:
    return {"type": f"{type(error).__module__}.{type(error).__qualname__}", "message": str(error)}


def _tensors(value: Any) -> Any:
    """Outputs made storable: tensors detached and copied (later steps must
    not change what an earlier step returned)."""
    leaves, spec = torch.utils._pytree.tree_flatten(value)
    return [leaf.detach().clone() if isinstance(leaf, torch.Tensor) else leaf for leaf in leaves]


def no_recompiling():
    return torch._dynamo.config.patch(error_on_recompile=True)


def run_mode(names: list[str], out: str) -> dict:
    results = {}
    for name in names:
        start, before, cache_before = time.time(), _compile_counters(), _cache_counters()
        record: dict[str, Any] = {"error": None, "inexact": None}
        outputs = []
        try:
            workload = build(name, {"out": out})
            record["inexact"] = workload.inexact
            outputs.append(_tensors(workload.step()))
            with no_recompiling():
                for _ in range(3):
                    outputs.append(_tensors(workload.step()))
        except Exception as error:  # noqa: BLE001 - recorded and compared
            record["error"] = _error(error)
            record["traceback"] = traceback.format_exc()[-3000:]
        after = _compile_counters()
        record["counters"] = {key: after[key] - before[key] for key in after}
        cache_after = _cache_counters()
        record["fx_graph_cache"] = {key: cache_after[key] - cache_before[key] for key in cache_after}
        record["calls"] = len(outputs)
        torch.save(outputs, os.path.join(out, f"{name}.pt"))
        record["seconds"] = round(time.time() - start, 2)
        results[name] = record
    return results


def _cpu_attention_formulas() -> dict:
    """FlopCounterMode has no formula for CPU flash attention (it counts 0);
    its own SDPA formulas, applied to the CPU operators, give the truth."""
    from torch.utils import flop_counter

    aten = torch.ops.aten

    def forward(query, key, value, *args, out_shape=None, **kwargs) -> int:
        return flop_counter.sdpa_flop_count(query, key, value)

    def backward(grad_out, query, key, value, *args, out_shape=None, **kwargs) -> int:
        return flop_counter.sdpa_backward_flop_count(grad_out, query, key, value)

    return {
        aten._scaled_dot_product_flash_attention_for_cpu: forward,
        aten._scaled_dot_product_flash_attention_for_cpu_backward: backward,
    }


def _truth(workload: Workload) -> int:
    if workload.eager is None:
        return workload.truth
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False, custom_mapping=_cpu_attention_formulas()) as mode:
        workload.eager()
    return mode.get_total_flops() + workload.compiled_extra


def _summary(report: dict) -> dict:
    return {
        "total": report["total"],
        "diagnostics": [{k: d.get(k) for k in ("code", "operator", "message")} for d in report["diagnostics"]],
    }


def measure_mode(names: list[str], out: str, track_modules: bool) -> dict:
    import torchscan_dispatch

    measure = lambda step: torchscan_dispatch.measure_flops(step, track_modules=track_modules)  # noqa: E731
    results = {}
    for name in names:
        start = time.time()
        record: dict[str, Any] = {}
        try:
            # The truth on a build of its own: eager steps mutate state.
            record["truth"] = None if name in RAISING else _truth(build(name, {"out": out}))
        except Exception as error:  # noqa: BLE001
            record["truth_error"] = _error(error)
        for order in ("measured_first", "unmeasured_first"):
            # Calls: measured (M) or not (U); every call after the first runs
            # under error_on_recompile.
            plan = "MUMU" if order == "measured_first" else "UMUM"
            calls: list[dict] = []
            outputs = []
            try:
                workload = build(name, {"out": out})
                for index, kind in enumerate(plan):
                    context = no_recompiling() if index else contextlib.nullcontext()
                    call: dict[str, Any] = {"kind": kind}
                    with context:
                        if kind == "M":
                            box = []
                            report = measure(lambda: box.append(workload.step()))
                            call["report"] = _summary(report)
                            outputs.append(_tensors(box[0]))
                        else:
                            outputs.append(_tensors(workload.step()))
                    calls.append(call)
            except Exception as error:  # noqa: BLE001
                calls.append({"kind": plan[len(calls)], "error": _error(error), "traceback": traceback.format_exc()[-3000:]})
            torch.save(outputs, os.path.join(out, f"{name}.{order}.pt"))
            record[order] = calls
        record["seconds"] = round(time.time() - start, 2)
        results[name] = record
    return results


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=("run", "measure"))
    parser.add_argument("--out", required=True)
    parser.add_argument("--library", action="store_true")
    parser.add_argument("--track-modules", choices=("true", "false"), default="true")
    parser.add_argument("--aoti-package", help="load this package instead of compiling one")
    parser.add_argument("names", nargs="*")
    args = parser.parse_intermixed_args()
    names = args.names or list(WORKLOADS)
    if args.library or args.mode == "measure":
        import torchscan_dispatch  # noqa: F401 - loaded, idle in "run" mode
    os.makedirs(args.out, exist_ok=True)
    if args.aoti_package:
        _AOTI_PACKAGES["mlp"] = args.aoti_package
    if args.mode == "run":
        results = run_mode(names, args.out)
    else:
        results = measure_mode(names, args.out, args.track_modules == "true")
    results["__process__"] = {"library_loaded": "torchscan_dispatch" in sys.modules}
    with open(os.path.join(args.out, "results.json"), "w") as handle:
        json.dump(results, handle, indent=1, default=str)


if __name__ == "__main__":
    main()
