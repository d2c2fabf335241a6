"""Low-precision products (issue 27): fp8 scaled matrix products, int8 and
int4 weight-only products, quantized linear and convolution layers
(torch.ao.quantization), and mixture-of-experts grouped products with their
backward. Each count is checked against an independent computation written
here: FlopCounterMode on the float product or the float model, or a per-expert
loop of mm. A product costs 2 FLOPs per multiply-add in whatever precision it
runs; scales, zero points and bias are not counted."""

import pytest
import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

import torchscan_dispatch

FP8 = torch.float8_e4m3fn


def flop_counter_mode_total(workload):
    with FlopCounterMode(display=False) as mode:
        workload()
    return mode.get_total_flops()


def float_product(m, k, n, device="cpu"):
    """FlopCounterMode's count of the float [m,k] @ [k,n] product."""
    a = torch.randn(m, k, device=device)
    b = torch.randn(k, n, device=device)
    return flop_counter_mode_total(lambda: a @ b)


def assert_complete(report, operator, expected):
    assert report["by_operator"] == {operator: expected}
    assert report["total"] == {**report["total"], "status": "complete", "value": expected}


def test_scaled_mm_variants_count_the_product_not_the_scales():
    torch.manual_seed(0)
    a = torch.randn(16, 32).to(FP8)
    b = torch.randn(8, 32).to(FP8).t()
    one = torch.tensor(1.0)
    out = torch.empty(16, 8, dtype=torch.bfloat16)
    expected = float_product(16, 32, 8)
    workloads = {
        "aten._scaled_mm": lambda: torch._scaled_mm(a, b, one, one, out_dtype=torch.bfloat16),
        "aten._scaled_mm.out": lambda: torch._scaled_mm(a, b, one, one, out_dtype=torch.bfloat16, out=out),
        "aten._scaled_mm_v2": lambda: torch.ops.aten._scaled_mm_v2(
            a, b, [one], [0], [0], [one], [0], [0], None, torch.bfloat16
        ),
        "aten._scaled_mm_v2.out": lambda: torch.ops.aten._scaled_mm_v2.out(
            a, b, [one], [0], [0], [one], [0], [0], None, torch.bfloat16, out=out
        ),
    }
    for name, workload in workloads.items():
        packet = name.removesuffix(".out")
        assert_complete(torchscan_dispatch.measure_flops(workload), packet, expected)
    # FlopCounterMode has a formula for _scaled_mm (the same count), none for v2.
    assert flop_counter_mode_total(workloads["aten._scaled_mm"]) == expected
    assert flop_counter_mode_total(workloads["aten._scaled_mm_v2"]) == 0


def test_int_mm_and_its_out_overload():
    a = torch.randint(-8, 8, (32, 64), dtype=torch.int8)
    b = torch.randint(-8, 8, (64, 24), dtype=torch.int8)
    out = torch.empty(32, 24, dtype=torch.int32)
    expected = float_product(32, 64, 24)
    assert_complete(torchscan_dispatch.measure_flops(lambda: torch._int_mm(a, b)), "aten._int_mm", expected)
    assert_complete(torchscan_dispatch.measure_flops(lambda: torch._int_mm(a, b, out=out)), "aten._int_mm", expected)


# x [m,k] @ W^T for a logical weight W [n,k], whose stored form differs by
# kernel: int8 [n,k], int4 for the CPU [n, k/2] uint8 (two values a byte),
# int4 with scales and zeros [n, k/8] int32, _dyn_quant's one flat buffer.
M, K, N = 8, 64, 16


def int8_weight_only():
    x = torch.randn(M, K, dtype=torch.bfloat16)
    w = torch.randint(-128, 127, (N, K), dtype=torch.int8)
    scales = torch.randn(N, dtype=torch.bfloat16)
    return lambda: torch.ops.aten._weight_int8pack_mm(x, w, scales)


