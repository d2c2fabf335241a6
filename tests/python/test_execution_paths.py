"""Execution paths: every path a workload can take is counted honestly.

Each workload of the matrix runs under our counter and against a truth:
FlopCounterMode on the same (or, for compiled code, the uncompiled) workload
where FlopCounterMode is right, else a hand computation written here. Every
result obeys the promise: `complete` is exact, `partial` is a lower bound with
at least one diagnostic. docs/design.md ("Execution paths") lists the matrix.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable

import pytest
import torch
import torch._dynamo
import torch.autograd.forward_ad as fwAD
from torch import nn
from torch.utils.checkpoint import checkpoint
from torch.utils.flop_counter import FlopCounterMode

import torchscan_dispatch

HERE = os.path.dirname(os.path.abspath(__file__))


def fcm_total(workload: Callable[[], object]) -> int:
    with FlopCounterMode(display=False) as mode:
        workload()
    return mode.get_total_flops()


def fcm_by_module(workload: Callable[[], object]) -> dict[str, int]:
    with FlopCounterMode(display=False) as mode:
        workload()
    return {label: sum(ops.values()) for label, ops in mode.get_flop_counts().items() if label != "Global"}


def mm(m: int, k: int, n: int) -> int:
    """FLOPs of [m,k] @ [k,n]: m*n dot products of length k, 2 per multiply-add."""
    return 2 * m * k * n


def assert_honest(report: dict, truth: int) -> None:
    """The promise: complete means exact; partial means a true lower bound
    with at least one diagnostic saying what is missing."""
    total = report["total"]
    assert total["status"] in ("complete", "partial"), total
    if total["status"] == "complete":
        assert total["value"] == truth, report
    else:
        assert total["known_value"] <= truth, report
        assert report["diagnostics"], report


@dataclasses.dataclass
class Path:
    """One workload: `run` is measured; `truth` is the exact count."""

    run: Callable[[], object]
    truth: Callable[[], int]
    # The counted FLOPs must equal the truth (not just bound it).
    exact: bool = True


def _seeded() -> None:
    torch.manual_seed(0)


# --- the workloads --------------------------------------------------------


def _mlp() -> nn.Module:
    return nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 16))


def eager_training_step() -> Path:
    model, x = _mlp(), torch.randn(8, 32)
    run = lambda: model(x).sum().backward()  # noqa: E731
    return Path(run, lambda: fcm_total(run))


def vmap_matmul() -> Path:
    w, xs = torch.randn(16, 32), torch.randn(8, 32)
    return Path(lambda: torch.vmap(lambda x: w @ x)(xs), lambda: mm(8, 32, 16))


def nested_vmap() -> Path:
    w, xs = torch.randn(16, 32), torch.randn(4, 8, 32)
    run = lambda: torch.vmap(torch.vmap(lambda x: w @ x))(xs)  # noqa: E731
    return Path(run, lambda: fcm_total(run))


def grad_transform() -> Path:
    model, x = nn.Linear(32, 16), torch.randn(8, 32)
    params = {k: v.detach() for k, v in model.named_parameters()}
    loss = lambda p: torch.func.functional_call(model, p, (x,)).pow(2).sum()  # noqa: E731
    run = lambda: torch.func.grad(loss)(params)  # noqa: E731
    # The forward addmm, and the weight gradient (the input needs none).
    return Path(run, lambda: mm(8, 32, 16) * 2)


def vjp_transform() -> Path:
    w, x, cotangent = torch.randn(16, 32), torch.randn(8, 32), torch.randn(8, 16)
    run = lambda: torch.func.vjp(lambda a: a @ w.T, x)[1](cotangent)  # noqa: E731
    return Path(run, lambda: fcm_total(run))


def jvp_transform() -> Path:
    w, x, t = torch.randn(32, 16), torch.randn(8, 32), torch.randn(8, 32)
    run = lambda: torch.func.jvp(lambda a: a @ w, (x,), (t,))  # noqa: E731
    # Primal and tangent products; FlopCounterMode counts the same.
    return Path(run, lambda: fcm_total(run))


def jacrev_transform() -> Path:
    w, x = torch.randn(16, 32), torch.randn(32)
    run = lambda: torch.func.jacrev(lambda a: (a @ w.T).sin())(x)  # noqa: E731
    return Path(run, lambda: fcm_total(run))


def jacrev_matrix_vector() -> Path:
    w, x = torch.randn(16, 32), torch.randn(32)
    run = lambda: torch.func.jacrev(lambda a: (w @ a).sin())(x)  # noqa: E731
    # The forward matrix-vector product (FlopCounterMode has no formula for
    # mv and counts 0), then the vjp vmapped over the 16 output basis
    # vectors: [16,16] @ [16,32].
    return Path(run, lambda: 2 * 16 * 32 + mm(16, 16, 32))


def jacfwd_transform() -> Path:
    w, x = torch.randn(16, 32), torch.randn(32)
    run = lambda: torch.func.jacfwd(lambda a: (a @ w.T).sin())(x)  # noqa: E731
    return Path(run, lambda: fcm_total(run))


def hessian_transform() -> Path:
    w, x = torch.randn(16, 32), torch.randn(32)
    run = lambda: torch.func.hessian(lambda a: (a @ w.T).sin().sum())(x)  # noqa: E731
    return Path(run, lambda: fcm_total(run))


# torch.autograd.functional's vectorize=True and autograd.grad's
# is_grads_batched batch with the legacy vmap (torch._vmap_internals), whose
# physical calls run below the Batched key (NOTE [Legacy vmap] in
# counting_fallback.cc).
def jacobian_vectorized() -> Path:
    w, x = torch.randn(16, 32), torch.randn(32)
    f = lambda a: (a @ w.T).sin()  # noqa: E731
    run = lambda: torch.autograd.functional.jacobian(f, x, vectorize=True)  # noqa: E731
    # The forward [1,32] @ [32,16], then the vjp batched over the 16 output
    # basis vectors: [16,16] @ [16,32] (counted once per example before).
    return Path(run, lambda: mm(1, 32, 16) + mm(16, 16, 32))


def jacobian_vectorized_forward_mode() -> Path:
    # A matrix input: PyTorch's own legacy-vmap forward mode rejects a
    # vector's matmul (it squeezes a batched tangent in place).
    w, x = torch.randn(16, 32), torch.randn(4, 32)
    f = lambda a: (a @ w.T).sin()  # noqa: E731
    run = lambda: torch.autograd.functional.jacobian(f, x, vectorize=True, strategy="forward-mode")  # noqa: E731
    # Dual-tensor products batched over the 128 input basis vectors,
    # 128 x [4,32] @ [32,16], and the primal ones.
    return Path(run, lambda: fcm_total(run))


def hessian_vectorized() -> Path:
    w, x = torch.randn(16, 32), torch.randn(32)
    run = lambda: torch.autograd.functional.hessian(lambda a: (a @ w.T).sin().sum(), x, vectorize=True)  # noqa: E731
    return Path(run, lambda: fcm_total(run))


def grads_batched() -> Path:
    w = torch.randn(16, 32)
    x, cotangents = torch.randn(8, 32, requires_grad=True), torch.randn(5, 8, 16)
    run = lambda: torch.autograd.grad(x @ w.T, x, cotangents, is_grads_batched=True)  # noqa: E731
    # The forward [8,32] @ [32,16], then the input gradient for each of the
    # 5 cotangents: [8,16] @ [16,32].
    return Path(run, lambda: mm(8, 32, 16) + 5 * mm(8, 16, 32))


def per_sample_gradients() -> Path:
    model, xs = nn.Linear(32, 16), torch.randn(8, 32)
    params = {k: v.detach() for k, v in model.named_parameters()}
    loss = lambda p, x: torch.func.functional_call(model, p, (x,)).pow(2).sum()  # noqa: E731
    run = lambda: torch.func.vmap(torch.func.grad(loss), in_dims=(None, 0))(params, xs)  # noqa: E731
    return Path(run, lambda: fcm_total(run))


def model_ensembling() -> Path:
    models = [nn.Linear(32, 16) for _ in range(3)]
    params, _ = torch.func.stack_module_state(models)
    base, x = models[0], torch.randn(8, 32)
    run = lambda: torch.func.vmap(lambda p: torch.func.functional_call(base, p, (x,)))(params)  # noqa: E731
    return Path(run, lambda: 3 * mm(8, 32, 16))


def forward_mode_ad() -> Path:
    w = torch.randn(32, 16)

    def run():
        with fwAD.dual_level():
            dual = fwAD.make_dual(torch.randn(8, 32), torch.randn(8, 32))
            return fwAD.unpack_dual(dual @ w).tangent

    # Primal and tangent products; the tangent of mm is self_t @ w plus
    # x @ w_t, w's tangent a zero tensor, which FlopCounterMode also counts.
    return Path(run, lambda: fcm_total(run))


def nested_jagged_matmul() -> Path:
    nt = torch.nested.nested_tensor([torch.randn(3, 32), torch.randn(5, 32)], layout=torch.jagged)
    w = torch.randn(32, 16)
    # The dense work: the 3 + 5 rows of the values, times w.
    return Path(lambda: torch.matmul(nt, w), lambda: mm(3 + 5, 32, 16))


def nested_jagged_linear() -> Path:
    nt = torch.nested.nested_tensor([torch.randn(4, 32), torch.randn(7, 32)], layout=torch.jagged)
    layer = nn.Linear(32, 16)
    return Path(lambda: layer(nt), lambda: mm(4 + 7, 32, 16))


def sparse_times_dense() -> Path:
    a = torch.randn(16, 32).relu().to_sparse()
    b = torch.randn(32, 8)
    run = lambda: torch.mm(a, b)  # noqa: E731
    # FlopCounterMode's convention for sparse operands: the dense product.
    return Path(run, lambda: fcm_total(run))


def complex_matmul() -> Path:
    a, b = torch.randn(8, 16, dtype=torch.complex64), torch.randn(16, 4, dtype=torch.complex64)
    run = lambda: a @ b  # noqa: E731
    # FlopCounterMode's convention: one complex multiply-add is 2 FLOPs.
    return Path(run, lambda: fcm_total(run))


def quantized_dynamic_linear() -> Path:
    model = torch.ao.quantization.quantize_dynamic(nn.Sequential(nn.Linear(32, 16)), {nn.Linear}, dtype=torch.qint8)
    x = torch.randn(8, 32)
    # No formula for quantized::linear_dynamic: a diagnostic, never 0 as if
    # complete. The product it runs is an 8x32 @ 32x16.
    return Path(lambda: model(x), lambda: mm(8, 32, 16), exact=False)


def activation_checkpointing() -> Path:
    model, x = _mlp(), torch.randn(8, 32, requires_grad=True)
    run = lambda: checkpoint(model, x, use_reentrant=False).sum().backward()  # noqa: E731
    return Path(run, lambda: fcm_total(run))


def inference_mode() -> Path:
    model, x = _mlp(), torch.randn(8, 32)

    def run():
        with torch.inference_mode():
            return model(x)

    return Path(run, lambda: fcm_total(run))


def cpu_autocast() -> Path:
    model, x = _mlp(), torch.randn(8, 32)

    def run():
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return model(x)

    return Path(run, lambda: fcm_total(run))


def meta_device() -> Path:
    model, x = _mlp().to("meta"), torch.randn(8, 32, device="meta")
    run = lambda: model(x).sum().backward()  # noqa: E731
    return Path(run, lambda: fcm_total(run))


def eager_cond() -> Path:
    a, b = nn.Linear(32, 32), nn.Linear(32, 16)
    x = -torch.randn(8, 32).abs()  # the predicate is false
    run = lambda: torch.cond(x.sum() > 0, lambda x: a(x)[:, :16].contiguous(), lambda x: b(x), (x,))  # noqa: E731
    # Only the branch that runs does work (FlopCounterMode counts the other).
    return Path(run, lambda: mm(8, 32, 16))


EAGER_PATHS = {
    "eager_training_step": eager_training_step,
    "vmap": vmap_matmul,
    "nested_vmap": nested_vmap,
    "grad": grad_transform,
    "vjp": vjp_transform,
    "jvp": jvp_transform,
    "jacrev": jacrev_transform,
    "jacrev_matrix_vector": jacrev_matrix_vector,
    "jacfwd": jacfwd_transform,
    "hessian": hessian_transform,
    "jacobian_vectorized": jacobian_vectorized,
    "jacobian_vectorized_forward_mode": jacobian_vectorized_forward_mode,
    "hessian_vectorized": hessian_vectorized,
    "grads_batched": grads_batched,
    "per_sample_gradients": per_sample_gradients,
    "model_ensembling": model_ensembling,
    "forward_ad": forward_mode_ad,
    "nested_jagged_matmul": nested_jagged_matmul,
    "nested_jagged_linear": nested_jagged_linear,
    "sparse_times_dense": sparse_times_dense,
    "complex_matmul": complex_matmul,
    "quantized_dynamic_linear": quantized_dynamic_linear,
    "activation_checkpointing": activation_checkpointing,
    "inference_mode": inference_mode,
    "cpu_autocast": cpu_autocast,
    "meta_device": meta_device,
    "eager_cond": eager_cond,
}


@pytest.mark.parametrize("name", sorted(EAGER_PATHS))
def test_eager_and_transform_paths_are_exact_or_honest_bounds(name):
    _seeded()
    path = EAGER_PATHS[name]()
    truth = path.truth()
    report = torchscan_dispatch.measure_flops(path.run, track_modules=False)
    assert_honest(report, truth)
    if path.exact:
        assert report["total"]["known_value"] == truth, report


def test_functorch_counts_equal_flop_counter_mode_operator_for_operator():
    _seeded()
    xs, w = torch.randn(4, 8, 32), torch.randn(16, 32)
    run = lambda: torch.vmap(lambda x: (x @ w.T).relu() @ w)(xs)  # noqa: E731
    with FlopCounterMode(display=False) as mode:
        run()
    expected = {str(op): n for op, n in mode.get_flop_counts()["Global"].items()}
    assert expected == torchscan_dispatch.measure_flops(run, track_modules=False)["by_operator"]


@pytest.mark.parametrize("name", ["jacobian_vectorized", "hessian_vectorized", "grads_batched"])
def test_legacy_vmap_counts_equal_flop_counter_mode_operator_for_operator(name):
    """The physical calls of the legacy vmap, as FlopCounterMode sees them
    below the Batched key: the same operators and the same counts."""
    _seeded()
    run = EAGER_PATHS[name]().run
    with FlopCounterMode(display=False) as mode:
        run()
    expected = {str(op): n for op, n in mode.get_flop_counts()["Global"].items()}
    assert expected, "FlopCounterMode counted nothing: the case proves nothing"
    assert torchscan_dispatch.measure_flops(run, track_modules=False)["by_operator"] == expected


def test_a_subclass_with_no_dense_work_is_not_a_silent_zero():
    """A __torch_dispatch__ subclass that computes through a kernel the key
    cannot see still shows its calls: the dense calls it makes are counted."""
    _seeded()
    nt = torch.nested.nested_tensor([torch.randn(2, 8), torch.randn(3, 8)], layout=torch.jagged)
    report = torchscan_dispatch.measure_flops(lambda: (nt * 2).sin(), track_modules=False)
    seen = set(report["by_operator"]) | set(report["ignored_operators"])
    seen |= {d.get("operator") for d in report["diagnostics"]}
    assert {"aten.mul", "aten.sin"} <= seen, report
    assert report["total"]["status"] == "partial"


# --- torch.compile ---------------------------------------------------------


@pytest.fixture
def fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def measure_without_recompiling(workload: Callable[[], object], **options) -> dict:
    """Measures with Dynamo set to fail on any recompilation."""
    with torch._dynamo.config.patch(error_on_recompile=True):
        return torchscan_dispatch.measure_flops(workload, **options)


def _issue_mlp() -> nn.Module:
    return nn.Sequential(nn.Linear(256, 512), nn.GELU(), nn.Linear(512, 256), nn.LayerNorm(256))


def test_compiled_inference_counts_exactly_without_recompiling(fresh_dynamo):
    _seeded()
    model, x = _issue_mlp(), torch.randn(64, 256)
    compiled = torch.compile(model)
    with torch.no_grad():
        compiled(x)  # compile first, unmeasured
        report = measure_without_recompiling(lambda: compiled(x), track_modules=False)
        warm = measure_without_recompiling(lambda: compiled(x), track_modules=False)
        compiled(x)  # and unmeasured again: still no recompilation
    truth = 2 * mm(64, 256, 512)
    assert truth == 33_554_432
    assert report["total"]["known_value"] == truth
    assert warm["total"] == report["total"]
    assert_honest(report, truth)  # partial: GELU and LayerNorm have no formula


def test_measure_first_training_step_counts_forward_and_backward(fresh_dynamo):
    _seeded()
    model, x = _mlp(), torch.randn(8, 32, requires_grad=True)
    compiled = torch.compile(model)
    step = lambda m: m(x).sum().backward()  # noqa: E731
    first = torchscan_dispatch.measure_flops(lambda: step(compiled), track_modules=False)
    with torch._dynamo.config.patch(error_on_recompile=True):
        step(compiled)
        warm = torchscan_dispatch.measure_flops(lambda: step(compiled), track_modules=False)
    truth = fcm_total(lambda: step(model))
    assert first["total"]["known_value"] == truth
    assert warm["total"]["known_value"] == truth
    assert_honest(first, truth)


def test_compiled_graph_with_a_graph_break(fresh_dynamo):
    _seeded()
    model, x = _mlp(), torch.randn(8, 32)
    w = torch.randn(16, 32)

    def f(x):
        y = model(x)
        torch._dynamo.graph_break()
        return (y @ w).relu()

    compiled = torch.compile(f)
    compiled(x)
    report = measure_without_recompiling(lambda: compiled(x), track_modules=False)
    truth = fcm_total(lambda: f(x))
    assert report["total"]["known_value"] == truth
    assert_honest(report, truth)


def test_an_integer_beyond_int64_in_a_compiled_graph_is_no_size(fresh_dynamo):
    # The graph's spec reads integers as int64 (compiled_graph_tally.h); a
    # larger constant is described as a value no formula reads, so the
    # graph's other work is still counted and the workload runs on.
    _seeded()
    x, w = torch.randn(8, 32), torch.randn(32, 16)
    f = lambda x: (x @ w) * 2**63  # noqa: E731
    compiled = torch.compile(f)
    compiled(x)
    report = measure_without_recompiling(lambda: compiled(x), track_modules=False)
    truth = fcm_total(lambda: f(x))
    assert truth == mm(8, 32, 16)
    assert report["total"]["known_value"] == truth
    assert_honest(report, truth)


def test_legacy_vmap_in_a_skipped_frame_counts_the_physical_calls(fresh_dynamo):
    """A frame Dynamo skips runs eagerly inside the compiled call, where the
    hidden-region observer counts: it follows NOTE [Legacy vmap] too."""
    _seeded()
    w, x = torch.randn(16, 32), torch.randn(32)

    @torch._dynamo.disable
    def jacobian(a):
        return torch.autograd.functional.jacobian(lambda v: (v @ w.T).sin(), a, vectorize=True)

    compiled = torch.compile(lambda a: jacobian(a.sin()) * 2)
    compiled(x)
    report = measure_without_recompiling(lambda: compiled(x), track_modules=False)
    truth = mm(1, 32, 16) + mm(16, 16, 32)
    assert report["by_operator"] == {"aten.mm": truth}
    assert_honest(report, truth)


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_other_backends_are_counted_as_the_eager_code_they_run(fresh_dynamo, backend):
    _seeded()
    model, x = _mlp(), torch.randn(8, 32, requires_grad=True)
    compiled = torch.compile(model, backend=backend)
    step = lambda m: m(x).sum().backward()  # noqa: E731
    step(compiled)
    report = measure_without_recompiling(lambda: step(compiled), track_modules=False)
    truth = fcm_total(lambda: step(model))
    assert report["total"]["known_value"] == truth
    assert_honest(report, truth)


def test_dynamic_shapes_count_each_size_exactly(fresh_dynamo):
    _seeded()
    model = _mlp()
    compiled = torch.compile(model, dynamic=True)
    compiled(torch.randn(4, 32))
    for rows in (5, 11):
        x = torch.randn(rows, 32)
        report = measure_without_recompiling(lambda: compiled(x), track_modules=False)
        assert report["total"]["known_value"] == mm(rows, 32, 64) + mm(rows, 64, 16)


def test_max_autotune_cpu_gemm_template_is_counted(fresh_dynamo):
    """The CPU GEMM template runs the products with no dispatcher call."""
    _seeded()
    import torch._inductor.config as inductor_config

    model, x = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 32)).eval(), torch.randn(16, 64)
    with inductor_config.patch(max_autotune=True, max_autotune_gemm_backends="CPP,ATEN"), torch.no_grad():
        compiled = torch.compile(model)
        compiled(x)
        report = measure_without_recompiling(lambda: compiled(x), track_modules=False)
    truth = mm(16, 64, 64) + mm(16, 64, 32)
    assert report["total"]["known_value"] == truth
    assert_honest(report, truth)


@pytest.mark.parametrize("layer", ["linear", "conv"])
def test_freezing_packed_operators_are_counted(fresh_dynamo, layer):
    _seeded()
    import torch._inductor.config as inductor_config

    if layer == "linear":
        model, x = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 32)).eval(), torch.randn(16, 64)
    else:
        model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 4, 3)).eval()
        x = torch.randn(2, 3, 16, 16)
    with inductor_config.patch(freezing=True), torch.no_grad():
        compiled = torch.compile(model)
        compiled(x)
        report = measure_without_recompiling(lambda: compiled(x), track_modules=False)
        truth = fcm_total(lambda: model(x))
    assert report["total"]["known_value"] == truth
    assert_honest(report, truth)


def test_compiled_cond_counts_the_branch_that_ran(fresh_dynamo):
    _seeded()
    a, b = nn.Linear(32, 32), nn.Linear(32, 16)

    def f(x):
        return torch.cond(x.sum() > 0, lambda x: a(x)[:, :16].contiguous(), lambda x: b(x), (x,))

    compiled = torch.compile(f)
    positive = torch.randn(8, 32).abs()
    compiled(positive)
    for x, truth in ((positive, mm(8, 32, 32)), (-positive, mm(8, 32, 16))):
        report = measure_without_recompiling(lambda: compiled(x), track_modules=False)
        assert report["total"]["known_value"] == truth
        assert_honest(report, truth)


def test_compiled_while_loop_counts_every_iteration(fresh_dynamo):
    from torch._higher_order_ops.while_loop import while_loop

    _seeded()
    w = torch.randn(16, 16)

    def f(i, x):
        return while_loop(lambda i, x: i < 3, lambda i, x: (i + 1, x @ w), (i, x))

    compiled = torch.compile(f)
    start, x = torch.tensor(0), torch.randn(4, 16)
    compiled(start, x)
    report = measure_without_recompiling(lambda: compiled(start, x), track_modules=False)
    truth = 3 * mm(4, 16, 16)
    assert report["total"]["known_value"] == truth
    assert_honest(report, truth)


def test_eager_flex_attention(fresh_dynamo):
    import warnings

    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    _seeded()
    q, k, v = (torch.randn(1, 2, 64, 16) for _ in range(3))
    block_mask = create_block_mask(lambda b, h, q_idx, kv_idx: q_idx >= kv_idx, 1, 2, 64, 64, device="cpu")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "called without torch.compile()"
        report = torchscan_dispatch.measure_flops(lambda: flex_attention(q, k, v, block_mask=block_mask))
    # The dense kernel's Q @ K^T and scores @ V for each of 1 * 2 heads.
    truth = 2 * (mm(64, 16, 64) + mm(64, 64, 16))
    assert report["by_operator"] == {"aten.bmm": truth}
    assert_honest(report, truth)
    # The mask-aware count: 64 * 65 / 2 of 64 * 64 pairs per head.
    mask_aware, total = report["mask_aware"], report["total"]
    assert mask_aware["diagnostics"] == [] and mask_aware["status"] == total["status"]
    known = mask_aware["value"] if mask_aware["value"] is not None else mask_aware["known_value"]
    executed = total["value"] if total["value"] is not None else total["known_value"]
    assert known == executed - truth // (64 * 64) * (64 * 64 - 64 * 65 // 2)


def test_compiled_flex_attention(fresh_dynamo):
    from torch.nn.attention.flex_attention import flex_attention

    _seeded()
    q, k, v = (torch.randn(1, 2, 64, 16) for _ in range(3))
    compiled = torch.compile(flex_attention)
    compiled(q, k, v)
    report = measure_without_recompiling(lambda: compiled(q, k, v), track_modules=False)
    # Q @ K^T and scores @ V for each of 1 * 2 heads.
    truth = 2 * (mm(64, 16, 64) + mm(64, 64, 16))
    assert report["by_operator"] == {"higher_order.flex_attention": truth}
    assert_honest(report, truth)


def test_custom_operator_in_a_compiled_graph_is_named(fresh_dynamo):
    @torch.library.custom_op("tstest::opaque_product", mutates_args=())
    def opaque_product(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a @ b

    @opaque_product.register_fake
    def _(a, b):
        return a.new_empty(a.shape[0], b.shape[1])

    x, w = torch.randn(8, 32), torch.randn(32, 16)
    compiled = torch.compile(lambda x: opaque_product(x, w).relu())
    compiled(x)
    report = measure_without_recompiling(lambda: compiled(x), track_modules=False)
    assert_honest(report, mm(8, 32, 16))
    assert "tstest.opaque_product" in {d.get("operator") for d in report["diagnostics"]}


def test_compiled_by_module_matches_flop_counter_mode_labels(fresh_dynamo):
    """FlopCounterMode makes Dynamo run compiled modules eagerly, so its
    by_module on the compiled module is the truth our compiled run must give."""
    _seeded()
    model, x = _mlp(), torch.randn(8, 32)
    compiled = torch.compile(model)
    compiled(x)
    report = measure_without_recompiling(lambda: compiled(x))
    assert report["by_module"] == fcm_by_module(lambda: compiled(x))


def test_model_compile_by_module(fresh_dynamo):
    _seeded()
    model, x = _mlp(), torch.randn(8, 32)
    expected = fcm_by_module(lambda: model(x))
    model.compile()
    model(x)
    assert measure_without_recompiling(lambda: model(x))["by_module"] == expected


def test_compiled_function_called_inside_a_module_keeps_module_hooks(fresh_dynamo):
    """Module hooks run for eager modules around compiled code, and our hooks
    never cause graph breaks inside it."""
    _seeded()
    model, x = _mlp(), torch.randn(8, 32)
    compiled = torch.compile(model, fullgraph=True)  # a graph break would raise
    compiled(x)
    report = measure_without_recompiling(lambda: compiled(x))
    assert report["total"]["known_value"] == fcm_total(lambda: model(x))


# --- host safety of compiled code ------------------------------------------


@pytest.mark.parametrize(
    "name, fill",
    [
        ("masked_fill -inf", lambda x: x.masked_fill(x > 0.5, float("-inf")).softmax(-1)),
        ("clamp max=inf", lambda x: torch.clamp(x, min=float("-inf"), max=float("inf"))),
        ("nan_to_num", lambda x: torch.nan_to_num(x / 0.0, posinf=1e30, neginf=float("-inf"))),
        ("complex scalar", lambda x: (x * (1 + 2j)).real),
        ("full of nan", lambda x: x + torch.full((4, 4), float("nan")).nan_to_num()),
    ],
)
def test_non_finite_and_unusual_graph_constants_are_counted(fresh_dynamo, name, fill):
    """A graph constant JSON cannot hold as a number (infinities, NaN,
    complex) is described, not a broken measurement."""
    _seeded()
    w = torch.randn(4, 4)

    def f(x):
        return fill(x) @ w

    compiled = torch.compile(f)
    x = torch.rand(4, 4)
    compiled(x)
    report = measure_without_recompiling(lambda: compiled(x), track_modules=False)
    assert report["by_operator"].get("aten.mm") == mm(4, 4, 4), report
    assert not [d for d in report["diagnostics"] if d["code"] == "unseen_work"], report
    assert_honest(report, fcm_total(lambda: f(x)))


@pytest.mark.parametrize(
    "name, f, shapes",
    [
        ("linear, one row", lambda x, w, b: nn.functional.linear(x, w, b), [(1, 3), (4, 3), (4,)]),
        ("linear, small", lambda x, w, b: nn.functional.linear(x, w, b), [(3, 3), (4, 3), (4,)]),
        ("mm, row by column", lambda a, b: a @ b, [(1, 5), (5, 1)]),
        ("mm, column by row", lambda a, b: a @ b, [(6, 1), (1, 2)]),
        ("bmm, outer products", torch.bmm, [(2, 3, 1), (2, 1, 4)]),
        ("bmm, dot products", torch.bmm, [(2, 1, 7), (2, 7, 1)]),
        ("linear training, one row", lambda x, w, b: nn.functional.linear(x, w, b).sum(), [(1, 3), (4, 3), (4,)]),
    ],
)
def test_products_inductor_decomposes_count_as_eager(fresh_dynamo, name, f, shapes):
    """Inductor rewrites small matrix products into a multiply and a sum
    before any post-grad pass: counted as the product, as eager counts it."""
    _seeded()
    args = [torch.randn(*shape, requires_grad="training" in name) for shape in shapes]

    def run(function):
        out = function(*args)
        if "training" in name:
            out.backward()

    compiled = torch.compile(f)
    run(compiled)
    report = measure_without_recompiling(lambda: run(compiled), track_modules=False)
    eager = torchscan_dispatch.measure_flops(lambda: run(f), track_modules=False)
    assert report["by_operator"] == eager["by_operator"]
    assert report["total"] == eager["total"]
    # Training sums the output first: aten.sum has no formula (partial).
    known = eager["total"]["value"] if eager["total"]["status"] == "complete" else eager["total"]["known_value"]
    assert known == fcm_total(lambda: run(f))


def test_freezing_keeps_packed_products_that_came_from_a_product(fresh_dynamo):
    """A node whose original is a product but that is no piece of a rewrite
    (freezing's mkl::_mkl_linear) is described as itself."""
    _seeded()
    import torch._inductor.config as inductor_config

    model, x = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 32)).eval(), torch.randn(1, 64)
    with inductor_config.patch(freezing=True), torch.no_grad():
        compiled = torch.compile(model)
        compiled(x)
        report = measure_without_recompiling(lambda: compiled(x), track_modules=False)
        truth = fcm_total(lambda: model(x))
    assert report["total"]["known_value"] == truth == mm(1, 64, 64) + mm(1, 64, 32)


