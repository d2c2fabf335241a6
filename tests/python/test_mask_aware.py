"""Mask-aware attention FLOPs: beside the executed count (FlopCounterMode's
formula, every (query, key) pair), the report's ``mask_aware`` count charges
attention only for the pairs its mask allows. Every expectation is computed
here, independently: allowed pairs by enumerating them (Python loops over
the broadcast mask, torch.tril sums), costs per pair by hand."""

import pytest
import torch
import torch.nn.functional as F

import torchscan_dispatch
from torchscan_dispatch import StepMeter

FORWARD = "aten._scaled_dot_product_flash_attention_for_cpu"
BACKWARD = "aten._scaled_dot_product_flash_attention_for_cpu_backward"


def forward_cost_per_pair(e, dv):
    # scores = q @ k^T (2*E per pair), out = scores @ v (2*Dv per pair).
    return 2 * e + 2 * dv


def backward_cost_per_pair(e, dv):
    # Recomputed scores (2E), grad scores (2Dv), grad v (2Dv), grad q (2E),
    # grad k (2E).
    return 6 * e + 4 * dv


def enumerate_allowed(allowed, b, h, l, s):
    """Counts allowed[bi, hi, i, j] over the broadcast [B, H, L, S], pair by pair."""
    full = allowed.expand(b, h, l, s).tolist()
    return sum(1 for bi in range(b) for hi in range(h) for i in range(l) for j in range(s) if full[bi][hi][i][j])


def causal_allowed(l, s):
    return torch.ones(l, s, dtype=torch.bool).tril()


def known(metric):
    return metric["value"] if metric["value"] is not None else metric["known_value"]


def attention_flops(report):
    return report["by_operator"].get(FORWARD, 0) + report["by_operator"].get(BACKWARD, 0)


def test_issue_example_causal_forward():
    # B=2, H=8, L=S=64, E=32: 2,080 of 4,096 pairs per head.
    q = torch.randn(2, 8, 64, 32)
    report = torchscan_dispatch.measure_flops(lambda: F.scaled_dot_product_attention(q, q, q, is_causal=True))
    assert report["total"]["status"] == "complete"
    assert report["total"]["value"] == 8_388_608
    assert int(causal_allowed(64, 64).sum()) == 2080
    assert report["mask_aware"]["status"] == "complete"
    assert report["mask_aware"]["value"] == 4_259_840
    assert report["mask_aware"]["diagnostics"] == []


def run_with_backward(q, k, v, **kwargs):
    q, k, v = (t.detach().requires_grad_() for t in (q, k, v))
    return torchscan_dispatch.measure_flops(lambda: F.scaled_dot_product_attention(q, k, v, **kwargs).sum().backward())


def check_counts(report, b, hq, l, s, e, dv, allowed, backward):
    """The executed attention FLOPs are the full square; the mask-aware count
    is the total less the disallowed pairs at the same cost per pair."""
    per_pair = forward_cost_per_pair(e, dv) + (backward_cost_per_pair(e, dv) if backward else 0)
    all_pairs = b * hq * l * s
    assert attention_flops(report) == per_pair * all_pairs
    # Elementwise work (the mask's conversion, the backward's sum) has no
    # formula: the total may be partial, and the mask-aware count with it.
    assert report["mask_aware"]["status"] == report["total"]["status"]
    assert report["mask_aware"]["diagnostics"] == []
    assert known(report["mask_aware"]) == known(report["total"]) - per_pair * (all_pairs - allowed)


@pytest.mark.parametrize("backward", [False, True])
@pytest.mark.parametrize(("l", "s"), [(16, 16), (8, 20), (20, 8)])
def test_causal_is_top_left_aligned(l, s, backward):
    torch.manual_seed(0)
    b, h, e, dv = 2, 3, 8, 8  # the CPU flash kernel wants E == Dv
    q, k, v = torch.randn(b, h, l, e), torch.randn(b, h, s, e), torch.randn(b, h, s, dv)
    allowed = b * h * sum(1 for i in range(l) for j in range(s) if j <= i)
    if backward:
        report = run_with_backward(q, k, v, is_causal=True)
    else:
        report = torchscan_dispatch.measure_flops(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True))
    check_counts(report, b, h, l, s, e, dv, allowed, backward)


def boolean_mask(shape, seed):
    generator = torch.Generator().manual_seed(seed)
    mask = torch.rand(shape, generator=generator) > 0.4
    mask[..., 0] = True  # every query sees a key: no NaN rows
    return mask


MASK_SHAPES = [(12, 10), (2, 1, 12, 10), (1, 4, 12, 10), (2, 4, 12, 10), (2, 1, 1, 10)]


