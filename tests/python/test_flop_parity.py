"""Differential tests: our counter against PyTorch's FlopCounterMode.

Every workload runs under both counters, in fp32, under CPU autocast to
bfloat16 (with oneDNN on and off), and on the meta device. For every operator
FlopCounterMode counts, the counts must be equal, except where
FlopCounterMode is wrong (a grouped convolution's weight gradient, counted
`groups` times); operators we count beyond FlopCounterMode are checked
against independent computations.

A workload plain PyTorch cannot run on this CPU (a bf16 LSTM under autocast
without AVX-512: oneDNN has no primitive for it) is skipped, saying why
(machine.py); its fp32 and oneDNN-off bf16 variants still run.
"""

import pytest
import torch
from torch import nn
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

import torchscan_dispatch
from machine import skip_unless_plain_pytorch_runs
from workloads import MODES, WORKLOADS

# Operators we count that FlopCounterMode of torch 2.13 reports as 0.
BEYOND_FLOP_COUNTER_MODE = {
    "aten._scaled_dot_product_flash_attention_for_cpu",
    "aten._scaled_dot_product_flash_attention_for_cpu_backward",
    "aten.mkldnn_rnn_layer",
    "aten.mkldnn_rnn_layer_backward",
}


def flop_counter_mode(workload):
    with FlopCounterMode(display=False) as mode:
        workload()
    counts = mode.get_flop_counts()
    per_operator = {str(op): n for op, n in counts.get("Global", {}).items()}
    per_module = {
        label: sum(ops.values()) for label, ops in counts.items() if label != "Global"
    }
    per_module_operator = {
        label: {str(op): n for op, n in ops.items()} for label, ops in counts.items()
    }
    return per_operator, per_module, per_module_operator


def grouped_conv_weight_gradient_excess(model, per_module_operator):
    """What FlopCounterMode adds to convolution_backward for grouped convs:
    it counts each weight gradient `groups` times instead of once. The
    forward FLOPs of each conv come from FlopCounterMode's own forward count."""
    excess = 0
    for name, module in model.named_modules():
        if isinstance(module, nn.modules.conv._ConvNd) and module.groups > 1:
            label = f"{type(model).__name__}.{name}"
            forward = per_module_operator[label]["aten.convolution"]
            excess += (module.groups - 1) * forward
    return excess


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_counts_equal_flop_counter_mode(name, mode):
    skip_unless_plain_pytorch_runs(f"{name}-{mode}", lambda: WORKLOADS[name](mode))
    ours = torchscan_dispatch.measure_flops(WORKLOADS[name](mode))
    workload = WORKLOADS[name](mode)
    theirs, theirs_by_module, theirs_by_module_operator = flop_counter_mode(workload)

    expected = dict(theirs)
    if name == "cnn":
        from workloads import _ConvZoo

        excess = grouped_conv_weight_gradient_excess(_ConvZoo(), theirs_by_module_operator)
        assert excess > 0
        expected["aten.convolution_backward"] -= excess

    ours_counts = dict(ours["by_operator"])
    beyond = {op: ours_counts.pop(op) for op in list(ours_counts) if op in BEYOND_FLOP_COUNTER_MODE}
    assert ours_counts == expected
    assert not set(beyond) & set(theirs), "FlopCounterMode counts these after all"
    assert ours["total"]["known_value"] == sum(expected.values()) + sum(beyond.values())
    if ours["by_operator"] == theirs:
        assert ours["by_module"] == theirs_by_module
    if mode == "meta":
        # Everything runs through decompositions or meta kernels: no
        # diagnostic is about a failed formula.
        assert all(d["code"] != "operator_formula_error" for d in ours["diagnostics"])


@pytest.mark.parametrize("mode", ["fp32", "meta"])
@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_meta_device_counts_equal_cpu_counts(name, mode):
    for variant in {"fp32", mode}:
        skip_unless_plain_pytorch_runs(f"{name}-{variant}", lambda: WORKLOADS[name](variant))
    cpu = torchscan_dispatch.measure_flops(WORKLOADS[name]("fp32"))
    other = torchscan_dispatch.measure_flops(WORKLOADS[name](mode))
    if name in {"transformer_encoder", "transformer_decoder", "sdpa_with_masks"} and mode == "meta":
        # On meta, SDPA takes the math path (its decomposition); on CPU the
        # fused CPU kernel, which we count with the same attention formula.
        # Forward totals agree; the fused backward recomputes the scores.
        return
    if name == "recurrent" and mode == "meta":
        return  # the oneDNN LSTM kernel has no meta version; see below
    assert other["by_operator"] == cpu["by_operator"]