def _compiled_case(kind: str):
    """(compiled callable, eager callable) for one measured-first case."""
    model = _mlp()
    x = torch.randn(8, 32)
    if kind == "module":
        compiled = torch.compile(model)
        return (lambda: compiled(x)), (lambda: model(x))
    if kind == "module training":
        compiled = torch.compile(model)
        return (lambda: compiled(x).sum().backward()), (lambda: model(x).sum().backward())
    if kind == "function":

        def f(inputs):
            return model(inputs).relu()

        compiled = torch.compile(f)
        return (lambda: compiled(x)), (lambda: f(x))
    compiled = torch.compile(model, mode="max-autotune-no-cudagraphs")
    return (lambda: compiled(x)), (lambda: model(x))


@pytest.mark.parametrize("kind", ["module", "module training", "function", "max-autotune-no-cudagraphs"])
@pytest.mark.parametrize("track_modules", [True, False])
def test_measuring_the_compiling_call_causes_no_recompilation(fresh_dynamo, kind, track_modules):
    """Measured first (Dynamo traces while the measurement's module hooks
    exist), then unmeasured and measured again: never a recompilation."""
    _seeded()
    compiled, eager = _compiled_case(kind)
    first = torchscan_dispatch.measure_flops(compiled, track_modules=track_modules)
    with torch._dynamo.config.patch(error_on_recompile=True):
        compiled()
        again = torchscan_dispatch.measure_flops(compiled, track_modules=track_modules)
        compiled()
    truth = fcm_total(eager)
    for report in (first, again):
        assert_honest(report, truth)
    assert again["by_operator"] == first["by_operator"]
    assert again["by_module"] == first["by_module"]
    if track_modules and kind != "function":
        assert again["by_module"]


