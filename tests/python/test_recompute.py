"""The recompute split: hardware FLOPs (everything that ran) minus model
FLOPs (no recomputation) is exactly the recomputed FLOPs, which each test
computes on its own: FlopCounterMode on the recomputed region alone, run by
itself (docs/python.md, "Recomputed FLOPs")."""

import contextlib
import functools

import pytest
import torch
from torch import nn
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils import checkpoint as checkpointing
from torch.utils.checkpoint import CheckpointPolicy, checkpoint, create_selective_checkpoint_contexts
from torch.utils.flop_counter import FlopCounterMode

import torchscan_dispatch

MM = (torch.ops.aten.mm.default, torch.ops.aten.addmm.default)


def fcm(workload) -> int:
    """FlopCounterMode's total of `workload` run by itself."""
    with FlopCounterMode(display=False) as mode:
        workload()
    return mode.get_total_flops()


def fcm_by_operator(workload) -> dict:
    with FlopCounterMode(display=False) as mode:
        workload()
    return dict(mode.get_flop_counts()["Global"])


def measured(workload, **options):
    """(hardware FLOPs, recomputed FLOPs, the report) of one measured run."""
    with torchscan_dispatch.FlopCounter(**options) as counter:
        workload()
    report = counter.report()
    return counter.get_total_flops(), report.get("recomputed", {}).get("flops", 0), report


def mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 16))


def encoder_layer():
    torch.manual_seed(0)
    return nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, dropout=0.0, batch_first=True)


def block_input(block):
    shape = (8, 16) if isinstance(block, nn.Sequential) else (2, 6, 32)
    return torch.randn(*shape, requires_grad=True)


@pytest.fixture(autouse=True)
def whole_recomputation():
    # Without early stop a checkpoint recomputes its whole region, so the
    # region alone is the block's forward (early stop has its own test).
    # The math attention kernel: FlopCounterMode counts nothing for CPU
    # flash attention (we count it), and the independent count must see
    # every FLOP.
    with checkpointing.set_checkpoint_early_stop(False), sdpa_kernel(SDPBackend.MATH):
        yield


@pytest.mark.parametrize("make", [mlp, encoder_layer], ids=["mlp", "transformer_encoder_layer"])
@pytest.mark.parametrize("reentrant", [False, True], ids=["non_reentrant", "reentrant"])
@pytest.mark.parametrize("track_modules", [True, False])
def test_checkpointed_block_recomputes_its_forward(make, reentrant, track_modules):
    block = make()
    x = block_input(block)

    def step():
        checkpoint(block, x, use_reentrant=reentrant).sum().backward()

    hardware, recomputed, report = measured(step, track_modules=track_modules)
    region = fcm(lambda: block(x))  # the recomputed region alone
    assert region > 0
    assert recomputed == region
    assert hardware == fcm(step)
    assert hardware - recomputed == fcm(lambda: block(x).sum().backward())
    assert not any(label.startswith("phase:") for label in report["by_module"])


def test_recomputed_modules_are_attributed_as_in_flop_counter_mode():
    block = mlp()
    x = block_input(block)

    def step():
        checkpoint(block, x, use_reentrant=False).sum().backward()

    _, _, report = measured(step)
    with FlopCounterMode(display=False) as mode:
        step()
    expected = {name: sum(counts.values()) for name, counts in mode.get_flop_counts().items() if name != "Global"}
    assert report["by_module"] == expected


def block_with_products():
    torch.manual_seed(0)
    w1, w2, w3, b = torch.randn(16, 32), torch.randn(32, 32), torch.randn(32, 8), torch.randn(8)
    for tensor in (w1, w2, w3, b):
        tensor.requires_grad_()

    def block(x):
        h = torch.relu(x @ w1)  # mm
        h = torch.tanh(h @ w2)  # mm
        return torch.addmm(b, h, w3)  # addmm

    return block


def save_products(ctx, op, *args, **kwargs):
    return CheckpointPolicy.MUST_SAVE if op is torch.ops.aten.mm.default else CheckpointPolicy.PREFER_RECOMPUTE


def recompute_products(ctx, op, *args, **kwargs):
    return CheckpointPolicy.PREFER_RECOMPUTE if op in MM else CheckpointPolicy.MUST_SAVE