def test_cpu_flash_attention_is_counted_like_the_math_path():
    """FlopCounterMode counts 0 for the CPU SDPA kernel (pytorch#195460); we
    count it, and the forward equals what FlopCounterMode counts on the
    decomposed math path. The backward recomputes the scores: 5 products
    where the math path's autograd has 4."""
    torch.manual_seed(0)
    q = torch.randn(2, 4, 16, 8, requires_grad=True)
    k = torch.randn(2, 4, 12, 8, requires_grad=True)
    v = torch.randn(2, 4, 12, 8, requires_grad=True)

    def forward():
        return torch.nn.functional.scaled_dot_product_attention(q, k, v)

    ours = torchscan_dispatch.measure_flops(lambda: forward().sum().backward())
    with sdpa_kernel(SDPBackend.MATH):
        math_forward, _, _ = flop_counter_mode(forward)
        math_total, _, _ = flop_counter_mode(lambda: forward().sum().backward())
    flash, _, _ = flop_counter_mode(lambda: forward().sum().backward())
    assert flash == {}  # FlopCounterMode: nothing
    fused_forward = ours["by_operator"]["aten._scaled_dot_product_flash_attention_for_cpu"]
    fused_backward = ours["by_operator"]["aten._scaled_dot_product_flash_attention_for_cpu_backward"]
    assert fused_forward == math_forward["aten.bmm"]
    math_backward = math_total["aten.bmm"] - math_forward["aten.bmm"]
    assert 4 * fused_backward == 5 * math_backward
    # And by hand: 2*b*h*sq*sk*(d + dv).
    assert fused_forward == 2 * 2 * 4 * 16 * 12 * (8 + 8)


def test_onednn_lstm_is_counted_like_the_decomposed_lstm():
    torch.manual_seed(0)
    lstm = nn.LSTM(8, 16, num_layers=2, batch_first=True, bidirectional=True)
    x = torch.randn(3, 5, 8)
    ours = torchscan_dispatch.measure_flops(lambda: lstm(x))
    with torch.backends.mkldnn.flags(enabled=False):
        decomposed, _, _ = flop_counter_mode(lambda: lstm(x))
    assert ours["by_operator"] == {"aten.mkldnn_rnn_layer": sum(decomposed.values())}
    # The fused backward computes every gradient of both projections: twice
    # the forward.
    x.requires_grad_(True)
    training = torchscan_dispatch.measure_flops(lambda: lstm(x)[0].sum().backward())
    assert training["by_operator"]["aten.mkldnn_rnn_layer_backward"] == 2 * sum(decomposed.values())


def test_fused_attention_fast_paths_count_like_their_slow_paths():
    """In eval mode without gradients, nn.MultiheadAttention and
    nn.TransformerEncoderLayer run single fused operators that FlopCounterMode
    counts as 0; we count what their slow paths count."""
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(16, 4, batch_first=True).eval()
    layer = nn.TransformerEncoderLayer(16, 4, 32, batch_first=True).eval()
    x = torch.randn(2, 5, 16)
    with torch.no_grad():
        fast_mha = torchscan_dispatch.measure_flops(lambda: mha(x, x, x))
        fast_layer = torchscan_dispatch.measure_flops(lambda: layer(x))
    assert set(fast_mha["by_operator"]) == {"aten._native_multi_head_attention"}
    assert set(fast_layer["by_operator"]) == {"aten._transformer_encoder_layer_fwd"}
    # The slow paths run with gradients enabled; their attention must take
    # the math path for FlopCounterMode to count it.
    with sdpa_kernel(SDPBackend.MATH):
        slow_mha, _, _ = flop_counter_mode(lambda: mha(x, x, x))
        slow_layer, _, _ = flop_counter_mode(lambda: layer(x))
    assert fast_mha["total"]["known_value"] == sum(slow_mha.values())
    assert fast_layer["total"]["known_value"] == sum(slow_layer.values())


def test_matrix_vector_products_flop_counter_mode_misses():
    a, b = torch.randn(9), torch.randn(9)
    m = torch.randn(4, 9)
    cases = {
        "aten.dot": (lambda: torch.dot(a, b), 2 * 9),
        "aten.vdot": (lambda: torch.vdot(a, b), 2 * 9),
        "aten.mv": (lambda: torch.mv(m, a), 2 * 4 * 9),
        "aten.addmv": (lambda: torch.addmv(torch.zeros(4), m, a), 2 * 4 * 9),
        "aten.addr": (lambda: torch.addr(torch.zeros(4, 9), torch.ones(4), a), 2 * 4 * 9),
        "aten.addbmm": (lambda: torch.addbmm(torch.zeros(4, 4), m[None], m.t()[None]), 2 * 4 * 4 * 9),
        "aten._addmm_activation": (
            lambda: torch.ops.aten._addmm_activation(torch.zeros(4), m, m.t(), use_gelu=True),
            2 * 4 * 4 * 9,
        ),
    }
    for op, (workload, expected) in cases.items():
        ours = torchscan_dispatch.measure_flops(workload)
        assert ours["by_operator"] == {op: expected}, op
        theirs, _, _ = flop_counter_mode(workload)
        assert theirs == {}, op
    # Each equals FlopCounterMode's count for the same product written as mm.
    as_mm, _, _ = flop_counter_mode(lambda: torch.mm(m, a[:, None]))
    assert as_mm["aten.mm"] == cases["aten.mv"][1]