def test_a_program_with_its_own_global_hooks_does_not_recompile(fresh_dynamo):
    """With a global hook of the program's own, Dynamo guards on the hook
    dicts at every call: our hooks are hidden from those guards too."""
    _seeded()
    # A hook with no state of its own: Dynamo guards on what a traced hook
    # reads, and a recompilation caused by that would be the program's.
    handle = torch.nn.modules.module.register_module_forward_hook(lambda m, a, o: None)
    try:
        model, x = _mlp(), torch.randn(8, 32)
        compiled = torch.compile(model)
        compiled(x)
        with torch._dynamo.config.patch(error_on_recompile=True):
            report = torchscan_dispatch.measure_flops(lambda: compiled(x))
            compiled(x)
        hooks = dict(torch.nn.modules.module._global_forward_hooks)
    finally:
        handle.remove()
    assert report["total"]["known_value"] == fcm_total(lambda: model(x))
    assert list(hooks) == [handle.id]  # ours are gone, the program's kept


def test_measuring_a_compiled_module_warns_only_about_the_programs_hooks(fresh_dynamo):
    """OptimizedModule warns while global module hooks exist: ours (module
    tracking) must not make it warn, nor raise under warnings-as-errors;
    the program's own global hook still does."""
    import warnings

    _seeded()
    model, x = _mlp(), torch.randn(8, 32)
    compiled = torch.compile(model)
    compiled(x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        report = torchscan_dispatch.measure_flops(lambda: compiled(x))
    assert report["total"]["known_value"] == fcm_total(lambda: model(x))
    handle = torch.nn.modules.module.register_module_forward_hook(lambda m, a, o: None)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            torchscan_dispatch.measure_flops(lambda: compiled(x))
    finally:
        handle.remove()
    assert any("global hooks on modules" in str(w.message) for w in caught)


_LOCAL_HOOK_SCRIPT = textwrap.dedent(
    """
    import json, sys, torch
    from torch.utils.flop_counter import FlopCounterMode
    if {import_first}:
        import torchscan_dispatch
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv1d(3, 4, 3), torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(24, 5))
    # A hook of the module's own (not a global one): Dynamo then traces
    # Module._call_impl's slow path, which iterates the global hook dicts.
    getattr(model[{hooked}], "register_{kind}")({hook})
    x = torch.randn(2, 3, 8)
    compiled = torch.compile(model)
    step = lambda: compiled(x).sum().backward()
    if not {import_first}:
        step()  # compiled before the library is loaded
        import torchscan_dispatch
    reports = []
    for index, call in enumerate({calls!r}):
        with torch._dynamo.config.patch(error_on_recompile=index > 0 or not {import_first}):
            if call == "m":
                reports.append(torchscan_dispatch.measure_flops(step))
            else:
                step()
    with FlopCounterMode(display=False) as mode:
        model(x).sum().backward()
    print(json.dumps({{"totals": [r["total"]["known_value"] for r in reports], "truth": mode.get_total_flops(),
                      "modules": [sorted(r["by_module"]) for r in reports],
                      "unseen": [[d["code"] for d in r["diagnostics"] if d["code"] == "unseen_work"] for r in reports]}}))
    """
)


@pytest.mark.parametrize(
    ("import_first", "kind", "hooked", "calls"),
    [
        (True, "forward_pre_hook", 0, "mumum"),
        (True, "forward_hook", 3, "umumu"),
        (False, "forward_pre_hook", 3, "mumu"),
    ],
)
def test_a_module_with_hooks_of_its_own_does_not_recompile(import_first, kind, hooked, calls):
    """A module's own hook makes Dynamo guard on the (empty) global hook
    dicts' keys: our hooks are hidden from those guards at every compiled
    call, also for frames compiled before the library was loaded. Fresh
    processes, since the guard watch's finding lasts the process."""
    from reliability_support import library_environment

    hook = "lambda module, args: None" if kind == "forward_pre_hook" else "lambda module, args, out: None"
    script = _LOCAL_HOOK_SCRIPT.format(import_first=import_first, kind=kind, hooked=hooked, hook=hook, calls=calls)
    done = subprocess.run(
        [sys.executable, "-c", script], env=library_environment(), capture_output=True, text=True, timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    if not import_first:  # graphs compiled without the library carry no tally: named, not counted
        assert result["totals"] == [0] * calls.count("m"), result
        assert all(result["unseen"]), result
        return
    assert result["totals"] == [result["truth"]] * calls.count("m"), result
    # FlopCounterMode's labels of a torch.compile'd module: OptimizedModule._orig_mod.3
    assert all(any(label.endswith("._orig_mod.3") for label in modules) for modules in result["modules"]), result


_ESCAPE_HATCH_SCRIPT = textwrap.dedent(
    """
    import json, torch
    import torchscan_dispatch
    import torch._dynamo.eval_frame as eval_frame
    import torch._inductor.config as inductor_config
    from torch._inductor.output_code import CompiledFxGraph
    torch.manual_seed(0)
    model, x = torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.ReLU()), torch.randn(4, 16)
    compiled = torch.compile(model)
    compiled(x)
    idle = (inductor_config.post_grad_custom_pre_pass is None and type(eval_frame.torch) is type(torch)
            and not hasattr(CompiledFxGraph.__call__, "_torchscan_wrapped"))
    report = torchscan_dispatch.measure_flops(lambda: compiled(x))
    after = (inductor_config.post_grad_custom_pre_pass is None and type(eval_frame.torch) is type(torch)
             and not hasattr(CompiledFxGraph.__call__, "_torchscan_wrapped"))
    print(json.dumps({"idle": idle, "after": after, "total": report["total"],
                      "unseen": [d["message"] for d in report["diagnostics"] if d["code"] == "unseen_work"],
                      "enabled": torchscan_dispatch.compiler_integration_enabled()}))
    """
)


def test_the_escape_hatch_keeps_the_library_out_of_the_compiler():
    """TORCHSCAN_DISPATCH_COMPILER=off: no pass and no patch while nothing is
    measured; a measured compiled call is unseen work, never a guess."""
    from reliability_support import library_environment

    env = dict(library_environment(), TORCHSCAN_DISPATCH_COMPILER="off")
    done = subprocess.run(
        [sys.executable, "-c", _ESCAPE_HATCH_SCRIPT], env=env, capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["idle"] and result["after"], result
    assert result["enabled"] is False
    assert result["total"]["status"] == "partial"
    assert result["total"]["known_value"] == 0
    assert any("TORCHSCAN_DISPATCH_COMPILER=off" in message for message in result["unseen"]), result


def test_set_compiler_integration_takes_the_pass_out_and_puts_it_back(fresh_dynamo):
    import torch._inductor.config as inductor_config

    def ours():
        passes = inductor_config.post_grad_custom_pre_pass or []
        return [p for p in passes if type(p).__name__ == "TallyPass"]

    assert ours()
    torchscan_dispatch.set_compiler_integration(False)
    try:
        assert not torchscan_dispatch.compiler_integration_enabled()
        assert not ours()
        model, x = _mlp(), torch.randn(8, 32)
        compiled = torch.compile(model)
        compiled(x)
        report = measure_without_recompiling(lambda: compiled(x), track_modules=False)
        assert report["total"]["status"] == "partial"
        assert [d["code"] for d in report["diagnostics"]] == ["unseen_work"]
        assert not ours()
    finally:
        torchscan_dispatch.set_compiler_integration(True)
    assert ours()
    with pytest.raises(TypeError, match="enabled must be a bool"):
        torchscan_dispatch.set_compiler_integration("off")


# --- compilation caches and processes ---------------------------------------

_CACHE_SCRIPT = textwrap.dedent(
    """
    import json, sys, torch
    {preamble}
    from torch._dynamo.utils import counters
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 16))
    x = torch.randn(8, 32)
    compiled = torch.compile(model)
    compiled(x)
    {measure}
    print(json.dumps({{"total": report["total"], "diagnostics": [d["code"] for d in report["diagnostics"]],
                      "fx_cache_hits": counters["inductor"]["fxgraph_cache_hit"]}}))
    """
)


def _run_script(cache_dir: str, preamble: str, measure: str) -> dict:
    import json

    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=cache_dir, TORCHINDUCTOR_FX_GRAPH_CACHE="1")
    script = _CACHE_SCRIPT.format(preamble=preamble, measure=measure)
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=900, check=False
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


_IMPORT = "import torchscan_dispatch"
_MEASURE = "report = torchscan_dispatch.measure_flops(lambda: compiled(x), track_modules=False)"


def test_counts_survive_a_compilation_cache_hit_in_a_second_process(tmp_path):
    truth = mm(8, 32, 64) + mm(8, 64, 16)
    first = _run_script(str(tmp_path), _IMPORT, _MEASURE)
    second = _run_script(str(tmp_path), _IMPORT, _MEASURE)
    assert second["fx_cache_hits"] >= 1, second
    for run in (first, second):
        assert run["total"]["known_value"] == truth, run


def test_code_compiled_before_the_package_was_loaded_is_named_not_zero(tmp_path):
    """A graph compiled before torchscan_dispatch was imported carries no
    tally: the report says so (partial), never a complete 0."""
    measure = f"{_IMPORT}\n{_MEASURE}"
    result = _run_script(str(tmp_path), "", measure)
    assert result["total"]["status"] == "partial", result
    assert result["total"]["known_value"] <= mm(8, 32, 64) + mm(8, 64, 16)
    assert "unseen_work" in result["diagnostics"], result


# by_module under functorch transforms and with values the native module
# hooks decline (python/operators/module_scope_hooks.cc hands them to
# Python's gradient hooks): the labels and counts must still be
# FlopCounterMode's, forward and backward.
class _DictOutput(nn.Module):
    def __init__(self):
        super().__init__()
        self.left, self.right = nn.Linear(8, 8), nn.Linear(8, 4)

    def forward(self, x):
        return {"left": self.left(x), "right": self.right(x)}


class _Tagged(torch.Tensor):
    pass


def _by_module_workloads() -> dict[str, Callable[[], object]]:
    _seeded()
    mlp = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    params = {k: v.detach() for k, v in mlp.named_parameters()}
    xs = torch.randn(5, 8)
    loss = lambda p, x: torch.func.functional_call(mlp, p, (x,)).pow(2).sum()  # noqa: E731
    ensemble = [nn.Linear(8, 4) for _ in range(3)]
    stacked, _ = torch.func.stack_module_state(ensemble)
    dict_model = _DictOutput()
    x = torch.randn(4, 8, requires_grad=True)
    return {
        "vmap_over_a_module": lambda: torch.vmap(mlp)(xs),
        "grad_of_a_module": lambda: torch.func.grad(loss)(params, xs[0]),
        "per_sample_gradients": lambda: torch.func.vmap(torch.func.grad(loss), in_dims=(None, 0))(params, xs),
        "model_ensembling": lambda: torch.vmap(lambda p: torch.func.functional_call(ensemble[0], p, (xs,)))(stacked),
        "dict_output_backward": lambda: sum(v.sum() for v in dict_model(x).values()).backward(),
        "tensor_subclass_backward": lambda: mlp(x.as_subclass(_Tagged)).sum().backward(),
    }


@pytest.mark.parametrize("name", sorted(_by_module_workloads()))
def test_by_module_equals_flop_counter_mode_on_transforms_and_declined_values(name):
    run = _by_module_workloads()[name]
    expected = fcm_by_module(run)
    assert expected, "FlopCounterMode attributed nothing: the case proves nothing"
    assert torchscan_dispatch.measure_flops(run)["by_module"] == expected


def test_crawl_of_a_model_with_a_compiled_submodule_is_honest(fresh_dynamo):
    """crawl_module's native layer hooks around a compiled submodule: every
    module still gets its layer record, the module formulas equal an eager
    crawl's, and the operator FLOPs are a true bound (exact if complete)."""
    _seeded()
    first, inner = nn.Linear(8, 8), nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 4))
    x = torch.randn(2, 8)
    eager = torchscan_dispatch.crawl_module(nn.Sequential(first, inner), args=(x,))
    compiled = torchscan_dispatch.crawl_module(nn.Sequential(first, torch.compile(inner)), args=(x,))
    paths = [layer["path"] for layer in compiled["layers"]]
    assert paths == ["", "0", "1", "1._orig_mod", "1._orig_mod.0", "1._orig_mod.1", "1._orig_mod.2"]
    assert compiled["layers"][1]["metrics"] == eager["layers"][1]["metrics"]
    assert compiled["totals"]["module_flops"] == eager["totals"]["module_flops"]
    # Two Linear(8, 8) and one Linear(8, 4) on 2 rows, as FlopCounterMode counts them.
    truth = 2 * mm(2, 8, 8) + mm(2, 8, 4)
    assert eager["operator_flops"]["total"]["known_value"] == truth  # relu is uncounted: partial
    assert_honest(compiled["operator_flops"], truth)


