"""Where FlopCounterMode (torch 2.13) is wrong, we count correctly; each case
shows both numbers against a hand computation."""

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

import torchscan_dispatch

META = torch.device("meta")


def flop_counter_mode_total(workload):
    with FlopCounterMode(display=False) as mode:
        workload()
    return mode.get_total_flops()


def attention_flops(b, h, sq, sk, d, dv):
    """Hand count: scores [sq,d]@[d,sk] and output [sq,sk]@[sk,dv] per (b, h)."""
    return b * h * (2 * sq * sk * d + 2 * sq * dv * sk)


def test_raw_flash_attention_reads_bshd_as_bhsd_in_flop_counter_mode():
    # _flash_attention_forward takes [batch, seq, heads, dim].
    b, s, h, d = 2, 64, 4, 16
    q = torch.empty(b, s, h, d, device=META)

    def workload():
        torch.ops.aten._flash_attention_forward(q, q, q, None, None, s, s, 0.0, False, False)

    ours = torchscan_dispatch.measure_flops(workload)
    assert ours["by_operator"] == {"aten._flash_attention_forward": attention_flops(b, h, s, s, d, d)}
    # FlopCounterMode swaps heads and sequence: 64x fewer FLOPs here.
    assert flop_counter_mode_total(workload) == attention_flops(b, s, h, h, d, d)


def test_raw_efficient_attention_reads_bshd_as_bhsd_in_flop_counter_mode():
    b, s, h, d = 2, 32, 8, 16
    q = torch.empty(b, s, h, d, device=META)

    def workload():
        torch.ops.aten._efficient_attention_forward(q, q, q, None, None, None, s, s, 0.0, 0)

    ours = torchscan_dispatch.measure_flops(workload)
    assert ours["by_operator"] == {"aten._efficient_attention_forward": attention_flops(b, h, s, s, d, d)}
    assert flop_counter_mode_total(workload) == attention_flops(b, s, h, h, d, d)


def test_variable_length_flash_attention_on_meta_takes_maximum_lengths():
    # Packed sequences [total, heads, dim]; meta offsets cannot be read, so
    # each of the 3 sequences counts at the maximum length, as in
    # FlopCounterMode.
    total, h, d, max_len = 20, 4, 16, 9
    q = torch.empty(total, h, d, device=META)
    offsets = torch.empty(4, dtype=torch.int32, device=META)

    def workload():
        torch.ops.aten._flash_attention_forward(q, q, q, offsets, offsets, max_len, max_len, 0.0, False, False)

    ours = torchscan_dispatch.measure_flops(workload)
    expected = 3 * attention_flops(1, h, max_len, max_len, d, d)
    assert ours["by_operator"] == {"aten._flash_attention_forward": expected}
    assert flop_counter_mode_total(workload) == expected


def test_slow_conv2d_forward_raises_in_flop_counter_mode():
    x = torch.randn(1, 3, 10, 10)
    w = torch.randn(8, 3, 3, 3)

    def workload():
        torch.ops.aten._slow_conv2d_forward(x, w, [3, 3], None, [1, 1], [0, 0])

    ours = torchscan_dispatch.measure_flops(workload)
    # 8 output channels x 8x8 positions, each 3*3*3 multiply-adds.
    assert ours["by_operator"] == {"aten._slow_conv2d_forward": 2 * 8 * 8 * 8 * 3 * 3 * 3}
    with pytest.raises(TypeError):
        flop_counter_mode_total(workload)


def test_cudnn_convolution_takes_benchmark_for_transposed_in_flop_counter_mode():
    """cudnn_convolution has no CPU or meta kernel on this build; a meta kernel
    registered for the test lets both counters see the call."""
    library = torch.library.Library("aten", "IMPL")

    def meta_cudnn_convolution(x, w, padding, stride, dilation, groups, benchmark, deterministic, tf32):
        return torch.empty(x.shape[0], w.shape[0], x.shape[2] - w.shape[2] + 1, x.shape[3] - w.shape[3] + 1, device=META)

    library.impl("cudnn_convolution", meta_cudnn_convolution, "Meta")
    try:
        x = torch.empty(1, 3, 32, 32, device=META)
        w = torch.empty(8, 3, 3, 3, device=META)

        def workload():
            torch.ops.aten.cudnn_convolution(x, w, [0, 0], [1, 1], [1, 1], 1, True, False, False)

        ours = torchscan_dispatch.measure_flops(workload)
        correct = 2 * 8 * 30 * 30 * 3 * 3 * 3  # 30x30 outputs
        assert ours["by_operator"] == {"aten.cudnn_convolution": correct}
        # benchmark=True read as transposed: input spatial size 32x32.
        assert flop_counter_mode_total(workload) == 2 * 8 * 32 * 32 * 3 * 3 * 3
    finally:
        library._destroy()


def test_depthwise_convolution_weight_gradient_counted_groups_times_in_flop_counter_mode():
    torch.manual_seed(0)
    conv = torch.nn.Conv2d(16, 16, 3, groups=16)
    x = torch.randn(2, 16, 10, 10)

    def workload():
        conv(x).sum().backward()

    forward = 2 * 2 * 16 * 8 * 8 * 1 * 3 * 3  # N*Cout*Ho*Wo*(Cin/groups)*k*k
    ours = torchscan_dispatch.measure_flops(workload)
    # x needs no gradient: only the weight gradient, one forward's worth.
    assert ours["by_operator"] == {"aten.convolution": forward, "aten.convolution_backward": forward}
    assert flop_counter_mode_total(workload) == forward + 16 * forward