@pytest.mark.parametrize("backward", [False, True])
@pytest.mark.parametrize("shape", MASK_SHAPES)
def test_boolean_mask_counts_true_entries_broadcast(shape, backward):
    torch.manual_seed(1)
    b, h, l, s, e, dv = 2, 4, 12, 10, 8, 8
    q, k, v = torch.randn(b, h, l, e), torch.randn(b, h, s, e), torch.randn(b, h, s, dv)
    mask = boolean_mask(shape, seed=len(shape))
    allowed = enumerate_allowed(mask, b, h, l, s)
    if backward:
        report = run_with_backward(q, k, v, attn_mask=mask)
    else:
        report = torchscan_dispatch.measure_flops(lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=mask))
    check_counts(report, b, h, l, s, e, dv, allowed, backward)


@pytest.mark.parametrize("backward", [False, True])
def test_additive_mask_allows_every_finite_entry(backward):
    torch.manual_seed(2)
    b, h, l, s, e = 2, 2, 9, 11, 8
    q, k, v = torch.randn(b, h, l, e), torch.randn(b, h, s, e), torch.randn(b, h, s, e)
    blocked = boolean_mask((b, 1, l, s), seed=3).logical_not()
    blocked[..., 0] = False
    # A finite bias (even a large negative one) is allowed; -inf is not.
    mask = torch.randn(b, 1, l, s).masked_fill(blocked, float("-inf"))
    mask[0, 0, 0, 1] = -1e9 if not blocked[0, 0, 0, 1] else float("-inf")
    allowed = enumerate_allowed(mask != float("-inf"), b, h, l, s)
    if backward:
        report = run_with_backward(q, k, v, attn_mask=mask)
    else:
        report = torchscan_dispatch.measure_flops(lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=mask))
    check_counts(report, b, h, l, s, e, e, allowed, backward)


@pytest.mark.parametrize("backward", [False, True])
def test_grouped_query_causal_attention(backward):
    torch.manual_seed(3)
    b, hq, hkv, l, e = 2, 8, 2, 16, 8
    q, k, v = torch.randn(b, hq, l, e), torch.randn(b, hkv, l, e), torch.randn(b, hkv, l, e)
    allowed = b * hq * int(torch.tril(torch.ones(l, l)).sum())
    if backward:
        report = run_with_backward(q, k, v, is_causal=True, enable_gqa=True)
    else:
        report = torchscan_dispatch.measure_flops(
            lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        )
    check_counts(report, b, hq, l, l, e, e, allowed, backward)


@pytest.mark.parametrize("backward", [False, True])
def test_sliding_window_mask(backward):
    b, h, l, e, window = 1, 2, 24, 8, 5
    q, k, v = torch.randn(b, h, l, e), torch.randn(b, h, l, e), torch.randn(b, h, l, e)
    mask = torch.tensor([[i - window < j <= i for j in range(l)] for i in range(l)])
    allowed = b * h * sum(min(i + 1, window) for i in range(l))
    if backward:
        report = run_with_backward(q, k, v, attn_mask=mask)
    else:
        report = torchscan_dispatch.measure_flops(lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=mask))
    check_counts(report, b, h, l, l, e, e, allowed, backward)


def test_without_masks_mask_aware_equals_the_total():
    q, w = torch.randn(2, 4, 8, 16), torch.randn(16, 16)
    report = torchscan_dispatch.measure_flops(lambda: F.scaled_dot_product_attention(q, q, q) @ w)
    assert report["total"]["status"] == "complete"
    assert attention_flops(report) == 2 * 4 * 8 * 8 * forward_cost_per_pair(16, 16)
    assert {k: report["mask_aware"][k] for k in ("status", "value", "by_module", "diagnostics")} == {
        "status": "complete",
        "value": report["total"]["value"],
        "by_module": report["by_module"],
        "diagnostics": [],
    }


def test_mask_aware_by_module():
    class Attention(torch.nn.Module):
        def forward(self, x):
            return F.scaled_dot_product_attention(x, x, x, is_causal=True)

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = torch.nn.Linear(8, 8)
            self.attention = Attention()

        def forward(self, x):
            return self.attention(self.proj(x))

    b, h, l, e = 2, 4, 16, 8
    x = torch.randn(b, h, l, e)
    report = torchscan_dispatch.measure_flops(lambda: Block()(x))
    excluded = forward_cost_per_pair(e, e) * b * h * (l * l - int(causal_allowed(l, l).sum()))
    by_module = report["by_module"]
    assert report["mask_aware"]["by_module"] == {
        "Block": by_module["Block"] - excluded,
        "Block.proj": by_module["Block.proj"],
        "Block.attention": by_module["Block.attention"] - excluded,
    }