# Transforms that differentiate a module's input: every transform
# differentiates with autograd.grad with respect to leaves it creates, and
# PyTorch's register_multi_grad_hook (ModuleTracker's gradient hooks) raises
# for a leaf there, so FlopCounterMode fails on these workloads; ours take
# native gradient watches (NOTE [Gradient watches inside functorch
# transforms] in python/operators/module_scope_hooks.cc). The truth for the
# counts is FlopCounterMode on the same mathematics without modules, and for
# by_module FlopCounterMode on the same workload with the module's input
# moved off the leaf (`v * 1`: no FLOPs, and no leaf to ask about).
_DIFFERENTIATED_MODULE_TRANSFORMS = {
    "jacrev": lambda f, g, p, x: torch.func.jacrev(f)(x),
    "jacfwd": lambda f, g, p, x: torch.func.jacfwd(f)(x),
    "hessian": lambda f, g, p, x: torch.func.hessian(lambda v: f(v).sum())(x),
    "grad_of_the_input": lambda f, g, p, x: torch.func.grad(lambda v: f(v).sum())(x),
    "jacrev_of_functional_call": lambda f, g, p, x: torch.func.jacrev(g, argnums=(0, 1))(p, x),
    "autograd_jacobian_vectorized": lambda f, g, p, x: torch.autograd.functional.jacobian(f, x, vectorize=True),
}