def int4_weight_only_for_cpu():
    x = torch.randn(M, K, dtype=torch.bfloat16)
    packed = torch.ops.aten._convert_weight_to_int4pack_for_cpu(torch.randint(0, 16, (N, K), dtype=torch.int32), 2)
    assert packed.shape == (N, K // 2) and packed.dtype == torch.uint8
    scales_and_zeros = torch.randn(K // 32, N, 2, dtype=torch.bfloat16)
    return lambda: torch.ops.aten._weight_int4pack_mm_for_cpu(x, packed, 32, scales_and_zeros)


def int4_with_scales_and_zeros_on_meta():
    # No CPU kernel (an XPU one): the meta kernel gives the shapes.
    x = torch.empty(M, K, dtype=torch.bfloat16, device="meta")
    packed = torch.empty(N, K // 8, dtype=torch.int32, device="meta")
    scales = torch.empty(K // 32, N, dtype=torch.bfloat16, device="meta")
    return lambda: torch.ops.aten._weight_int4pack_mm_with_scales_and_zeros(x, packed, 32, scales, scales)


def dynamically_quantized_4bit_on_meta():
    # The CPU kernel of torch 2.13 rejects its own packing without KleidiAI
    # ("Expected bias length to match output dimension"); meta gives shapes.
    x = torch.empty(M, K, device="meta")
    packed = torch.empty(N * K + N * (K // 32) + N, device="meta")
    return lambda: torch.ops.aten._dyn_quant_matmul_4bit(x, packed, 32, K, N)


@pytest.mark.parametrize(
    ("operator", "make"),
    [
        ("aten._weight_int8pack_mm", int8_weight_only),
        ("aten._weight_int4pack_mm_for_cpu", int4_weight_only_for_cpu),
        ("aten._weight_int4pack_mm_with_scales_and_zeros", int4_with_scales_and_zeros_on_meta),
        ("aten._dyn_quant_matmul_4bit", dynamically_quantized_4bit_on_meta),
    ],
)
def test_weight_only_quantized_products_count_the_logical_weight(operator, make):
    torch.manual_seed(0)
    workload = make()
    report = torchscan_dispatch.measure_flops(workload)
    assert_complete(report, operator, float_product(M, K, N))
    assert flop_counter_mode_total(workload) == 0  # what we go beyond


@pytest.mark.parametrize(
    ("operator", "make"),
    [
        ("quantized.linear_dynamic_fp16_unpacked_weight",
         lambda x, w, b: lambda: torch.ops.quantized.linear_dynamic_fp16_unpacked_weight(x, w, b)),
    ],
)  # fmt: skip
def test_unpacked_fp16_linear_equals_the_float_linear(operator, make):
    torch.manual_seed(0)
    x, w, b = torch.randn(3, 6, 32), torch.randn(16, 32), torch.randn(16)
    workload = make(x, w, b)
    expected = flop_counter_mode_total(lambda: nn.functional.linear(x, w, b))
    assert expected == 2 * 3 * 6 * 32 * 16
    assert_complete(torchscan_dispatch.measure_flops(workload), operator, expected)


def quantized_engine(name):
    if name not in torch.backends.quantized.supported_engines:
        pytest.skip(f"this torch build has no {name} quantized engine")
    previous = torch.backends.quantized.engine
    torch.backends.quantized.engine = name
    return previous


@pytest.mark.parametrize("engine", ["x86", "fbgemm"])
@pytest.mark.parametrize(("dtype", "operator"), [(torch.qint8, "quantized.linear_dynamic"),
                                                 (torch.float16, "quantized.linear_dynamic_fp16")])  # fmt: skip
def test_dynamically_quantized_linear_layers_count_as_the_float_model(engine, dtype, operator):
    from torch.ao.quantization import quantize_dynamic

    previous = quantized_engine(engine)
    try:
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(32, 64), nn.Linear(64, 16)).eval()
        quantized = quantize_dynamic(model, {nn.Linear}, dtype=dtype)
        x = torch.randn(4, 7, 32)
        report = torchscan_dispatch.measure_flops(lambda: quantized(x))
        assert_complete(report, operator, flop_counter_mode_total(lambda: model(x)))
        assert flop_counter_mode_total(lambda: quantized(x)) == 0  # what we go beyond
    finally:
        torch.backends.quantized.engine = previous


class _SmallConvNet(nn.Module):
    """Conv + ReLU (fused), a grouped conv, Linear + ReLU (fused), Linear."""

    def __init__(self):
        super().__init__()
        from torch.ao.quantization import DeQuantStub, QuantStub

        self.quant, self.dequant = QuantStub(), DeQuantStub()
        self.conv = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.relu = nn.ReLU()
        self.grouped = nn.Conv2d(8, 8, 3, groups=2)
        self.fc1, self.relu1, self.fc2 = nn.Linear(8 * 4 * 4, 32), nn.ReLU(), nn.Linear(32, 10)

    def forward(self, x):
        x = self.grouped(self.relu(self.conv(self.quant(x))))
        return self.dequant(self.fc2(self.relu1(self.fc1(x.flatten(1)))))


@pytest.mark.parametrize("engine", ["x86", "fbgemm"])
def test_statically_quantized_net_linear_layers_exact_and_convolutions_named(engine):
    from torch.ao.quantization import convert, fuse_modules, get_default_qconfig, prepare

    previous = quantized_engine(engine)
    try:
        torch.manual_seed(0)
        model = _SmallConvNet().eval()
        x = torch.randn(2, 3, 12, 12)
        with FlopCounterMode(display=False) as mode:
            model(x)
        float_counts = mode.get_flop_counts()
        fused = fuse_modules(model, [["conv", "relu"], ["fc1", "relu1"]])
        fused.qconfig = get_default_qconfig(engine)
        prepared = prepare(fused)
        prepared(x)
        quantized = convert(prepared)

        report = torchscan_dispatch.measure_flops(lambda: quantized(x))
        fc1 = float_counts["_SmallConvNet.fc1"][torch.ops.aten.addmm]
        fc2 = float_counts["_SmallConvNet.fc2"][torch.ops.aten.addmm]
        assert report["by_operator"] == {"quantized.linear_relu": fc1, "quantized.linear": fc2}
        # The convolutions' kernel size and groups are inside their packed
        # weights: not counted, named, and the total a lower bound.
        assert report["total"]["status"] == "partial"
        assert report["total"]["known_value"] == fc1 + fc2
        packed = [d for d in report["diagnostics"] if d.get("operator") in ("quantized.conv2d", "quantized.conv2d_relu")]
        assert {d["operator"] for d in packed} == {"quantized.conv2d", "quantized.conv2d_relu"}
        for diagnostic in packed:
            assert "inside the packed weight" in diagnostic["message"], diagnostic
    finally:
        torch.backends.quantized.engine = previous


@pytest.mark.parametrize("dimensions", [1, 2, 3])
def test_onednn_quantized_convolutions_equal_the_float_convolution(dimensions):
    if "onednn" not in torch.backends.quantized.supported_engines:
        pytest.skip("this torch build has no oneDNN quantized engine")
    torch.manual_seed(0)
    spatial, kernel = [9] * dimensions, [3] * dimensions
    x = torch.randint(0, 255, (2, 4, *spatial), dtype=torch.uint8)
    w = torch.randint(-127, 127, (8, 2, *kernel), dtype=torch.int8)  # 2 groups
    scales, zeros = torch.ones(8), torch.zeros(8, dtype=torch.int64)
    ones, nothing = [1] * dimensions, [0] * dimensions
    packed = torch.ops.onednn.qconv_prepack(w, scales, 0.1, 0, ones, nothing, ones, 2, None)
    operator = getattr(torch.ops.onednn, f"qconv{dimensions}d_pointwise")
    args = (x, 0.1, 0, packed, scales, zeros, None, ones, nothing, ones, 2, 1.0, 0, None, "none", [], "")
    float_convolution = flop_counter_mode_total(
        lambda: torch.ops.aten.convolution(x.float(), w.float(), None, ones, nothing, ones, False, nothing, 2)
    )
    assert_complete(torchscan_dispatch.measure_flops(lambda: operator(*args)), str(operator._qualified_op_name).replace("::", "."), float_convolution)
    assert_complete(torchscan_dispatch.measure_flops(lambda: torch.ops.onednn.qconv_pointwise(*args)), "onednn.qconv_pointwise", float_convolution)


# Mixture-of-experts products: 4 experts over 64 tokens, one expert empty
# and the last 8 tokens routed to none.
OFFS = [10, 10, 40, 56]


def per_expert_mm_loop(a, b, offs, grad):
    """The grouped product as a loop of mm, forward and backward: what the
    grouped kernel computes, expert by expert."""
    a, b = a.detach().requires_grad_(), b.detach().requires_grad_()
    start = 0
    for expert, end in enumerate(offs):
        out = a[start:end] @ b[expert]
        out.backward(grad[start:end])
        start = end


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_grouped_mm_forward_and_backward_equal_a_per_expert_mm_loop(dtype):
    torch.manual_seed(0)
    a = torch.randn(64, 32, dtype=dtype, requires_grad=True)
    b = torch.randn(4, 16, 32, dtype=dtype).transpose(-2, -1).requires_grad_()
    offs = torch.tensor(OFFS, dtype=torch.int32)
    grad = torch.randn(64, 16, dtype=dtype)

    def step():
        torch._grouped_mm(a, b, offs=offs).backward(grad)

    expected = flop_counter_mode_total(lambda: per_expert_mm_loop(a, b, OFFS, grad))
    assert expected == 3 * 2 * 56 * 32 * 16  # forward, grad of a, grad of b
    assert_complete(torchscan_dispatch.measure_flops(step), "aten._grouped_mm", expected)


def test_scaled_grouped_mm_on_meta_partial_with_offs_exact_without():
    # The CPU build has no _scaled_grouped_mm kernel: meta gives the shapes.
    meta = {"device": "meta"}
    tokens = torch.empty(64, 32, dtype=FP8, **meta)
    experts = torch.empty(4, 16, 32, dtype=FP8, **meta).transpose(-2, -1)
    offs = torch.empty(4, dtype=torch.int32, **meta)
    report = torchscan_dispatch.measure_flops(
        lambda: torch._scaled_grouped_mm(
            tokens, experts, torch.empty(64, **meta), torch.empty(4, 16, **meta), offs=offs, out_dtype=torch.bfloat16
        )
    )
    assert report["total"]["status"] == "partial" and report["total"]["known_value"] == 0
    [diagnostic] = [d for d in report["diagnostics"] if d.get("operator") == "aten._scaled_grouped_mm"]
    assert "_scaled_grouped_mm: the values of offs cannot be read here" in diagnostic["message"]

    # Batched experts, no offs: [4,8,32] @ [4,32,16], exact.
    batched = torch.empty(4, 8, 32, dtype=FP8, **meta)
    report = torchscan_dispatch.measure_flops(
        lambda: torch._scaled_grouped_mm(
            batched, experts, torch.empty(4, 8, **meta), torch.empty(4, 16, **meta), out_dtype=torch.bfloat16
        )
    )
    a, b = torch.empty(4, 8, 32, **meta), torch.empty(4, 32, 16, **meta)
    expected = flop_counter_mode_total(lambda: [a[g] @ b[g] for g in range(4)])
    assert expected == 4 * 2 * 8 * 32 * 16
    assert_complete(report, "aten._scaled_grouped_mm", expected)