@pytest.mark.parametrize(
    ("policy", "recomputed_ops"),
    [(save_products, {torch.ops.aten.addmm}), (recompute_products, {torch.ops.aten.mm, torch.ops.aten.addmm})],
    ids=["saves_mm", "recomputes_matmuls"],
)
def test_selective_checkpointing_recomputes_what_the_policy_says(policy, recomputed_ops):
    block = block_with_products()
    x = torch.randn(8, 16, requires_grad=True)
    context_fn = functools.partial(create_selective_checkpoint_contexts, policy)

    def step():
        checkpoint(block, x, use_reentrant=False, context_fn=context_fn).sum().backward()

    hardware, recomputed, _ = measured(step)
    # The region alone: the block's forward, only the operators the policy
    # recomputes (the saved ones are served from SAC's cache, never run).
    counts = fcm_by_operator(lambda: block(x))
    region = sum(count for op, count in counts.items() if op in recomputed_ops)
    assert region > 0
    assert recomputed == region
    assert hardware == fcm(step)
    assert hardware - recomputed == fcm(lambda: block(x).sum().backward())


def test_nested_checkpoints_recompute_each_region():
    torch.manual_seed(0)
    inner_weights = torch.randn(32, 32, requires_grad=True)
    outer_weights = torch.randn(16, 32, requires_grad=True)

    def inner(h):
        return torch.tanh(h @ inner_weights)

    def outer(x, checkpointed=True):
        h = torch.relu(x @ outer_weights)
        h = checkpoint(inner, h, use_reentrant=False) if checkpointed else inner(h)
        return h @ inner_weights.T

    x = torch.randn(8, 16, requires_grad=True)

    def step():
        checkpoint(outer, x, use_reentrant=False).sum().backward()

    hardware, recomputed, _ = measured(step)
    # The outer region runs again (its inner checkpoint's forward with it),
    # then the inner region once more for its own saved tensors.
    h = torch.relu(x @ outer_weights).detach()
    regions = fcm(lambda: outer(x)) + fcm(lambda: inner(h))
    assert recomputed == regions
    assert hardware == fcm(step)
    assert hardware - recomputed == fcm(lambda: outer(x, checkpointed=False).sum().backward())


def test_early_stop_recomputes_only_what_the_backward_needs():
    block = mlp()
    x = block_input(block)

    def step():
        checkpoint(block, x, use_reentrant=False).sum().backward()

    with checkpointing.set_checkpoint_early_stop(True):
        hardware, recomputed, _ = measured(step)
        checkpointed = fcm(step)
    # The second layer's output is not needed by the backward: only the
    # first layer's product is recomputed.
    first = block[0]
    assert recomputed == fcm(lambda: first(x)) == 2 * 8 * 16 * 32
    assert hardware == checkpointed
    assert hardware - recomputed == fcm(lambda: block(x).sum().backward())


def test_no_recomputation_no_recomputed_member():
    block = mlp()
    x = block_input(block)
    step = lambda: block(x).sum().backward()  # noqa: E731
    hardware, recomputed, report = measured(step)
    assert "recomputed" not in report and recomputed == 0
    assert hardware == fcm(step)
    meter = torchscan_dispatch.StepMeter(peak_flops_per_second=1e12)
    with meter.step() as stats:
        step()
    assert stats.recomputed_flops == 0 and stats.model_flops == stats.flops == stats.hardware_flops == hardware
    assert stats.mfu == stats.hfu > 0
    assert "recompute" not in stats.flops_by_phase


def test_step_meter_gives_model_and_hardware_flops_mfu_and_hfu():
    block = mlp()
    x = block_input(block)
    peak = 2e9
    meter = torchscan_dispatch.StepMeter(peak_flops_per_second=peak)
    with meter.step() as stats:
        with stats.phase("forward"):
            loss = checkpoint(block, x, use_reentrant=False).sum()
        with stats.phase("backward"):
            loss.backward()
    forward = fcm(lambda: block(x))
    plain = fcm(lambda: block(x).sum().backward())
    assert stats.recomputed_flops == forward
    assert stats.flops == stats.hardware_flops == plain + forward
    assert stats.model_flops == plain
    # The backward phase holds the backward (plain - forward) and the
    # recomputation inside it (forward).
    assert stats.flops_by_phase == {"forward": forward, "backward": plain, "recompute": forward}
    assert stats.hfu == pytest.approx(stats.flops / stats.seconds / peak)
    assert stats.mfu == pytest.approx(stats.model_flops / stats.seconds / peak)
    assert stats.mfu / stats.hfu == pytest.approx(plain / (plain + forward))
    with meter.step() as stats:
        with pytest.raises(ValueError, match="measured by itself"):
            with stats.phase("recompute"):
                pass