def _differentiated_module(transform: str, training: bool, form: str) -> Callable[[], object]:
    """The transform of an MLP: `module` calls the modules, `shifted` calls
    them on `v * 1`, `functional` computes the same without modules."""
    _seeded()
    model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 4)).train(training)
    model.requires_grad_(training)
    params = {k: v.detach() for k, v in model.named_parameters()}
    x = torch.randn(8)

    def functional(p, v):
        hidden = torch.tanh(nn.functional.linear(v, p["0.weight"], p["0.bias"]))
        return nn.functional.linear(hidden, p["2.weight"], p["2.bias"])

    if form == "functional":
        f, g = (lambda v: functional(params, v)), functional
    else:
        shift = (lambda v: v * 1) if form == "shifted" else (lambda v: v)
        f = lambda v: model(shift(v))  # noqa: E731
        g = lambda p, v: torch.func.functional_call(model, p, (shift(v),))  # noqa: E731
    transform_fn = _DIFFERENTIATED_MODULE_TRANSFORMS[transform]
    return lambda: transform_fn(f, g, params, x)


@pytest.mark.parametrize("training", [True, False], ids=["train", "eval"])
@pytest.mark.parametrize("transform", sorted(_DIFFERENTIATED_MODULE_TRANSFORMS))
def test_transform_of_a_module_counts_as_without_modules(transform, training):
    with FlopCounterMode(display=False) as mode:
        _differentiated_module(transform, training, "functional")()
    truth = {str(op): n for op, n in mode.get_flop_counts()["Global"].items()}
    assert truth, "FlopCounterMode counted nothing: the case proves nothing"
    run = _differentiated_module(transform, training, "module")
    tracked = torchscan_dispatch.measure_flops(run)
    untracked = torchscan_dispatch.measure_flops(run, track_modules=False)
    assert tracked["by_operator"] == truth
    assert tracked["total"] == untracked["total"]
    assert_honest(tracked, sum(truth.values()))
    assert tracked["total"]["known_value"] == sum(truth.values())