def test_causal_on_meta_is_counted_and_masks_on_meta_are_not_read():
    # The fused kernel itself (F.scaled_dot_product_attention takes the math
    # decomposition on meta, below).
    b, h, l, e = 2, 4, 16, 8
    q = torch.empty(b, h, l, e, device="meta")
    kernel = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu
    causal = torchscan_dispatch.measure_flops(lambda: kernel(q, q, q, 0.0, True))
    per_pair = forward_cost_per_pair(e, e)
    assert causal["by_operator"] == {FORWARD: per_pair * b * h * l * l}
    excluded = per_pair * b * h * (l * l - int(causal_allowed(l, l).sum()))
    assert causal["mask_aware"]["status"] == "complete"
    assert causal["mask_aware"]["value"] == causal["total"]["value"] - excluded

    mask = torch.empty(l, l, device="meta")
    masked = torchscan_dispatch.measure_flops(lambda: kernel(q, q, q, attn_mask=mask))
    assert masked["total"]["status"] == "complete"
    assert masked["mask_aware"]["status"] == "partial"
    assert masked["mask_aware"]["known_value"] == masked["total"]["value"] - masked["by_operator"][FORWARD]
    [diagnostic] = masked["mask_aware"]["diagnostics"]
    assert diagnostic["code"] == "attention_mask_not_read"
    assert diagnostic["operator"] == FORWARD
    assert "the mask is a meta tensor" in diagnostic["message"]

    # Through F.scaled_dot_product_attention, meta runs the math composite.
    composite = torchscan_dispatch.measure_flops(lambda: F.scaled_dot_product_attention(q, q, q, is_causal=True))
    assert composite["mask_aware"]["status"] == "partial"
    [diagnostic] = composite["mask_aware"]["diagnostics"]
    assert diagnostic["operator"] == "aten._scaled_dot_product_attention_math"


def test_math_decomposition_is_partial_and_named():
    # Dropout sends CPU attention through the math composite, whose products
    # are plain bmm calls.
    q = torch.randn(1, 2, 8, 4)
    report = torchscan_dispatch.measure_flops(
        lambda: F.scaled_dot_product_attention(q, q, q, is_causal=True, dropout_p=0.5)
    )
    assert "aten.bmm" in report["by_operator"]
    assert report["mask_aware"]["status"] == "partial"
    [diagnostic] = report["mask_aware"]["diagnostics"]
    total = known(report["total"])
    assert diagnostic["operator"] == "aten._scaled_dot_product_attention_math"
    assert "math decomposition" in diagnostic["message"]
    # Its forward products (2*B*H*L*S*(E+Dv)) are left out: a lower bound.
    assert report["mask_aware"]["known_value"] == total - 2 * 1 * 2 * 8 * 8 * (4 + 4)


def test_step_meter_reports_mask_aware_flops():
    q = torch.randn(2, 8, 64, 32)
    meter = StepMeter(peak_flops_per_second=1e12)
    with meter.step() as step:
        F.scaled_dot_product_attention(q, q, q, is_causal=True)
    assert step.flops == 8_388_608
    assert step.mask_aware_flops == 4_259_840
    assert step.mask_aware_complete
    assert step.mask_aware_model_flops == 4_259_840
    assert step.mask_aware_mfu == pytest.approx(step.mfu * 4_259_840 / 8_388_608)


@pytest.mark.parametrize("backward", [False, True])
def test_compiled_causal_is_counted_and_compiled_masks_are_partial(backward):
    torch._dynamo.reset()
    b, h, l, e = 1, 2, 16, 8
    per_pair = forward_cost_per_pair(e, e) + (backward_cost_per_pair(e, e) if backward else 0)

    def causal(q):
        out = F.scaled_dot_product_attention(q, q, q, is_causal=True)
        return out.sum().backward() if backward else out

    def masked(q, mask):
        out = F.scaled_dot_product_attention(q, q, q, attn_mask=mask)
        return out.sum().backward() if backward else out

    q = torch.randn(b, h, l, e, requires_grad=backward)
    mask = boolean_mask((l, l), seed=4)
    compiled_causal, compiled_masked = torch.compile(causal), torch.compile(masked)
    compiled_causal(q)  # compile outside the measurement
    compiled_masked(q, mask)
    report = torchscan_dispatch.measure_flops(lambda: compiled_causal(q))
    attention = sum(n for op, n in report["by_operator"].items() if "attention" in op)
    assert attention == per_pair * b * h * l * l, report["by_operator"]
    excluded = per_pair * b * h * (l * l - int(causal_allowed(l, l).sum()))
    assert report["mask_aware"]["status"] == report["total"]["status"]
    assert known(report["mask_aware"]) == known(report["total"]) - excluded

    report = torchscan_dispatch.measure_flops(lambda: compiled_masked(q, mask))
    attention = sum(n for op, n in report["by_operator"].items() if "attention" in op)
    assert attention == per_pair * b * h * l * l, report["by_operator"]
    assert report["mask_aware"]["status"] == "partial"
    assert report["mask_aware"]["known_value"] == known(report["total"]) - attention
    assert report["mask_aware"]["diagnostics"]
    assert all("compiled graph" in d["message"] for d in report["mask_aware"]["diagnostics"])