def test_patches_exist_only_while_a_counter_is_open():
    originals = (
        checkpointing.__dict__["_run_fn_with_dynamo_disabled"],
        checkpointing.CheckpointFunction.__dict__["backward"],
        dict(checkpointing._CachedTorchDispatchMode.__dict__),
    )

    def current():
        return (
            checkpointing.__dict__["_run_fn_with_dynamo_disabled"],
            checkpointing.CheckpointFunction.__dict__["backward"],
            dict(checkpointing._CachedTorchDispatchMode.__dict__),
        )

    with torchscan_dispatch.FlopCounter():
        assert current()[0] is not originals[0]
        with torchscan_dispatch.FlopCounter():
            pass
        assert current()[0] is not originals[0]
    assert current() == originals


def test_an_unmeasured_checkpointed_step_is_unchanged_by_a_measured_one():
    block = mlp()
    x = block_input(block)
    context_fn = functools.partial(create_selective_checkpoint_contexts, save_products)

    def step():
        block.zero_grad()
        x.grad = None
        out = checkpoint(block, x, use_reentrant=False, context_fn=context_fn)
        out.sum().backward()
        return [out.detach(), x.grad, *(p.grad for p in block.parameters())]

    before = step()
    torchscan_dispatch.measure_flops(step)
    after = step()
    for a, b in zip(before, after, strict=True):
        assert torch.equal(a, b)


def backward_graph_products(graphs) -> int:
    """FLOPs of the matrix products in the captured backward graph, by hand
    from the nodes' shapes. The forward graph compiles at the first call,
    the backward graph at its first backward."""
    assert len(graphs) == 2
    flops = 0
    for node in graphs[1].nodes:
        if node.target is torch.ops.aten.mm.default:
            (m, k), (_, n) = (arg.meta["val"].shape for arg in node.args)
            flops += 2 * m * k * n
    return flops


def compiled_recompute_case(f, x, weights, **functorch_config):
    """(hardware, recomputed, the backward graph's product FLOPs) of a
    compiled training step of `f`."""
    import torch._functorch.config as functorch_config_module
    import torch._inductor.config as inductor_config

    torch._dynamo.reset()
    graphs = []

    def capture(graph):
        graphs.append(graph)

    compiled = torch.compile(f)
    with functorch_config_module.patch(**functorch_config), inductor_config.patch(post_grad_custom_post_pass=capture):
        compiled(x).backward()  # compiles the forward and the backward
        hardware, recomputed, report = measured(lambda: compiled(x).backward())
    assert "unseen_work" not in {d["code"] for d in report["diagnostics"]}
    return hardware, recomputed, backward_graph_products(graphs)


def two_layers():
    torch.manual_seed(0)
    w1, w2 = torch.randn(16, 32, requires_grad=True), torch.randn(32, 16, requires_grad=True)
    return (lambda x: torch.relu(x @ w1) @ w2), (w1, w2)


def eager_backward_only(f, x) -> int:
    loss = f(x).sum()
    return fcm(loss.backward)


def test_compiled_checkpoint_recomputes_in_the_backward_graph():
    block, weights = two_layers()
    x = torch.randn(8, 16, requires_grad=True)
    f = lambda x: checkpoint(block, x, use_reentrant=False).sum()  # noqa: E731
    hardware, recomputed, products = compiled_recompute_case(f, x, weights)
    # The partitioner recomputes the first product (the relu's input, which
    # the backward needs); the second one's output is not needed.
    region = fcm(lambda: x @ weights[0])
    assert products - eager_backward_only(block, x) == region  # the graph recomputes it
    assert recomputed == region
    assert hardware - recomputed == fcm(lambda: block(x).sum().backward())


def test_compiled_step_under_a_zero_activation_budget_recomputes_the_forward():
    torch.manual_seed(0)
    w1, w2 = torch.randn(16, 32, requires_grad=True), torch.randn(32, 16, requires_grad=True)
    f = lambda x: torch.tanh(torch.relu(x @ w1) @ w2).sum()  # noqa: E731
    x = torch.randn(8, 16, requires_grad=True)
    # No checkpoint: the min-cut partitioner, told to save no activation,
    # recomputes the whole forward (both products) in the backward graph.
    hardware, recomputed, products = compiled_recompute_case(f, x, (w1, w2), activation_memory_budget=0.0)
    region = fcm(lambda: f(x))
    backward = fcm(f(x).backward)
    assert products - backward == region
    assert recomputed == region
    assert hardware - recomputed == fcm(lambda: f(x).backward())
    # The default budget saves the products: nothing is recomputed.
    hardware, recomputed, products = compiled_recompute_case(f, x, (w1, w2))
    assert recomputed == 0 and products == backward
    assert hardware == fcm(lambda: f(x).backward())