@pytest.mark.parametrize("training", [True, False], ids=["train", "eval"])
@pytest.mark.parametrize("transform", sorted(_DIFFERENTIATED_MODULE_TRANSFORMS))
def test_transform_of_a_module_by_module_is_module_trackers(transform, training):
    expected = fcm_by_module(_differentiated_module(transform, training, "shifted"))
    assert {"Sequential", "Sequential.0", "Sequential.2"} <= set(expected), expected
    run = _differentiated_module(transform, training, "module")
    assert torchscan_dispatch.measure_flops(run)["by_module"] == expected


def test_jacrev_of_a_module_by_module_by_hand():
    """jacrev(model)(x): the forward once, then the vjp vmapped over the 4
    output basis vectors. As ModuleTracker: a module enters backward when its
    output's gradient is computed; the model's output is the backward's root,
    whose node PyTorch does not count as in the graph (as for
    `model(x).backward(g)` in eager), so Sequential and Sequential.2 get only
    their forward, and Linear(16, 4)'s input gradient is Global only."""
    run = _differentiated_module("jacrev", True, "module")
    report = torchscan_dispatch.measure_flops(run)
    forward_0, forward_2 = mm(1, 8, 16), mm(1, 16, 4)
    backward_0, backward_2 = mm(4, 16, 8), mm(4, 4, 16)
    assert report["by_module"] == {
        "Sequential": forward_0 + forward_2,
        "Sequential.0": forward_0 + backward_0,
        "Sequential.2": forward_2,
    }
    assert report["total"]["known_value"] == forward_0 + forward_2 + backward_0 + backward_2
